"""The workflow's helpers (rfl/workflow.py) and the figures' declarations, checked against
what the smoke config asks for; and Snakemake's linter on the workflow with both configs."""

from __future__ import annotations

import copy
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pytest

from rfl import config as rflconfig
from rfl import io, workflow
from rfl.reporting import figures
from rfl.testing.run_files import write_run
from rfl.workflow import LIGHT, PIN, Plan, alternatives, names_targets, pinned, raw_inputs_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workflow import WORKFLOW, copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake")
SMOKE = rflconfig.load(REPO / "config" / "smoke.yaml")
PAPER = io.read_yaml(REPO / "config" / "paper_values.yaml")


@pytest.fixture(scope="module")
def plan():
    return Plan(SMOKE, PAPER)


def _wc(**kw):
    return SimpleNamespace(**kw)


# ---- paths and job lists -------------------------------------------------------------------
#: the smoke config's sections whose claims name no figure of the config
SECTION_PAGES = [".smoke/paper_tables/claims/section-rfedags-equals-rfedavg-at-k-1-section-3-3.html",
                 ".smoke/paper_tables/claims/section-federated-td-0-lsa-mangold-et-al.html",
                 ".smoke/paper_tables/claims/section-beyond-the-paper-rfedags-with-heterogeneous-agents-"
                 "and-partial-participation.html"]

def test_run_tables_are_one_per_method_K_and_seed(plan):
    # cpesph_fixed: rfedags K in {1, 3}, rfedavg K = 3; seeds 0 and 1
    # in config order: method, then K, then seed
    assert plan.run_tables("cpesph_fixed") == [f".smoke/results/runs/cpesph_fixed/{a}_K{K}_seed{s}.csv"
                                               for a, K in (("rfedags", 1), ("rfedags", 3), ("rfedavg", 3))
                                               for s in (0, 1)]
    # centralised solvers have no K; participation shows as _s<s>
    assert ".smoke/results/runs/school_r2/rsd_seed1.csv" in plan.run_tables("school_r2")
    assert ".smoke/results/runs/cpesph_het/rfedags_K3_s2_seed0.csv" in plan.run_tables("cpesph_het")
    assert len(plan.all_run_tables()) == len(rflconfig.expand_runs(SMOKE))


def test_run_job_files_are_the_experiments_runs_aligned(plan):
    tables = plan.run_files("school_r2", "csv")
    assert tables == plan.run_tables("school_r2")
    assert plan.run_files("school_r2", "meta.json") == [t[:-len("csv")] + "meta.json" for t in tables]
    specs = plan.run_files("school_r2", "specs")
    assert specs == [t.replace("results/runs/", "results/specs/runs/")[:-len("csv")] + "json" for t in tables]
    # school_r2 resamples: one data instance per seed, listed once per run
    data = plan.run_files("school_r2", "data")
    refs = plan.run_files("school_r2", "reference")
    assert len(data) == len(refs) == len(tables)
    for table, d, r in zip(tables, data, refs):
        seed = table.rsplit("_seed", 1)[1][:-len(".csv")]
        assert d == f".smoke/results/data/school_r2/seed{seed}.npz"
        assert r == f".smoke/results/reference/school_r2/seed{seed}.npz"
    # cpesph does not resample: every run reads the one fixed instance
    assert set(plan.run_files("cpesph_fixed", "data")) == {".smoke/results/data/cpesph/fixed.npz"}


def test_every_job_has_a_benchmark_record_named_as_its_log(plan):
    jobs = plan.jobs()
    assert len(jobs) == len(set(jobs))
    assert {f"runs/{e}" for e in plan.experiments} <= set(jobs)
    assert "reproduction" in jobs and "figures/fig1a_cpesph_fixed" in jobs
    assert plan.job_benchmarks()[jobs.index("reproduction")] == ".smoke/results/benchmarks/reproduction.tsv"
    assert plan.log("reproduction") == ".smoke/logs/reproduction.log"
    # locally one data job per dataset its runs use, generating every instance they use
    used = {(r["dataset"]["name"], r["dataset"]["instance"]) for r in plan.runs.values()}
    assert {f"data/{d}" for d, _ in used} == {j for j in jobs if j.startswith("data/")}
    instances = plan.data_instances()
    assert {(d, i) for d, ii in instances.items() for i in ii} == used
    assert all(ii == sorted(ii) and len(set(ii)) == len(ii) for ii in instances.values())
    assert ".smoke/paper_tables/performance.csv" in plan.targets()
    spec = Plan(SMOKE, PAPER, [str(REPO / "config" / "smoke.yaml")]).table_spec("performance")
    assert spec == {"benchmarks": ".smoke/results/benchmarks", "logs": ".smoke/logs",
                    "runs": ".smoke/results/runs",
                    "configfiles": [os.path.relpath(REPO / "config" / "smoke.yaml")]}


