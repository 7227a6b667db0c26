"""The worked examples of docs/extending.md, executed: a strategy, a manifold and a problem,
each one file in docs/examples/, against the shared contracts; the three as a third-party
plug-in (entry points of an installed distribution, no file of rfl touched) run by the
workflow into a figure; the library example's convergence against its bound; and the
guide's code blocks against the files they quote.

Importing an example defines its class, which registers itself. So that the other test
modules see the registries as rfl ships them, the examples are taken out of the registries
as soon as they are imported and put back only while a test of this module runs
(``declared``); a plug-in's own test suite needs none of this.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl import config as rflconfig
from rfl.algorithms import AgentSampler, Fixed, RFedAGS
from rfl.registry import ALGORITHMS, MANIFOLDS, PROBLEMS
from rfl.testing.manifold import ManifoldContract
from rfl.testing.problem import ProblemCase, ProblemContract
from rfl.problems.base import Problem
from rfl.testing.reference_loops import (REFERENCE_LOOPS, PointwiseOps, reference_loop,
                                             single_point_ops)
from rfl.testing.strategy import CONTRACT_PROBLEMS, ContractProblem, StrategyContract
from _workflow import WORKFLOW_NO_CONFIGS, copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"
GUIDE = REPO / "docs" / "extending.md"
PLUGIN = "rfl_extending_demo"                 # the throw-away distribution's package


def _import(stem: str):
    spec = importlib.util.spec_from_file_location(f"rfl_docs_examples.{stem}", EXAMPLES / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_strategy, _oblique, _mean_direction = (_import(s) for s in ("rfedags_server_step", "oblique",
                                                              "mean_direction"))
RFedAGSServerStep = _strategy.RFedAGSServerStep
Oblique = _oblique.Oblique
MeanDirection = _mean_direction.MeanDirection
EXAMPLE_CLASSES = ((ALGORITHMS, RFedAGSServerStep), (MANIFOLDS, Oblique), (PROBLEMS, MeanDirection))
for _registry, _cls in EXAMPLE_CLASSES:
    _registry.remove(_cls.name)


@contextlib.contextmanager
def declared():
    """The three examples registered, as they are when installed; removed afterwards."""
    for registry, cls in EXAMPLE_CLASSES:
        registry.add(cls)
    try:
        yield
    finally:
        for registry, cls in EXAMPLE_CLASSES:
            registry.remove(cls.name)


@pytest.fixture(autouse=True)
def _examples_declared():
    with declared():
        yield


class _Declared:
    """Parametrise with the examples registered (StrategyContract looks strategies up by name)."""

    def pytest_generate_tests(self, metafunc):
        with declared():
            super().pytest_generate_tests(metafunc)


# ---- b. the manifold ---------------------------------------------------------------------
class TestObliqueManifold(_Declared, ManifoldContract):
    manifolds = Oblique.examples()


def test_oblique_is_a_product_of_spheres():
    """Column i of Exp, Log, the projection and P_M are the sphere's maps on column i, and the
    distance is the product one, sqrt(sum_i d_i^2)."""
    from rfl.manifolds import Sphere

    rng = np.random.default_rng(0)
    M, S = Oblique(6, 3), Sphere(6)
    x, y = M.random_point(rng, 2), M.random_point(rng, 2)
    u = M.projection(x, rng.standard_normal(x.shape))
    for i in range(3):
        close = dict(rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(M.exp(x, u)[..., i], S.exp(x[..., i], u[..., i]), **close)
        np.testing.assert_allclose(M.log(x, y)[..., i], S.log(x[..., i], y[..., i]), **close)
        np.testing.assert_allclose(M.nearest_point(x + u)[..., i], S.nearest_point(x[..., i] + u[..., i]), **close)
    d = np.sqrt(sum(S.dist(x[..., i], y[..., i]) ** 2 for i in range(3)))
    np.testing.assert_allclose(M.dist(x, y), d, rtol=1e-12)
    assert M.dim == 3 * 5 and M.offers("log") and M.offers("nearest_point") and not M.offers("flat")


# ---- c. the problem ----------------------------------------------------------------------
class TestMeanDirectionProblem(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(MeanDirection, dict(MeanDirection.test_params)),
                ProblemCase(MeanDirection, {"d": 7, "S": 2, "N": [5, 5], "noise": 0.1}, seed=1)]


def test_mean_direction_optimum_is_the_normalised_pooled_mean_with_unequal_sizes():
    """With N = [3, 9, 5]: p_j = N_j / 17, F* = -||sum_j p_j m_j|| reached at the normalised
    pooled mean (the plain mean of all 17 samples), and no sphere point is lower."""
    params = {"d": 5, "S": 3, "N": [3, 9, 5], "noise": 0.7, "spread": 0.5}
    arrays = MeanDirection.generate(np.random.default_rng(2), **params)
    problem = MeanDirection.from_arrays(arrays, params)
    samples = np.concatenate([arrays["Z"][j, :n] for j, n in enumerate(params["N"])])
    pooled = samples.mean(axis=0)
    np.testing.assert_allclose(np.linalg.norm(samples, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(arrays["Z"][0, 3:], 0.0)
    np.testing.assert_allclose(problem.closed_form_optimum(), pooled / np.linalg.norm(pooled), rtol=1e-12)
    np.testing.assert_allclose(problem.cost(problem.closed_form_optimum()), -np.linalg.norm(pooled), rtol=1e-12)
    others = problem.manifold.random_point(np.random.default_rng(3), 200)
    assert min(problem.cost(x) for x in others) > -np.linalg.norm(pooled)
    assert MeanDirection.check_params(params) == []
    assert MeanDirection.check_params({**params, "N": [3, 9]})[0][0] == "N"


# ---- a. the strategy ---------------------------------------------------------------------
@reference_loop("rfedags_server_step")
def server_step_loop(problem, x1, step_size, K, rounds, sampler, ops=None, server_step=1.0):
    """Per agent, per local step, on single points: RFedAGS's local stream, then
    x_{t+1} = R_{x_t}(eta_g sum_j p_j zeta^j)."""
    ops = ops or single_point_ops(problem.manifold)
    xs, x_t = [x1], x1
    for t in range(rounds):
        agents = sampler.participants()
        x = {j: x_t.copy() for j in agents}
        zeta = {j: np.zeros_like(x_t) for j in agents}
        for k in range(K):
            batches = sampler.batches(agents, t, k)
            for row, j in enumerate(agents):
                g = problem.minibatch_egrad(x[j][None], np.array([j]), batches[row][None])[0]
                eta = -step_size(t) * ops.euclidean_to_riemannian_gradient(x[j], g)
                zeta[j] = zeta[j] + ops.transport(x[j], x_t, eta)
                x[j] = ops.retraction(x[j], eta)
        w = sampler.weights(problem.local_sizes, agents)
        x_t = ops.retraction(x_t, server_step * sum(w[row] * zeta[j] for row, j in enumerate(agents)))
        xs.append(x_t)
    return xs


def _mean_direction_problem(**geometry):
    params = {"d": 6, "S": 5, "N": 12, "noise": 1.0, "spread": 0.5}
    return MeanDirection.from_arrays(MeanDirection.generate(np.random.default_rng(4), **params), params,
                                     **geometry)


MEAN_DIRECTION = ContractProblem("mean_direction", _mean_direction_problem, 0.5,
                                 {"retraction": "normalize", "transport": "parallel"})


class ColumnMeans(Problem):
    """f_j(X) = -<M_j, X> on OB(n, p), M_j agent j's mean of its samples Z_{j,i} (n x p): the mean
    direction column by column, a problem of this test (no ``name``) on the plug-in manifold."""

    def __init__(self, Z, **geometry):
        self.Z = Z
        self.local_sizes = np.full(Z.shape[0], Z.shape[1])
        self.manifold = Oblique(Z.shape[2], Z.shape[3], **geometry)
        self.m = Z.mean(axis=(0, 1))                      # equal N_j: p_j = 1/S

    def minibatch_egrad(self, x, agents, batch):
        """-(1/B) sum_{i in batch_j} Z_{j,i}: x (s, n, p), batch (s, B) -> (s, n, p)."""
        return -self.Z[agents[:, None], np.asarray(batch)].mean(axis=1)

    def cost(self, x):
        return -float(np.sum(self.m * x))

    def egrad(self, x):
        return -self.m


def _column_means(**geometry):
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((5, 12, 6, 3)) + np.linspace(1.0, 2.0, 18).reshape(6, 3)
    return ColumnMeans(Z / np.linalg.norm(Z, axis=2, keepdims=True), **geometry)


COLUMN_MEANS = ContractProblem("column_means", _column_means, 0.5,
                               {"retraction": "normalize", "transport": "projection"})


class TestServerStepStrategy(_Declared, StrategyContract):
    strategies = ["rfedags_server_step"]
    problems = CONTRACT_PROBLEMS + [MEAN_DIRECTION, COLUMN_MEANS]


def test_the_contract_checks_the_strategy_on_the_plugin_manifold(monkeypatch):
    """On OB(n, p), which registers no single-point maps, the reference loop runs through the
    manifold's own maps one point at a time: the comparison runs (is not skipped), and a loop
    that differs from the strategy (server step doubled) fails it."""
    assert type(single_point_ops(COLUMN_MEANS.build().manifold)) is PointwiseOps
    contract = TestServerStepStrategy()
    case, = [c for c in contract.cases() if c.problem is COLUMN_MEANS]
    for partial in (False, True):
        try:
            contract.test_matches_reference_loop(case, partial)
        except pytest.skip.Exception as exc:
            pytest.fail(f"the contract skipped the plug-in manifold: {exc}")
    wrong = functools.partial(server_step_loop, server_step=2.0)
    monkeypatch.setitem(REFERENCE_LOOPS, "rfedags_server_step", lambda *a, server_step, **k: wrong(*a, **k))
    with pytest.raises(AssertionError):
        contract.test_matches_reference_loop(case, False)


def test_a_named_strategy_without_its_hooks_fails_saying_which(monkeypatch):
    """A strategy a test names: no reference loop, or no contract problem it applies to, is a
    failure naming what to define, not a skip."""
    contract = TestServerStepStrategy()
    case = next(c for c in contract.cases() if c.problem is MEAN_DIRECTION)
    monkeypatch.delitem(REFERENCE_LOOPS, "rfedags_server_step")
    with pytest.raises(pytest.fail.Exception, match=r"reference_loop\('rfedags_server_step'\)"):
        contract.test_matches_reference_loop(case, False)

    class OnlyLSA(StrategyContract):
        strategies = ["rfedags_server_step"]
        problems = [CONTRACT_PROBLEMS[2]]                    # a linear field: it does not apply

    case, = OnlyLSA().cases()
    with pytest.raises(pytest.fail.Exception, match="add a ContractProblem it applies to"):
        OnlyLSA().test_deterministic_for_a_seed(case)


def _run(alg, x0, rounds, seed):
    out = []
    for _, x, c in alg.iterate(x0, rounds, np.random.default_rng(seed)):
        out.append((x.copy(), c.grad_evals, c.floats))
    return out


@pytest.mark.parametrize("participation", [None, 3])
def test_server_step_one_is_rfedags_iterate_for_iterate(participation):
    """eta_g = 1: the same points, bit for bit, and the same counters as RFedAGS for one seed."""
    problem = CONTRACT_PROBLEMS[0].build()
    x0 = problem.initial_point(np.random.default_rng(0))
    ours = _run(RFedAGSServerStep(problem, Fixed(1.0), 3, 4, participation, server_step=1.0), x0, 6, 9)
    theirs = _run(RFedAGS(problem, Fixed(1.0), 3, 4, participation), x0, 6, 9)
    for (a, ga, fa), (b, gb, fb) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
        assert (ga, fa) == (gb, fb)


@pytest.mark.parametrize("server_step", [0.5, 2.0])
def test_server_step_matches_the_reference_loop(server_step):
    """eta_g != 1 (the contract runs the default): the vectorised rounds equal the per-agent
    loop for the same draws, and differ from RFedAGS."""
    problem = MEAN_DIRECTION.build()
    x0 = problem.initial_point(np.random.default_rng(0))
    alg = RFedAGSServerStep(problem, Fixed(0.5), 2, 4, 3, server_step=server_step)
    vec = [x for x, _, _ in _run(alg, x0, 5, 7)]
    sampler = AgentSampler(np.random.default_rng(7), problem.local_sizes, 4, 3)
    ref = server_step_loop(problem, x0, Fixed(0.5), 2, 5, sampler, server_step=server_step)[1:]
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    plain = [x for x, _, _ in _run(RFedAGS(problem, Fixed(0.5), 2, 4, 3), x0, 5, 7)]
    assert np.abs(np.array(vec) - np.array(plain)).max() > 1e-3


def test_server_step_option_is_checked_by_the_config():
    """The declared option reaches the config: a valid value passes into the run spec, a
    non-positive one and an unknown key are refused naming the key."""
    config = _guide_config()
    runs = rflconfig.expand_runs(rflconfig.validate(config))
    assert {r["algorithm"].get("server_step") for r in runs if r["algorithm"]["name"] == "rfedags_server_step"} == {1.5}
    method = config["experiments"]["mean_direction"]["methods"][1]
    for bad, says in (({"server_step": 0}, "server_step"), ({"eta_g": 1.0}, "eta_g")):
        broken = yaml.safe_load(yaml.safe_dump(config))
        broken["experiments"]["mean_direction"]["methods"][1] = {**method, **bad}
        with pytest.raises(rflconfig.ConfigError, match=f"methods.1.{says}"):
            rflconfig.validate(broken)


# ---- the guide's config and code blocks ----------------------------------------------------
def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", GUIDE.read_text(), flags=re.S | re.M)


def _guide_config() -> dict:
    """The guide's config entries for the new problem (its yaml block with ``datasets:``)."""
    found = [yaml.safe_load(b) for b in _blocks("yaml") if b.startswith("datasets:")]
    assert len(found) == 1, "the guide has one config block starting with 'datasets:'"
    return found[0]


