"""Mutation testing of one package or module of rfl with mutmut, and the README's table of scores.

``python -m rfl.testing.mutation <name>`` (a package: manifolds, algorithms, problems, claims,
reporting, ...; or a single module: size, schema, simtime -> ``rfl/size.py`` ...) copies the
tracked files of the repository into a scratch directory, tells mutmut (``[tool.mutmut]`` in
pyproject.toml) to mutate only ``rfl/<name>/`` or ``rfl/<name>.py`` and to run only the tests
that exercise it (``TESTS`` below, plus any ``tests/test_mutation_kills_<name>*.py``, so one
package costs minutes, not hours), runs it, and records the score in
``tests/mutation_scores.json``; ``--readme`` then rewrites the table between the
``mutation-scores`` markers of README.md from that file.

Not part of CI: a package takes 10-60 minutes of CPU on 2 cores, reporting several hours
(its tests draw figures and build reports); ``--sample N`` tests a uniform random sample of N
mutants instead (``--seed`` draws the same sample again), an estimate recorded with its
standard error. ``--rerun REPORT`` runs again only the survivors that the ``--survivors``
report of the recorded run lists (after tests were added to kill them) and updates that record. The score is killed / (killed + survived + timeouts + suspicious + crashed, mutmut's "segfault": the test
process ended by a signal, which on a loaded machine is mostly mutmut's own timeout); mutants
that no selected test reaches ("no tests") count as survivors, since a bug there would go
unseen too.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCORES = ROOT / "tests" / "mutation_scores.json"
README = ROOT / "README.md"
GOAL = 0.90

#: the test files that exercise each package or single module (globs under tests/; a name
#: with a folder rfl/<name>/ is a package, else the module rfl/<name>.py); every selection also
#: takes the tests written to kill its survivors, tests/test_mutation_kills_<name>*.py
TESTS = {
    "manifolds": ["test_manifold*.py", "test_aggregation.py", "test_lorentz.py", "test_stiefel_qr_inverse.py"],
    "algorithms": ["test_algorithms.py", "test_strategy_contract.py", "test_rfedsvrg_rfedproj.py",
                   "test_rfedags_rsvrg.py", "test_rlbfgs*.py", "test_centralized.py", "test_aggregation.py",
                   "test_batching.py", "test_guards.py", "test_sampling.py", "test_participation.py",
                   "test_full_batch_products.py", "test_lsa.py", "test_scaffold_fedrr.py", "test_zorfedproj.py",
                   "test_rfedsvrg_authors.py", "test_bernoulli_mean.py", "test_participation_biased.py",
                   "test_common_random_numbers.py", "test_rfedprox.py"],
    "problems": ["test_problem_contract.py", "test_cpesph.py", "test_cfmspd.py", "test_mbcfsti.py",
                 "test_kpca.py", "test_multitask*.py", "test_lsa.py", "test_lsa_stationary.py", "test_school.py",
                 "test_batching.py", "test_hsp.py", "test_lrmc.py", "test_pca_sphere.py", "test_pca_stiefel.py",
                 "test_full_batch_products.py", "test_problem_params.py",
                 "test_problem_inputs.py", "test_fedavg_bias.py", "test_mnist_splits.py", "test_movielens.py",
                 "test_cifar10.py", "test_pathmnist.py", "test_partbias_runner.py", "test_pca_eigengap.py"],
    "claims": ["test_claim_rule*.py", "test_zo_claims.py", "test_claims_*.py", "test_table2_claims.py", "test_lsa_claims.py",
               "test_lsa_workflow.py", "test_report_sections.py", "test_partial_explanations.py",
               "test_data_skip.py"],
    "reporting": ["test_claim_pages.py", "test_tables.py", "test_lsa_workflow.py", "test_workflow.py",
                  "test_claim_rules_newer.py",
                  "test_partial_explanations.py", "test_heterogeneity_report.py",
                  "test_report_sections.py", "test_figure_data.py", "test_performance_rows.py",
                  "test_lsa_report.py", "test_claim_pages_readback.py", "test_sweep_readback.py",
                  "test_bias_sweep_figure.py", "test_report_provenance.py"],
    "flower": ["test_flower_faults.py", "test_flower_server.py", "test_flower.py"],
    "graphs": ["test_graphs.py", "test_decentralised.py"],
    "participation": ["test_participation.py", "test_participation_biased.py", "test_bernoulli_mean.py",
                      "test_partbias_runner.py", "test_claim_rules_partbias.py"],
    # single modules: the test files that import them (grep tests/ for the module). Left out:
    # test_bad_numbers.py (a fuzz of every numeric key through the CLI, > 10 min on 2 busy cores)
    "size": ["test_size.py", "test_paper_config.py"],
    "schema": ["test_sweeps.py"],
    "simtime": ["test_partbias_runner.py"],
    "snakemake_tuning": ["test_snakemake_tuning.py"],
    "io": ["test_io_rows.py", "test_io_yaml.py", "test_runner.py", "test_sampling_versions.py"],
    "calibrate": ["test_cost_model.py"],
    "workflow": ["test_workflow.py"],
}
#: tests left out: those that start ``rfl`` or ``snakemake`` as subprocesses (they import the
#: installed rfl, not the mutant, and their timing-dependent checks fail in mutmut's copy)
DESELECT = {"reporting": "not snakemake_lint", "workflow": "not snakemake_lint and not dry_run",
            "graphs": "not exits_2 and not Contract and not runner_records"}

#: functions that hold test data for the shared contracts (``examples``: the manifolds every
#: contract runs on; ``test_params``: a problem's toy sizes), not behaviour; mutating them
#: changes which cases the tests run, not what rfl computes, so they are left out
NOT_MUTATED = ("examples", "test_params")
#: per package, functions mutmut cannot test: ``Problem.__init_subclass__`` runs when
#: tests/conftest.py defines its toy problem, and pytest imports conftest.py in every test
#: run, so mutmut's forced-fail check (every mutated function raises) fails while loading
#: conftest and the whole run aborts (``ParticipationScheme.__init_subclass__``, which declares
#: every scheme when rfl.participation is first imported, is left out for the same reason). (mutmut itself skips decorated functions, so the
#: ``@njit`` kernels of ``rfl.problems._kernels`` are never mutated; their per-agent-loop
#: oracles are in tests/test_batching.py.)
PACKAGE_NOT_MUTATED = {"problems": ("__init_subclass__",), "claims": ("__init_subclass__",),
                       "participation": ("__init_subclass__",)}

BEGIN, END = "<!-- mutation-scores: begin -->", "<!-- mutation-scores: end -->"


def unknown(name: str) -> str:
    return f"rfl.testing.mutation: unknown package or module {name!r}; allowed: {', '.join(TESTS)}"


def source_of(name: str) -> str:
    """What mutmut mutates for ``name``: the package's folder ``rfl/<name>/`` if there is one,
    else the module ``rfl/<name>.py`` (a path relative to the repository)."""
    if name not in TESTS:
        raise SystemExit(unknown(name))
    return f"rfl/{name}/" if (ROOT / "rfl" / name).is_dir() else f"rfl/{name}.py"


def only_mutate(name: str) -> str:
    """mutmut's ``only_mutate`` glob for ``name``: ``rfl/<package>/*`` or ``rfl/<module>.py``."""
    source = source_of(name)
    return source + "*" if source.endswith("/") else source


