"""The claim pages read back (rfl/reporting/claim_pages.py): each page parsed with a real HTML
parser, split into its claims' sections, and compared with the claims.json records and the
config it was written from: each section's verdict, its setting, its margin and its
setting-deviation line (no section shows another's), every claim of a sweep once per
setting, the config of each experiment's runs, and text with <, >, & and quotes coming back
exactly as written (no tag of its own, no double escaping). The assertions read text, not
markup, so they hold whether a field is rendered as escaped text or as Markdown."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.reporting import claim_pages as cp

#: text that breaks a page if it is not escaped, and is plain text in Markdown too
NASTY = "x < 1 & y > 2, \"q\" 'r' <script>alert(1)</script> <b>bold</b>"
#: the tags a page may contain (its own markup, and what Markdown renders)
OWN_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "section", "span",
            "code", "b", "div", "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd", "br",
            "ul", "ol", "li", "em", "strong"}


class Page(HTMLParser):
    """A page's claim sections (id attribute, text, badge text) and its run-config lists
    (experiment -> {dt text: dd text}), with every tag seen."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.sections, self.configs, self.tags, self.text = [], {}, [], []
        self.cells, self.stray = [], []     # table cells' text; text in a table outside a cell
        self._section = self._badge = self._h3 = self._dt = self._dd = None
        self._table = self._cell = False
        self._experiment = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "table":
            self._table = True
        elif tag in ("td", "th"):
            self._cell = True
            self.cells.append("")
        if tag == "section" and "claim" in (a.get("class") or ""):
            self._section = {"id": a.get("id"), "text": "", "badge": None}
            self.sections.append(self._section)
        elif tag == "span" and "badge" in (a.get("class") or "") and self._section is not None:
            self._badge = ""
        elif tag == "h3":
            self._h3 = ""
        elif tag == "dt":
            self._dt = ""
        elif tag == "dd":
            self._dd = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = False
        elif tag in ("td", "th"):
            self._cell = False
        if tag == "section":
            self._section = None
        elif tag == "span" and self._badge is not None:
            self._section["badge"] = self._badge
            self._badge = None
        elif tag == "h3":
            self._experiment = self._h3.removeprefix("Experiment ").strip()
            self.configs[self._experiment] = {}
            self._h3 = None
        elif tag == "dd":
            self.configs[self._experiment][self._dt] = self._dd
            self._dt = self._dd = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell:
            self.cells[-1] += data
        elif self._table and data.strip():
            self.stray.append(data)
        if self._section is not None:
            self._section["text"] += data
        if self._badge is not None:
            self._badge += data
        if self._h3 is not None:
            self._h3 += data
        if self._dd is not None:
            self._dd += data
        elif self._dt is not None:
            self._dt += data


def _config():
    base = {"dataset": "sph", "rounds": 40, "batch_size": 8, "seeds": [0, 1, 2],
            "step": {"rule": "fixed", "alpha": 0.5},
            "methods": [{"algorithm": "rfedproj", "K": [2], "server_step": [0.5, 1.5]}]}
    return {"datasets": {"sph": {"problem": "cpesph", "seed": 7, "params": {"d": 8, "S": 4}},
                         "gr": {"problem": "kpca", "seed": 11, "params": {"d": 5, "p": 2}}},
            "experiments": {"sweep": {**base, "geometry": {"retraction": "exp", "transport": "proj"}},
                            "other": {**base, "dataset": "gr", "rounds": 90, "batch_size": 3, "seeds": [4, 5],
                                      "step": {"rule": "decaying", "alpha0": 2.0},
                                      "methods": [{"algorithm": "rfedavg", "K": [6]}]}},
            "figures": {"fig_s": {"experiment": "sweep", "title": "The sweep"}},
            "claims": {"conv": {"section": "Figure 9", "statement": "converges", "rule": "converges",
                                "experiments": ["sweep"]},
                       "rate": {"section": "Figure 9", "statement": "linear rate", "rule": "linear_rate",
                                "experiments": ["sweep"]},
                       "lone": {"section": "Elsewhere", "statement": "a claim without a figure",
                                "rule": "converges", "experiments": ["other"]}}}


