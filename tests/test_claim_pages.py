"""The HTML report's claim pages (rfl/reporting/claim_pages.py) on constructed claims.json
records: which pages a config has, the verdict badges, the evidence table, the config of the
runs, and HTML escaping of every text taken from the config or a rule."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.reporting import claim_pages as cp


def _config():
    exp = {"dataset": "sph", "rounds": 40, "batch_size": 8, "seeds": [0, 1, 2],
           "step": {"rule": "fixed", "alpha": 0.5}, "geometry": {"retraction": "normalize", "transport": "parallel"},
           "methods": [{"algorithm": "rfedags", "K": [1, 3]}, {"algorithm": "rfedavg", "K": [3]}]}
    return {"datasets": {"sph": {"problem": "cpesph", "seed": 7, "params": {"d": 8, "S": 4, "N": 20}},
                         "td": {"problem": "lsa", "seed": 3, "params": {"setting": "heterogeneous"}}},
            "experiments": {"fixed": exp, "decaying": {**exp, "step": {"rule": "decaying", "alpha0": 1.0}},
                            "lsa_het": {**exp, "dataset": "td", "rounds": 200, "geometry": None}},
            "figures": {"fig_a": {"experiment": "fixed", "title": "Sphere, fixed", "report_category": "Figure 1"},
                        "fig_d": {"experiment": "decaying", "title": "Sphere, decaying"}},
            "claims": {"linear": {"section": "Figure 1", "statement": "converges linearly", "rule": "linear_rate",
                                  "experiments": ["fixed"]},
                       "decaying": {"section": "Figure 1", "statement": "decaying is more accurate",
                                    "rule": "decaying_more_accurate",
                                    "experiments": {"fixed": "fixed", "decaying": "decaying"}},
                       "only_d": {"section": "Figure 1", "statement": "named", "rule": "linear_rate",
                                  "experiments": ["fixed"], "figures": ["fig_d"]},
                       "bias": {"section": "Federated TD(0) / LSA", "statement": "bias as predicted",
                                "rule": "linear_rate", "experiments": ["lsa_het"]},
                       "bias2": {"section": "Federated TD(0) / LSA", "statement": "second", "rule": "linear_rate",
                                 "experiments": ["lsa_het"]}}}


def _record(cid="c1", verdict=REPRODUCED, **kw):
    rec = {"id": cid, "section": "Figure 1", "ref": "Theorem 4.3", "statement": "RFedAGS converges linearly",
           "context": "", "rule": "linear_rate", "params": {}, "rule_text": "rate below 0.99 per round",
           "experiments": ["fixed"], "figures": ["fig_a"], "verdict": verdict, "rows": [], "notes": [],
           "decide": None, "size": "at the paper's size"}
    return {**rec, **kw}


class _Text(HTMLParser):
    """The text of a page, and its tags with their attributes (a real HTML parser: escaped
    text comes back unescaped, a stray tag comes back as a tag)."""

    def __init__(self, page):
        super().__init__(convert_charrefs=True)
        self.text, self.tags, self.cells = [], [], []
        self._in_td = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_td = tag in ("td", "th")
        if self._in_td:
            self.cells.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in_td = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_td:
            self.cells[-1] += data


# ---- which pages ----------------------------------------------------------------------------
def test_pages_are_one_per_figure_then_one_per_section_of_claims_without_a_figure():
    pages = cp.pages(_config())
    assert list(pages) == ["fig_a", "fig_d", "section-federated-td-0-lsa"]
    # a claim speaks about the figures of its experiments, or the ones it names
    assert pages["fig_a"]["claims"] == ["linear", "decaying"]
    assert pages["fig_d"]["claims"] == ["decaying", "only_d"]
    # where each page sits in the report's menus: numbered in the papers' order (Snakemake
    # sorts the menus alphabetically), REPRODUCTION.html's category first
    assert (pages["fig_a"]["category"], pages["fig_a"]["subcategory"]) == ("2 Figure 1", "1 Sphere, fixed")
    assert pages["fig_d"]["category"] == "3 Figures"          # the config's default category
    lsa = pages["section-federated-td-0-lsa"]
    assert lsa["claims"] == ["bias", "bias2"] and lsa["category"] == "4 " + cp.NO_FIGURE_CATEGORY
    assert lsa["subcategory"] == "1 Federated TD(0) / LSA"
    assert str(cp.page_path("out/paper_tables/REPRODUCTION.md", "fig_a")) == "out/paper_tables/claims/fig_a.html"


def test_two_sections_with_one_slug_get_two_pages():
    cfg = _config()
    cfg["claims"]["other"] = {**cfg["claims"]["bias"], "section": "Federated TD(0) -- LSA"}
    names = [n for n in cp.pages(cfg) if n.startswith("section-")]
    assert names == ["section-federated-td-0-lsa", "section-federated-td-0-lsa-2"]


# ---- badges ----------------------------------------------------------------------------------
@pytest.mark.parametrize("verdict, label, colour", [
    (REPRODUCED, "reproduced", "#1a7f37"), (PARTLY, "partly reproduced", "#bf8700"),
    (NOT, "not reproduced", "#cf222e"), (UNDECIDED, "undecided at this size", "#6e7781"),
    (None, "measurement", "#ddf4ff")])
def test_each_verdict_has_its_own_coloured_badge(verdict, label, colour):
    page = cp.page_html("fig_a", cp.pages(_config())["fig_a"], [_record(verdict=verdict)], _config())
    badges = [a for t, a in _Text(page).tags if t == "span" and "badge" in a.get("class", "")]
    assert len(badges) == 1
    assert f"background:{colour}" in badges[0]["style"]
    assert badges[0]["class"] == "badge v-" + label.replace(" ", "-")
    assert label in _Text(page).text


def test_the_verdicts_and_measurements_have_distinct_colours():
    from rfl.claims.verdicts import VERDICTS
    assert set(cp.BADGES) == set(VERDICTS) | {None}
    assert len({bg for bg, _ in cp.BADGES.values()}) == len(VERDICTS) + 1


# ---- the claim's content ----------------------------------------------------------------------
def test_a_claim_shows_ref_rule_size_decide_and_notes():
    rec = _record(verdict=UNDECIDED, decide="about 815 rounds at H = 1000",
                  notes=["seed 2 **diverged**", "", "- K = 1: undecided", "- K = 3: ok"],
                  context="Median over seeds.")
    page = cp.claim_html(rec)
    text = " ".join(_Text(page).text)
    for expected in ("RFedAGS converges linearly", "Theorem 4.3", "linear_rate", "rate below 0.99 per round",
                     "at the paper's size", "about 815 rounds at H = 1000", "Median over seeds."):
        assert expected in text
    assert "<strong>diverged</strong>" in page        # notes are Markdown lines, lists stay lists
    assert "<li>K = 1: undecided</li>" in page and "<li>K = 3: ok</li>" in page
    assert "What would decide it" in text
    assert "What would decide it" not in cp.claim_html(_record())


def test_a_claim_shows_its_setting_deviations_and_readings_escaped():
    rec = _record(settings="step alpha 0.3 (source 0.04; reason: <curves> level off) (source: s.m)",
                  readings={"what": "Table 1's beta", "depends": True,
                            "verdicts": [{"reading": "step beta 0.1", "verdict": REPRODUCED, "where": "e"},
                                         {"reading": "step beta 10", "verdict": UNDECIDED, "where": "e_reading1"}]})
    page = cp.claim_html(rec)
    text = " ".join(_Text(page).text)
    assert "step alpha 0.3 (source 0.04; reason: <curves> level off) (source: s.m)" in text
    assert "<curves>" not in page                      # escaped
    assert (f"step beta 0.1 (e): {REPRODUCED}; step beta 10 (e_reading1): {UNDECIDED}. "
            f"Verdict depends on the reading: yes.") in text
    assert "Readings of the source" not in " ".join(_Text(cp.claim_html(_record())).text)


def test_evidence_table_has_a_header_and_one_row_per_record_with_formatted_cells():
    rows = [{"K": 1, "rate": 0.912345678, "levelled": True, "note": "ok"},
            {"K": 3, "rate": float("nan"), "levelled": False, "extra": "x"}]
    page = cp.claim_html(_record(rows=rows))
    p = _Text(page)
    assert sum(t == "tr" for t, _ in p.tags) == 3
    # the columns are the union of the rows' keys, in first-seen order; a cell without a value
    # says n/a, its title why, and a line under the table says why for each kind
    assert p.cells == ["K", "rate", "levelled", "note", "extra",
                       "1", "0.9123", "yes", "ok", "n/a",
                       "3", "n/a", "no", "n/a", "x"]
    titles = [a.get("title") for t, a in p.tags if t == "td" and "na" in a.get("class", "").split()]
    assert titles == [cp.NA_WHY["missing"], cp.NA_WHY["nan"], cp.NA_WHY["missing"]]
    text = "".join(p.text)
    assert cp.NA_WHY["missing"] in text and cp.NA_WHY["nan"] in text and cp.NA_WHY["none"] not in text
    assert "nan" not in text.lower().replace("n/a", "")


def test_no_rows_no_table():
    assert "<table" not in cp.claim_html(_record(rows=[]))


def test_the_config_of_the_runs_is_on_the_page():
    cfg = _config()
    page = cp.page_html("fig_d", cp.pages(cfg)["fig_d"], [_record(experiments=["fixed", "decaying"])], cfg)
    text = "".join(_Text(page).text)
    # the figure's own experiment first, then the claims' (each once)
    assert text.index("Experiment decaying") < text.index("Experiment fixed")
    assert text.count("Experiment fixed") == 1
    for expected in ("cpesph", "d=8, S=4, N=20", "[0, 1, 2]", "rule=fixed, alpha=0.5",
                     "rule=decaying, alpha0=1.0", "algorithm=rfedags, K=[1, 3]", "algorithm=rfedavg, K=[3]",
                     "retraction=normalize, transport=parallel"):
        assert expected in text, expected
    # a spec file's JSON sorts keys: the algorithm and the step rule still come first
    method = {"K": [2], "algorithm": "rfedproj", "server_step": 1.0}
    cfg["experiments"]["fixed"]["methods"] = [method]
    cfg["experiments"]["fixed"]["step"] = {"alpha": 0.5, "rule": "fixed"}
    text = "".join(_Text(cp.run_config_html(cfg, "fixed")).text)
    assert "algorithm=rfedproj, K=[2], server_step=1.0" in text and "rule=fixed, alpha=0.5" in text
    dl = re.search(r'<h3>Experiment <code>fixed</code></h3><dl class="run">(.*?)</dl>', page).group(1)
    assert "<dt>rounds</dt><dd>40</dd>" in dl and "<dt>batch size</dt><dd>8</dd>" in dl


def test_a_figure_without_claims_says_so_and_still_shows_its_runs():
    cfg = _config()
    cfg["claims"] = {}
    page = cp.page_html("fig_a", cp.pages(cfg)["fig_a"], [], cfg)
    assert "No claim of the config speaks about this figure." in page
    assert "Experiment <code>fixed</code>" in page


# ---- escaping ------------------------------------------------------------------------------------
def test_statement_with_bar_and_angle_brackets_is_escaped():
    rec = _record(statement='error < 1e-3 | K > 1 & "rate" <script>x</script>',
                  rows=[{"a<b": "x|y<z>"}], notes=["a <b>raw</b> note"], rule_text="K < 5",
                  decide="<i>more</i> rounds")
    page = cp.document("t", cp.claim_html(rec))
    p = _Text(page)
    assert not any(t in ("script", "i") for t, _ in p.tags)
    assert sum(t == "b" for t, _ in p.tags) == 4      # the page's own labels: Rule, What would decide it, Size, Settings
    text = "".join(p.text)
    assert 'error < 1e-3 | K > 1 & "rate" <script>x</script>' in text
    assert "x|y<z>" in p.cells and "a<b" in p.cells
    assert "a <b>raw</b> note" in text and "K < 5" in text and "<i>more</i> rounds" in text


def test_title_and_config_values_are_escaped():
    cfg = _config()
    cfg["figures"]["fig_a"]["title"] = "A <em>title</em>"
    cfg["datasets"]["sph"]["params"]["note"] = "<x>"
    page = cp.page_html("fig_a", cp.pages(cfg)["fig_a"], [], cfg)
    assert not any(t in ("em", "x") for t, _ in _Text(page).tags)
    assert "A <em>title</em>" in "".join(_Text(page).text) and "note=<x>" in "".join(_Text(page).text)


# ---- REPRODUCTION.md as HTML, and the files -------------------------------------------------------
def test_markdown_page_renders_tables_and_escapes_raw_html():
    md = "# Report\n\n| where | claim |\n|---|---|\n| Fig 1 | a \\| b |\n\n<script>alert(1)</script>\n"
    p = _Text(cp.markdown_page(md, "Reproduction report"))
    assert ("h1", {}) in p.tags and not any(t == "script" for t, _ in p.tags)
    assert p.cells == ["where", "claim", "Fig 1", "a | b"]


def test_write_pages_writes_every_page_and_the_report_html(tmp_path):
    cfg = _config()
    records = [_record(cid, verdict=v, statement=f"statement of {cid}")
               for cid, v in zip(cfg["claims"], (REPRODUCED, PARTLY, NOT, UNDECIDED, None))]
    out_md = tmp_path / "paper_tables" / "REPRODUCTION.md"
    out_md.parent.mkdir()
    out_md.write_text("# Reproduction report\n")
    (out_md.with_name("claims.json")).write_text(json.dumps(records))
    written = cp.write_pages(cfg, out_md)
    assert sorted(p.name for p in written) == ["REPRODUCTION.html", "fig_a.html", "fig_d.html",
                                               "section-federated-td-0-lsa.html"]
    lsa = (tmp_path / "paper_tables" / "claims" / "section-federated-td-0-lsa.html").read_text()
    assert "statement of bias" in lsa and "statement of bias2" in lsa and "statement of linear" not in lsa
    assert "undecided at this size" in lsa and "measurement" in lsa
    fig_a = (tmp_path / "paper_tables" / "claims" / "fig_a.html").read_text()
    assert "statement of linear" in fig_a and "statement of decaying" in fig_a and "statement of only_d" not in fig_a
