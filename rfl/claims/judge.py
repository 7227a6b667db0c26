"""Judge every claim the config declares and render them: the Markdown of REPRODUCTION.md and
``claims.json`` (one record per claim, read by the HTML report's pages).

A claim (config ``claims.<id>``) names the paper's reference, its statement, the rule that
judges it with the rule's parameters, and the experiments it reads; the report groups claims
by their ``section`` in declaration order. Nothing here knows a study: every verdict comes
from the rule the claim names.
"""

from __future__ import annotations

import math

import pandas as pd

from rfl.registry import RULES

from .rule import Evidence, Judgement
from .verdicts import NOT_RUN, UNDECIDED


def claim_params(claim: dict) -> dict:
    """The rule's defaults overridden by the claim's ``params``."""
    return {**RULES[claim["rule"]].defaults(), **claim.get("params", {})}


def claim_figures(config: dict, claim: dict) -> list[str]:
    """The figures a claim speaks about: its ``figures``, else every figure drawn from one of its
    experiments."""
    if "figures" in claim:
        return list(claim["figures"])
    names = set(Evidence({"config": config}, claim["experiments"]).names())
    return [f for f, fig in config.get("figures", {}).items() if fig["experiment"] in names]


def judge_claim(spec: dict, cid: str, claim: dict, setting: tuple | None = None,
                groups: dict | None = None) -> dict:
    """One claim judged: its declaration, the rule's text, the judgement and its size provenance;
    with ``setting`` (of a sweep, ``rfl.sweeps``), on the runs of that setting only (and those
    without a sweep), the setting in words as ``setting``; ``groups``: runs already read
    (``Evidence``)."""
    from rfl.settings import describe_settings, deviation_records
    from rfl.size import describe_size
    from rfl.sweeps import setting_label

    rule = RULES[claim["rule"]]()
    params = claim_params(claim)
    evidence = Evidence(spec, claim["experiments"], setting, groups)
    skipped = spec.get("skipped") or {}          # data absent (rfl.workflow.absent_data)
    paper = spec.get("paper_only") or {}         # left to config/paper.yaml (rfl.workflow.paper_only)
    left = {**skipped, **{e: f"it runs in config/paper.yaml only ({why})" for e, why in paper.items()}}
    absent = [e for e in evidence.names() if e in left]
    kept = [e for e in claim["experiments"] if e not in left] \
        if isinstance(claim["experiments"], list) else []
    if absent and not kept and any(e in skipped for e in absent):
        judgement = Judgement(NOT_RUN if rule.judges else None,
                              notes=[f"Not run: {left[e]}." for e in absent],
                              decide="its data files: " + "; ".join(
                                  skipped[e].split(": ", 1)[1] for e in absent if e in skipped))
    elif absent and not kept:
        judgement = Judgement(UNDECIDED if rule.judges else None,
                              notes=[f"Not run here: {e}, {left[e]}." for e in absent],
                              decide="config/paper.yaml, which runs " + ", ".join(absent))
    elif absent:
        judgement = rule.judge(Evidence(spec, kept, setting, groups), params)
        judgement = Judgement(judgement.verdict, judgement.rows,
                              judgement.notes + [f"Judged without {e}, not run: {left[e]}."
                                                 for e in absent], judgement.decide,
                              judgement.margin)
    elif not any(spec["runs"].get(e) for e in evidence.names()):
        judgement = Judgement(UNDECIDED if rule.judges else None,
                              notes=["No run table of its experiments: nothing was measured."],
                              decide="run its experiments")
    else:
        judgement = rule.judge(evidence, params)
    if spec["config"].get("toy_size") and judgement.verdict not in (None, NOT_RUN):
        judgement = toy(judgement)
    return {"id": cid, "section": claim["section"], "ref": claim.get("ref", ""),
            "statement": claim["statement"], "context": claim.get("context", ""),
            "rule": claim["rule"], "params": params, "rule_text": rule.describe(params),
            "experiments": evidence.names(), "figures": claim_figures(spec["config"], claim),
            "verdict": judgement.verdict, "rows": judgement.rows, "notes": judgement.notes,
            "decide": judgement.decide, "margin": judgement.margin,
            "size": describe_size(spec["config"], evidence.names()),
            "settings": describe_settings(spec["config"], evidence.names()),
            "setting_deviations": deviation_records(spec["config"], evidence.names()),
            **({"setting": setting_label(setting)} if setting else {})}


def toy(judgement: Judgement) -> Judgement:
    """A judgement of a toy-size config (``toy_size: true``): its sizes decide nothing, so the
    verdict is undecided; what the rule gave at toy size is kept as a note."""
    return Judgement(UNDECIDED, judgement.rows,
                     judgement.notes + [f"At toy size the rule gives: {judgement.verdict} (no evidence "
                                        f"about the paper)."],
                     "the same claim at the default config's size (config/config.yaml) or the "
                     "paper's (config/paper.yaml)", judgement.margin)


def declared(spec: dict) -> dict:
    """The claims of ``spec['config']`` in declaration order: ``spec['claim_order']`` where the
    spec has it (a spec file's JSON sorts keys), else the config's own order."""
    claims = spec["config"].get("claims", {})
    return {cid: claims[cid] for cid in spec.get("claim_order", claims)}


