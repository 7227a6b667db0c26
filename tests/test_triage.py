"""The report's summary for triage (rfl/reporting/triage.py) and the papers' order of the report
(rfl/reporting/order.py), on constructed claim records and configs: the counts per verdict per
source, the order of the groups and rows, each non-green row's one-line reason, the short sizes
and setting deviations, the links to the claim pages, the coloured verdicts of the HTML
landing page, and the numbered menus; what a reader sees, read back with an HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from rfl.claims.verdicts import NOT, NOT_RUN, PARTLY, REPRODUCED, UNDECIDED, VERDICTS
from rfl.reporting import claim_pages as cp
from rfl.reporting import order
from rfl.reporting import triage as T


# ---- a constructed config and its records ---------------------------------------------------------
def _exp(dataset="sph", rounds=300, seeds=(0,), **kw):
    return {"dataset": dataset, "rounds": rounds, "seeds": list(seeds), "batch_size": 8,
            "step": {"rule": "fixed", "alpha": 0.3}, "methods": [{"algorithm": "rfedags", "K": [1, 5]}], **kw}


def _config():
    """Two sources declared paper first; the config declares the newer version's figure and
    claim first, and Figure 1(b) before Figure 1(a): the report follows the sources' order, then
    the figures' (within a source, where a figure's first claim is declared)."""
    paper_size = {"source": "Table 1", "S": 200, "rounds": 2500, "seeds": 4}
    return {
        "datasets": {"sph": {"problem": "cpesph", "seed": 1, "params": {"d": 8, "S": 20, "N": 10}},
                     "big": {"problem": "cpesph", "seed": 1, "params": {"d": 8, "S": 200, "N": 10}}},
        "experiments": {
            "newer_exp": _exp(),
            "fixed_b": _exp(paper_size=paper_size),
            "fixed_a": _exp(paper_size=paper_size, source={
                "ref": "Section 5", "settings": {"step": {"value": {"rule": "fixed", "alpha": 0.04}, "at": "Table 1"}},
                "reasons": {"step": "the curves level off"}}),
            "at_size": _exp(dataset="big", rounds=2500, seeds=(0, 1, 2, 3), paper_size=paper_size),
            "more_seeds": _exp(dataset="big", rounds=2500, seeds=(0, 1, 2), paper_size={**paper_size, "seeds": 1}),
        },
        "figures": {"fig_newer": {"experiment": "newer_exp", "title": "PCA, newer (authors' Figure 10)",
                                  "report_category": "Newer"},
                    "fig1b": {"experiment": "fixed_b", "title": "CFMSPD, fixed step (Figure 1b)",
                              "report_category": "Figure 1"},
                    "fig1a": {"experiment": "fixed_a", "title": "CPESph, fixed step (Figure 1a)",
                              "report_category": "Figure 1"}},
        "sources": {"paper": {"title": "The paper", "sections": ["Figure 1", "Identity"]},
                    "newer": {"title": "The newer version", "sections": ["Newer"]},
                    "li_ma": {"title": "Li & Ma", "sections": []},
                    "zhang": {"title": "Zhang et al.", "sections": ["Zhang"]}},
        "claims": {
            "newer_c": {"section": "Newer", "statement": "newer converges", "rule": "converges", "experiments": ["newer_exp"]},
            "b_rate": {"section": "Figure 1", "statement": "1(b) converges", "rule": "converges", "experiments": ["fixed_b"]},
            "a_rate": {"section": "Figure 1", "statement": "1(a) converges", "rule": "converges", "experiments": ["fixed_a"]},
            "identity": {"section": "Identity", "statement": "equal at K = 1", "rule": "converges",
                         "experiments": ["at_size"]},
            "own": {"section": "Figure 1", "source": "newer", "statement": "own beside 1(a)", "rule": "converges",
                    "experiments": ["fixed_a"]},
            "swept": {"section": "Zhang", "statement": "each setting converges", "rule": "converges",
                      "experiments": ["more_seeds"]},
            "measured": {"section": "Figure 1", "statement": "a table", "rule": "converges", "experiments": ["fixed_a"]},
        },
    }


def _record(cid, verdict=REPRODUCED, config=None, **kw):
    config = config or _config()
    claim = config["claims"][cid]
    figures = [f for f, fig in config["figures"].items() if fig["experiment"] in claim["experiments"]]
    rec = {"id": cid, "section": claim["section"], "ref": "", "statement": claim["statement"], "context": "",
           "rule": "converges", "params": {}, "rule_text": "the rule", "experiments": claim["experiments"],
           "figures": figures, "verdict": verdict, "rows": [], "notes": [], "decide": None, "margin": None,
           "size": "s", "settings": "t", "setting_deviations": []}
    return {**rec, **kw}


def _records(config=None):
    """In declaration order; the swept claim once per setting, the measurement without a verdict."""
    c = config or _config()
    return [_record("newer_c", UNDECIDED, c, decide="K = 5: 1 seed; at least 3 decide it",
                    margin="K = 5: ratio 0.8 [0, inf], claim <= 1 (1 seed, t)"),
            _record("b_rate", NOT, c, margin="K = 1: decrease 3 [2.5, 3.5], claim >= 2 (5 seeds, t); "
                                             "K = 5: decrease 1.2 [1.1, 1.3], claim >= 2 (5 seeds, t)"),
            _record("a_rate", REPRODUCED, c, margin="K = 5: decrease 9 [8, 10], claim >= 2 (5 seeds, t)"),
            _record("identity", NOT_RUN, c,
                    decide="its data files: ratings.dat not found; set RFL_ANCHORS_MIRROR=<dir> or run with internet"),
            _record("own", PARTLY, c, notes=["a larger K than those run: the point is not seen"]),
            _record("swept", REPRODUCED, c, setting="mu=0.1"),
            _record("swept", PARTLY, c, setting="mu=1", margin="`e`, K = 2: last 0.5, claim <= 0.01"),
            _record("measured", None, c)]


class _Page(HTMLParser):
    """Text, tags and table rows of an HTML page (escaped text comes back unescaped)."""

    def __init__(self, page):
        super().__init__(convert_charrefs=True)
        self.text, self.tags, self.rows = [], [], []
        self._cell = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []
            self.rows[-1].append(self._cell)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1][-1] = "".join(self._cell).strip()
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


# ---- reasons ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case, fails", [
    ("ratio 1.2 [1.1, 1.3], claim <= 1 (5 seeds, t)", True),
    ("ratio 0.9 [0.8, 1.05], claim <= 1 (5 seeds, t)", False),       # straddles: open, not failing
    ("ratio 0.9 [0.8, 0.95], claim <= 1 (5 seeds, t)", False),
    ("ratio 1.0 [1.0, 1.1], claim < 1 (5 seeds, t)", True),          # strict: on the bound fails
    ("ratio 1.0 [1.0, 1.1], claim <= 1 (5 seeds, t)", False),
    ("decrease 1.5 [1.2, 1.8], claim >= 2 (3 seeds, t)", True),
    ("decrease 2.5 [2.2, 2.8], claim >= 2 (3 seeds, t)", False),
    ("decrease 2 [1.9, 2], claim > 2", True),
    ("slope 1.27 [1.21, 1.33], claim in [1.7, 2.3] (1024 seeds, normal)", True),
    ("slope 2.5 [2.4, 2.6], claim in [1.7, 2.3]", True),
    ("slope 2 [1.9, 2.1], claim in [1.7, 2.3]", False),
    ("largest |ours - paper| (RFedAvg, r = 5) 0.277, claim <= 0.02", True),   # a value, no interval
    ("largest |ours - paper| (RFedAvg, r = 5) 0.01, claim <= 0.02", False),
    ("gap 1.5e-03, claim <= 1e-02", False),
    ("gap 1.5e-01, claim <= 1e-02", True),
    ("steps in the paper's direction 7 of 16, claim all", None),      # no region it can read
    ("ratio nan [nan, nan], claim <= 1", None),
])
def test_a_margin_case_fails_when_its_numbers_lie_wholly_outside_the_claim(case, fails):
    assert T.outside(case) is fails


def test_cases_split_at_top_level_semicolons_and_merge_their_own():
    margin = "a (x; y): 1, claim <= 2; `b; c`: 3 [1, 4], claim <= 2; d: 5, claim <= 2"
    assert T.split_cases(margin) == ["a (x; y): 1, claim <= 2", "`b; c`: 3 [1, 4], claim <= 2", "d: 5, claim <= 2"]
    decide = "K = 5: 1 seed; at least 3 decide it; K = 10: the interval straddles the bound; about 6 seeds would"
    assert T.split_cases(decide, merge=True) == ["K = 5: 1 seed; at least 3 decide it",
                                                 "K = 10: the interval straddles the bound; about 6 seeds would"]


def test_each_non_green_verdict_gets_its_one_line_reason():
    recs = {(r["id"], r.get("setting")): r for r in _records()}
    # undecided: the open case's margin and what would decide it
    assert T.reason(recs[("newer_c", None)]) == \
        "K = 5: ratio 0.8 [0, inf], claim <= 1 (1 seed, t) — 1 seed; at least 3 decide it"
    # not reproduced: the failing case (the deciding number against its threshold), not the first case
    assert T.reason(recs[("b_rate", None)]) == "K = 5: decrease 1.2 [1.1, 1.3], claim >= 2 (5 seeds, t)"
    assert T.reason(recs[("identity", None)]) == \
        "data absent: ratings.dat not found; set RFL_ANCHORS_MIRROR=<dir> or run with internet"
    assert T.reason(recs[("own", None)]) == "a larger K than those run: the point is not seen"
    assert T.reason(recs[("swept", "mu=1")]) == "`e`, K = 2: last 0.5, claim <= 0.01"
    assert T.reason(recs[("a_rate", None)]) == "" and T.reason(recs[("measured", None)]) == ""


def test_more_failing_or_open_cases_are_counted_and_a_long_reason_is_cut():
    r = _record("b_rate", NOT, margin="; ".join(f"K = {k}: x {k} [{k}, {k}], claim <= 0" for k in (1, 2, 3)))
    assert T.reason(r) == "K = 1: x 1 [1, 1], claim <= 0 (+2 more failing)"
    r = _record("newer_c", UNDECIDED, decide="K = 1: more rounds; K = 2: more seeds", margin="K = 2: y 1, claim <= 2")
    assert T.reason(r) == "K = 1: more rounds (+1 more open)"          # no margin case labelled K = 1
    long = _record("b_rate", NOT, margin="z " * 400 + "9, claim <= 1")
    assert len(T.reason(long)) == T.MAX_REASON and T.reason(long).endswith("…")


def test_at_toy_size_the_reason_says_so_and_what_the_rule_gave():
    r = _record("b_rate", UNDECIDED, notes=["- K = 1: ok", T.TOY_NOTE + "not reproduced (no evidence about the paper)."],
                decide="the same claim at the default config's size")
    assert T.reason(r) == "toy size: its sizes decide nothing (the rule gives: not reproduced)"


# ---- sizes and settings in short form -------------------------------------------------------------
def test_sizes_read_ours_over_the_papers_and_seeds_in_words():
    c = _config()
    assert T.short_size(c, ["fixed_b"]) == "S 20/200, rounds 300/2500, 1 of 4 seeds"
    assert T.short_size(c, ["at_size"]) == "paper size"
    assert T.short_size(c, ["more_seeds"]) == "3 seeds (paper 1)"
    assert T.short_size(c, ["newer_exp"]) == "size not declared"
    c["experiments"]["fixed_b"]["rounds"] = 400                # a value that varies: listed once each
    assert T.short_size(c, ["fixed_a", "fixed_b"]) == "S 20/200, rounds 300, 400/2500, 1 of 4 seeds"


def test_setting_deviations_short_without_their_reasons():
    c = _config()
    assert T.short_settings(c, ["fixed_a"]) == "step alpha 0.3 (source 0.04)"
    assert T.short_settings(c, ["fixed_a", "fixed_a", "fixed_b"]) == "step alpha 0.3 (source 0.04)"
    assert T.short_settings(c, ["fixed_b"]) == ""


# ---- groups, counts and order ---------------------------------------------------------------------
def test_rows_are_grouped_by_source_then_figure_in_the_papers_order_sweeps_last():
    gs = T.groups(_config(), _records())
    assert [g.key for g in gs] == ["paper", "newer", "li_ma", "zhang", T.SWEEPS]
    rows = {g.key: [(r.record["id"], r.figure) for r in g.rows] for g in gs}
    # Figure 1(b)'s claim is declared first; the identity (no figure) is declared after both figures
    assert rows["paper"] == [("b_rate", "Figure 1(b): CFMSPD, fixed step"), ("a_rate", "Figure 1(a): CPESph, fixed step"),
                             ("identity", "Identity")]
    assert rows["newer"] == [("newer_c", "Authors' Figure 10: PCA, newer"), ("own", "Figure 1(a): CPESph, fixed step")]
    assert rows["zhang"] == [] and gs[3].swept == 2                 # its claims are all sweeps
    assert rows["li_ma"] == [] and gs[2].swept == 0
    assert [r.record.get("setting") for r in gs[4].rows] == ["mu=0.1", "mu=1"]
    assert "measured" not in {r.record["id"] for g in gs for r in g.rows}
    counts = {g.key: g.counts() for g in gs}
    assert counts["paper"] == {REPRODUCED: 1, PARTLY: 0, NOT: 1, UNDECIDED: 0, NOT_RUN: 1}
    assert counts["newer"] == {REPRODUCED: 0, PARTLY: 1, NOT: 0, UNDECIDED: 1, NOT_RUN: 0}
    assert counts[T.SWEEPS] == {REPRODUCED: 1, PARTLY: 1, NOT: 0, UNDECIDED: 0, NOT_RUN: 0}


def test_each_row_links_to_the_page_and_section_of_its_claim():
    gs = T.groups(_config(), _records())
    links = {(r.record["id"], r.record.get("setting")): r.page for g in gs for r in g.rows}
    assert links[("b_rate", None)] == "claims/fig1b.html#b_rate"
    assert links[("own", None)] == "claims/fig1a.html#own"
    assert links[("identity", None)] == "claims/section-identity.html#identity"
    assert links[("swept", "mu=1")] == "claims/section-zhang.html#swept-mu-1"
    # the anchors are the ids the claim pages give their sections
    page = cp.claim_html(_record("swept", setting="mu=1"))
    assert 'id="swept-mu-1"' in page


def test_the_markdown_summary_has_counts_legend_and_one_table_per_group():
    lines = T.summary_lines(_config(), _records())
    cells = lambda ln: [c.strip() for c in ln.strip("|").split(" | ")]          # noqa: E731
    assert cells(lines[0]) == ["source", *VERDICTS, "claims"]
    assert cells(lines[2]) == ["The paper", "1", "0", "1", "0", "1", "3"]
    assert cells(lines[3]) == ["The newer version", "0", "1", "0", "1", "0", "2"]
    assert cells(lines[4]) == ["Zhang et al.", "0", "0", "0", "0", "0", "0 (+2 in Sweeps)"]
    assert not any(ln.startswith("| Li & Ma") for ln in lines)       # a source without a claim: no row
    assert cells(lines[5])[0].startswith("Sweeps") and cells(lines[6]) == ["**all**", "**2**", "**2**", "**1**",
                                                                            "**1**", "**1**", "**7**"]
    assert [ln for ln in lines if ln.startswith("### ")] == [
        "### The paper", "### The newer version", "### Sweeps: claims judged once per setting"]
    rows = [cells(ln) for ln in lines if ln.count(" | ") == 4 and not ln.startswith("| figure")]
    assert rows[0] == ["Figure 1(b): CFMSPD, fixed step", "[1(b) converges](claims/fig1b.html#b_rate)", NOT,
                       "K = 5: decrease 1.2 [1.1, 1.3], claim >= 2 (5 seeds, t)", "S 20/200, rounds 300/2500, 1 of 4 seeds"]
    assert rows[1][0] == "Figure 1(a): CPESph, fixed step" and rows[1][2:4] == [REPRODUCED, ""]
    assert rows[1][4] == "S 20/200, rounds 300/2500, 1 of 4 seeds; step alpha 0.3 (source 0.04)"
    assert rows[5][0] == "Zhang" and rows[6][0] == ""                 # a figure or section named once
    assert any("1 measurement(s) judge nothing" in ln for ln in lines)


# ---- the HTML landing page ------------------------------------------------------------------------
def test_the_landing_page_colours_every_verdict_and_opens_each_claims_page():
    c = _config()
    page = _Page(T.summary_html(c, _records()))
    badges = [(a["class"], a["style"]) for t, a in page.tags if t == "span" and "badge" in a.get("class", "")]
    for verdict in VERDICTS:                     # each verdict in its own colour, as on the claim pages
        bg, fg = cp.BADGES[verdict]
        assert ("badge v-" + cp.slug(verdict), f"background:{bg};color:{fg}") in badges
    counts = [r for r in page.rows if r and r[0] in ("The paper", "The newer version", "Zhang et al.", "all")]
    assert counts[0] == ["The paper", "1", "0", "1", "0", "1", "3"]
    assert counts[-1] == ["all", "2", "2", "1", "1", "1", "7"]
    claim_rows = [r for r in page.rows if len(r) == 5 and r[0] != "figure"]
    assert [r[1] for r in claim_rows][:3] == ["1(b) converges", "1(a) converges", "equal at K = 1"]
    assert claim_rows[0][2] == NOT and claim_rows[0][3] == "K = 5: decrease 1.2 [1.1, 1.3], claim >= 2 (5 seeds, t)"
    # each claim opens its page in Snakemake's report, in the page's place in the menus
    links = [a for t, a in page.tags if t == "a"]
    menu = order.menu(c)
    first = links[0]
    assert first["href"] == "claims/fig1b.html#b_rate"
    assert 'p.endsWith("/claims/fig1b.html")' in first["onclick"] and '"#b_rate"' in first["onclick"]
    assert f'category:"{menu["figures"]["fig1b"][0]}"' in first["onclick"]
    assert f'subcategory:"{menu["figures"]["fig1b"][1]}"' in first["onclick"]
    assert first["onclick"].endswith("return false;")
    identity = next(a for a in links if "section-identity" in a["href"])
    assert f'subcategory:"{menu["sections"]["Identity"]}"' in identity["onclick"]
    # Markdown in a reason renders (a code span, no raw backtick), and nothing says nan
    text = "".join(page.text)
    assert "`" not in text and ("code", {}) in page.tags
    assert "nan" not in T.summary_html(c, [_record("b_rate", NOT, margin="r nan [nan, nan], claim <= 1")]).lower()


def test_the_landing_rst_passes_the_html_through_jinja_and_docutils():
    """Snakemake renders the global report description with Jinja, then docutils: the summary
    comes out as it went in (a "{{" in it is not a Jinja expression)."""
    jinja2 = pytest.importorskip("jinja2")
    core = pytest.importorskip("docutils.core")
    c = _config()
    many = [_record("b_rate", NOT, c, id=f"b{i}", margin=f"K = {i}: x {i} [{i}, {i}], claim <= 0") for i in range(300)]
    fragment = T.summary_html(c, _records() + many).replace("The paper", "The {{ paper }}")
    rst = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(T.landing_rst(fragment)).render()
    body = core.publish_parts(rst, writer_name="html")["html_body"]       # as Snakemake calls it
    assert 'class="rfl-summary"' in body and "The {{ paper }}" in body
    assert "system-message" not in body             # (docutils refuses a line over 10,000 characters)
    assert _Page(body).rows == _Page(fragment).rows and len(_Page(body).rows) > 300


# ---- the papers' order: names and menus -----------------------------------------------------------
@pytest.mark.parametrize("title, name", [
    ("CPESph, fixed step (Figure 1a)", "Figure 1(a): CPESph, fixed step"),
    ("School data, r = 3 (Figure 3)", "Figure 3: School data, r = 3"),
    ("RFedAGS against K (authors' Figure 10)", "Authors' Figure 10: RFedAGS against K"),
    ("Participation (authors' Figures 7-8)", "Participation (authors' Figures 7-8)"),
    ("Federated kPCA, digits", "Federated kPCA, digits"),
])
def test_a_figure_is_named_as_its_paper_names_it(title, name):
    assert order.figure_name("f", {"title": title}) == name


def test_menus_are_numbered_in_the_papers_order():
    """Snakemake sorts its menus alphabetically: the numbers keep the papers' order (the
    paper's figures before the newer version's, though the config declares the newer first)."""
    c = _config()
    m = order.menu(c)
    assert list(m["categories"].values()) == ["1 Reproduction report", "2 Figure 1", "3 Newer",
                                              "4 Claims without a figure"]
    assert m["figures"] == {"fig1b": ("2 Figure 1", "1 Figure 1(b): CFMSPD, fixed step"),     # as declared
                            "fig1a": ("2 Figure 1", "2 Figure 1(a): CPESph, fixed step"),
                            "fig_newer": ("3 Newer", "1 Authors' Figure 10: PCA, newer")}
    assert m["sections"] == {"Identity": "1 Identity", "Zhang": "2 Zhang"}
    shown = [name for name in m["categories"].values()]
    assert sorted(shown) == shown                           # an alphabetical sort keeps the order
    assert order.numbered([str(i) for i in range(12)])[9:11] == ["10 9", "11 10"]
    assert sorted(order.numbered(list("bca" * 4))) == order.numbered(list("bca" * 4))


def test_a_config_without_sources_has_one_group_and_keeps_its_figure_order():
    c = _config()
    del c["sources"], c["claims"]["own"]["source"]
    assert order.sources(c) == {order.DEFAULT_SOURCE: "Claims"}
    assert order.figure_order(c) == ["fig_newer", "fig1b", "fig1a"]
    gs = T.groups(c, _records(c))
    assert [g.key for g in gs] == [order.DEFAULT_SOURCE, T.SWEEPS]


def test_source_errors_name_the_key_and_what_is_allowed():
    c = _config()
    assert order.source_errors(c) == []
    c["claims"]["own"]["source"] = "nobody"
    c["claims"]["swept"]["section"] = "Elsewhere"
    c["sources"]["zhang"]["sections"].append("Newer")
    errors = order.source_errors(c)
    assert errors == [
        "config key sources.zhang.sections.1: 'Newer' is listed by source 'newer' too; allowed: each section "
        "under one source",
        "config key claims.own.source: 'nobody' is not a declared source; allowed: paper, newer, li_ma, zhang",
        "config key claims.swept.section: 'Elsewhere' is listed by no source; allowed: a section of "
        "sources.<id>.sections, or a claims.swept.source of paper, newer, li_ma, zhang"]


def test_restore_puts_back_the_orders_a_spec_files_json_sorted():
    c = _config()
    spec = {"config": {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in c.items()},
            "claim_order": list(c["claims"]), "figure_order": list(c["figures"]), "source_order": list(c["sources"])}
    restored = order.restore(spec)
    assert [list(restored[k]) for k in ("claims", "figures", "sources")] == \
        [list(c["claims"]), list(c["figures"]), list(c["sources"])]
    assert order.menu(restored) == order.menu(c)