def tests_for(package: str) -> list[str]:
    if package not in TESTS:
        raise SystemExit(unknown(package))
    tracked = set(subprocess.run(["git", "ls-files", "tests"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.split())
    globs = TESTS[package] + [f"test_mutation_kills_{package}*.py"]
    out = sorted({str(p.relative_to(ROOT)) for g in globs for p in (ROOT / "tests").glob(g)}
                 & tracked)
    if not out:
        raise SystemExit(f"rfl.testing.mutation: no test files match {TESTS[package]}")
    return out


def selection(package: str) -> list[str]:
    """pytest arguments that select the package's tests."""
    return tests_for(package) + (["-k", DESELECT[package]] if package in DESELECT else [])


def _toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def exclude_test_data(path: Path, names: tuple[str, ...] = NOT_MUTATED) -> None:
    """Wrap each function of a module named in ``names`` (default ``NOT_MUTATED``) in mutmut's
    ``no mutate start/end`` pragmas."""
    import ast

    lines = path.read_text().splitlines(keepends=True)
    spans = [(min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno)
             for n in ast.walk(ast.parse("".join(lines)))
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names]
    for start, end in sorted(spans, reverse=True):
        indent = lines[start - 1][: len(lines[start - 1]) - len(lines[start - 1].lstrip())]
        lines.insert(end, f"{indent}# pragma: no mutate end\n")
        lines.insert(start - 1, f"{indent}# pragma: no mutate start\n")
    path.write_text("".join(lines))


def prepare(package: str, workdir: Path) -> None:
    """Copy the tracked files into ``workdir`` and configure mutmut there."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src, dst = ROOT / rel, workdir / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    source = workdir / source_of(package)
    for module in (source.rglob("*.py") if source.is_dir() else [source]):
        exclude_test_data(module, NOT_MUTATED + PACKAGE_NOT_MUTATED.get(package, ()))
    pyproject = workdir / "pyproject.toml"
    text = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", pyproject.read_text())
    text += ("\n[tool.mutmut]\n"
             'source_paths = ["rfl/"]\n'
             f'only_mutate = ["{only_mutate(package)}"]\n'
             'also_copy = ["tests/", "config/", "docs/", "rules/", "Snakefile", "benchmarks/", "README.md"]\n'
             f"pytest_add_cli_args_test_selection = {_toml_list(selection(package))}\n"
             # -n 0: mutmut reads which tests reach which mutant from pytest's hooks in its own
             # process, which the xdist workers of the project's addopts would hide
             'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-n", "0"]\n')
    pyproject.write_text(text)


def survivors_report(work: Path, env: dict, only=None) -> str:
    """Every mutant that was not killed, with its diff (``mutmut results`` and ``mutmut show``);
    ``only``: the names tested (a sample), so that the mutants never run are not listed."""
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results"], cwd=work, env=env,
                             capture_output=True, text=True).stdout
    if only is not None:
        only = set(only)
        listing = "\n".join(ln for ln in listing.splitlines()
                             if ":" in ln and ln.split(":")[0].strip() in only
                             and "not checked" not in ln)
    names = [ln.split(":")[0].strip() for ln in listing.splitlines() if ":" in ln]
    out = [listing]
    for name in names:
        out.append(subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work, env=env,
                                  capture_output=True, text=True).stdout)
    return "\n".join(out)


def commit_of_tree() -> str:
    """HEAD's short hash, with "+" when tracked files but the scores file differ from it (what
    was measured)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", ".", f":!{SCORES.relative_to(ROOT)}"],
                           cwd=ROOT).returncode != 0          # (the scores file measures nothing)
    return head + ("+" if dirty else "")


