"""An experiment's method settings against its ``source`` (``rfl.settings``) on hand-written
configs: each deviation found from what the config runs (and only those), a deviation without
a reason refused before any work, and the words the report prints for it."""

from __future__ import annotations

import copy
import json

import pytest

from rfl import cli
from rfl import config as rflconfig
from rfl.claims.judge import claim_lines
from rfl.settings import deviations, describe_settings, effective, words

REF = "PCAStief_Syn_numagentincreas.m"


def _at(v):
    return {"value": v, "at": f"{REF}:1"}


def _config() -> dict:
    """Two experiments at their source's settings: RFedAGS alone, and four methods under
    Bernoulli joins with RFedSVRG's correction (St(20, 3): polar and parallelization first)."""
    ds = {"problem": "pca_stiefel", "seed": 1, "params": {"d": 20, "r": 3, "S": 6, "N": 100, "block": 50, "n_blocks": 40}}
    p = [0.5, 0.6, 0.7, 0.8, 0.9, 0.4]
    one = {"dataset": "a6", "rounds": 30, "batch_size": 50, "seeds": [0],
           "geometry": {"retraction": "qr", "transport": "projection"},
           "step": {"rule": "fixed", "alpha": 0.04},
           "methods": [{"algorithm": "rfedags", "K": [5], "participation": {"scheme": "bernoulli_estimated", "probabilities": p}}],
           "source": {"ref": REF, "settings": {
               "step": _at({"rule": "fixed", "alpha": 0.04}), "retraction": _at("qr"),
               "transport": _at("projection"), "rfedags.participation": _at("bernoulli_estimated")}}}
    four = copy.deepcopy(one)
    four["methods"] += [{"algorithm": a, "K": [5], "participation": {"scheme": "bernoulli_mean", "probabilities": p}}
                        for a in ("rfedavg", "rfedsvrg", "rfedproj")]
    four["methods"][2]["correction"] = "authors"
    four["source"]["settings"].update({f"{a}.participation": _at("bernoulli_mean") for a in ("rfedavg", "rfedsvrg", "rfedproj")})
    four["source"]["settings"]["rfedsvrg.correction"] = _at("authors")
    four["source"]["settings"]["rfedproj.server_step"] = _at(1.0)
    return {"datasets": {"a6": ds}, "experiments": {"one": one, "four": four}, "figures": {}}


def test_the_hand_written_config_is_valid_and_at_its_sources_settings():
    cfg = rflconfig.validate(_config())                  # (raises ConfigError if it is not)
    assert deviations(cfg, "one") == deviations(cfg, "four") == []
    assert describe_settings(cfg, ["one", "four"]) == f"at the source's settings (source: {REF})"


def test_effective_reads_the_config_defaults_included():
    cfg = _config()
    exp = cfg["experiments"]["four"]
    del exp["geometry"]                                  # the manifold's first names
    del exp["methods"][2]["correction"]                  # the option's default
    exp["methods"].append({"algorithm": "rfedags", "K": [5]})
    exp["methods"].append({"algorithm": "rfedags", "K": [5], "participation": 3})
    assert effective(cfg, "four", "retraction") == "polar"
    assert effective(cfg, "four", "transport") == "parallelization"
    assert effective(cfg, "four", "rfedsvrg.correction") == "all_agents"
    assert effective(cfg, "four", "rfedproj.server_step") == 1.0
    assert effective(cfg, "four", "rfedags.participation") == ["bernoulli_estimated", "full", "uniform"]
    assert effective(cfg, "four", "time") is None
    exp["time"] = {"cost": {"default": 1, "stragglers": {"agents": [0, 1, 2], "factor": 10}}, "round": "sum"}
    assert effective(cfg, "four", "time") == {"round": "sum", "factor": 10, "stragglers": "3 of 6"}
    with pytest.raises(KeyError):
        effective(cfg, "four", "rfedavg.server_step")    # rfedavg declares no such option