def test_raw_inputs_are_those_the_problem_declares(plan):
    assert raw_inputs_of("school") == ("school",)
    for problem in ("cpesph", "cfmspd", "mbcfsti", "multitask", "kpca", "lsa"):
        assert raw_inputs_of(problem) == ()
    assert raw_inputs_of("hsp") == ("wordnet_features", "wordnet_poincare")
    anchors = {"hsp": [".smoke/datasets/anchors/hsp_le/features.xlsx",
                       ".smoke/datasets/anchors/hsp_le/poincare_points.xlsx"],
               "pca_sphere": [".smoke/datasets/anchors/mnist/t10k-images-idx3-ubyte.gz",
                              ".smoke/datasets/anchors/mnist/t10k-labels-idx1-ubyte.gz",
                              ".smoke/datasets/anchors/mnist/train-labels-idx1-ubyte.gz"],
               "lrmc_movielens": [".smoke/datasets/anchors/ml_1m/ratings.dat"]}
    generated = [n for n, ds in SMOKE["datasets"].items() if ds["params"].get("source") == "generated"]
    for name, ds in SMOKE["datasets"].items():
        expected = ([".smoke/datasets/school/ILEA567.DAT"] if ds["problem"] == "school"
                    else [] if name in generated else anchors.get(ds["problem"], []))
        assert plan.raw_inputs(name) == expected, name
    # the loaders' generated datasets read no pinned file: none is fetched for them
    assert {SMOKE["datasets"][n]["problem"] for n in generated} == {
        "pca_stiefel_cifar10", "cfmspd_pathmnist", "lrmc_movielens"}
    assert raw_inputs_of("lrmc_movielens", {"r": 2, "S": 4, "source": "generated"}) == ()
    assert raw_inputs_of("lrmc_movielens", {"r": 2, "S": 4, "source": "pinned"}) == ("movielens_ratings",)
    assert "anchors_raw/cifar10/cifar-10-python.tar.gz" not in plan.jobs()
    assert plan.school_raw == SMOKE["school"]["cache_dir"].rstrip("/") + "/ILEA567.DAT"


def test_targets_are_every_configured_figure_and_table(plan):
    targets = plan.targets()
    assert len(targets) == len(set(targets))
    for f in SMOKE["figures"]:
        assert {f".smoke/figures/{f}.pdf", f".smoke/figures/{f}.png"} <= set(targets)
    # the smoke config has both LSA settings, the heterogeneity study and both paper tables
    for s in ("homogeneous", "heterogeneous"):
        assert f".smoke/figures/fig_fedlsa_scafflsa_{s}.pdf" in targets
    assert ".smoke/paper_tables/heterogeneity.csv" in targets
    tables = [f".smoke/paper_tables/{t}.{e}" for t in ("table1_parameters", "table2_school_nmse")
              for e in ("csv", "md", "tex")]
    sensitivity = [".smoke/paper_tables/table2_sensitivity.csv", ".smoke/paper_tables/table2_sensitivity.md"]
    assert plan.table_outputs() == tables + sensitivity and set(tables + sensitivity) <= set(targets)
    assert plan.table2_sensitivity_files() == sensitivity
    spec = plan.table_spec("table2")
    assert spec["protocols"] == ["heldout", "refit_on_test"] and spec["sensitivity"] == ["school_r2"]
    # the report, its HTML, claims.json and the HTML report's landing page (the summary), one
    # claim page per figure, one per section whose claims name no figure (LSA; heterogeneity,
    # whose figure the workflow draws itself), the performance table
    pages = [f".smoke/paper_tables/claims/{f}.html" for f in SMOKE["figures"]] + SECTION_PAGES
    assert targets[-(6 + len(pages)):] == [".smoke/paper_tables/REPRODUCTION.md", ".smoke/paper_tables/REPRODUCTION.html",
                                           ".smoke/paper_tables/claims.json", ".smoke/paper_tables/summary.rst", *pages,
                                           ".smoke/paper_tables/performance.csv", ".smoke/paper_tables/performance.md"]
    cfg = copy.deepcopy(SMOKE)
    del cfg["tables"]["table2"], cfg["heterogeneity"], cfg["lsa"]
    fewer = Plan(cfg, PAPER)
    assert fewer.table_outputs() == tables[:3]
    assert fewer.hetero_outputs() == fewer.lsa_outputs() == [] and fewer.lsa_settings == []