def mutant_names(work: Path) -> list[str]:
    """Every mutant mutmut generated in ``work`` (the keys of its ``mutants/**/*.py.meta``)."""
    names = []
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        names += list(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return sorted(names)


#: a mutant name no mutant has: ``mutmut run`` generates the mutants and maps tests to
#: functions, then stops on it (the sampled mode's first pass)
NO_SUCH_MUTANT = "rfl.__no_such_mutant__"


def run(package: str, children: int, report: str | None = None, sample: int | None = None,
        seed: int = 0, only: list[str] | None = None) -> dict:
    """Run mutmut on ``rfl/<package>`` or ``rfl/<module>.py``: every mutant, or (``sample``) a
    uniform random sample of that many mutants drawn with ``seed``, whose score estimates the
    package's (the record says so, with the sample's standard error), or (``only``) the named
    mutants (``rerun``)."""
    tests, commit = tests_for(package), commit_of_tree()
    with tempfile.TemporaryDirectory(prefix=f"rfl-mutmut-{package}-") as tmp:
        work = Path(tmp)
        prepare(package, work)
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(children)]
        total = chosen = None
        if sample or only:
            subprocess.run(command + [NO_SUCH_MUTANT], cwd=work, env=env, check=False,
                           capture_output=True)
            names = mutant_names(work)
            if not names:
                raise SystemExit("mutmut generated no mutants (or the selected tests fail on the "
                                 f"unmutated code: {' '.join(selection(package))})")
            import random
            total = len(names)
            if only:
                gone = sorted(set(only) - set(names))
                if gone:
                    raise SystemExit(f"mutmut no longer generates {len(gone)} of the mutants to rerun "
                                     f"(the source changed?), e.g. {gone[0]}")
                chosen = sorted(only)
            else:
                chosen = sorted(random.Random(seed).sample(names, min(sample, total)))
            command += chosen
        done = subprocess.run(command, cwd=work, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"mutmut run failed (exit {done.returncode}): the selected tests must pass "
                             f"on the unmutated code first ({' '.join(selection(package))})")
        subprocess.run([sys.executable, "-m", "mutmut", "export-cicd-stats"], cwd=work, env=env, check=True)
        stats = json.loads((work / "mutants" / "mutmut-cicd-stats.json").read_text())
        survivors = survivors_report(work, env, chosen) if report else ""
    if report:
        Path(report).write_text(survivors)
        print(f"survivors and their diffs: {report}")
    killed = int(stats.get("killed", 0))
    missed = sum(int(stats.get(k, 0)) for k in ("survived", "no_tests", "timeout", "suspicious", "segfault"))
    out = {"package": package, "killed": killed, "missed": missed,
           "score": round(killed / (killed + missed), 4) if killed + missed else None,
           "stats": stats, "tests": tests, "commit": commit,
           "date": _dt.date.today().isoformat()}
    if sample:
        n = killed + missed
        out["sample"] = {"mutants": total, "drawn": len(chosen), "seed": seed,
                         "standard_error": (round((out["score"] * (1 - out["score"]) / n) ** 0.5, 4)
                                            if n else None)}
    return out