@pytest.mark.parametrize("change, key, actual, source", [
    (lambda e: e["step"].update(alpha=0.3), "step", {"rule": "fixed", "alpha": 0.3}, {"rule": "fixed", "alpha": 0.04}),
    (lambda e: e["geometry"].update(retraction="polar"), "retraction", "polar", "qr"),
    (lambda e: e.pop("geometry"), "retraction", "polar", "qr"),
    (lambda e: e["methods"][1]["participation"].update(scheme="bernoulli_estimated"), "rfedavg.participation",
     "bernoulli_estimated", "bernoulli_mean"),
    (lambda e: e["methods"][2].pop("correction"), "rfedsvrg.correction", "all_agents", "authors"),
    (lambda e: e["methods"][3].update(server_step=0.5), "rfedproj.server_step", 0.5, 1.0),
])
def test_each_kind_of_deviation_is_found_and_only_it(change, key, actual, source):
    cfg = _config()
    change(cfg["experiments"]["four"])
    found = deviations(cfg, "four")
    assert [d[0] for d in found] == [key] + (["transport"] if key == "retraction" and actual == "polar"
                                             and "geometry" not in cfg["experiments"]["four"] else [])
    assert found[0][1:3] == (actual, source) and found[0][3] is None
    assert deviations(cfg, "one") == []


def test_several_schemes_compare_as_a_set_and_a_missing_one_deviates():
    cfg = _config()
    exp = cfg["experiments"]["one"]
    exp["methods"].insert(0, {"algorithm": "rfedags", "K": [5], "participation": 3})
    exp["source"]["settings"]["rfedags.participation"] = _at(["bernoulli_estimated", "uniform"])
    assert deviations(cfg, "one") == []                  # the order of the source's list is free
    exp["source"]["settings"]["rfedags.participation"] = _at(["uniform", "bernoulli_estimated", "bernoulli"])
    assert [d[0] for d in deviations(cfg, "one")] == ["rfedags.participation"]


def test_the_words_name_the_fields_that_differ_and_the_reason():
    assert words("step", {"rule": "fixed", "alpha": 0.3}, {"rule": "fixed", "alpha": 0.04}) == \
        "step alpha 0.3 (source 0.04)"
    assert words("step", {"rule": "decaying", "alpha0": 1.0, "beta": 0.1, "dec": 50},
                 {"rule": "decaying", "alpha0": 1.0, "beta": 10.0, "dec": 50}, "why") == \
        "step beta 0.1 (source 10; reason: why)"
    assert words("step", {"rule": "fixed", "alpha": 1.0}, {"rule": "decaying", "alpha0": 1.0, "beta": 10.0, "dec": 50}) == \
        "step fixed alpha 1 (source decaying alpha0 1, beta 10, dec 50)"
    assert words("retraction", "polar", "qr") == "retraction polar (source qr)"
    assert words("time", {"round": "sum", "factor": 10, "stragglers": "3 of 10"},
                 {"round": "sum", "factor": 10, "stragglers": "3 of 60"}) == "time stragglers 3 of 10 (source 3 of 60)"


def test_describe_settings_with_reasons_groups_and_undeclared():
    cfg = _config()
    for e in ("one", "four"):
        cfg["experiments"][e]["step"]["alpha"] = 0.3
        cfg["experiments"][e]["source"]["reasons"] = {"step": "so that the curves level off"}
    cfg["experiments"]["four"]["geometry"]["retraction"] = "polar"
    cfg["experiments"]["four"]["source"]["reasons"]["retraction"] = "closer to the paper"
    rflconfig.validate(cfg)
    one = f"step alpha 0.3 (source 0.04; reason: so that the curves level off) (source: {REF})"
    assert describe_settings(cfg, ["one"]) == one
    both = describe_settings(cfg, ["one", "four"])
    assert both == (f"one: {one}; four: step alpha 0.3 (source 0.04; reason: so that the curves level "
                    f"off); retraction polar (source qr; reason: closer to the paper) (source: {REF})")
    del cfg["experiments"]["one"]["source"]
    assert describe_settings(cfg, ["one"]) == "no source settings declared"


def test_a_deviation_without_a_reason_is_a_config_error_naming_experiment_and_key():
    cfg = _config()
    cfg["experiments"]["four"]["methods"][1]["participation"]["scheme"] = "bernoulli_estimated"
    with pytest.raises(rflconfig.ConfigError) as err:
        rflconfig.validate(cfg)
    lines = str(err.value).splitlines()[1:]
    assert len(lines) == 1
    assert lines[0].strip().startswith("config key experiments.four.source.settings.rfedavg.participation: ")
    assert "runs bernoulli_estimated, the source bernoulli_mean" in lines[0]
    assert "experiments.four.source.reasons.rfedavg.participation" in lines[0]
    cfg["experiments"]["four"]["source"]["reasons"] = {"rfedavg.participation": "a study of weights"}
    rflconfig.validate(cfg)                              # with its reason: valid