def _record(cid, verdict, **kw):
    rec = {"id": cid, "section": "Figure 9", "ref": "Theorem 1", "statement": f"statement of {cid}",
           "context": "", "rule": "converges", "params": {}, "rule_text": "falls by the factor",
           "experiments": ["sweep"], "figures": ["fig_s"], "verdict": verdict, "rows": [], "notes": [],
           "decide": None, "margin": None, "size": f"size of {cid}", "settings": f"settings of {cid}"}
    return {**rec, **kw}


#: what each record says, distinct per record, to see that no section shows another's
RECORDS = [
    _record("conv", REPRODUCED, setting="server_step=0.5", margin="RFedProj-K=2: last / round 0 9.5e-07, "
            "claim <= 0.01", settings="step alpha 0.5 (source 0.04; reason: the curves level off)"),
    _record("conv", NOT, setting="server_step=1.5", margin="RFedProj-K=2: last / round 0 0.73, claim <= 0.01",
            settings="step alpha 0.5 (source 0.04; reason: the curves level off)"),
    _record("rate", PARTLY, margin="rate 0.991 per round, claim < 0.99", settings="no source settings declared"),
    _record("lone", UNDECIDED, section="Elsewhere", experiments=["other"], figures=[],
            decide="about 815 rounds"),
]


def _write(tmp_path, records, config=None):
    out_md = tmp_path / "REPRODUCTION.md"
    out_md.write_text("# Reproduction report\n")
    out_md.with_name("claims.json").write_text(json.dumps(records))
    cp.write_pages(config or _config(), out_md)
    return {p.stem: Page(p.read_text()) for p in (tmp_path / cp.PAGES_DIR).glob("*.html")}


def _expected_section(rec):
    """(anchor, badge, texts the section shows) of one record."""
    anchor = rec["id"] + (f"-{cp.slug(rec['setting'])}" if rec.get("setting") else "")
    title = rec["statement"] + (f" [setting {rec['setting']}]" if rec.get("setting") else "")
    shows = [title, rec["ref"], rec["rule"], rec["rule_text"], rec["size"], rec["settings"]]
    shows += [rec[k] for k in ("margin", "decide", "context") if rec.get(k)]
    return anchor, rec["verdict"], shows


def test_each_section_shows_its_own_verdict_setting_margin_and_settings_line(tmp_path):
    pages = _write(tmp_path, RECORDS)
    assert set(pages) == {"fig_s", "section-elsewhere"}
    # the figure's page: the sweep claim once per setting, in record order, then the next claim
    for name, records in (("fig_s", RECORDS[:3]), ("section-elsewhere", RECORDS[3:])):
        sections = pages[name].sections
        assert len(sections) == len(records), name
        for sec, rec in zip(sections, records):
            anchor, verdict, shows = _expected_section(rec)
            assert sec["id"] == anchor
            assert sec["badge"] == verdict
            for text in shows:
                assert text in sec["text"], (anchor, text)
            # nothing another record says (its setting, margin, size, verdict) is in this section
            for other in RECORDS:
                if other is rec:
                    continue
                if other.get("setting") and other["setting"] != rec.get("setting"):
                    assert f"[setting {other['setting']}]" not in sec["text"]
                if other.get("margin"):
                    assert other["margin"] not in sec["text"], (anchor, other["margin"])
                assert other["size"] not in sec["text"] or other["id"] == rec["id"]
    # the margin and the deviation line under their labels
    conv_a = pages["fig_s"].sections[0]["text"]
    assert conv_a.index("Margin") < conv_a.index(RECORDS[0]["margin"])
    assert conv_a.index("Settings") < conv_a.index(RECORDS[0]["settings"])
    assert "Margin" not in pages["section-elsewhere"].sections[0]["text"]     # a claim without one


def test_the_verdict_words_are_the_records_verdicts_one_badge_each(tmp_path):
    """Four claims with four different verdicts, written in a shuffled order: each page's badges
    are its records' verdicts in record order (a badge for a claim that judges nothing says
    "measurement")."""
    cfg = _config()
    cfg["claims"] = {f"c{i}": {"section": "Figure 9", "statement": "s", "rule": "converges",
                               "experiments": ["sweep"]} for i in range(5)}
    verdicts = [PARTLY, None, NOT, REPRODUCED, UNDECIDED]
    records = [_record(f"c{i}", v) for i, v in enumerate(verdicts)]
    page = _write(tmp_path, records[::-1], cfg)["fig_s"]   # claims.json order is not page order
    assert [s["id"] for s in page.sections] == [f"c{i}" for i in range(5)]   # the config's order
    assert [s["badge"] for s in page.sections] == [v if v is not None else "measurement" for v in verdicts]