def survivor_names(report: str) -> list[str]:
    """The mutants a ``--survivors`` report lists as not killed (its "name: status" lines)."""
    names = []
    for line in Path(report).read_text().splitlines():
        m = re.fullmatch(r"\s*(rfl\.\S+): (.+)", line)
        if m and m.group(2).strip() != "killed":
            names.append(m.group(1))
    return names


def rerun(package: str, previous: dict, report: str, children: int, new_report: str | None) -> dict:
    """The record ``previous`` (the last one of ``package``) with its survivors, as listed in
    its ``--survivors`` ``report``, run again against the current tests: a mutant killed now
    moves from missed to killed. Valid while the source is the one ``previous`` measured (the
    same mutants): the killed ones stay killed as tests are only added."""
    names = survivor_names(report)
    if not names:
        raise SystemExit(f"{report} lists no surviving mutant")
    if len(names) != previous["missed"]:
        raise SystemExit(f"{report} lists {len(names)} survivors, the recorded {package} run "
                         f"missed {previous['missed']}: not the report of that run")
    now = run(package, children, new_report, only=names)
    out = dict(previous, killed=previous["killed"] + now["killed"], missed=now["missed"],
               tests=now["tests"], commit=now["commit"], date=now["date"])
    n = out["killed"] + out["missed"]
    out["score"] = round(out["killed"] / n, 4)
    out["rerun"] = {"survivors": len(names), "killed": now["killed"], "first_commit": previous["commit"]}
    if out.get("sample"):
        out["sample"] = dict(out["sample"], standard_error=round((out["score"] * (1 - out["score"]) / n) ** 0.5, 4))
    out["note"] = (f"survivors rerun: {now['killed']} of the {len(names)} survivors of the run at "
                   f"{previous['commit']} killed by tests added since")
    return out