EXCERPT = re.compile(r"^# ((?:docs|tests|rfl)/\S+\.py)$")
ELISION = re.compile(r"^\s*# \.\.\.$")


def _check_excerpt(block: str) -> None:
    """A block whose first line is ``# <path>`` quotes that file: its other lines, split at
    ``# ...`` lines, appear verbatim in the file, in that order."""
    first, *body = block.splitlines()
    text = (REPO / EXCERPT.match(first).group(1)).read_text()
    pos, segment = 0, []
    for line in body + ["# ..."]:
        if ELISION.match(line):
            if segment:
                found = text.find("\n".join(segment) + "\n", pos)
                assert found >= 0, f"not in {first[2:]} (after offset {pos}):\n" + "\n".join(segment)
                pos = found + 1
            segment = []
        else:
            segment.append(line)


def test_guide_python_blocks_are_excerpts_or_run(tmp_path):
    """Every python block of docs/extending.md: an excerpt of the file its first line names,
    verbatim, or a snippet that runs (in a fresh interpreter, with docs/examples importable)."""
    blocks = _blocks("python")
    assert len(blocks) >= 6
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(EXAMPLES)]), MPLBACKEND="Agg")
    ran = 0
    for i, block in enumerate(blocks):
        if EXCERPT.match(block.splitlines()[0]):
            _check_excerpt(block)
            continue
        script = tmp_path / f"block{i}.py"
        script.write_text(block)
        r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, f"block {i} of the guide fails:\n{block}\n{r.stderr[-2000:]}"
        ran += 1
    assert ran >= 1


