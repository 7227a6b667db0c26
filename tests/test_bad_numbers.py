"""Bad numbers and bad output names, by class: ``rfl validate`` and every ``rfl`` step either
accept an input or refuse it with status 2 and one ``rfl: error:`` message naming the key (or
argument) and what is allowed; never a traceback.

* a fuzz of ``config/smoke.yaml``: every numeric leaf (dataset params and seeds, references,
  experiments' rounds, seeds, steps and batch sizes, method options, participation options,
  figure and study settings) set to an absurd magnitude (1e308, 10**400, 2**63, 5e-324), NaN,
  infinity, 0, a negative number or a value of the wrong type, through the command line;
  NaN and infinity are refused wherever they stand, naming the key;
* each problem's numeric parameters at absurd magnitudes: refused, or the data they make
  (and the reference optimum) are finite -- a bound stands where the number is used;
* every numeric option of every algorithm and participation scheme refuses NaN and infinity
  where a run reads it, not only where the config is checked;
* the cases a new user met: lrmc OS = 1e308 and r = 10**400 (OverflowError), a participation
  rho of NaN, test_fraction 0, Table 1 rows naming experiments of another kind, HSP with a tiny
  ridge lam (a division by zero in RLBFGS; now refused below the ridge that keeps the kernel
  weights off rounding), and every output name of every subcommand
  (fetch-school given another name than ILEA567.DAT raised a RuntimeError).
"""

from __future__ import annotations

import contextlib
import copy
import io as _io
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfl import cli, participation, runner
from rfl import config as rflconfig
from rfl.registry import ALGORITHMS, PARTICIPATION, PROBLEMS

REPO = Path(__file__).resolve().parents[1]
SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())

ABSURD = [1e308, -1e308, 10**400, -(10**400), 2**63, 5e-324, 1e-308]
NON_FINITE = [math.nan, math.inf, -math.inf]
SMALL = [0, 0.0, -1, -0.5]
WRONG_TYPE = ["x", "", True, None, [1], {"a": 1}]
BAD_NUMBERS = ABSURD + NON_FINITE + SMALL + WRONG_TYPE


