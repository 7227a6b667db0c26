"""The claim pages of the HTML report (``snakemake --report``): one self-contained page per
figure with the claims that speak about it, and one per claim section whose claims name no
figure of the config; and REPRODUCTION.md rendered to HTML (Snakemake's report shows HTML,
images and PDFs, but offers Markdown only as a download).

A page shows, for each claim, its reference, statement and verdict (a coloured badge), the
rule that decided it and its text, the size it was judged at, what would decide an undecided
claim, and the evidence table; then the config of the runs it reads (dataset and its
parameters, rounds, seeds, batch size, step, methods). Everything comes from ``claims.json``
(``rfl.claims.judge``) and the config; every text is HTML-escaped.

The page names are a function of the config alone (``pages``), so the workflow lists them as
static outputs of the reproduction rule before anything has run.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from pathlib import Path

from rfl import io
from rfl.claims.judge import claim_figures
from rfl.claims.verdicts import NOT, NOT_RUN, PARTLY, REPRODUCED, UNDECIDED, VERDICTS

from .order import NO_FIGURE_CATEGORY, menu

#: the folder of the pages, beside REPRODUCTION.md
PAGES_DIR = "claims"
#: what a table cell without a value says, and why (a title on the cell, a line under the table)
NA = "n/a"
NA_WHY = {"missing": "the rule reports no such value for this row",
          "none": "no value was computed",
          "nan": "the statistic is undefined here (no finite value: e.g. a diverged run, or too few points)"}
#: badge colours (background, text) per verdict; None is a measurement
BADGES = {REPRODUCED: ("#1a7f37", "#ffffff"), PARTLY: ("#bf8700", "#ffffff"),
          NOT: ("#cf222e", "#ffffff"), UNDECIDED: ("#6e7781", "#ffffff"),
          NOT_RUN: ("#eaeef2", "#1f2328"),
          None: ("#ddf4ff", "#0969da")}

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;max-width:60rem;
padding:0 1rem;color:#1f2328;line-height:1.45}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin:0 0 .3rem}
h3{font-size:1rem;margin:1rem 0 .3rem}
.sub{color:#59636e;margin-top:0}
section.claim{border:1px solid #d1d9e0;border-radius:6px;padding:.8rem 1rem;margin:1rem 0}
.badge{display:inline-block;border-radius:1em;padding:.1em .7em;font-size:.85rem;font-weight:600;
white-space:nowrap;vertical-align:middle;margin-right:.4em}
.ref{color:#59636e;font-size:.9rem;margin:.1rem 0 .5rem}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}
th,td{border:1px solid #d1d9e0;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f6f8fa;padding:.05em .3em;border-radius:4px;font-size:.9em}
dl.run{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;font-size:.9rem}
dl.run dt{font-weight:600}dl.run dd{margin:0}
"""