def test_logs_and_specs_live_under_the_output_directory(plan):
    assert plan.log("data/{dataset}/{instance}") == ".smoke/logs/data/{dataset}/{instance}.log"
    assert plan.spec("figures/{figure}") == ".smoke/results/specs/figures/{figure}.json"


def test_specs_hold_every_job_of_the_config(plan):
    specs = plan.specs()
    runs = rflconfig.expand_runs(SMOKE)
    for r in runs:
        assert specs[f".smoke/results/specs/runs/{r['experiment']}/{r['run_id']}.json"] == r
    for name, instance in rflconfig.dataset_instances(SMOKE):
        assert specs[f".smoke/results/specs/datasets/{name}/{instance}.json"]["instance"] == instance
    for f, fig in SMOKE["figures"].items():
        assert specs[f".smoke/results/specs/figures/{f}.json"] == {"name": f, **fig}
    tables = {p.rsplit("/", 1)[1] for p in specs if "/specs/tables/" in p}
    assert tables == {"table1.json", "table2.json", "reproduction.json", "heterogeneity.json", "lsa.json",
                      "performance.json"}
    assert specs[".smoke/results/specs/tables/lsa.json"]["settings"] == ["heterogeneous", "homogeneous"]
    assert specs[".smoke/results/specs/school.json"] == SMOKE["school"]
    assert specs[".smoke/results/specs/anchors.json"] == SMOKE["anchors"]
    # one sweep job per swept experiment, reading its figure's metrics and title
    assert specs[".smoke/results/specs/sweeps/cpesph_rfedproj_sweep.json"] == {
        "experiment": "cpesph_rfedproj_sweep", "title": SMOKE["figures"]["fig_cpesph_rfedproj_sweep"]["title"],
        "metrics": ["excess_risk"]}
    assert len(specs) == 2 + len(rflconfig.dataset_instances(SMOKE)) + len(runs) + len(SMOKE["figures"]) + 6 + 1


def test_alternatives_match_exactly_the_names():
    assert alternatives({"b": 1, "a": 2}) == "a|b"
    assert alternatives([]) == "NONE"


def test_every_job_runs_pinned_to_its_threads():
    assert pinned("rfl data {input}") == PIN + "rfl data {input}"
    assert "RFL_CPU_RECORD=1" in PIN.split()        # the job's CPU seconds in its log
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert f"{var}={{threads}}" in PIN.split()


# ---- resources ------------------------------------------------------------------------------
def test_light_jobs_ask_one_gigabyte_and_ten_minutes():
    assert LIGHT == {"mem_mb": 1000, "runtime": 10}