def test_a_stale_reason_and_an_unknown_setting_are_config_errors():
    cfg = _config()
    cfg["experiments"]["one"]["source"]["reasons"] = {"step": "no longer deviates"}
    with pytest.raises(rflconfig.ConfigError, match=r"experiments\.one\.source\.reasons\.step: a reason, "
                                                    r"but the experiment runs the source's value"):
        rflconfig.validate(cfg)
    cfg = _config()
    cfg["experiments"]["one"]["source"]["settings"]["rfedavg.participation"] = _at("full")
    with pytest.raises(rflconfig.ConfigError, match=r"experiments\.one\.source\.settings\.rfedavg\.participation: "
                                                    r"'rfedavg.participation' is no setting of this experiment; "
                                                    r"allowed: step, retraction, transport, time, rfedags.participation"):
        rflconfig.validate(cfg)
    cfg = _config()
    del cfg["experiments"]["one"]["source"]["settings"]["step"]["at"]    # every setting cites its place
    with pytest.raises(rflconfig.ConfigError, match=r"experiments\.one\.source\.settings\.step: 'at' is a required"):
        rflconfig.validate(cfg)


def test_rfl_validate_exits_2_with_one_line_before_any_work(tmp_path, capsys):
    cfg = _config()
    cfg["experiments"]["one"]["step"]["alpha"] = 0.3
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))                     # JSON is YAML
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    bad = [ln for ln in err if "experiments.one.source.settings.step" in ln]
    assert len(bad) == 1 and "runs alpha 0.3, the source alpha 0.04" in bad[0]


def test_the_report_prints_the_deviations_on_the_claim():
    r = {"id": "c", "section": "S", "ref": "", "statement": "a claim", "context": "", "rule": "r",
         "params": {}, "rule_text": "the rule", "experiments": ["e"], "figures": [], "verdict": "reproduced",
         "rows": [], "notes": [], "decide": None, "size": "at the paper's size",
         "settings": "step alpha 0.3 (source 0.04; reason: r) (source: s)"}
    lines = claim_lines(r)
    assert lines[lines.index("Size: at the paper's size.") + 2] == \
        "Settings: step alpha 0.3 (source 0.04; reason: r) (source: s)."
    # (the summary's short form: tests/test_triage.py)


# ---- readings of an ambiguous source ----------------------------------------------------------
def _ambiguous() -> dict:
    """``one`` whose source's step is garbled: 0.04 or 0.4 (it runs 0.04)."""
    cfg = _config()
    step = cfg["experiments"]["one"]["source"]["settings"]["step"]
    step["readings"] = [{"rule": "fixed", "alpha": 0.04}, {"rule": "fixed", "alpha": 0.4}]
    return cfg


def test_readings_add_one_variant_per_reading_not_run_and_are_no_deviation():
    from rfl.settings import readings

    cfg = rflconfig.validate(_ambiguous())
    assert list(cfg["experiments"]) == ["one", "one_reading1", "four"]      # right after it
    variant = cfg["experiments"]["one_reading1"]
    assert variant["step"] == {"rule": "fixed", "alpha": 0.4}
    assert variant["reading_of"] == {"experiment": "one", "setting": "step"}
    assert {k: v for k, v in variant.items() if k not in ("step", "reading_of")} == \
        {k: v for k, v in cfg["experiments"]["one"].items() if k != "step"}
    assert deviations(cfg, "one") == deviations(cfg, "one_reading1") == []
    assert readings(cfg, "one") == [("step", "step alpha 0.04", "one"), ("step", "step alpha 0.4", "one_reading1")]
    assert rflconfig.validate(cfg)["experiments"].keys() == cfg["experiments"].keys()   # idempotent
    assert describe_settings(cfg, ["one"]) == \
        f"step alpha 0.04 (one of the source's readings: alpha 0.04, alpha 0.4) (source: {REF})"
    # a value outside the readings is a deviation again
    raw = _ambiguous()
    raw["experiments"]["one"]["step"]["alpha"] = 0.3
    with pytest.raises(rflconfig.ConfigError, match=r"experiments\.one\.source\.settings\.step: the experiment runs alpha 0\.3"):
        rflconfig.validate(raw)