def load_scores() -> dict:
    return json.loads(SCORES.read_text()) if SCORES.exists() else {}


def display(name: str) -> str:
    """``rfl/<package>`` or ``rfl/<module>.py`` (a name no longer in ``TESTS``: as a package)."""
    return f"rfl/{name}.py" if (name in TESTS and not (ROOT / "rfl" / name).is_dir()) else f"rfl/{name}"


def table(scores: dict) -> str:
    """The README's Markdown table of the recorded scores."""
    lines = ["| package | mutants | killed | score | goal met | commit | date |", "|---|---|---|---|---|---|---|"]
    for pkg in sorted(scores):
        r = scores[pkg]
        n = r["killed"] + r["missed"]
        score = "n/a" if r["score"] is None else f"{100 * r['score']:.1f} %"
        met = "yes" if r["score"] is not None and r["score"] >= GOAL else "no"
        if r.get("sample"):
            s = r["sample"]
            n = f"{n} of {s['mutants']} (random sample, seed {s['seed']})"
            if r["score"] is not None:
                score += f" ± {100 * s['standard_error']:.1f}"
        if r.get("note"):                      # e.g. measured in steps, not one fresh run
            n = f"{n} ({r['note'].split(':')[0]})"
        lines.append(f"| {display(pkg)} | {n} | {r['killed']} | {score} | {met} | {r['commit']} | {r['date']} |")
    return "\n".join(lines)


def readme_block(scores: dict) -> str:
    return f"{BEGIN}\n{table(scores)}\n{END}"


def update_readme(scores: dict) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: readme_block(scores), text, flags=re.S)
    README.write_text(new)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rfl.testing.mutation", description=__doc__.split("\n")[0])
    ap.add_argument("package", nargs="?", help=f"a package or module of rfl, one of {', '.join(TESTS)}; "
                                                "omit with --readme")
    ap.add_argument("--children", type=int, default=2, help="mutmut's parallel workers (default 2)")
    ap.add_argument("--survivors", metavar="FILE", help="write the surviving mutants and their diffs here")
    ap.add_argument("--readme", action="store_true", help="rewrite README.md's table from the scores file")
    ap.add_argument("--sample", type=int, default=None, metavar="N",
                    help="test a uniform random sample of N mutants (an estimate of the score, "
                         "recorded with its standard error) instead of all of them")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    ap.add_argument("--rerun", metavar="REPORT",
                    help="run again only the survivors that REPORT (the --survivors file of the "
                         "package's recorded run) lists, and update that record")
    args = ap.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        ap.error(f"--sample must be a positive number of mutants, got {args.sample}")
    if args.package is not None and args.package not in TESTS:
        print(unknown(args.package), file=sys.stderr)
        raise SystemExit(2)
    scores = load_scores()
    if args.rerun and (not args.package or args.package not in scores or args.sample):
        ap.error("--rerun needs a package with a recorded score, and no --sample")
    if args.package and args.rerun:
        scores[args.package] = rerun(args.package, scores[args.package], args.rerun, args.children,
                                     args.survivors)
    elif args.package:
        scores[args.package] = run(args.package, args.children, args.survivors, args.sample, args.seed)
    if args.package:
        SCORES.write_text(json.dumps(scores, indent=1, sort_keys=True) + "\n")
        r = scores[args.package]
        print(f"{display(args.package)}: {r['killed']} of {r['killed'] + r['missed']} mutants killed ({r['score']})")
    if args.readme:
        update_readme(scores)


if __name__ == "__main__":
    main()