def test_data_and_reference_resources_scale_with_the_data():
    """The data job (data + x*) asks for resources before its file exists: from the problem's
    memory estimate (cpesph: S N (d+1) float64)."""
    cfg = copy.deepcopy(SMOKE)
    cfg["datasets"]["cpesph"]["params"].update(S=1000, N=1000, d=99)   # 8e8 B = 762.94 MB
    big = Plan(cfg, PAPER)
    assert big.data_size_mb("cpesph") == pytest.approx(8e8 / 2**20)
    assert big.data_mem_mb("cpesph") == 3052               # ceil(4 x 762.94)
    cfg["datasets"]["cpesph"]["params"].update(S=10, N=100, d=99)      # 0.76 MB: the 1 GB floor
    assert Plan(cfg, PAPER).data_mem_mb("cpesph") == 1000
    # minutes: 10 + starts x iterations x 5 passes over the data at 200 MB/s (a solver's x*:
    # the Frechet mean on SPD)
    cfg["datasets"]["cfmspd"]["reference"] = {"starts": 2, "max_iterations": 300, "tolerance": 1e-8}
    cfg["datasets"]["cfmspd"]["params"].update(S=100, N=200, d=10)     # S N d^2 x 8 B = 16e6 B = 15.26 MB
    size = 16e6 / 2**20
    expected = 10 + math.ceil(2 * 300 * 5 * size / 200 / 60)
    assert expected == 14 and Plan(cfg, PAPER).reference_runtime("cfmspd") == expected
    # a job of 3 instances (locally one data job per dataset): the solver's budget 3 times
    assert Plan(cfg, PAPER).reference_runtime("cfmspd", 3) == 10 + math.ceil(3 * 2 * 300 * 5 * size / 200 / 60)
    # no reference settings at all: 1 start x 1000 iterations
    del cfg["datasets"]["cfmspd"]["reference"]
    assert Plan(cfg, PAPER).reference_runtime("cfmspd") == 10 + math.ceil(5000 * size / 12000)
    # x* in closed form (CPESph's leading eigenvector): no solver, whatever its reference settings
    cfg["datasets"]["cpesph"]["reference"] = {"starts": 2, "max_iterations": 300, "tolerance": 1e-8}
    assert Plan(cfg, PAPER).reference_runtime("cpesph") == 10


def test_run_resources_count_the_sample_gradients_of_the_job(plan, tmp_path):
    res = plan.run_resources("cpesph_fixed")
    # runs: rfedags K = 1 and 3, rfedavg K = 3, 2 seeds each, 10 rounds, B = 8, S = 4 agents:
    # 2 x 10 x (1 + 3 + 3) x 8 x 4 = 4480 gradients at 100 us: < 1 minute
    assert res["runtime"] == 10 + math.ceil(4480 * 100e-6 / 60) == 11
    data, ref = tmp_path / "d.npz", tmp_path / "r.npz"
    for path, mb in ((data, 400), (ref, 100)):          # sparse: the size without the bytes
        with open(path, "wb") as f:
            f.truncate(2**20 * mb)
    one = _wc(data=[str(data)] * 3, references=[str(ref)] * 3)
    assert res["mem_mb"](None, one) == 1500                       # 3 x (400 + 100) MB
    assert res["mem_mb"](None, _wc(data=[str(ref)], references=[str(ref)])) == 1000
    assert res["mem_mb"](None, _wc(data=["missing"], references=["missing"])) == 1000
    cfg = copy.deepcopy(SMOKE)
    cfg["experiments"]["cpesph_fixed"]["rounds"] = 100_000
    # 2 x 100000 x 7 x 8 x 4 = 44.8e6 gradients = 4480 s = 75 minutes
    assert Plan(cfg, PAPER).run_resources("cpesph_fixed")["runtime"] == 85


# ---- figures: labels, styles and order from the declarations --------------------------------
def test_the_reproduction_spec_keeps_the_claims_in_declaration_order(plan, tmp_path):
    from rfl.claims.judge import declared
    io.sync_json(tmp_path / "reproduction.json", plan.table_spec("reproduction"))
    spec = io.read_json(tmp_path / "reproduction.json")
    assert list(spec["config"]["claims"]) != list(SMOKE["claims"])      # the file's JSON sorts keys
    assert list(declared(spec)) == list(SMOKE["claims"])
    assert list(declared({"config": SMOKE})) == list(SMOKE["claims"])   # a config read from YAML
    from rfl.reporting.order import restore                # and so do the figures and sources
    restored = restore(spec)
    assert [list(restored[k]) for k in ("claims", "figures", "sources")] == \
        [list(SMOKE[k]) for k in ("claims", "figures", "sources")]