def _numeric_leaves(node, path=()):
    """Paths of every int or float (not bool) in a config."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _numeric_leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _numeric_leaves(v, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


LEAVES = list(_numeric_leaves(SMOKE))


def _set(cfg, path, value):
    for p in path[:-1]:
        cfg = cfg[p]
    cfg[path[-1]] = value


def _call(argv) -> tuple[int, str, str]:
    """(status, stdout, stderr) of ``rfl argv`` in this process."""
    out, err = _io.StringIO(), _io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _assert_refusal(status, err, *words):
    """Status 2, one ``rfl: error:`` line (a config's further problems indented below it, each
    naming its key and what is allowed), no traceback."""
    lines = err.rstrip("\n").splitlines()
    assert status == 2, (status, err)
    assert "Traceback" not in err, err
    assert lines and lines[0].startswith("rfl: error: "), err
    assert not any(line.startswith("rfl:") for line in lines[1:]), err
    for line in lines[1:]:
        assert line.startswith("  config key ") and "allowed" in line, line
    for w in words:
        assert w in err, (w, err)


def _validate(cfg) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return _call(["validate", path])


# ---- 1. the fuzz ---------------------------------------------------------------------------
@settings(max_examples=int(os.environ.get("RFL_PROPERTY_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(LEAVES), st.sampled_from(BAD_NUMBERS)),
                min_size=1, max_size=3))
def test_bad_numbers_in_any_leaf_are_accepted_or_refused_in_one_message(mutations):
    cfg = copy.deepcopy(SMOKE)
    for path, value in mutations:
        _set(cfg, path, copy.deepcopy(value))
    status, out, err = _validate(cfg)
    if status == 0:
        assert out.strip().endswith(": valid") and not err, (out, err)
        # NaN and infinity are numbers nowhere: a config holding one is never accepted
        assert not any(isinstance(v, float) and not math.isfinite(v)
                       for _, v in mutations), mutations
        return
    _assert_refusal(status, err)


@pytest.mark.parametrize("i", range(len(LEAVES)), ids=lambda i: ".".join(map(str, LEAVES[i])))
def test_nan_and_infinity_are_refused_in_every_leaf_naming_it(i):
    """Every number a config holds is read as a number: NaN, +inf and -inf (in turn over the
    leaves; the fuzz above mixes them) are refused at its key, naming what is allowed."""
    path, value = LEAVES[i], NON_FINITE[i % len(NON_FINITE)]
    cfg = copy.deepcopy(SMOKE)
    _set(cfg, path, value)
    with pytest.raises(rflconfig.ConfigError) as ei:
        rflconfig.validate(cfg)
    lines = str(ei.value).splitlines()[1:]
    key = "config key " + ".".join(map(str, path)) + ":"
    assert any(line.strip().startswith(key) and "allowed" in line for line in lines), lines


# ---- 2. bounded where they are used: problems' parameters -------------------------------------
def _numeric_params():
    for name, cls in PROBLEMS.items():
        for key, sch in cls.params_schema.get("properties", {}).items():
            types = sch.get("type")
            if types in ("number", "integer") or (isinstance(types, list) and "number" in types):
                yield name, key


def _raw_inputs(cls):
    try:
        return cls.find_raw_inputs()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name,key", list(_numeric_params()), ids=lambda v: str(v))
def test_absurd_problem_parameters_are_refused_or_give_finite_data(name, key, tmp_path):
    cls = PROBLEMS[name]
    for value in ABSURD + NON_FINITE:
        params = {**cls.test_params, key: value}
        cfg = {"datasets": {"d": {"problem": name, "seed": 1, "params": params}}}
        try:
            refused = (any(rflconfig.Validator(cls.params_schema).iter_errors(params))
                       or rflconfig._memory_errors(cfg) or cls.check_params(params))
        except Exception as exc:         # noqa: BLE001 - the point: nothing escapes the checks
            pytest.fail(f"{name}.{key} = {value!r}: {type(exc).__name__}: {exc}")
        if refused:
            continue
        assert not (isinstance(value, float) and not math.isfinite(value)), (key, value)
        ds = {"name": "d", "instance": "fixed", "problem": name, "seed": 1, "params": params,
              "reference": {"tolerance": 1e-6, "max_iterations": 30, "starts": 1}}
        with np.errstate(over="raise", invalid="raise"):
            runner.generate_data(ds, tmp_path / "d.npz", _raw_inputs(cls))
        arrays = dict(np.load(tmp_path / "d.npz"))
        for k, a in arrays.items():
            if a.dtype.kind == "f":
                assert np.all(np.isfinite(a)), f"{name}.{key} = {value!r}: array {k} not finite"
        runner.compute_reference(ds, tmp_path / "d.npz", tmp_path / "r.npz")
        assert np.isfinite(float(np.load(tmp_path / "r.npz")["F_star"]))


# ---- 3. options read by a run: the same strict numbers --------------------------------------
def _numeric_options(registry):
    for name, cls in registry.items():
        for key, sch in cls.options.items():
            types = sch.get("type")
            types = [types] if isinstance(types, str) else list(types or [])
            items = sch.get("items", {}).get("type")
            if "number" in types or "integer" in types or items == "number":
                yield name, key, "items" if items == "number" and "number" not in types else "value"


ALGORITHM_OPTIONS = list(_numeric_options(ALGORITHMS))
PARTICIPATION_OPTIONS = list(_numeric_options(PARTICIPATION))


def test_the_option_classes_are_not_empty():
    assert ALGORITHM_OPTIONS and PARTICIPATION_OPTIONS


@pytest.mark.parametrize("name,key,where", ALGORITHM_OPTIONS, ids=str)
def test_algorithm_options_refuse_nan_and_infinity_where_a_run_reads_them(name, key, where):
    cls = ALGORITHMS[name]
    for bad in NON_FINITE:
        value = [bad] if where == "items" else bad
        obj = cls.__new__(cls)
        with pytest.raises(ValueError, match=f"{name} option {key} = .*allowed"):
            obj.set_options({key: value})


@pytest.mark.parametrize("name,key,where", PARTICIPATION_OPTIONS, ids=str)
def test_participation_options_refuse_nan_and_infinity(name, key, where):
    for bad in NON_FINITE:
        value = [bad] * 4 if where == "items" else bad
        problems = participation.check({"scheme": name, key: value}, 4)
        assert problems and problems[0][0][:1] == [key] and "allowed" in problems[0][1], problems


# ---- 4. the cases met ---------------------------------------------------------------------
def _with(path, value):
    cfg = copy.deepcopy(SMOKE)
    _set(cfg, path, value)
    return cfg


@pytest.mark.parametrize("key,value,words", [
    ("OS", 1e308, ["OS <= "]),
    ("r", 10**400, ["is not below m = 12"]),
    ("test_fraction", 0, ["test_fraction", "allowed"]),
    ("test_fraction", 1e-6, ["rounds to no test entry", "test_fraction >= "]),
])
def test_lrmc_budgets(key, value, words):
    status, _, err = _validate(_with(("datasets", "lrmc_grass_syn", "params", key), value))
    _assert_refusal(status, err, f"config key datasets.lrmc_grass_syn.params.{key}", *words)


def test_a_participation_probability_of_nan_is_refused():
    methods = SMOKE["experiments"]["participation_rho0p5"]["methods"]
    i = next(i for i, m in enumerate(methods) if isinstance(m.get("participation"), dict))
    path = ("experiments", "participation_rho0p5", "methods", i, "participation", "rho")
    status, _, err = _validate(_with(path, math.nan))
    _assert_refusal(status, err, "config key " + ".".join(map(str, path)), "in (0, 1]")


def _table1_row(**row):
    cfg = copy.deepcopy(SMOKE)
    cfg["tables"]["table1"]["rows"].append({"label": "X", **row})
    return cfg


def test_table1_row_on_two_datasets_is_refused():
    status, _, err = _validate(_table1_row(fixed="cpesph_fixed", decaying="cfmspd_decaying"))
    _assert_refusal(status, err, "tables.table1.rows.3.decaying", "runs dataset 'cfmspd'",
                    "allowed: cpesph_decaying")


def test_table1_row_with_a_decaying_step_as_fixed_is_refused():
    status, _, err = _validate(_table1_row(fixed="mbcfsti_decaying", decaying="mbcfsti_decaying"))
    _assert_refusal(status, err, "tables.table1.rows.3.fixed", "step rule 'decaying'")


def test_table1_row_on_a_centralised_experiment_is_refused():
    cfg = _table1_row(fixed="central", decaying="cpesph_decaying")
    cfg["experiments"]["central"] = {"dataset": "cpesph", "rounds": 3, "seeds": [0],
                                     "methods": [{"algorithm": "rsd"}]}
    status, _, err = _validate(cfg)
    _assert_refusal(status, err, "tables.table1.rows.3.fixed", "runs no federated method")


@pytest.mark.parametrize("lam", [1e-16, 1e-7])
def test_hsp_with_a_tiny_ridge_is_refused_naming_the_bound(lam):
    """lam = 1e-16 (met by a user: RLBFGS then divided by <y, y> = 0): below N sqrt(eps) the
    kernel weights are set by rounding, so the reference differed between OpenBLAS kernels
    (``rfl.data.wordnet.lam_min``). Refused, naming the key and the bound: the schema's for
    N = 1 below it (1e-16), else the bound for the dataset's N = 1179 // S (1e-7, S = 9)."""
    from rfl.data.wordnet import N_NODES, lam_min

    N = (N_NODES - 1) // SMOKE["datasets"]["hsp_wordnet"]["params"]["S"]
    assert lam_min(1) > 1e-16 and lam_min(1) < 1e-7 < lam_min(N)
    status, _, err = _validate(_with(("datasets", "hsp_wordnet", "params", "lam"), lam))
    words = ([f"allowed: a finite number >= {lam_min(1)!r}"] if lam < lam_min(1) else
             [f"N = {N} nodes", f"allowed: lam >= N sqrt(eps) / (1 - sqrt(eps)) = {lam_min(N):.4g}"])
    _assert_refusal(status, err, "config key datasets.hsp_wordnet.params.lam", *words)


