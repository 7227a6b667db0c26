"""The summary a reader triages the report by: the counts of verdicts per source, then every
judged claim grouped by source and figure in the papers' order (``rfl.reporting.order``), the
claims judged once per setting of a sweep in a group of their own. A row that is not green says
in one line why (``reason``): the deciding number against the claim's threshold (its failing
case's margin), what would decide it, or why it was not run; its size and setting deviations
in short form (``short_size``, ``short_settings``: "S 20/200, rounds 300/2500, 1 of 4 seeds;
step alpha 0.3 (source 0.04)"); and it links to its claim page.

Everything comes from the judged records (``claims.json``, ``rfl.claims.judge``) and the
config. ``summary_lines`` writes the Markdown of REPRODUCTION.md's summary; ``summary_html``
the same summary with coloured verdicts for the landing page of the HTML report.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from rfl.claims.verdicts import NOT, NOT_RUN, PARTLY, REPRODUCED, UNDECIDED, VERDICTS

from . import order

#: the group of the claims judged once per setting of a sweep (after the sources)
SWEEPS = "Sweeps"
#: a reason longer than this is cut (its claim page has it in full)
MAX_REASON = 240
#: the note a toy-size judgement carries (``rfl.claims.judge.toy``)
TOY_NOTE = "At toy size the rule gives: "
#: what the summary says about its columns
LEGEND = ("Sizes read ours/the paper's (\"S 20/200\": 20 agents where the paper has 200; \"1 of 4 "
          "seeds\"); a setting that differs from its source's is named with the source's value. "
          "\"Why\" gives, for a claim that is not reproduced in full, the deciding number against the "
          "claim's threshold, or what would decide it. Each claim links to its page, which has "
          "the evidence, the rule and the config of its runs.")

#: what the summary says about its column of verdicts at the source's size
SOURCE_SIZE_LEGEND = ("\"At the source's size\" is the verdict recorded for a run of a subset of "
                      "config/paper.yaml (records/source_size.json; its claim page has the margin, "
                      "seeds, commit and the command that reruns it): \"stale\" once the claim or its "
                      "experiments in config/paper.yaml changed since, \"not run\" for an undecided "
                      "claim that config/paper.yaml decides and that has no record. The verdict "
                      "counted is the row's own.")

_NUM = r"-?(?:inf|nan|\d+(?:\.\d*)?(?:e[+-]?\d+)?)"
_REGION = re.compile(rf"claim (?:(?P<op><=|>=|<|>) (?P<bound>{_NUM})|in [\[(](?P<lo>{_NUM}), (?P<hi>{_NUM})[\])])")
_INTERVAL = re.compile(rf"(?P<est>{_NUM}) \[(?P<lo>{_NUM}), (?P<hi>{_NUM})\]")
_VALUE = re.compile(rf"(?<![\w.=])({_NUM})(?![\w.])")


# ---- reading a record's texts --------------------------------------------------------------------
def split_cases(text: str | None, merge: bool = False) -> list[str]:
    """A "; "-joined line of cases (a margin, a ``decide``) as its cases: split at "; " outside
    brackets and backticks; with ``merge`` a piece without "label: " continues the case before it
    (a case's own "; ", e.g. "K = 5: 1 seed; at least 3 decide it")."""
    if not text:
        return []
    parts, depth, tick, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            tick = not tick
        elif not tick and ch in "([":
            depth += 1
        elif not tick and ch in ")]":
            depth = max(0, depth - 1)
        elif not tick and depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    if not merge:
        return [p.strip() for p in parts if p.strip()]
    out: list[str] = []
    for p in parts:
        if out and ": " not in p:
            out[-1] += "; " + p
        else:
            out.append(p)
    return [p.strip() for p in out if p.strip()]


def _float(s: str) -> float:
    return float(s)


def outside(case: str) -> bool | None:
    """Whether the numbers of one margin case lie wholly outside its claim's region (the case
    fails): its interval "[lo, hi]" (the first one), else its value (the last number before
    "claim"); None when the case names no region or no number."""
    m = _REGION.search(case)
    if not m:
        return None
    head = case[:m.start()]
    iv = _INTERVAL.search(head)
    if iv:
        lo, hi = _float(iv["lo"]), _float(iv["hi"])
    else:
        nums = _VALUE.findall(head)
        if not nums:
            return None
        lo = hi = _float(nums[-1])
    if lo != lo or hi != hi:                       # NaN: nothing decided
        return None
    if m["op"]:
        b = _float(m["bound"])
        return {"<=": lo > b, "<": lo >= b, ">=": hi < b, ">": hi <= b}[m["op"]]
    return hi < _float(m["lo"]) or lo > _float(m["hi"])


def _label(case: str) -> str | None:
    """The label of a case ("K = 5" of "K = 5: ratio ..."), None without one."""
    head, sep, _ = case.partition(": ")
    return head if sep else None


def _cut(text: str, limit: int = MAX_REASON) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _more(n: int, what: str) -> str:
    return f" (+{n} more {what})" if n > 0 else ""


def reason(record: dict) -> str:
    """Why a judged claim is not green, in one line ("" for a reproduced claim or a
    measurement): not run: the data file and how to get it; toy size: that its sizes decide
    nothing and what the rule gave; undecided: its first open case's margin and what would
    decide it; partly or not reproduced: its first failing case's margin (the deciding number
    against the claim's threshold), else its first note, else what would decide it."""
    verdict = record.get("verdict")
    if verdict in (REPRODUCED, None):
        return ""
    decide = split_cases(record.get("decide"), merge=True)
    notes = [n.strip().removeprefix("- ") for n in record.get("notes") or [] if n.strip()]
    cases = split_cases(record.get("margin"))
    if verdict == NOT_RUN:
        why = (record.get("decide") or "").removeprefix("its data files: ")
        return _cut(f"data absent: {why}" if why else "data absent")
    toy = next((n for n in notes if n.startswith(TOY_NOTE)), None)
    if toy is not None:
        gave = toy[len(TOY_NOTE):].split(" (", 1)[0]
        return _cut(f"toy size: its sizes decide nothing (the rule gives: {gave})")
    if verdict == UNDECIDED:
        if decide:
            label = _label(decide[0])
            case = next((c for c in cases if label and _label(c) == label), None)
            first = f"{case} — {decide[0][len(label) + 2:]}" if case else decide[0]
            return _cut(first) + _more(len(decide) - 1, "open")
        if notes:
            return _cut(notes[0])
        return _cut(cases[0]) if cases else "undecided: see its page"
    failing = [c for c in cases if outside(c)]
    if failing:
        return _cut(failing[0]) + _more(len(failing) - 1, "failing")
    first = notes[:1] or decide[:1] or cases[:1]
    return _cut(first[0]) if first else f"{verdict}: see its page"


# ---- sizes and settings in short form --------------------------------------------------------------
def _size_words(key: str, actual: str, paper: str) -> str:
    """One difference, short: "S 20/200", "rounds 300/2500", "B 50/500", "1 of 4 seeds" (more
    seeds than the paper: "3 seeds (paper 1)")."""
    if key == "seeds":
        return f"{actual} of {paper} seeds" if _lt(actual, paper) else f"{actual} seeds (paper {paper})"
    name = "B" if key == "batch_size" else key
    return f"{name} {actual}/{paper}"


def _lt(a: str, b: str) -> bool:
    try:
        return float(a) < float(b)
    except ValueError:
        return False


def short_size(config: dict, experiments) -> str:
    """How ``experiments`` compare with the paper's size, short: "paper size", "size not
    declared", or the differences as ours/paper's, values that vary across the experiments
    listed once each ("S 6, 10/60, rounds 300/2500, 1 of 4 seeds")."""
    from rfl.size import _value, size_differences

    exps = config.get("experiments", {})
    names = [e for e in experiments if e in exps]
    declared = [e for e in names if exps[e].get("paper_size") is not None]
    if not declared:
        return "size not declared"
    by_key: dict[str, tuple[list, list]] = {}
    for e in declared:
        for key, actual, paper in size_differences(config, e):
            a, p = by_key.setdefault(key, ([], []))
            a.append(_value(actual))
            p.append(_value(paper))
    if not by_key:
        return "paper size"
    return ", ".join(_size_words(k, ", ".join(dict.fromkeys(a)), ", ".join(dict.fromkeys(p)))
                     for k, (a, p) in by_key.items())


def short_settings(config: dict, experiments) -> str:
    """The experiments' setting deviations from their sources, short (no reasons; each once):
    "step alpha 0.3 (source 0.04); retraction polar (source qr)", and the reading an ambiguous
    source's setting is run at ("reading: step beta 0.1"); "" when they run the sources'."""
    from rfl.settings import _reading_text, deviations, effective, words

    exps = config.get("experiments", {})
    out: list[str] = []
    for e in experiments:
        if e not in exps:
            continue
        out += [words(k, a, s) for k, a, s, _ in deviations(config, e)]
        for key, d in ((exps[e].get("source") or {}).get("settings") or {}).items():
            if d.get("readings"):
                out.append("reading: " + _reading_text(key, effective(config, e, key), d["readings"]))
    return "; ".join(dict.fromkeys(out))


# ---- rows and groups ---------------------------------------------------------------------------------
@dataclass
class Row:
    """One judged claim in the summary."""

    record: dict
    figure: str                     # the paper's name of its figure, or its section
    reason: str
    size: str                       # size and settings, short
    page: str | None                # its claim page, claims/<page>.html#<anchor> (None: no page)
    page_name: str | None = None


@dataclass
class Group:
    """A source's rows (or the sweeps'); ``swept``: how many of the source's rows are in the
    sweeps' group."""

    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    swept: int = 0

    def counts(self) -> dict[str, int]:
        return {v: sum(r.record["verdict"] == v for r in self.rows) for v in VERDICTS}


def anchor(record: dict) -> str:
    """The id of the claim's section on its page (``rfl.reporting.claim_pages.claim_html``)."""
    from .claim_pages import slug

    return record["id"] + (f"-{slug(record['setting'])}" if record.get("setting") else "")


def groups(config: dict, records: list[dict]) -> list[Group]:
    """The judged claims with a verdict as rows grouped by source (the papers' order; every
    declared source, also one without a row), those of a sweep's settings in SWEEPS last (when
    there are any); in a group, by figure (the papers' order: a figure's rows where the first of
    its claims is declared) then as declared. Measurements are left out."""
    from .claim_pages import pages

    figures = config.get("figures", {})
    page_of: dict[str, str] = {}
    for name, page in pages(config).items():
        for cid in page["claims"]:
            page_of.setdefault(cid, name)
    fig_rank = {f: i for i, f in enumerate(order.figure_order(config))}
    out = {k: Group(k, t) for k, t in order.sources(config).items()}
    rank = {k: i for i, k in enumerate(out)}
    sweeps = Group(SWEEPS, "Sweeps: claims judged once per setting")
    declared = {cid: i for i, cid in enumerate(config.get("claims", {}))}
    placed: list[tuple] = []
    for i, rec in enumerate(records):
        if rec.get("verdict") is None:
            continue
        named = sorted((f for f in rec.get("figures", []) if f in figures), key=fig_rank.get)
        where = order.figure_name(named[0], figures[named[0]]) if named else rec["section"]
        page = page_of.get(rec["id"])
        row = Row(rec, where, reason(rec),
                  "; ".join(x for x in (short_size(config, rec.get("experiments", [])),
                                        short_settings(config, rec.get("experiments", []))) if x),
                  f"claims/{page}.html#{anchor(rec)}" if page else None, page)
        source = order.claim_source(config, rec)
        own = out.setdefault(source, Group(source, source))
        own.swept += bool(rec.get("setting"))
        group = sweeps if rec.get("setting") else own
        d = (rank.get(source, len(rank)) if group is sweeps else 0, declared.get(rec["id"], len(declared)), i)
        placed.append((group, where, d, row))
    first: dict[tuple, tuple] = {}            # (group, subgroup) -> where its first row is declared
    for group, where, d, _ in placed:
        first[(group.key, where)] = min(first.get((group.key, where), d), d)
    for group, where, d, row in sorted(placed, key=lambda p: (first[(p[0].key, p[1])], p[2])):
        group.rows.append(row)
    return [*out.values(), *([sweeps] if sweeps.rows else [])]


# ---- Markdown -----------------------------------------------------------------------------------------
def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _link_text(text: str) -> str:
    return _md(text).replace("[", "\\[").replace("]", "\\]")


def counts_lines(gs: list[Group]) -> list[str]:
    """The counts of verdicts per group (those with a row here or in the sweeps'), and in all, as
    a Markdown table."""
    head = "| source | " + " | ".join(VERDICTS) + " | claims |"
    lines = [head, "|---|" + "---|" * (len(VERDICTS) + 1)]
    for g in (g for g in gs if g.rows or g.swept):
        c = g.counts()
        lines.append(f"| {_md(g.title)} | " + " | ".join(str(c[v]) for v in VERDICTS) + f" | {_n_claims(g)} |")
    total = {v: sum(g.counts()[v] for g in gs) for v in VERDICTS}
    lines.append("| **all** | " + " | ".join(f"**{total[v]}**" for v in VERDICTS)
                 + f" | **{sum(len(g.rows) for g in gs)}** |")
    return lines + [""]


def _n_claims(g: Group) -> str:
    """A group's number of rows, and how many more of its source's are in the sweeps' group."""
    return f"{len(g.rows)}" + (f" (+{g.swept} in Sweeps)" if g.swept else "")


def statement(record: dict) -> str:
    return record["statement"] + (f" [setting {record['setting']}]" if record.get("setting") else "")


def has_source_size(records: list[dict]) -> bool:
    """Whether any record has a verdict at the source's size (``rfl.source_size``): the summary
    then has a column for it."""
    return any(r.get("source_size") for r in records)


def source_size_cell(record: dict) -> str:
    """The summary's "at the source's size" cell: the recorded verdict, "stale (recorded: ...)",
    "not run", or "" (no record)."""
    from .source_size import verdict_text

    return verdict_text(record["source_size"]) if record.get("source_size") else ""


def summary_lines(config: dict, records: list[dict]) -> list[str]:
    """REPRODUCTION.md's summary: the counts, the legend, then one table per group (figure or
    section | claim, linked to its page | verdict | why | size, settings; and the verdict at the
    source's size where any claim has one, SOURCE_SIZE_LEGEND)."""
    gs = groups(config, records)
    n_measured = sum(r.get("verdict") is None for r in records)
    beside = has_source_size(records)
    lines = counts_lines(gs) + [LEGEND + (f" {n_measured} measurement(s) judge nothing; they are on "
                                          f"their pages and below." if n_measured else "")
                                + (f" {SOURCE_SIZE_LEGEND}" if beside else ""), ""]
    extra = " at the source's size |" if beside else ""
    for g in (g for g in gs if g.rows):
        lines += [f"### {g.title}", "", f"| figure | claim | verdict | why | size, settings |{extra}",
                  "|---|---|---|---|---|" + ("---|" if beside else "")]
        last = None
        for r in g.rows:
            claim = _link_text(statement(r.record))
            claim = f"[{claim}]({r.page})" if r.page else claim
            lines.append(f"| {_md(r.figure) if r.figure != last else ''} | {claim} | {r.record['verdict']} "
                         f"| {_md(r.reason)} | {_md(r.size)} |"
                         + (f" {_md(source_size_cell(r.record))} |" if beside else ""))
            last = r.figure
        lines.append("")
    return lines


# ---- HTML (the landing page of the HTML report) -----------------------------------------------------
def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _inline(text: str) -> str:
    """A line of Markdown as inline HTML (code spans, emphasis), raw HTML escaped."""
    from .claim_pages import inline_markdown

    return inline_markdown(text)


def open_page_js(page_name: str, fragment: str, category: str, subcategory: str) -> str:
    """JavaScript (an onclick handler) that opens a claim page in Snakemake's report as its menu
    does (the result whose path ends in /claims/<page>.html, shown in its category and
    subcategory), scrolled to ``fragment`` (the claim's id on the page)."""
    import json

    suffix = json.dumps(f"/claims/{page_name}.html")
    return ("var k=Object.keys(results).find(function(p){return p.endsWith(" + suffix + ")});"
            "if(k){app.setView({navbarMode:'subcategory',category:" + json.dumps(category)
            + ",subcategory:" + json.dumps(subcategory) + ",content:'html',contentPath:results[k].data_uri+"
            + json.dumps("#" + fragment) + ",resultPath:k});}return false;")


SUMMARY_STYLE = """
.rfl-summary{font-size:.85rem;line-height:1.4;color:#1f2328;max-width:none}
.rfl-summary table{border-collapse:collapse;margin:.4rem 0 1rem}
.rfl-summary th,.rfl-summary td{border:1px solid #d1d9e0;padding:.2rem .45rem;text-align:left;vertical-align:top}
.rfl-summary th{background:#f6f8fa}.rfl-summary td.n{text-align:right;font-variant-numeric:tabular-nums}
.rfl-summary h2{font-size:1.2rem;margin:.2rem 0}.rfl-summary h3{font-size:1rem;margin:1rem 0 .2rem}
.rfl-summary a{color:#0969da}.rfl-summary code{background:#f6f8fa;padding:0 .2em;border-radius:3px}
.rfl-summary .badge{display:inline-block;border-radius:1em;padding:0 .6em;font-weight:600;white-space:nowrap}
div.items-center:has(.rfl-summary){align-items:flex-start}
div.prose:has(.rfl-summary){max-width:none}
div.flex:has(> div > div.prose .rfl-summary){flex-wrap:wrap}
div:has(> div.prose .rfl-summary){flex:1 1 100%}
"""


def summary_html(config: dict, records: list[dict], menu: dict | None = None) -> str:
    """The summary as an HTML fragment (``<div class="rfl-summary">``): the counts with coloured
    verdicts, the legend, one table per group with a link per claim that opens its page in
    Snakemake's report (``menu``: ``order.menu(config)``, where each page sits)."""
    from .claim_pages import badge, pages

    menu = menu or order.menu(config)
    all_pages = pages(config)
    gs = groups(config, records)
    head = "".join(f"<th>{badge(v)}</th>" for v in VERDICTS)
    body = []
    for g in (g for g in gs if g.rows or g.swept):
        c = g.counts()
        body.append(f"<tr><td>{_e(g.title)}</td>" + "".join(f'<td class="n">{c[v]}</td>' for v in VERDICTS)
                    + f'<td class="n">{_e(_n_claims(g))}</td></tr>')
    total = {v: sum(g.counts()[v] for g in gs) for v in VERDICTS}
    body.append("<tr><th>all</th>" + "".join(f'<th class="n">{total[v]}</th>' for v in VERDICTS)
                + f'<th class="n">{sum(len(g.rows) for g in gs)}</th></tr>')
    beside = has_source_size(records)
    toy = ("<p><b>Toy size.</b> This config runs every experiment at toy size to exercise the "
           "workflow: its sizes decide nothing, so every claim is undecided.</p>" if config.get("toy_size") else "")
    parts = [f"<style>{SUMMARY_STYLE}</style>", '<div class="rfl-summary">',
             "<h2>Reproduction report: summary</h2>", toy,
             f'<table class="counts"><thead><tr><th>source</th>{head}<th>claims</th></tr></thead><tbody>',
             *body, "</tbody></table>", f"<p>{_e(LEGEND)}" + (f" {_e(SOURCE_SIZE_LEGEND)}" if beside else "")
             + "</p>"]
    for g in (g for g in gs if g.rows):
        rows, last = [], None
        for r in g.rows:
            text = _inline(statement(r.record))
            if r.page_name:
                p = all_pages[r.page_name]
                cat, sub = _place(menu, p)
                text = (f'<a href="{_e(r.page)}" onclick="{_e(open_page_js(r.page_name, anchor(r.record), cat, sub))}">'
                        f"{text}</a>")
            rows.append(f'<tr class="row" data-claim="{_e(r.record["id"])}">'
                        f"<td>{_e(r.figure) if r.figure != last else ''}</td><td>{text}</td>"
                        f"<td>{badge(r.record['verdict'])}</td><td>{_inline(r.reason)}</td>"
                        f"<td>{_inline(r.size)}</td>"
                        + (f'<td class="source-size">{_source_size_badges(r.record)}</td>' if beside else "")
                        + "</tr>")
            last = r.figure
        parts += [f"<h3>{_e(g.title)}</h3>",
                  '<table class="claims"><thead><tr><th>figure</th><th>claim</th><th>verdict</th>'
                  "<th>why</th><th>size, settings</th>" + ("<th>at the source's size</th>" if beside else "")
                  + "</tr></thead><tbody>", *rows, "</tbody></table>"]
    parts.append("</div>")
    return "\n".join(p for p in parts if p)     # one row a line: docutils refuses lines over 10,000


def _source_size_badges(record: dict) -> str:
    """The summary's HTML cell of a verdict at the source's size: its badge(s) when current, the
    cell's text otherwise ("stale (recorded: ...)", "not run"), "" without a record."""
    from .source_size import CURRENT

    from .claim_pages import badge

    entry = record.get("source_size")
    if not entry:
        return ""
    if entry["state"] == CURRENT:
        return "".join(badge(x["verdict"]) for x in entry["results"])
    return _e(source_size_cell(record))


def _place(menu: dict, page: dict) -> tuple[str, str]:
    """(category, subcategory) of a claim page in the report's menus."""
    if "figure" in page:
        return menu["figures"][page["figure"]]
    return menu["categories"][order.NO_FIGURE_CATEGORY], menu["sections"][page["section"]]


#: the report's landing page (Snakemake's global report description), beside REPRODUCTION.md
LANDING = "summary.rst"


def write_landing(config: dict, out_md) -> "Path":
    """The landing page of the HTML report beside ``out_md`` (LANDING), from ``claims.json``
    beside it; returns its path."""
    import json
    from pathlib import Path

    from rfl import io

    path = Path(out_md).with_name(LANDING)
    records = json.loads(path.with_name("claims.json").read_text())
    with io.atomic_path(path) as tmp:
        tmp.write_text(landing_rst(summary_html(config, records)))
    return path


def landing_rst(fragment: str) -> str:
    """The HTML ``fragment`` as the report's global description (reStructuredText that Snakemake
    renders with Jinja, then docutils): a raw HTML block, kept from Jinja by ``raw``."""
    body = "\n".join("   " + line for line in fragment.splitlines())
    return "{% raw %}\n.. raw:: html\n\n" + body + "\n\n{% endraw %}\n"