def test_guide_entry_points_name_the_four_groups():
    """The guide's pyproject excerpt declares one entry point per group, each a module path."""
    (block,) = [b for b in _blocks("toml") if "entry-points" in b]
    eps = tomllib.loads(block)["project"]["entry-points"]
    assert set(eps) == {"rfl.algorithms", "rfl.manifolds", "rfl.problems", "rfl.rules"}
    assert all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", v) for group in eps.values() for v in group.values())


# ---- the three examples as a plug-in, run by the workflow ---------------------------------

LEGEND = textwrap.dedent("""
    import json, sys
    from rfl.registry import ALGORITHMS, MANIFOLDS, PROBLEMS
    from rfl.reporting import figures
    drawn = {}
    figures.save_figure = lambda fig, out: drawn.setdefault("fig", fig)
    spec = json.load(open(sys.argv[1]))
    figures.experiment_figure(spec, sys.argv[2:], "unused.pdf")
    ax = drawn["fig"].axes[0]
    print(json.dumps({
        "legend": [t.get_text() for t in ax.get_legend().get_texts()],
        "styles": {l.get_label(): [l.get_color(), l.get_linestyle()] for l in ax.get_lines()},
        "modules": {"algorithm": ALGORITHMS["rfedags_server_step"].__module__,
                    "manifold": MANIFOLDS["oblique"].__module__,
                    "problem": PROBLEMS["mean_direction"].__module__},
    }))
""")