def test_readings_need_two_distinct_values_on_a_setting_a_variant_can_run():
    cfg = _ambiguous()
    cfg["experiments"]["one"]["source"]["settings"]["step"]["readings"] = [{"rule": "fixed", "alpha": 0.04}] * 2
    with pytest.raises(rflconfig.ConfigError, match=r"experiments\.one\.source\.settings\.step\.readings: .*allowed: two or more distinct"):
        rflconfig.validate(cfg)
    cfg = _config()
    cfg["experiments"]["one"]["source"]["settings"]["rfedags.participation"]["readings"] = ["bernoulli_estimated", "full"]
    with pytest.raises(rflconfig.ConfigError, match=r"rfedags\.participation\.readings: .*allowed"):
        rflconfig.validate(cfg)


def test_the_report_judges_a_claim_on_every_reading_and_says_whether_its_verdict_depends(monkeypatch):
    """A claim on ``one`` judged on its own runs and again on ``one_reading1``'s (a stand-in
    rule: reproduced when the experiment's last excess risk is below 1e-3)."""
    import rfl.claims.judge as judge_module
    from rfl.claims.judge import readings_of

    cfg = rflconfig.validate(_ambiguous())
    cfg["claims"] = {"c": {"section": "S", "statement": "ends low", "rule": "r", "experiments": ["one"]}}
    last = {"one": 1e-4, "one_reading1": 1e-2}

    def judge(spec, cid, claim, setting=None, groups=None):
        e = claim["experiments"][0]
        return {"id": cid, "experiments": [e], "verdict": "reproduced" if last[e] < 1e-3 else "not reproduced"}

    monkeypatch.setattr(judge_module, "judge_claim", judge)
    spec = {"config": cfg, "runs": {}}
    result = judge(spec, "c", cfg["claims"]["c"])
    found = readings_of(spec, result, [result])
    assert found["verdicts"] == [{"reading": "step alpha 0.04", "verdict": "reproduced", "where": "one"},
                                 {"reading": "step alpha 0.4", "verdict": "not reproduced", "where": "one_reading1"}]
    assert found["depends"] is True and REF in found["what"]
    last["one_reading1"] = 1e-5
    assert readings_of(spec, result, [result])["depends"] is False
    r = {"id": "c", "section": "S", "ref": "", "statement": "ends low", "context": "", "rule": "r", "params": {},
         "rule_text": "t", "experiments": ["one"], "figures": [], "verdict": "reproduced", "rows": [], "notes": [],
         "decide": None, "size": "s", "readings": found}
    line = next(ln for ln in claim_lines(r) if ln.startswith("Readings of the source"))
    assert line.endswith("step alpha 0.04 (one): reproduced; step alpha 0.4 (one_reading1): not reproduced. "
                         "Verdict depends on the reading: yes.")
    assert readings_of(spec, {**result, "verdict": None}, [result]) is None        # a measurement


def test_claims_declared_as_readings_of_one_statement_report_their_verdicts():
    from rfl.claims.judge import readings_of

    cfg = rflconfig.validate(_config())
    group = {"what": "the protocol", "claims": {"heldout": "a", "refit": "b"}}
    cfg["claims"] = {k: {"section": "S", "statement": k, "rule": "r", "experiments": ["one"], "readings": group}
                     for k in ("a", "b")}
    spec = {"config": cfg, "runs": {}}
    results = [{"id": "a", "experiments": ["one"], "verdict": "reproduced"},
               {"id": "b", "experiments": ["one"], "verdict": "not reproduced"}]
    found = readings_of(spec, results[0], results)
    assert found == {"what": "the protocol", "depends": True,
                     "verdicts": [{"reading": "heldout", "verdict": "reproduced", "where": "a"},
                                  {"reading": "refit", "verdict": "not reproduced", "where": "b"}]}
    results[1]["verdict"] = "reproduced"
    assert readings_of(spec, results[1], results)["depends"] is False
    for c in cfg["claims"].values():
        c["rule"] = "final_values"                       # a registered rule, for validate
    cfg["claims"]["a"]["readings"] = {"what": "x", "claims": {"one": "a", "other": "nope"}}
    with pytest.raises(rflconfig.ConfigError, match=r"claims\.a\.readings\.claims\.other: 'nope' is not a claim"):
        rflconfig.validate(cfg)
