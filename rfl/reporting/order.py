"""The papers' order of the report: the source each claim comes from, each figure's name in its
paper, and the order and names of the HTML report's menus.

A config declares the sources of its claims in the papers' order (``sources``: id -> {title,
sections}): a claim belongs to the source that lists its section, or to the one its own
``source`` names (a claim of rfl's own in a section of the paper). Without ``sources`` every
claim belongs to one source, ``DEFAULT_SOURCE``.

A figure belongs to the first source of the claims that speak about it (those without a claim:
to the last source); figures are ordered by their source, then as the config declares them.
Snakemake's report sorts its menus alphabetically (``localeCompare``), so each menu entry
carries its position as a zero-padded number: "01 Figure 1(a): CPESph, fixed step".
"""

from __future__ import annotations

import re

#: the source of every claim of a config that declares none
DEFAULT_SOURCE = "claims"
#: the report category of REPRODUCTION.html (first in the menu)
REPORT_CATEGORY = "Reproduction report"
#: the report category of the pages of claims that name no figure (last in the menu)
NO_FIGURE_CATEGORY = "Claims without a figure"
#: categories of the workflow's own studies, after the figures' (those the config has)
STUDY_CATEGORIES = ("Heterogeneity", "Federated TD(0) / LSA", "Sweeps")

_PAPER_REF = re.compile(r"^(?P<rest>.*\S)\s+\((?P<authors>authors' )?Figure (?P<n>\d+)(?P<panel>[a-z])?\)$")


def sources(config: dict) -> dict[str, str]:
    """id -> title of every source of the config's claims, in the papers' order."""
    declared = config.get("sources") or {}
    return {k: v["title"] for k, v in declared.items()} or {DEFAULT_SOURCE: "Claims"}


def claim_source(config: dict, claim: dict) -> str:
    """The source of ``claim`` (a config claim or a claims.json record): its ``source``, else the
    source that lists its section, else DEFAULT_SOURCE (a config without ``sources``)."""
    declared = config.get("sources") or {}
    cid = claim.get("id")
    own = claim.get("source") or (config.get("claims", {}).get(cid, {}).get("source") if cid else None)
    if own:
        return own
    return next((k for k, v in declared.items() if claim["section"] in v.get("sections", [])), DEFAULT_SOURCE)


def source_errors(config: dict) -> list[str]:
    """Config errors of ``sources`` and the claims' ``source`` (one line each, naming the key):
    a section listed by two sources, a claim's source that is not declared, a claim whose
    section no source lists (when sources are declared)."""
    declared = config.get("sources") or {}
    msgs, owner = [], {}
    for sid, src in declared.items():
        for i, section in enumerate(src.get("sections", [])):
            if section in owner:
                msgs.append(f"config key sources.{sid}.sections.{i}: {section!r} is listed by source "
                            f"{owner[section]!r} too; allowed: each section under one source")
            owner.setdefault(section, sid)
    for cid, claim in config.get("claims", {}).items():
        own = claim.get("source")
        if own is not None and own not in declared:
            msgs.append(f"config key claims.{cid}.source: {own!r} is not a declared source; allowed: "
                        f"{', '.join(declared) or 'none (declare them under sources)'}")
        elif own is None and declared and claim["section"] not in owner:
            msgs.append(f"config key claims.{cid}.section: {claim['section']!r} is listed by no source; "
                        f"allowed: a section of sources.<id>.sections, or a claims.{cid}.source of "
                        f"{', '.join(declared)}")
    return msgs


def figure_name(figure: str, fig: dict) -> str:
    """The figure as its paper names it: a title ending in "(Figure 1a)" reads "Figure 1(a):
    <title>", one ending in "(authors' Figure 10)" "Authors' Figure 10: <title>"; else the title."""
    m = _PAPER_REF.match(fig.get("title", figure))
    if not m:
        return fig.get("title", figure)
    panel = f"({m['panel']})" if m["panel"] else ""
    word = "Authors' Figure" if m["authors"] else "Figure"
    return f"{word} {m['n']}{panel}: {m['rest']}"