def test_every_text_of_a_claim_comes_back_exactly_and_adds_no_tag(tmp_path):
    """NASTY in every text field: the page's text holds it verbatim (escaped once: the parser
    gives back the original, not '&amp;' and not a tag), and the page has no tag of its own
    beyond the page's markup."""
    fields = ("statement", "ref", "context", "section", "rule", "rule_text", "margin", "decide", "size",
              "settings", "setting")
    rec = _record("conv", NOT, **{f: f"{f}: {NASTY}" for f in fields},
                  rows=[{f"col {NASTY}": f"cell {NASTY}", "n": 2}],
                  readings={"what": f"what: {NASTY}", "depends": False,
                            "verdicts": [{"reading": f"reading: {NASTY}", "where": f"where: {NASTY}",
                                          "verdict": REPRODUCED}]})
    cfg = _config()
    cfg["figures"]["fig_s"]["title"] = f"title: {NASTY}"
    cfg["datasets"]["sph"]["params"]["note"] = f"param: {NASTY}"
    cfg["claims"] = {"conv": cfg["claims"]["conv"]}
    page = _write(tmp_path, [rec], cfg)["fig_s"]
    assert set(page.tags) <= OWN_TAGS, set(page.tags) - OWN_TAGS
    (sec,) = page.sections
    for f in fields:
        assert f"{f}: {NASTY}" in sec["text"], f
    for text in (f"col {NASTY}", f"cell {NASTY}", f"what: {NASTY}", f"reading: {NASTY}", f"where: {NASTY}"):
        assert text in sec["text"], text
    whole = "".join(page.text)
    assert f"title: {NASTY}" in whole and f"param: {NASTY}" in whole
    assert "&amp;" not in whole and "&lt;" not in whole and "&quot;" not in whole   # escaped once only


def test_a_claim_id_with_quotes_stays_inside_its_attribute(tmp_path):
    """The anchor is an attribute: a quote in the claim's id or setting must not end it."""
    cid = 'c"> <i x="1'
    setting = 'k="v" & <w>'
    html = cp.claim_html(_record(cid, REPRODUCED, setting=setting))
    page = Page(cp.document("t", html))
    (sec,) = page.sections
    assert sec["id"] == f"{cid}-{cp.slug(setting)}"
    assert "i" not in page.tags
    assert f"[setting {setting}]" in sec["text"]


def test_the_config_of_each_experiment_is_its_own(tmp_path):
    """The config lists under 'Config of its runs' are the config's values for that experiment
    (two experiments whose values all differ), on the page of the claim that reads them."""
    cfg = _config()
    rec = _record("conv", REPRODUCED, experiments=["other"])
    pages = _write(tmp_path, [rec, _record("rate", NOT, experiments=["sweep", "other"]), RECORDS[3]], cfg)
    fig = pages["fig_s"].configs
    assert list(fig) == ["sweep", "other"]      # the figure's experiment first, then the claims', each once
    assert list(pages["section-elsewhere"].configs) == ["other"]
    for name, dl in fig.items():
        exp = cfg["experiments"][name]
        ds = cfg["datasets"][exp["dataset"]]
        assert dl["rounds"] == str(exp["rounds"])
        assert dl["batch size"] == str(exp["batch_size"])
        assert dl["seeds"] == "[" + ", ".join(map(str, exp["seeds"])) + "]"
        assert dl["dataset"] == f"{exp['dataset']} (problem {ds['problem']}, seed {ds['seed']})"
        assert dl["dataset params"] == ", ".join(f"{k}={v}" for k, v in ds["params"].items())
        assert dl["step"] == ", ".join(f"{k}={v}" for k, v in exp["step"].items())
        assert dl.get("geometry") == (", ".join(f"{k}={v}" for k, v in exp["geometry"].items())
                                      if "geometry" in exp else None)
        for m in exp["methods"]:
            assert f"algorithm={m['algorithm']}, K={m['K']}" in dl["methods"]
    assert "server_step=[0.5, 1.5]" in fig["sweep"]["methods"]
    assert pages["section-elsewhere"].configs["other"] == fig["other"]