def test_hsp_with_the_smallest_ridge_allowed_has_a_finite_reference(tmp_path):
    """At lam = N sqrt(eps) / (1 - sqrt(eps)), the bound, data and reference are finite and the
    reference is a stationary point (RLBFGS to its tolerance)."""
    from rfl.data.wordnet import N_NODES, lam_min

    cls = PROBLEMS["hsp"]
    N = (N_NODES - 1) // cls.test_params["S"]
    params = {**cls.test_params, "lam": lam_min(N)}
    assert not any(rflconfig.Validator(cls.params_schema).iter_errors(params))
    assert cls.check_params(params) == []
    ds = {"name": "d", "instance": "fixed", "problem": "hsp", "seed": 1, "params": params,
          "reference": {"tolerance": 1e-6, "max_iterations": 100, "starts": 1}}
    runner.generate_data(ds, tmp_path / "d.npz", _raw_inputs(cls))
    runner.compute_reference(ds, tmp_path / "d.npz", tmp_path / "r.npz")
    ref = np.load(tmp_path / "r.npz")
    assert np.isfinite(float(ref["F_star"])) and float(ref["grad_norm"]) < 1e-6


# ---- 5. every output name of every subcommand ------------------------------------------------
def _output_cases(d: Path):
    """(subcommand, argument, argv) with one output misnamed; inputs exist and are valid in
    kind, so only the output's name can be refused."""
    spec, npz, run = d / "s.json", d / "x.npz", d / "r.csv"
    spec.write_text("{}")
    np.savez(npz, a=np.zeros(1))
    run.write_text("round\n0\n")
    (d / "r.meta.json").write_text("{}")
    return [
        ("data", "OUT", ["data", spec, d / "o.txt"]),
        ("data", "--reference", ["data", spec, d / "o.npz", "--reference", d / "r.txt"]),
        ("reference", "OUT", ["reference", spec, npz, d / "o.csv"]),
        ("run", "OUT_TABLE", ["run", spec, npz, npz, d / "o.txt", d / "o.meta.json"]),
        ("run", "OUT_META", ["run", spec, npz, npz, d / "o.csv", d / "o.meta.txt"]),
        ("datasets", "--data", ["datasets", "--specs", spec, "--data", d / "o.txt", "--references", d / "o.npz"]),
        ("datasets", "--references", ["datasets", "--specs", spec, "--data", d / "o.npz",
                                      "--references", d / "o.csv"]),
        ("runs", "--tables", ["runs", "--specs", spec, "--data", npz, "--references", npz,
                              "--tables", d / "o.txt", "--metas", d / "o.meta.json"]),
        ("runs", "--metas", ["runs", "--specs", spec, "--data", npz, "--references", npz,
                             "--tables", d / "o.csv", "--metas", d / "o.yaml"]),
        ("figure", "OUT_PDF", ["figure", spec, d / "o.txt", run]),
        ("fetch-school", "OUT", ["fetch-school", spec, d / "school.dat"]),
        ("table1", "OUT_CSV", ["table1", spec, d / "o.md"]),
        ("table2", "OUT_CSV", ["table2", spec, d / "o.tex", run]),
        ("heterogeneity", "OUT_PDF", ["heterogeneity", spec, d / "o.png", d / "o.csv", run]),
        ("heterogeneity", "OUT_CSV", ["heterogeneity", spec, d / "o.pdf", d / "o.md", run]),
        ("sweep", "OUT_PDF", ["sweep", spec, d / "o.png", d / "o.csv", run]),
        ("sweep", "OUT_CSV", ["sweep", spec, d / "o.pdf", d / "o.md", run]),
        ("lsa", "OUT_CSV", ["lsa", spec, d / "o.txt", run, "--figures", d / "f.pdf"]),
        ("lsa", "--figures", ["lsa", spec, d / "o.csv", run, "--figures", d / "f.svg"]),
        ("reproduction", "OUT_MD", ["reproduction", spec, d / "o.txt"]),
        ("performance", "OUT_CSV", ["performance", spec, d / "o.json"]),
        ("bench-runs", "--tables", ["bench-runs", "--steps", d / "o.json", "--specs", spec, "--data", npz,
                                    "--references", npz, "--tables", d / "o.txt", "--metas", d / "o.meta.json"]),
        ("bench-runs", "--metas", ["bench-runs", "--steps", d / "o.json", "--specs", spec, "--data", npz,
                                   "--references", npz, "--tables", d / "o.csv", "--metas", d / "o.yaml"]),
        ("leaderboard", "OUT_CSV", ["leaderboard", spec, d / "o.txt", run]),
        ("results", "OUT_PARQUET", ["results", d / "o.txt", run]),
        ("merge", "OUT_PARQUET", ["merge", run, "-o", d / "o.txt"]),
        ("compare", "OUT_MD", ["compare", spec, spec, "-o", d / "o.txt"]),
    ]