def _figures_of_claims(config: dict) -> dict[str, list[str]]:
    """figure -> the ids of the claims that speak about it (declaration order)."""
    from rfl.claims.judge import claim_figures

    figures = config.get("figures", {})
    out: dict[str, list[str]] = {f: [] for f in figures}
    for cid, claim in config.get("claims", {}).items():
        for f in claim_figures(config, claim):
            if f in out:
                out[f].append(cid)
    return out


def figure_sources(config: dict) -> dict[str, str]:
    """figure -> its source: the first (in the papers' order) of the claims that speak about
    it; the last source for a figure no claim speaks about."""
    rank = {s: i for i, s in enumerate(sources(config))}
    last = list(rank)[-1]
    claims = config.get("claims", {})
    return {f: min((claim_source(config, {**claims[c], "id": c}) for c in cids),
                   key=lambda s: rank.get(s, len(rank)), default=last)
            for f, cids in _figures_of_claims(config).items()}


def figure_order(config: dict) -> list[str]:
    """The config's figures in the papers' order: by source, then as declared."""
    figures = list(config.get("figures", {}))
    rank = {s: i for i, s in enumerate(sources(config))}
    src = figure_sources(config)
    return sorted(figures, key=lambda f: (rank.get(src[f], len(rank)), figures.index(f)))


def numbered(names: list[str]) -> list[str]:
    """Each name as "<position> <name>", positions from 1 zero-padded to one width, so that an
    alphabetical sort keeps the order."""
    width = len(str(len(names)))
    return [f"{i:0{width}d} {n}" for i, n in enumerate(names, 1)]


def menu(config: dict) -> dict:
    """The HTML report's menus in the papers' order: ``categories`` (base name -> shown name:
    REPRODUCTION.html's first, the figures' categories in the order of their first figure, the
    studies' the config has, the claims without a figure last), ``figures`` (figure ->
    (category, subcategory) as shown), ``sections`` (section of claims without a figure ->
    its shown subcategory)."""
    from rfl import sweeps
    from rfl.claims.judge import claim_figures

    order = figure_order(config)
    figures = config.get("figures", {})
    cats = list(dict.fromkeys(figures[f].get("report_category", "Figures") for f in order))
    studies = [c for c, present in zip(STUDY_CATEGORIES, (
        config.get("heterogeneity"), config.get("lsa"),
        any(sweeps.is_swept(e) for e in config.get("experiments", {}).values()))) if present or c in cats]
    rank = {s: i for i, s in enumerate(sources(config))}
    claims = config.get("claims", {})
    alone = [(cid, c) for cid, c in claims.items() if not any(f in figures for f in claim_figures(config, c))]
    alone.sort(key=lambda item: rank.get(claim_source(config, {**item[1], "id": item[0]}), len(rank)))
    sections = list(dict.fromkeys(c["section"] for _, c in alone))
    base = ([REPORT_CATEGORY, *[c for c in cats if c not in STUDY_CATEGORIES], *studies]
            + ([NO_FIGURE_CATEGORY] if sections else []))
    categories = dict(zip(base, numbered(base)))
    shown = {}
    for cat in cats:
        in_cat = [f for f in order if figures[f].get("report_category", "Figures") == cat]
        names = numbered([figure_name(f, figures[f]) for f in in_cat])
        shown.update({f: (categories[cat], name) for f, name in zip(in_cat, names)})
    return {"categories": categories, "figures": shown, "sections": dict(zip(sections, numbered(sections)))}


def restore(spec: dict) -> dict:
    """The config of a report's ``spec`` in its declared orders: a spec file's JSON sorts keys,
    so the orders of its claims, figures and sources travel beside it (``claim_order``,
    ``figure_order``, ``source_order``; the config's own order where the spec has none)."""
    config = spec["config"]
    out = dict(config)
    for key, order_key in (("claims", "claim_order"), ("figures", "figure_order"), ("sources", "source_order")):
        if key in config:
            names = [n for n in spec.get(order_key, config[key]) if n in config[key]]
            out[key] = {n: config[key][n] for n in names + [n for n in config[key] if n not in names]}
    return out