def slug(text: str) -> str:
    """``text`` as a file-name part: lower-case letters and digits joined by "-"."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def pages(config: dict) -> dict[str, dict]:
    """Every claim page of ``config``, by name (the file is ``claims/<name>.html``): one per
    figure (``figure``, ``title``, report ``category`` and ``subcategory``: where the figure
    sits in the report's menus, ``rfl.reporting.order.menu``), then one per section of the
    claims that name no figure of the config (``section``, category NO_FIGURE_CATEGORY), in
    declaration order; each with the ids of its ``claims``."""
    figures = config.get("figures", {})
    places = menu(config)
    out = {f: {"figure": f, "title": fig.get("title", f), "category": places["figures"][f][0],
               "subcategory": places["figures"][f][1], "claims": []} for f, fig in figures.items()}
    by_section: dict[str, dict] = {}
    for cid, claim in config.get("claims", {}).items():
        named = [f for f in claim_figures(config, claim) if f in figures]
        for f in named:
            out[f]["claims"].append(cid)
        if not named:
            section = claim["section"]
            if section not in by_section:
                name, n = f"section-{slug(section)}", 2
                while name in out or name in (p["name"] for p in by_section.values()):
                    name, n = f"section-{slug(section)}-{n}", n + 1
                by_section[section] = {"name": name, "section": section, "title": section,
                                       "category": places["categories"][NO_FIGURE_CATEGORY],
                                       "subcategory": places["sections"][section], "claims": []}
            by_section[section]["claims"].append(cid)
    for p in by_section.values():
        out[p.pop("name")] = p
    return out


def page_path(out_md, name: str) -> Path:
    """The file of page ``name`` for the report ``out_md`` (REPRODUCTION.md)."""
    return Path(out_md).parent / PAGES_DIR / f"{name}.html"


# ---- HTML pieces ------------------------------------------------------------------------
def _e(text) -> str:
    return html.escape(str(text), quote=True)


@functools.cache
def _markdown():
    """CommonMark with tables; raw HTML in the text is escaped, not passed through. One parser
    per process: building one costs ~1 ms, and a report renders thousands of snippets."""
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark", {"html": False}).enable("table")


_NAN = re.compile(r"(?<![A-Za-z0-9_])nan(?![A-Za-z0-9_])", re.IGNORECASE)


def no_nan(text: str) -> str:
    """``text`` with every "nan" (a number without a value) as NA."""
    return _NAN.sub(NA, text)


def inline_markdown(text) -> str:
    """One line of Markdown (code spans, emphasis) as inline HTML, raw HTML escaped, "nan" as NA."""
    return _markdown().renderInline(no_nan(str(text)))


def block_markdown(text) -> str:
    """Markdown (paragraphs, lists) as HTML, raw HTML escaped, "nan" as NA."""
    return _markdown().render(no_nan(str(text)))


def badge(verdict: str | None) -> str:
    """The verdict as a coloured badge ("measurement" for a claim that judges nothing)."""
    bg, fg = BADGES.get(verdict, BADGES[None])
    label = verdict if verdict is not None else "measurement"
    cls = "badge v-" + slug(label)
    return f'<span class="{cls}" style="background:{bg};color:{fg}">{_e(label)}</span>'


_MISSING = object()


def _na_kind(v) -> str | None:
    """Why a cell has no value (a key of NA_WHY), None when it has one."""
    if v is _MISSING:
        return "missing"
    if v is None:
        return "none"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return None


def _cell(v) -> str:
    kind = _na_kind(v)
    if kind:
        return f'<td class="num na" title="{_e(NA_WHY[kind])}">{NA}</td>'
    if isinstance(v, bool):
        return "<td>yes</td>" if v else "<td>no</td>"
    if isinstance(v, (int, float)):
        return f'<td class="num">{v:.4g}</td>'
    return f"<td>{inline_markdown(v)}</td>"


def evidence_table(rows: list[dict]) -> str:
    """Evidence rows (dicts; the columns are the union of their keys, in first-seen order); a
    cell without a value says NA, and a line under the table says why."""
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{inline_markdown(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c, _MISSING)) for c in cols) + "</tr>" for r in rows)
    kinds = [k for k in NA_WHY if any(_na_kind(r.get(c, _MISSING)) == k for r in rows for c in cols)]
    why = (f'<p class="na-why">{NA}: ' + "; or ".join(_e(NA_WHY[k]) for k in kinds) + ".</p>") if kinds else ""
    return (f'<div class="scroll"><table class="evidence"><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table></div>{why}')


def claim_html(claim: dict) -> str:
    """One judged claim (a record of claims.json) as a <section>."""
    md = inline_markdown
    ref = " · ".join(x for x in (md(claim.get("ref", "")), f"claim <code>{_e(claim['id'])}</code>",
                                  md(claim["section"])) if x)
    setting = claim.get("setting")
    anchor = claim["id"] + (f"-{slug(setting)}" if setting else "")
    title = claim["statement"] + (f" [setting {setting}]" if setting else "")
    parts = [f'<section class="claim" id="{_e(anchor)}">',
             f"<h2>{badge(claim['verdict'])}{md(title)}</h2>", f'<p class="ref">{ref}</p>']
    if claim.get("context"):
        parts.append(block_markdown(claim["context"]))
    parts.append(evidence_table(claim.get("rows") or []))
    if claim.get("notes"):          # Markdown lines, as in REPRODUCTION.md (lists stay lists)
        parts.append(f'<div class="notes">{block_markdown(chr(10).join(claim["notes"]))}</div>')
    if claim.get("margin"):
        parts.append(f"<p><b>Margin:</b> {md(claim['margin'])}.</p>")
    parts.append(f"<p><b>Rule</b> <code>{_e(claim['rule'])}</code>: {md(claim.get('rule_text', ''))}</p>")
    if claim.get("decide"):
        parts.append(f"<p><b>What would decide it:</b> {md(claim['decide'])}.</p>")
    if claim.get("source_size"):
        parts.append(source_size_html(claim["source_size"]))
    if claim.get("readings"):
        rd = claim["readings"]
        parts.append(f"<p><b>Readings of the source</b> ({md(rd['what'])}): "
                     + "; ".join(f"{md(v['reading'])} ({md(v['where'])}): {_e(str(v['verdict']))}" for v in rd["verdicts"])
                     + f". Verdict depends on the reading: {'yes' if rd['depends'] else 'no'}.</p>")
    parts.append(f"<p><b>Size:</b> {md(claim.get('size', ''))}.</p>"
                 f"<p><b>Settings:</b> {md(claim.get('settings', ''))}.</p></section>")
    return "\n".join(p for p in parts if p)


def source_size_html(entry: dict) -> str:
    """A claim's verdict at the source's size (``rfl.source_size``) as a paragraph: a badge per
    recorded verdict when current, a grey "stale" or "not run" one otherwise, then its line."""
    from .source_size import CURRENT, line

    if entry["state"] == CURRENT:
        badges = "".join(badge(r["verdict"]) for r in entry["results"])
    else:
        badges = f'<span class="badge v-{slug(entry["state"])}" style="background:#eaeef2;color:#1f2328">{_e(entry["state"])}</span>'
    return f'<p class="source-size">{badges}{inline_markdown(line(entry))}</p>'


#: keys a config mapping shows first (a spec file's JSON sorts keys alphabetically)
LEAD_KEYS = ("algorithm", "rule", "scheme")


def _compact(v) -> str:
    """A config value in one line: mappings as ``key=value, ...`` (LEAD_KEYS first), lists in
    brackets."""
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k not in LEAD_KEYS)
        return ", ".join(f"{k}={_compact(v[k])}" for k in keys)
    if isinstance(v, list):
        return "[" + ", ".join(_compact(x) for x in v) + "]"
    return str(v)


def run_config_html(config: dict, experiment: str) -> str:
    """The config of the runs of ``experiment``: dataset (problem, params, seed), rounds, seeds,
    batch size, step, geometry and methods."""
    exp = config.get("experiments", {}).get(experiment)
    if exp is None:
        return f"<h3><code>{_e(experiment)}</code></h3><p>not an experiment of this config</p>"
    ds = config.get("datasets", {}).get(exp["dataset"], {})
    items = [("dataset", f"<code>{_e(exp['dataset'])}</code> (problem <code>{_e(ds.get('problem', '?'))}</code>,"
                         f" seed {_e(ds.get('seed', '?'))})"),
             ("dataset params", _e(_compact(ds.get("params", {})))),
             ("rounds", _e(exp.get("rounds", "?"))),
             ("seeds", _e(_compact(exp.get("seeds", [])))),
             ("batch size", _e(exp.get("batch_size", "?"))),
             ("step", _e(_compact(exp.get("step", {}))))]
    if exp.get("geometry"):
        items.append(("geometry", _e(_compact(exp["geometry"]))))
    items.append(("methods", "<br>".join(_e(_compact(m)) for m in exp.get("methods", []))))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f'<h3>Experiment <code>{_e(experiment)}</code></h3><dl class="run">{body}</dl>'


def document(title: str, body: str) -> str:
    """A self-contained HTML page (inline style, no scripts, no external resources)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def page_html(name: str, page: dict, claims: list[dict], config: dict) -> str:
    """The page ``name`` (an entry of ``pages``): its claims, then the config of their runs."""
    if "figure" in page:
        head = (f"<h1>{_e(page['title'])}</h1><p class=\"sub\">Figure <code>{_e(name)}</code>: the claims "
                "that speak about it, their verdicts, and the config of its runs.</p>")
        experiments = [config["figures"][name]["experiment"]]
    else:
        head = (f"<h1>{_e(page['title'])}</h1><p class=\"sub\">Claims of this section that name no "
                "figure: their verdicts and the config of their runs.</p>")
        experiments = []
    experiments += [e for c in claims for e in c.get("experiments", [])]
    experiments = list(dict.fromkeys(experiments))
    body = [head]
    body += [claim_html(c) for c in claims] or ["<p>No claim of the config speaks about this figure.</p>"]
    body.append("<h2>Config of its runs</h2>")
    body += [run_config_html(config, e) for e in experiments]
    return document(page["title"], "\n".join(body))


def markdown_page(text: str, title: str) -> str:
    """A Markdown document (REPRODUCTION.md) as a self-contained HTML page, raw HTML escaped,
    "nan" as NA; a table cell that holds a verdict alone shows it as its coloured badge."""
    body = block_markdown(text)
    for verdict in VERDICTS:
        body = body.replace(f"<td>{_e(verdict)}</td>", f"<td>{badge(verdict)}</td>")
    return document(title, body)


def write_pages(config: dict, out_md) -> list[Path]:
    """Every claim page of ``config`` from ``claims.json`` beside ``out_md``, and ``out_md``
    rendered to HTML beside it (same stem); returns the files written."""
    out_md = Path(out_md)
    records: dict[str, list] = {}       # a claim on a sweep: one record per setting
    for c in json.loads(out_md.with_name("claims.json").read_text()):
        records.setdefault(c["id"], []).append(c)
    written = []
    for name, page in pages(config).items():
        path = page_path(out_md, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with io.atomic_path(path) as tmp:
            tmp.write_text(page_html(name, page, [r for c in page["claims"] for r in records[c]], config))
        written.append(path)
    html_path = out_md.with_suffix(".html")
    with io.atomic_path(html_path) as tmp:
        tmp.write_text(markdown_page(out_md.read_text(), "Reproduction report"))
    return written + [html_path]
