"""The README's statements about the settings experiments run, read from the README and set
against what config/config.yaml runs (``rfl.settings.effective``): a statement that no longer
holds, or a README paragraph that no longer makes it, fails here."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl.settings import effective

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def readme() -> str:
    """README.md with its whitespace collapsed (paragraphs wrap anywhere)."""
    return re.sub(r"\s+", " ", (REPO / "README.md").read_text())


@pytest.fixture(scope="module")
def cfg() -> dict:
    return rflconfig.load(REPO / "config" / "config.yaml")


def _stated(readme: str, pattern: str) -> re.Match:
    m = re.search(pattern, readme)
    assert m, f"the README no longer states: {pattern}"
    return m


def _exps(cfg: dict, *patterns: str) -> list[str]:
    names = [e for e in cfg["experiments"] if any(fnmatch.fnmatch(e, p) for p in patterns)]
    assert names, patterns
    return names


def _schemes(cfg: dict, name: str, algorithm: str) -> set:
    v = effective(cfg, name, f"{algorithm}.participation")
    return set(v) if isinstance(v, list) else {v}


def test_the_pcastief_studies_run_the_stated_step_rounds_geometry_and_participation(readme, cfg):
    m = _stated(readme, r"the `PCAStief_Syn` studies \(`pca_stiefel_agents_\*`, `pca_stiefel_datasize_\*`, "
                        r"`pca_stiefel_dim_\*`\) run step ([0-9.e-]+) on our cost \(their ([0-9.e-]+)\), (\d+) "
                        r"rounds, with Manopt's Stiefel defaults of their scripts, the (QR) retraction and the "
                        r"(projection) transport, and their option-2 participation \(`(\w+)`, p_i ~ U\(0, 1\)\)")
    ours, theirs, rounds, retraction, transport, scheme = m.groups()
    assert float(ours) == pytest.approx(2 * float(theirs))          # their cost is twice ours
    for e in _exps(cfg, "pca_stiefel_agents_*", "pca_stiefel_datasize_*", "pca_stiefel_dim_*"):
        assert effective(cfg, e, "step") == {"rule": "fixed", "alpha": float(ours)}, e
        assert cfg["experiments"][e]["source"]["settings"]["step"]["value"]["alpha"] == float(ours), e
        assert cfg["experiments"][e]["rounds"] == int(rounds), e
        assert effective(cfg, e, "retraction") == retraction.lower(), e
        assert effective(cfg, e, "transport") == transport, e
        assert _schemes(cfg, e, "rfedags") == {scheme}, e


def test_the_ags_vs_tm_stress_test_runs_the_stated_settings(readme, cfg):
    m = _stated(readme, r"`pca_stiefel_ags_vs_tm` runs step ([0-9.e-]+) \(their ([0-9.e-]+)\) with the (QR) "
                        r"retraction and the (projection) transport, every agent")
    ours, theirs, retraction, transport = m.groups()
    assert float(ours) == pytest.approx(2 * float(theirs))
    e = "pca_stiefel_ags_vs_tm"
    assert effective(cfg, e, "step") == {"rule": "fixed", "alpha": float(ours)}
    assert (effective(cfg, e, "retraction"), effective(cfg, e, "transport")) == (retraction.lower(), transport)
    assert _schemes(cfg, e, "rfedags") == _schemes(cfg, e, "rfedavg") == {"full"}


def test_the_mnist_figures_run_the_stated_participation_weights_and_correction(readme, cfg):
    m = _stated(readme, r"RFedAGS weights its participants by the estimated probabilities \(`(\w+)`, "
                        r"`RFedAGSP.m`\), the baselines RFedAvg, RFedSVRG and RFedProj average theirs plainly "
                        r"\(`(\w+)`, `RFedAvg_.m`, `RFedSVRG_.m`, `RFedProj_.m`\), and RFedSVRG forms its server "
                        r"gradient as `RFedSVRG_.m` does \(`correction: (\w+)`\); step ([0-9.e-]+), B = N/2, "
                        r"the exponential map and parallel transport")
    ags, baselines, correction, step = m.groups()
    for e in _exps(cfg, "mnist_methods_*", "mnist_k_*", "mnist_participation_*"):
        assert _schemes(cfg, e, "rfedags") == {ags}, e
        assert effective(cfg, e, "step") == {"rule": "fixed", "alpha": float(step)}, e
        assert (effective(cfg, e, "retraction"), effective(cfg, e, "transport")) == ("exp", "parallel"), e
    for e in _exps(cfg, "mnist_methods_*"):
        for alg in ("rfedavg", "rfedsvrg", "rfedproj"):
            assert _schemes(cfg, e, alg) == {baselines}, (e, alg)
        assert effective(cfg, e, "rfedsvrg.correction") == correction, e


def test_every_rfedsvrg_under_partial_participation_runs_the_correction_the_readme_names(readme, cfg):
    m = _stated(readme, r"Under Bernoulli joins the experiments that stand for the authors' scripts run their "
                        r"server gradient \(`correction: authors`\): ([^;]+); `(\w+)` runs Li & Ma's "
                        r"\(`all_agents`\)")
    stated = {pat: "authors" for pat in re.findall(r"`([\w*]+)`", m.group(1))}
    stated[m.group(2)] = "all_agents"
    partial = sorted({e for e, x in cfg["experiments"].items() for mth in x["methods"]
                      if mth["algorithm"] == "rfedsvrg" and mth.get("participation") is not None})
    assert partial
    for e in partial:
        said = [v for pat, v in stated.items() if fnmatch.fnmatch(e, pat)]
        assert said, f"{e} runs RFedSVRG under partial participation; the README does not say how"
        assert effective(cfg, e, "rfedsvrg.correction") == said[0], e
    for pat in stated:                                   # no name the config does not have
        assert _exps(cfg, pat)


def test_the_straggler_study_runs_the_stated_agents_factor_probability_and_round_time(readme, cfg):
    m = _stated(readme, r"three stragglers among (\d+) agents at (\d+)x, p = ([0-9.]+) under Bernoulli joins, "
                        r"against s = (\d+) agents uniformly, round time = (sum|max)")
    agents, factor, p, s, mode = m.groups()
    e = "partbias_lazy"
    assert effective(cfg, e, "time") == {"round": mode, "factor": int(factor), "stragglers": f"3 of {agents}"}
    stragglers = cfg["experiments"][e]["time"]["cost"]["stragglers"]["agents"]
    for mth in cfg["experiments"][e]["methods"]:
        part = mth["participation"]
        if isinstance(part, int):
            assert part == int(s)
        else:
            assert [part["probabilities"][i] for i in stragglers] == [float(p)] * 3
            assert sum(part["probabilities"]) == pytest.approx(int(s))


def test_lrmc_runs_the_stated_geometry_and_participation(readme, cfg):
    _stated(readme, r"LRMC runs their Cayley retraction and transport and their Bernoulli joins "
                    r"\(`bernoulli_estimated`\), with every agent beside them")
    e = "lrmc_grass_syn"
    assert (effective(cfg, e, "retraction"), effective(cfg, e, "transport")) == ("cayley", "cayley")
    assert _schemes(cfg, e, "rfedags") == {"bernoulli_estimated", "full"}


def test_cpesph_decaying_runs_the_stated_reading_of_tables_beta_and_the_other_beside_it(readme, cfg):
    m = _stated(readme, r"We use beta = ([0-9.]+); the other reading, beta = ([0-9.]+), runs beside it as "
                        r"`(\w+)` \(its source declares both readings\)")
    ours, other, variant = m.groups()
    assert effective(cfg, "cpesph_decaying", "step")["beta"] == float(ours)
    assert effective(cfg, variant, "step")["beta"] == float(other)
    assert cfg["experiments"][variant]["reading_of"] == {"experiment": "cpesph_decaying", "setting": "step"}
    declared = cfg["experiments"]["cpesph_decaying"]["source"]["settings"]["step"]["readings"]
    assert sorted(r["beta"] for r in declared) == sorted([float(ours), float(other)])