def test_claim_pages_sit_beside_their_figure_in_the_report(plan):
    pages = plan.claim_pages()
    assert [p for p, *_ in pages] == [f".smoke/paper_tables/claims/{f}.html" for f in SMOKE["figures"]] + SECTION_PAGES
    for path, category, subcategory, labels in pages[:len(SMOKE["figures"])]:
        f = Path(path).stem
        wc = _wc(figure=f)
        # the figure's PDF is flagged with the same category and subcategory: the figure's place
        # in the report's menus, numbered in the papers' order (rfl/reporting/order.py)
        assert (category, subcategory) == (plan.figure_category(wc), plan.figure_subcategory(wc))
        assert subcategory == plan.menu["figures"][f][1] and category == plan.menu["figures"][f][0]
        fig = plan.figure_labels(wc)
        assert labels.keys() == fig.keys() and labels["figure"] == fig["figure"] == f
        # Snakemake's report folds two results into one row with a toggle when exactly one
        # label tells them apart; two labels that differ keep them as two rows
        assert sum(labels[k] != fig[k] for k in fig) >= 2
    cfg = copy.deepcopy(SMOKE)
    cfg["claims"]["lsa"] = {**cfg["claims"]["fig2_linear"], "section": "LSA", "figures": []}
    path, category, subcategory, labels = Plan(cfg, PAPER).claim_pages()[-1]
    assert (path, labels) == (".smoke/paper_tables/claims/section-lsa.html", None)
    assert subcategory.endswith(" LSA") and subcategory == Plan(cfg, PAPER).menu["sections"]["LSA"]


def test_figure_labels_and_metric_labels():
    assert figures.method_label(("rfedags", 4, None)) == "RFedAGS-K=4"
    assert figures.method_label(("rfedags", 4, 10)) == "RFedAGS-K=4, s=10"
    assert figures.method_label(("rlbfgs", None, None)) == "RLBFGS"
    assert figures.metric_label("excess_risk") == "excess risk $F(x_t) - F(x^*)$"
    assert figures.metric_label("test_nmse", ["school"]) == "test NMSE (held out)"
    assert figures.metric_label("subspace_dist", ["multitask"]) == r"dist$(\mathcal{U}_t, \mathcal{U}^*)$"
    assert figures.metric_label("unknown_metric", ["cpesph"]) == "unknown_metric"


def test_styles_colour_by_K_only_methods_without_their_own_colour():
    keys = [("rfedags", 1, None), ("rfedags", 4, None), ("rfedavg", 4, None), ("rfedags", 10, None),
            ("rsd", None, None), ("rfedproj", 5, None)]
    styles = figures._styles(keys)
    viridis = {K: plt.cm.viridis(i / 2 * 0.9) for i, K in enumerate([1, 4, 10])}   # not rfedproj's 5
    assert styles[("rfedags", 1, None)] == {"color": viridis[1], "ls": "-"}
    assert styles[("rfedags", 10, None)] == {"color": viridis[10], "ls": "-"}
    assert styles[("rfedavg", 4, None)] == {"color": viridis[4], "ls": "--"}
    assert styles[("rsd", None, None)] == {"color": "tab:red", "ls": ":"}
    # rfedproj has its own colour; its K does not enter the colour scale
    assert styles[("rfedproj", 5, None)] == {"color": "tab:cyan", "ls": "-."}
    assert figures._styles([("rfedags", 1, None), ("rfedags", 4, None)])[("rfedags", 4, None)]["color"] \
        == plt.cm.viridis(0.9)


def test_runs_are_grouped_in_legend_order(tmp_path):
    tables = []
    for i, (name, K) in enumerate([("rlbfgs", None), ("rfedavg", 5), ("rfedags", 10), ("rfedags", 1),
                                   ("rfedsvrg", 5), ("rsd", None)]):
        path = tmp_path / f"r{i}.csv"
        write_run(path, {"round": [0], "excess_risk": [1.0], "status": ["ok"]},
                  {"algorithm": {"name": name, "K": K}, "dataset": {"problem": "kpca"}})
        tables.append(path)
    groups, problems = figures._load_runs(tables)
    assert [k[:2] for k in groups] == [("rfedags", 1), ("rfedags", 10), ("rfedavg", 5), ("rfedsvrg", 5),
                                       ("rsd", None), ("rlbfgs", None)]
    assert problems == ["kpca"]