def test_every_output_argument_of_every_subcommand_is_covered(tmp_path):
    covered = {(c, a) for c, a, _ in _output_cases(tmp_path)}
    for command, (names, _) in cli._OUTPUTS.items():
        if command in ("flower", "fetch-source"):   # flower: as run; fetch-source: sources.py
            continue
        for name in names:
            arg = "--" + name if name in cli.OUTPUT_OPTIONS else name.upper()
            assert (command, arg) in covered, (command, arg)


def test_a_misnamed_output_is_refused_before_any_work(tmp_path):
    for command, arg, argv in _output_cases(tmp_path):
        status, _, err = _call(argv)
        _assert_refusal(status, err, f"{command}: {arg} ", "allowed")
        assert not any(p.name.startswith("o.") for p in tmp_path.iterdir()), (command, arg)


def test_fetch_school_into_its_own_name_still_works(tmp_path):
    """The name it must have is the one the workflow gives (rules/data.smk: school_raw)."""
    from rfl.data import school

    mirror = school._find_in_mirror(Path(__import__("os").environ.get(school.MIRROR_ENV, "")
                                         or REPO.parent / "shared/datasets/school"))
    if mirror is None:
        pytest.skip(f"needs the School data: set {school.MIRROR_ENV}")
    (tmp_path / "s.json").write_text('{"mirror": "%s"}' % mirror.parent)
    status, _, err = _call(["fetch-school", tmp_path / "s.json", tmp_path / "c" / school.ILEA_FILENAME])
    assert status == 0, err
    assert (tmp_path / "c" / school.ILEA_FILENAME).is_file()



@pytest.mark.parametrize("value", [math.nan, math.inf, [60, math.nan]])
def test_a_non_finite_paper_size_parameter_is_refused_naming_it(value, tmp_path):
    """paper_size's keys beyond its schema (the problem's parameters) are checked too."""
    cfg = copy.deepcopy(SMOKE)
    exp = next(e for e in cfg["experiments"].values() if "paper_size" in e)
    exp["paper_size"]["S"] = value
    with pytest.raises(rflconfig.ConfigError, match=r"paper_size\.S: .* not a finite number"):
        rflconfig.validate(cfg)
