"""The HTML report (`snakemake --report`) in a real headless browser: every figure beside its
claim page, every claim's statement and verdict rendered (scripts/check_report.py).

Marked ``browser`` and skipped unless Chromium, the ``websockets`` package and the outputs of
a finished smoke run (``snakemake --cores 2 --configfile config/smoke.yaml`` in this checkout)
are there: it writes the report of that run (~30 s) and drives Chromium through it. Leave it
out with ``pytest -m "not browser"``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import check_report  # noqa: E402

SMOKE_CLAIMS = REPO / ".smoke" / "paper_tables" / "claims.json"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(check_report.find_chromium() is None, reason="needs Chromium on PATH"),
    pytest.mark.skipif(importlib.util.find_spec("websockets") is None, reason="needs websockets"),
    pytest.mark.skipif(not (SMOKE_CLAIMS.exists() and (REPO / ".snakemake" / "metadata").is_dir()),
                       reason="needs a finished smoke run in this checkout (snakemake --configfile config/smoke.yaml)"),
]


def test_every_figure_claim_and_verdict_is_rendered_in_the_report(tmp_path):
    report = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_report.py"),
                           "--configfile", "config/smoke.yaml", "--report", str(report),
                           "--screenshot", str(tmp_path / "report.png")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 failure(s)" in done.stdout
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_check_fails_when_a_claim_is_missing_from_the_report(tmp_path):
    """The check is not vacuous: a claim whose statement the report does not show fails."""
    config = _smoke_config()          # as the workflow ran it: the report's menus number what ran
    claims = json.loads(SMOKE_CLAIMS.read_text())
    claims[0] = {**claims[0], "statement": "a statement no page shows"}
    report = tmp_path / "report.html"
    subprocess.run(["snakemake", "--configfile", "config/smoke.yaml", "--report", str(report)],
                   cwd=REPO, check=True, capture_output=True)
    failures = check_report.check(report, config, claims, check_report.find_chromium())
    assert failures and all("a statement no page shows" in f for f in failures)
    from rfl.reporting.claim_pages import pages                 # its figures' pages, or its section's
    pages_of_claim = [n for n, p in pages(config).items() if claims[0]["id"] in p["claims"]]
    assert pages_of_claim
    assert len([f for f in failures if "is not on its page" in f]) == len(pages_of_claim)


# ---- the landing page: the summary for triage, and the menus in the papers' order -------------------
_ROWS = ("Array.from(document.querySelectorAll({sel})).map(r => Array.from(r.cells).map(c => c.innerText.trim()))")
_MENU = ("Array.from(document.querySelectorAll('li > a > span')).map(s => s.innerText.trim())"
         ".filter(t => {keys}.includes(t))")
#: the text of every HTML result of the report as the browser parses it (its data URI decoded)
_PAGES_TEXT = """Object.keys(results).filter(k => k.endsWith('.html')).map(k => {
  const uri = results[k].data_uri, b64 = uri.slice(uri.indexOf('base64,') + 7);
  const html = new TextDecoder().decode(Uint8Array.from(atob(b64), c => c.charCodeAt(0)));
  const doc = new DOMParser().parseFromString(html, 'text/html');
  return [k, doc.body ? doc.body.innerText || doc.body.textContent : ''];
})"""


def _smoke_config():
    from rfl import config as rflconfig
    from rfl.workflow import absent_data, without_skipped

    config = rflconfig.load(REPO / "config" / "smoke.yaml")
    return without_skipped(config, absent_data(config))


def test_the_report_opens_on_the_summary_with_counts_reasons_colours_and_the_papers_order(tmp_path):
    """The landing page of the smoke run's report: the counts per verdict per source, each
    claim's verdict in its colour with its reason, a link that opens the claim's page; the
    Figures menu in the papers' order with the papers' names; no page says nan or shows a raw
    backtick."""
    import re

    from rfl.claims.verdicts import VERDICTS
    from rfl.reporting import order, triage
    from rfl.reporting.claim_pages import BADGES

    config = _smoke_config()
    claims = json.loads(SMOKE_CLAIMS.read_text())
    report = tmp_path / "report.html"
    subprocess.run(["snakemake", "--configfile", "config/smoke.yaml", "--report", str(report)],
                   cwd=REPO, check=True, capture_output=True)
    groups = [g for g in triage.groups(config, claims) if g.rows or g.swept]
    menu = order.menu(config)
    browser = check_report.Browser(check_report.find_chromium())
    try:
        browser.navigate(report.resolve().as_uri())
        browser.wait_for("typeof app !== 'undefined' && document.querySelector('.rfl-summary') !== null",
                         "the summary on the report's landing page")
        landing = browser.eval("document.querySelector('.rfl-summary').innerText")
        # the counts: one row per source (and the sweeps), one column per verdict, as the records say
        counts = browser.eval(_ROWS.format(sel=json.dumps(".rfl-summary table.counts tr")))
        assert counts[0] == ["source", *VERDICTS, "claims"]
        assert counts[1:-1] == [[g.title, *map(str, g.counts().values()), triage._n_claims(g)] for g in groups]
        assert counts[-1] == ["all", *(str(sum(r["verdict"] == v for r in claims)) for v in VERDICTS),
                              str(sum(r["verdict"] is not None for r in claims))]
        # every verdict badge in its colour
        badges = browser.eval("Array.from(document.querySelectorAll('.rfl-summary .badge'))"
                              ".map(b => [b.innerText.trim(), getComputedStyle(b).backgroundColor])")
        rgb = {v: "rgb({}, {}, {})".format(*(int(bg[i:i + 2], 16) for i in (1, 3, 5))) for v, (bg, _) in BADGES.items()}
        assert badges and all(colour == rgb[text] for text, colour in badges), badges
        # the rows: each claim's statement, verdict and one-line reason, in the summary's order
        rows = browser.eval(_ROWS.format(sel=json.dumps(".rfl-summary table.claims tbody tr")))
        records = [r.record for g in groups for r in g.rows]
        assert [r[2] for r in rows] == [rec["verdict"] for rec in records]
        assert [r[3] for r in rows] == [triage.reason(rec).replace("`", "") for rec in records]
        assert all(r[3] for r, rec in zip(rows, records) if rec["verdict"] != "reproduced")
        # a claim's link opens its page in the report, in the page's menu entry
        first = records[0]
        browser.eval("document.querySelector('.rfl-summary table.claims a').click(), true")
        text = browser.frame_text("data:")
        assert first["statement"] in text
        assert browser.eval("app.state.navbarMode") == "subcategory"
        # the menus: categories and each category's figures in the papers' order, the papers' names
        browser.eval("app.setView({navbarMode: 'menu'}), true")
        shown = browser.wait_for(_MENU.replace("{keys}", "Object.keys(categories)") + ".length > 1 && "
                                 + _MENU.replace("{keys}", "Object.keys(categories)"), "the report's menu")
        assert shown == [c for c in menu["categories"].values() if c in shown]
        assert shown[0] == menu["categories"][order.REPORT_CATEGORY]
        for cat in dict.fromkeys(cat for cat, _ in menu["figures"].values()):
            browser.eval(f"app.showCategory({json.dumps(cat)}), true")
            keys = f"Object.keys(categories[{json.dumps(cat)}])"
            subs = browser.wait_for(f"{_MENU.replace('{keys}', keys)}.length === {keys}.length && "
                                    f"{_MENU.replace('{keys}', keys)}", f"the entries of {cat}")
            figures = [f for f in order.figure_order(config) if menu["figures"][f][0] == cat]
            assert subs == [menu["figures"][f][1] for f in figures]
        # no page of the report says nan or shows a raw backtick
        pages = browser.eval(_PAGES_TEXT)
        assert len(pages) > len(config["figures"])
        pages.append(["landing", landing])
        nan = re.compile(r"(?<![A-Za-z0-9_])nan(?![A-Za-z0-9_])", re.I)
        bad = [(k, "nan") for k, t in pages if nan.search(t)] + [(k, "`") for k, t in pages if "`" in t]
        assert not bad, bad
    finally:
        browser.close()