# ---- Snakemake's linter ---------------------------------------------------------------------
@pytest.mark.skipif(SNAKEMAKE is None, reason="needs snakemake")
@pytest.mark.parametrize("configfile", ["config/config.yaml", "config/smoke.yaml"])
def test_snakemake_lint_is_clean(tmp_path, configfile):
    copy_workflow(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    env.pop("SNAKEMAKE_PROFILE", None)
    r = subprocess.run([SNAKEMAKE, "--lint", "--configfile", configfile], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Lints for" not in out, out[-5000:]


def test_dry_runs_are_told_by_the_command_line():
    from rfl.workflow import is_dry_run
    for argv in (["snakemake", "-n"], ["snakemake", "--cores", "2", "-np"], ["snakemake", "--dry-run"],
                 ["snakemake", "--dryrun", "--profile", "profiles/slurm"]):
        assert is_dry_run(argv), argv
    for argv in (["snakemake", "--cores", "1"], ["snakemake", "--configfile", "config/paper.yaml"],
                 ["n", "--notemp"]):
        assert not is_dry_run(argv), argv


def test_cpu_estimate_counts_the_expected_participants(plan):
    from rfl import cost_model
    from rfl.cost_model import participants
    # cpesph_fixed of the smoke config: 4480 sample gradients (as above)
    assert plan.run_samples("cpesph_fixed") == 4480
    assert participants(None, 10) == 10 and participants(3, 10) == 3
    assert participants({"scheme": "bernoulli", "rho": 0.3, "probabilities": None}, 10) == pytest.approx(3)
    assert participants({"scheme": "bernoulli_estimated", "rho": 0.5,
                         "probabilities": [0.1, 0.2, 0.7]}, 3) == pytest.approx(1.0)
    # the job's estimate is the cost model's, of exactly the job's runs
    specs = [s for (e, _), s in plan.runs.items() if e == "cpesph_fixed"]
    assert plan.run_specs("cpesph_fixed") == specs
    assert plan.run_cpu_seconds("cpesph_fixed") == cost_model.job_cpu_seconds(specs, plan.cost_model)
    text = plan.cpu_estimate().splitlines()
    assert text[0].startswith("rfl: estimated CPU-hours") and text[-1].split()[0] == "total"
    hours = [float(line.split()[1]) for line in text[1:-1]]
    assert float(text[-1].split()[-1]) == pytest.approx(sum(hours), abs=1e-3 * len(hours))
    assert [line.split()[0] for line in text[1:-1]] == list(dict.fromkeys(e for e, _ in plan.runs))


def test_longest_work_goes_first(plan):
    """Priorities (Snakemake's, which do not pass on to the jobs a job waits for): a run job's
    is its estimate; a data job's is above every run job reading it; downloads, figures and
    tables above all."""
    experiments = plan.run_experiments()
    for e in experiments:
        assert plan.run_priority(e) == math.ceil(plan.run_cpu_seconds(e)) >= 1
    readers: dict[str, list[str]] = {}
    for e in experiments:
        for d in {s["dataset"]["name"] for s in plan.run_specs(e)}:
            readers.setdefault(d, []).append(e)
    assert set(readers) == set(plan.data_instances())
    for d, es in readers.items():
        assert plan.data_priority(d) == max(plan.run_priority(e) for e in es) + 1
    assert plan.top_priority() == max(plan.data_priority(d) for d in readers) + 1
    # the estimates differ, so the order is the estimates' (not the config's)
    assert len({plan.run_priority(e) for e in experiments}) > 1


def test_the_dry_run_shows_the_priorities(tmp_path):
    """The rules pass them to Snakemake: a run job's priority in the dry run is the plan's."""
    snakemake = shutil.which("snakemake")
    if snakemake is None:
        pytest.skip("snakemake")
    copy_workflow(tmp_path, (*WORKFLOW, "profiles"))
    r = subprocess.run([snakemake, "-n", "--cores", "2", "--configfile", "config/smoke.yaml"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, RFL_OFFLINE="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = dict(re.findall(r"^rule (\w+):\n(?:    .*\n)*?    priority: (\d+)$", r.stdout, re.M))
    plan = Plan(SMOKE, PAPER)
    runs = {name[len("run_"):]: int(p) for name, p in jobs.items() if name.startswith("run_")}
    assert runs and all(plan.run_priority(e) == p for e, p in runs.items())
    data = {name[len("data_"):]: int(p) for name, p in jobs.items() if name.startswith("data_")}
    assert data and all(plan.data_priority(d) == p for d, p in data.items())
    # downloads, figures and tables: the top (School's and its table's when its data is here);
    # a run that names no target draws the figures in batches
    batches = [name for name in jobs if name.startswith("figures_batch")]
    assert batches and "figure" not in jobs and "sweep" in jobs
    for name in ("table2", "sweep", "lsa", "school_raw", "anchors_raw", *batches):
        if name in jobs:
            assert int(jobs[name]) == plan.top_priority(), name
    # a figure asked for by name is drawn by a job of its own, at the same priority
    figure = next(iter(SMOKE["figures"]))
    r = subprocess.run([snakemake, f".smoke/figures/{figure}.pdf", "-n", "--cores", "2",
                        "--configfile", "config/smoke.yaml"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, RFL_OFFLINE="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = dict(re.findall(r"^rule (\w+):\n(?:    .*\n)*?    priority: (\d+)$", r.stdout, re.M))
    assert int(jobs["figure"]) == plan.top_priority()
    assert not any(name.startswith("figures_batch") for name in jobs)
    runs = {name[len("run_"):] for name in jobs if name.startswith("run_")}
    fig = SMOKE["figures"][figure]
    assert runs == {e for e in [fig["experiment"], *fig.get("sweep", [])] if e in plan.run_experiments()}


def test_names_targets_reads_snakemakes_own_command_line():
    assert not names_targets(["snakemake", "--cores", "2"])
    assert not names_targets(["snakemake", "--cores", "2", "--configfile", "config/smoke.yaml"])
    assert not names_targets(["snakemake", "-n", "--forcerun", "figure", "--until", "run_x"])
    assert not names_targets(["snakemake", "--report", "report.html"])
    assert names_targets(["snakemake", "--cores", "2", "figures/fig3_school_r4.pdf"])
    assert names_targets(["snakemake", "figures/a.pdf", "--cores", "2"])
    assert names_targets(["snakemake", "--cores", "2", "all"])
    assert names_targets(["snakemake", "--latency-wait", "soon"])     # not parsed: figure by figure


@pytest.fixture
def batched(monkeypatch):
    """The smoke plan of a full run, four figures to a batch (so that it has several)."""
    monkeypatch.setattr(workflow, "FIGURES_PER_BATCH", 4)
    return Plan(SMOKE, PAPER, batch_figures=True)


def _waits_for(plan, figure) -> list[str]:
    """The experiments with runs whose run jobs ``figure`` waits for."""
    fig = SMOKE["figures"][figure]
    return [e for e in dict.fromkeys([fig["experiment"], *fig.get("sweep", [])]) if e in plan.run_experiments()]


def test_the_figure_batches_hold_every_figure_once_in_the_order_their_runs_end(plan, batched):
    batches = batched.figure_batches()
    flat = [f for b in batches for f in b]
    assert sorted(flat) == sorted(SMOKE["figures"]) and len(flat) == len(set(flat))
    assert len(batches) == math.ceil(len(flat) / 4) >= 3
    assert max(map(len, batches)) <= 4 and max(map(len, batches)) - min(map(len, batches)) <= 1
    # run jobs start by priority, the longest first: a figure is ready when the one of lowest
    # priority among its experiments' is done, so earlier batches wait for higher priorities
    ready = [min(plan.run_priority(e) for e in _waits_for(plan, f)) for f in flat]
    assert ready == sorted(ready, reverse=True) and len(set(ready)) > 1
    assert [f for f, r in zip(flat, ready) if r == ready[0]] == sorted(f for f, r in zip(flat, ready) if r == ready[0])


def test_a_figure_is_ready_when_the_last_run_job_among_its_experiments_ends(plan, monkeypatch):
    """A figure of two experiments (the run job of highest priority, which starts first, and the
    one of lowest, which starts last) goes with the figures that wait for the latter; with the
    latter left out (its data absent), with those that wait for the former. Ties by name."""
    monkeypatch.setattr(workflow, "FIGURES_PER_BATCH", 1)
    prio = {e: plan.run_priority(e) for e in plan.run_experiments()}
    first, last = max(prio, key=prio.get), min(prio, key=prio.get)
    assert prio[first] > prio[last]
    cfg = copy.deepcopy(SMOKE)
    cfg["figures"]["fig_both"] = {**next(iter(SMOKE["figures"].values())), "experiment": first, "sweep": [last]}
    for skipped, waits_for in (({}, last), ({last: "its data is absent"}, first)):
        batched = Plan(cfg, PAPER, skipped=skipped, batch_figures=True)
        ready = {f: min(prio[e] for e in _waits_for(plan, f) if e not in skipped) for f in batched.figures
                 if f != "fig_both"}
        ready["fig_both"] = prio[waits_for]
        assert [b[0] for b in batched.figure_batches()] == sorted(ready, key=lambda f: (-ready[f], f))


def test_one_batch_of_every_figure_reads_each_run_table_once(plan, monkeypatch):
    monkeypatch.setattr(workflow, "FIGURES_PER_BATCH", 1000)
    one = Plan(SMOKE, PAPER, batch_figures=True)
    assert len(one.figure_batches()) == 1 and sorted(one.figure_batches()[0]) == sorted(SMOKE["figures"])
    per_figure = [t for f in SMOKE["figures"] for e in _waits_for(plan, f) for t in plan.run_tables(e)]
    union = one.figure_batch_files(0, "runs")
    assert len(per_figure) > len(set(per_figure))              # figures share runs here ...
    assert sorted(union) == sorted(set(per_figure))            # ... and the job lists each once


def test_a_figure_batch_reads_each_figures_runs_and_writes_its_files(plan, batched):
    batches = batched.figure_batches()
    jobs = batched.jobs()
    assert [j for j in jobs if j.startswith("figures/")] == [f"figures/batch{k}" for k in range(len(batches))]
    assert [j for j in jobs if not j.startswith("figures/")] == [j for j in plan.jobs() if not j.startswith("figures/")]
    assert not any(j.startswith("figures/batch") for j in plan.jobs())
    assert {f"figures/{f}" for f in SMOKE["figures"]} <= set(plan.jobs())
    specs = batched.specs()
    for k, figures_k in enumerate(batches):
        runs = {f: [t for e in _waits_for(plan, f) for t in plan.run_tables(e)] for f in figures_k}
        assert specs[f".smoke/results/specs/figure_batches/batch{k}.json"] == {"figures": [
            {"spec": f".smoke/results/specs/figures/{f}.json", "pdf": f".smoke/figures/{f}.pdf", "runs": runs[f]}
            for f in figures_k]}
        union = batched.figure_batch_files(k, "runs")
        assert len(union) == len(set(union)) and set(union) == {t for f in figures_k for t in runs[f]}
        assert batched.figure_batch_files(k, "specs") == [f".smoke/results/specs/figures/{f}.json" for f in figures_k]
        assert batched.figure_batch_files(k, "png") == [f".smoke/figures/{f}.png" for f in figures_k]
        for (pdf, category, subcategory, labels), f in zip(batched.figure_batch_report(k), figures_k, strict=True):
            wc = _wc(figure=f)          # each PDF where the figure rule's report puts it
            assert (pdf, category, subcategory, labels) == (f".smoke/figures/{f}.pdf", plan.figure_category(wc),
                                                            plan.figure_subcategory(wc), plan.figure_labels(wc))
    assert not any("figure_batches" in p for p in plan.specs())
    # from a results table, or without figures: one figure per job as before
    assert Plan({**SMOKE, "results": "merged.parquet"}, PAPER, batch_figures=True).batch_figures is False
    assert Plan({**SMOKE, "figures": {}}, PAPER, batch_figures=True).batch_figures is False


def test_compile_package_writes_the_bytecode_of_every_module_even_where_python_would_not(tmp_path, monkeypatch):
    """``compile_package``: a .pyc for each module of the tree (sub-packages too), also with
    PYTHONDONTWRITEBYTECODE set; a module edited since is compiled again; a tree whose
    bytecode cannot be written is False, not an error."""
    import importlib.util

    from rfl.workflow import compile_package

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    modules = [pkg / "__init__.py", pkg / "a.py", pkg / "sub" / "__init__.py", pkg / "sub" / "b.py"]
    for m in modules:
        m.write_text("X = 1\n")
    assert compile_package(pkg) is True
    caches = [Path(importlib.util.cache_from_source(str(m))) for m in modules]
    assert all(c.is_file() for c in caches)
    before = caches[1].read_bytes()
    modules[1].write_text("X = 2  # edited\n")
    os.utime(modules[1], (1e9 + 10**8, 1e9 + 10**8))        # a later mtime than the first
    assert compile_package(pkg) is True
    assert caches[1].read_bytes() != before
    blocked = tmp_path / "blocked"                           # __pycache__ cannot be made: a file
    blocked.mkdir()
    (blocked / "c.py").write_text("Y = 1\n")
    (blocked / "__pycache__").write_text("")
    assert compile_package(blocked) is False