def _install_plugin(site: Path) -> None:
    """A distribution as pip leaves it: the package and its .dist-info with entry points."""
    package = site / PLUGIN
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""rfl plug-in: the examples of docs/extending.md."""\n')
    for stem in ("rfedags_server_step", "oblique", "mean_direction"):
        shutil.copy2(EXAMPLES / f"{stem}.py", package / f"{stem}.py")
    info = site / f"{PLUGIN}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PLUGIN}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[rfl.algorithms]\nrfedags_server_step = {PLUGIN}.rfedags_server_step\n\n"
        f"[rfl.manifolds]\noblique = {PLUGIN}.oblique\n\n"
        f"[rfl.problems]\nmean_direction = {PLUGIN}.mean_direction\n")


def test_plugin_runs_through_the_workflow_into_a_figure(tmp_path):
    """The examples installed as a separate distribution (entry points; rfl/ and config/ do
    not mention them): ``rfl validate`` accepts the guide's config, ``snakemake --cores 1``
    runs it, the run tables and metadata carry the plug-in's names, the figure exists and its
    legend shows the plug-in's label in its declared style next to RFedAGS."""
    names = ("rfedags_server_step", "oblique", "mean_direction", "RFedAGS-SS")
    for path in [*(REPO / "rfl").rglob("*.py"), *(REPO / "config").glob("*")]:
        assert not any(n in path.read_text() for n in names), f"{path} knows the plug-in"

    site, tree = tmp_path / "site", tmp_path / "workflow"
    _install_plugin(site)
    copy_workflow(tree, WORKFLOW_NO_CONFIGS)
    config = {"output_dir": "out/", **_guide_config()}
    (tree / "config" / "plugin.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]), MPLBACKEND="Agg",
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    env.pop("SNAKEMAKE_PROFILE", None)

    def run(*args, timeout=300):
        r = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, f"{args}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r.stdout

    assert run("-m", "rfl.cli", "validate", "config/plugin.yaml").strip() == "config/plugin.yaml: valid"
    run("-m", "snakemake", "--cores", "1", "--configfile", "config/plugin.yaml")

    out = tree / "out"
    experiment, = config["experiments"]
    tables = sorted((out / "results" / "runs" / experiment).glob("*.csv"))
    assert [t.name.split("_K")[0] for t in tables] == ["rfedags", "rfedags_server_step"]
    for t in tables:
        meta = json.loads(t.with_name(t.name[:-4] + ".meta.json").read_text())
        assert meta["status"] == "ok" and meta["spec"]["dataset"]["problem"] == "mean_direction"
        assert meta["spec"]["algorithm"]["name"] == t.name.split("_K")[0]
        header = t.read_text().splitlines()[0].split(",")
        assert "angle_to_mu" in header
    figure, = config["figures"]
    for ext in ("pdf", "png"):
        assert (out / "figures" / f"{figure}.{ext}").stat().st_size > 0
    (tree / "legend.py").write_text(LEGEND)
    drawn = json.loads(run("legend.py", str(out / "results" / "specs" / "figures" / f"{figure}.json"),
                           *map(str, tables)))
    K = config["experiments"][experiment]["methods"][1]["K"][0]
    assert drawn["legend"] == ["RFedAGS-K=2", f"RFedAGS-SS-K={K}"]
    assert drawn["styles"][f"RFedAGS-SS-K={K}"] == ["tab:red", "--"]
    assert drawn["modules"] == {"algorithm": f"{PLUGIN}.rfedags_server_step",
                                "manifold": f"{PLUGIN}.oblique", "problem": f"{PLUGIN}.mean_direction"}


# ---- d. rfl as a library -------------------------------------------------------------------
def test_library_example_converges_linearly_within_its_bound():
    """The script's final excess risk E_T obeys the bound of its docstring: with a = alpha ||m||
    <= 1 and theta_0 <= pi/2, theta_T <= (1 - a/2)^T theta_0 and E_T = ||m|| (1 - cos theta_T)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(EXAMPLES / "library_use.py")], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    head = dict(re.findall(r"(a|\|\|m\|\||theta_0|rounds) = ([0-9.e+-]+)", r.stdout.splitlines()[0]))
    a, norm_m, theta0, T = float(head["a"]), float(head["||m||"]), float(head["theta_0"]), int(head["rounds"])
    assert 0 < a <= 1 and 0 <= theta0 <= np.pi / 2 and T >= 10
    final = float(re.search(r"final excess risk (\S+)", r.stdout).group(1))
    bound = norm_m * (1 - np.cos((1 - a / 2) ** T * theta0))
    assert -1e-12 <= final <= bound
    assert bound < 1e-3 * norm_m * (1 - np.cos(theta0))      # the bound itself says: converged


# ---- e. a claim rule ------------------------------------------------------------------------
def test_guide_claim_block_validates_with_the_rule_declared():
    """The guide's ``claims:`` block, added to the smoke config, passes ``rfl validate``'s checks
    with the example rule registered; its misspelt parameter is refused naming the rule's."""
    from rfl.registry import RULES

    found = [yaml.safe_load(b) for b in _blocks("yaml") if b.startswith("claims:")]
    assert len(found) == 1, "the guide has one config block starting with 'claims:'"
    module = _import("ends_below")
    RULES.remove(module.EndsBelow.name)
    config = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    config["claims"] = found[0]["claims"]
    RULES.add(module.EndsBelow)
    try:
        assert rflconfig.validate(yaml.safe_load(yaml.safe_dump(config)))["claims"] == found[0]["claims"]
        (claim,) = config["claims"].values()
        claim["params"] = {"levle": 1e-6}
        with pytest.raises(rflconfig.ConfigError, match=r"params\.levle: not a parameter of claim rule "
                                                        r"'ends_below'; allowed: algorithm, level"):
            rflconfig.validate(config)
    finally:
        RULES.remove(module.EndsBelow.name)