def test_an_experiment_the_config_does_not_have_is_named_as_such():
    page = Page(cp.document("t", cp.run_config_html(_config(), "gone")))
    assert "gone" in "".join(page.text) and "not an experiment of this config" in "".join(page.text)
    assert page.configs == {"gone": {}}


def test_a_sparse_config_and_record_show_question_marks_not_none():
    """A config with no figures, claims or datasets, a dataset without a seed, a record without
    a ref: the pages still form, and what is unknown reads '?' or is left out, never 'None'."""
    assert cp.pages({}) == {}
    assert list(cp.pages({"claims": {"c": {"section": "S", "statement": "s", "rule": "r",
                                           "experiments": ["e"]}}})) == ["section-s"]
    cfg = {"experiments": {"e": {"dataset": "d"}}}
    dl = Page(cp.document("t", cp.run_config_html(cfg, "e"))).configs["e"]
    assert dl["dataset"] == "d (problem ?, seed ?)" and dl["rounds"] == "?" and dl["batch size"] == "?"
    assert dl["methods"] == "" and "geometry" not in dl
    cfg["datasets"] = {"d": {"problem": "cpesph"}}
    dl = Page(cp.document("t", cp.run_config_html(cfg, "e"))).configs["e"]
    assert dl["dataset"] == "d (problem cpesph, seed ?)"
    rec = _record("c", REPRODUCED, experiments=["e"])
    del rec["ref"]
    (sec,) = Page(cp.document("t", cp.claim_html(rec))).sections
    assert "None" not in sec["text"] and "Figure 9" in sec["text"]
    page = Page(cp.page_html("section-s", {"title": "S", "section": "S", "claims": ["c"]}, [rec], cfg))
    assert "Config of its runs" in "".join(page.text) and list(page.configs) == ["e"]


def test_claims_json_holds_the_judged_records_with_numpy_numbers_as_numbers(tmp_path, monkeypatch):
    """rfl.reporting.reproduction.write_report writes the judged records to claims.json (the
    pages' input): numpy scalars become JSON numbers (NaN stays NaN), and a page written from
    it shows the record's verdict and numbers."""
    import numpy as np

    from rfl.claims import judge
    from rfl.reporting import reproduction

    rec = _record("conv", NOT, setting="server_step=0.5", margin="0.73 > 0.01",
                  rows=[{"K": np.int64(2), "rate": np.float64(0.73125), "last": np.float64("nan"),
                         "ok": np.bool_(False)}])
    monkeypatch.setattr(judge, "judge_all", lambda spec: [rec])
    monkeypatch.setattr(judge, "sections", lambda results: ["## Figure 9"])
    from rfl.reporting import triage
    monkeypatch.setattr(triage, "summary_lines", lambda config, results: ["(summary)"])
    out_md = tmp_path / "REPRODUCTION.md"
    reproduction.write_report({"runs": {}, "config": {}}, out_md)
    (back,) = json.loads(out_md.with_name("claims.json").read_text())
    row = back["rows"][0]
    assert (row["K"], row["rate"], row["ok"]) == (2, 0.73125, False) and row["last"] != row["last"]
    assert type(row["K"]) is int and type(row["rate"]) is float
    assert {k: v for k, v in back.items() if k != "rows"} == {k: v for k, v in rec.items() if k != "rows"}
    cfg = _config()
    cfg["claims"] = {"conv": cfg["claims"]["conv"]}
    cp.write_pages(cfg, out_md)
    (sec,) = Page((tmp_path / cp.PAGES_DIR / "fig_s.html").read_text()).sections
    assert sec["badge"] == NOT and "0.7312" in sec["text"] and "0.73 > 0.01" in sec["text"]


def test_evidence_cells_hold_the_rows_values_and_nothing_stands_between_them():
    rows = [{"method": "RFedAGS-K=1", "levelled": True, "rate": 0.5}, {"method": "RSD", "levelled": False}]
    page = Page(cp.document("t", cp.claim_html(_record("c", REPRODUCED, rows=rows))))
    assert page.cells == ["method", "levelled", "rate", "RFedAGS-K=1", "yes", "0.5", "RSD", "no", "n/a"]
    assert page.stray == []


def test_the_report_page_has_its_title():
    html = cp.markdown_page("# Reproduction report\n\nx < y & z\n", "Reproduction report")
    assert "<title>Reproduction report</title>" in html and "x < y & z" in "".join(Page(html).text)