def judge_all(spec: dict) -> list[dict]:
    """Every claim of ``spec['config']`` judged, in declaration order: a claim on a swept
    experiment once per setting of the sweep (``Evidence.settings``), in run order; each with
    its ``readings`` where a source it stands on is ambiguous (``readings_of``)."""
    out = []
    for cid, claim in declared(spec).items():
        groups: dict = {}                 # the claim's runs, read once for all its settings
        settings = Evidence(spec, claim["experiments"], groups=groups).settings()
        out += [judge_claim(spec, cid, claim, s, groups) for s in settings or [None]]
    for r in out:
        found = readings_of(spec, r, out)
        if found:
            r["readings"] = found
    return out


def _substituted(experiments, old: str, new: str):
    """A claim's ``experiments`` (a list, or roles -> a name or a list) with ``old`` as ``new``."""
    swap = lambda v: [new if x == old else x for x in v] if isinstance(v, list) else (new if v == old else v)  # noqa: E731
    return {k: swap(v) for k, v in experiments.items()} if isinstance(experiments, dict) else swap(experiments)


def readings_of(spec: dict, result: dict, results: list[dict]) -> dict | None:
    """The verdicts of a judged claim under each reading of an ambiguous source, or None:
    where an experiment it reads declares ``readings`` for a setting (``rfl.settings``), the
    claim judged again on each variant experiment; where the claim declares ``readings`` (claims
    judging the same statement under each reading), their verdicts. {what, verdicts: [{reading,
    verdict, where}], depends: whether the verdicts differ}."""
    from rfl.settings import readings

    config = spec["config"]
    claim = declared(spec)[result["id"]]
    if result["verdict"] is None:                      # a measurement: nothing to compare
        return None
    if claim.get("readings"):
        first = {}
        for r in results:
            first.setdefault((r["id"], r.get("setting")), r)
        verdicts = [{"reading": label, "verdict": first[(other, result.get("setting"))]["verdict"], "where": other}
                    for label, other in claim["readings"]["claims"].items()
                    if (other, result.get("setting")) in first]
        return {"what": claim["readings"]["what"], "verdicts": verdicts,
                "depends": len({v["verdict"] for v in verdicts}) > 1}
    for name in result["experiments"]:
        found = readings(config, name)
        if len(found) < 2:
            continue
        setting = next(s for s in Evidence(spec, claim["experiments"]).settings() or [None]
                       if (s and setting_text(s)) == result.get("setting")) if result.get("setting") else None
        verdicts = []
        for key, text, where in found:
            verdict = result["verdict"] if where == name else judge_claim(
                spec, result["id"], {**claim, "experiments": _substituted(claim["experiments"], name, where)},
                setting)["verdict"]
            verdicts.append({"reading": text, "verdict": verdict, "where": where})
        ref = (config["experiments"][name].get("source") or {}).get("ref", "")
        return {"what": f"{found[0][0]} of {name}'s source ({ref})", "verdicts": verdicts,
                "depends": len({v["verdict"] for v in verdicts}) > 1}
    return None


def setting_text(setting) -> str:
    from rfl.sweeps import setting_label

    return setting_label(setting)


def _md(text: str) -> str:
    """``text`` safe inside a Markdown table cell (a bare "|" would split it)."""
    return text.replace("|", "\\|")


def _cell(v) -> str:
    if isinstance(v, str):
        return _md(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None or isinstance(v, float) and math.isnan(v):
        return "n/a"
    return f"{v:.4g}" if isinstance(v, (int, float)) else str(v)


def markdown_table(rows: list[dict]) -> list[str]:
    """Rows (dicts with the same keys) as a Markdown table."""
    df = pd.DataFrame(rows)
    out = ["| " + " | ".join(_md(str(c)) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return out + [""]


def margin_text(result: dict) -> str:
    """" Margin: <margin>." for a result with a margin (``Judgement.margin``), else ""."""
    return f" Margin: {_md(result['margin'])}." if result.get("margin") else ""


def claim_lines(result: dict) -> list[str]:
    """The Markdown of one judged claim (heading, context, evidence, notes, verdict, size)."""
    ref = f" ({result['ref']})" if result["ref"] else ""
    kind = "Claim" if result["verdict"] is not None else "Measurement"
    setting = f" [setting {result['setting']}]" if result.get("setting") else ""
    lines = [f"### {kind}: {result['statement']}{ref}{setting}", ""]
    if result["context"]:
        lines += [result["context"], ""]
    if result["rows"]:
        lines += markdown_table(result["rows"])
    if result["notes"]:
        lines += [*result["notes"], ""]
    if result["verdict"] is not None:
        lines += [f"**Verdict: {result['verdict']}.**{margin_text(result)} _Rule ({result['rule']}): "
                  f"{result['rule_text']}_", ""]
    if result["decide"]:
        lines += [f"What would decide it: {result['decide']}.", ""]
    if result.get("source_size"):
        from rfl.reporting.source_size import line
        lines += [line(result["source_size"]), ""]
    if result.get("readings"):
        rd = result["readings"]
        lines += ["Readings of the source (" + rd["what"] + "): "
                  + "; ".join(f"{v['reading']} ({v['where']}): {v['verdict']}" for v in rd["verdicts"])
                  + f". Verdict depends on the reading: {'yes' if rd['depends'] else 'no'}.", ""]
    lines += [f"Size: {result['size']}.", ""]
    lines += [f"Settings: {result['settings']}.", ""] if "settings" in result else []
    return lines


def sections(results: list[dict]) -> list[str]:
    """Every judged claim under its section's heading, sections in order of first appearance."""
    order = list(dict.fromkeys(r["section"] for r in results))
    lines: list[str] = []
    for s in order:
        lines += [f"## {s}", ""]
        for r in results:
            if r["section"] == s:
                lines += claim_lines(r)
    return lines
