"""Verdicts at the source's size: claims judged on runs of ``config/paper.yaml``, recorded beside
the default report's verdicts.

A full ``config/paper.yaml`` run takes hours of CPU, so its claims are judged on *subsets* of it:
a config holding some of its experiments with their datasets, figures, sources and the claims
that read only them (``subset``; ``rfl source-size subset``), run by Snakemake as any config.
``rfl source-size record OUT/`` merges that run's ``claims.json`` into the committed record
(RECORD, ``read_run`` then ``merge``): per claim its verdict and margin (per setting of a
sweep), seeds, experiments and size, the commit(s) of its runs, the date, the command that
reproduces it, and a ``digest`` of its definition and its runs' specs in config/paper.yaml.

The reproduction step (``annotate``) puts each recorded entry beside its claim's default verdict
(key ``source_size`` of a claims.json record): ``current`` while the claim's digest in today's
config/paper.yaml is the recorded one, ``stale`` once its definition or its experiments changed
(the recorded verdict is then shown as a past one, not as current); a claim left undecided by
the default run that names config/paper.yaml as its decider and has no record says ``not run``.
The default verdict stays the verdict of the claim.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

from rfl.reporting.source_size import (CURRENT, NOT_RUN, PAPER, RECORD, STALE, line, recorded,  # noqa: F401
                                       seeds_text, verdict_text)

#: what the record says about itself
ABOUT = ("Verdicts of claims judged on runs of subsets of config/paper.yaml (the sources' sizes), "
         "written by `rfl source-size record`; do not edit. Each entry's `command` reruns it from "
         "this repository; `commits` are those of the code its runs ran at; `digest` is that of the "
         "claim's definition and its runs' specs in config/paper.yaml when recorded (the report calls "
         "the entry stale once they differ).")
#: the keys a claims.json record needs to be recorded
RECORD_KEYS = ("id", "verdict", "margin", "experiments", "size")


class SourceSizeError(ValueError):
    """Bad input of ``rfl source-size``: one line naming the file and what is allowed."""


# ---- the subset of config/paper.yaml ----------------------------------------------------------------
def subset(raw: dict, config: dict, experiments: list[str], output_dir: str) -> dict:
    """The config holding only ``experiments`` (names) of config/paper.yaml, raw as written (``raw``;
    ``config`` its resolved, validated form), writing under ``output_dir``: their datasets, the
    figures drawn from them only, every source, and the claims that read only them."""
    from rfl.claims.rule import Evidence

    unknown = [e for e in experiments if e not in raw["experiments"]]
    if unknown:
        raise SourceSizeError(f"{PAPER} has no experiment {', '.join(unknown)}; allowed: the names "
                              f"under its `experiments:`")
    keep = set(experiments)
    exps = {e: v for e, v in raw["experiments"].items() if e in keep}
    used = {v["dataset"] for v in exps.values()}
    claims = {c: d for c, d in raw.get("claims", {}).items()
              if set(Evidence({"config": config}, d["experiments"]).names()) <= keep}
    out = {"output_dir": output_dir, "school": raw["school"],
           "datasets": {d: v for d, v in raw["datasets"].items() if d in used},
           "experiments": exps,
           "figures": {f: v for f, v in raw.get("figures", {}).items()
                       if v["experiment"] in keep and set(v.get("sweep", [])) <= keep},
           "sources": raw.get("sources", {}), "claims": claims}
    if "anchors" in raw:
        out["anchors"] = raw["anchors"]
    out.update(_studies(raw, keep))
    return out


def _studies(raw: dict, keep: set) -> dict:
    """The tables and studies of ``raw`` (``tables.table1``, ``tables.table2``,
    ``heterogeneity``, ``lsa``) restricted to the experiments in ``keep``; one left without an
    experiment is left out. The claims on School's Table 2 or FedLSA's bias read these tables:
    without them a subset's report would call those claims undecided for want of a table."""
    out = {}
    tables = raw.get("tables", {})
    sub_tables = {}
    rows = [r for r in tables.get("table1", {}).get("rows", []) if {r["fixed"], r["decaying"]} <= keep]
    if rows:
        sub_tables["table1"] = {**tables["table1"], "rows": rows}
    t2 = tables.get("table2", {})
    t2_exps = {r: e for r, e in t2.get("experiments", {}).items() if e in keep}
    if t2_exps:
        sub_tables["table2"] = {**t2, "experiments": t2_exps}
        if "sensitivity" in t2:
            sub_tables["table2"]["sensitivity"] = [e for e in t2["sensitivity"] if e in keep]
    if sub_tables:
        out["tables"] = sub_tables
    het = raw.get("heterogeneity", {})
    het_exps = {k: e for k, e in het.get("experiments", {}).items() if e in keep}
    if het_exps:
        out["heterogeneity"] = {**het, "experiments": het_exps}
    lsa = raw.get("lsa", {})
    lsa_exps = [e for e in lsa.get("experiments", []) if e in keep]
    if lsa_exps:
        out["lsa"] = {**lsa, "experiments": lsa_exps}
    return out


def command(configfile: str, output_dir: str, experiments: list[str]) -> str:
    """The shell command that writes the subset config of ``experiments`` and runs it (a run of
    config/paper.yaml itself: the run alone)."""
    q = shlex.quote
    if configfile == PAPER:
        return f"snakemake --cores 2 --configfile {PAPER}"
    return (f"rfl source-size subset {' '.join(q(e) for e in experiments)} -o {q(configfile)} "
            f"--output-dir {q(output_dir)} && snakemake --cores 2 --configfile {q(configfile)}")


# ---- digests ------------------------------------------------------------------------------------------
def run_specs(config: dict, experiments) -> list[dict]:
    """The run specs (``rfl.config.expand_runs``) of ``experiments`` of ``config``, in order."""
    from rfl import config as rflconfig

    names = [e for e in dict.fromkeys(experiments) if e in config["experiments"]]
    return rflconfig.expand_runs({**config, "experiments": {e: config["experiments"][e] for e in names}})


def digest(config: dict, cid: str, experiments) -> str | None:
    """sha256 of claim ``cid``'s definition and the run specs of ``experiments`` in ``config``
    (validated), as canonical JSON; None when ``config`` lacks the claim or an experiment."""
    if cid not in config.get("claims", {}) or any(e not in config["experiments"] for e in experiments):
        return None
    text = json.dumps({"claim": config["claims"][cid], "runs": run_specs(config, experiments)},
                      sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---- a paper run's outputs ------------------------------------------------------------------------------
def _claims_path(path: Path) -> Path:
    """claims.json of ``path``: the file itself, OUT/paper_tables/claims.json or DIR/claims.json."""
    for p in (path, path / "paper_tables" / "claims.json", path / "claims.json"):
        if p.is_file():
            return p
    raise SourceSizeError(f"{path}: no claims.json (allowed: a run's output directory, its "
                          f"paper_tables/ or its paper_tables/claims.json)")


def _json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError):
        raise SourceSizeError(f"{path}: unreadable; allowed: {what}") from None
    except json.JSONDecodeError as exc:
        raise SourceSizeError(f"{path}: not complete JSON ({exc.msg} at line {exc.lineno}; half-written?); "
                              f"allowed: {what}") from None


def read_run(path, paper: dict) -> dict:
    """A paper run's outputs checked against config/paper.yaml (``paper``, validated): its
    claims.json (a list of ``rfl reproduction`` records), the reproduction spec beside it
    (OUT/results/specs/tables/reproduction.json: the run's config), every run table of the
    recorded claims present and older than claims.json, their commits clean, and every claim's
    definition and run specs those of config/paper.yaml. {claims: [records], config, configfile,
    output_dir, commits: {experiment: [commit]}, seeds, date}."""
    from rfl import io

    claims_path = _claims_path(Path(path))
    what = "claims.json that `rfl reproduction` wrote for a subset of config/paper.yaml"
    records = _json(claims_path, what)
    if not isinstance(records, list) or not records or not all(
            isinstance(r, dict) and all(k in r for k in RECORD_KEYS) for r in records):
        raise SourceSizeError(f"{claims_path}: not a claims.json (a list of records with keys "
                              f"{', '.join(RECORD_KEYS)}); allowed: {what}")
    out = claims_path.parent.parent
    spec_path = out / "results" / "specs" / "tables" / "reproduction.json"
    if not spec_path.is_file():
        raise SourceSizeError(f"{claims_path}: no {spec_path} beside it (the run's config); allowed: {what}")
    spec = _json(spec_path, "the reproduction spec the workflow wrote")
    config = spec.get("config") or {}
    if config.get("toy_size"):
        raise SourceSizeError(f"{claims_path}: a toy-size run ({', '.join(spec.get('configfiles', []))}); "
                              f"allowed: {what}")
    declared = spec.get("claim_order") or list(config.get("claims", {}))
    missing = [c for c in declared if c not in {r["id"] for r in records}]
    # a claim reading an experiment whose data were absent (rfl.workflow.absent_data) was not
    # judged on all of its runs: left out of the record
    absent = set(spec.get("skipped") or {})
    declared = [c for c in declared if not any(set(r["experiments"]) & absent for r in records if r["id"] == c)]
    if missing:
        raise SourceSizeError(f"{claims_path}: half-written: no record of claim(s) {', '.join(missing)} "
                              f"its config declares; allowed: a complete {what}")
    foreign = [c for c in declared if c not in paper.get("claims", {})]
    if foreign:
        raise SourceSizeError(f"{claims_path}: claim(s) {', '.join(foreign)} are not in {PAPER}; allowed: {what}")
    for r in records:
        if r["id"] in declared and digest(config, r["id"], r["experiments"]) != digest(paper, r["id"], r["experiments"]):
            raise SourceSizeError(f"{claims_path}: claim {r['id']}: its definition or its experiments' runs "
                                  f"({', '.join(r['experiments'])}) differ from {PAPER}'s; allowed: a run of "
                                  f"a subset of today's {PAPER} (rfl source-size subset)")
    # where the run's paths are relative to: OUT without its output_dir
    depth = len(Path(config.get("output_dir") or ".").parts) if config.get("output_dir") else 0
    root = out.parents[depth - 1] if depth else out
    stamp = claims_path.stat().st_mtime
    commits: dict[str, list[str]] = {}
    seeds: dict[str, int] = {}
    replicas: dict[str, int] = {}
    for e in dict.fromkeys(x for r in records if r["id"] in declared for x in r["experiments"]):
        paths = (spec.get("runs") or {}).get(e) or []
        expected = len(run_specs(config, [e]))
        present = [root / p for p in paths if (root / p).is_file() and io.run_meta_path(root / p).is_file()]
        if len(present) != expected or len(paths) != expected:
            raise SourceSizeError(f"{claims_path}: experiment {e}: {len(present)} of {expected} run tables "
                                  f"present; allowed: a finished run")
        newer = [p for p in present if p.stat().st_mtime > stamp]
        if newer:
            raise SourceSizeError(f"{claims_path}: older than its run {newer[0]}: rerun its reproduction "
                                  f"step first; allowed: a claims.json written after its runs")
        metas = [io.run_meta(p) for p in present]
        found = sorted({m.get("commit", "unknown") for m in metas})
        bad = [c for c in found if not re.fullmatch(r"[0-9a-f]{40}", c)]
        if bad:
            raise SourceSizeError(f"{claims_path}: experiment {e} ran at commit {bad[0]} (not a clean "
                                  f"commit); allowed: runs of committed code")
        commits[e] = found
        seeds[e] = len({s["seed"] for s in run_specs(config, [e])})
        replicas[e] = max(s.get("replicas", 1) for s in run_specs(config, [e]))
    md = claims_path.with_name("REPRODUCTION.md")
    written = re.search(r"^- written: (\S+)$", md.read_text(), re.M) if md.is_file() else None
    if written is None:
        raise SourceSizeError(f"{claims_path}: no REPRODUCTION.md with its `- written:` line beside it; "
                              f"allowed: {what}")
    return {"claims": [r for r in records if r["id"] in declared], "config": config,
            "configfile": (spec.get("configfiles") or ["config/paper.yaml"])[0],
            "output_dir": config.get("output_dir") or "", "commits": commits, "seeds": seeds,
            "replicas": replicas,
            "date": written.group(1)[:10]}


def entries(run: dict, paper: dict) -> dict[str, dict]:
    """The record's entries of a run (``read_run``): one per claim with a verdict (measurements
    and claims whose data were absent are left out), its results one per setting."""
    ran = run["config"]["experiments"]
    # the experiments written in config/paper.yaml: a reading's variant (``reading_of``) comes
    # with its experiment, and the subset command refuses its name
    cmd = command(run["configfile"], run["output_dir"],
                  [e for e, x in paper["experiments"].items() if e in ran and not x.get("reading_of")])
    out: dict[str, dict] = {}
    for r in run["claims"]:
        if r["verdict"] is None or r["verdict"].startswith("not run"):
            continue
        e = out.setdefault(r["id"], {
            "statement": r.get("statement", ""), "results": [],
            "experiments": {x: {"seeds": run["seeds"][x], "runs": len(run_specs(run["config"], [x])),
                                **({"replicas": run["replicas"][x]} if run["replicas"][x] > 1 else {})}
                            for x in r["experiments"]},
            "size": r["size"],
            "commits": sorted({c for x in r["experiments"] for c in run["commits"][x]}),
            "date": run["date"], "command": cmd, "digest": digest(paper, r["id"], r["experiments"])})
        e["results"].append({"setting": r.get("setting"), "verdict": r["verdict"], "margin": r["margin"]})
    return out


# ---- the record ------------------------------------------------------------------------------------------
def read_record(path) -> dict:
    """The record at ``path`` ({about, claims: {id: entry}}); an empty one if there is no file."""
    path = Path(path)
    if not path.exists():
        return {"about": ABOUT, "claims": {}}
    rec = _json(path, f"a record that `rfl source-size record` wrote ({RECORD})")
    if not isinstance(rec, dict) or not isinstance(rec.get("claims"), dict) or not all(
            isinstance(e, dict) and {"results", "digest", "command", "commits"} <= set(e)
            for e in rec["claims"].values()):
        raise SourceSizeError(f"{path}: not a source-size record (keys about, claims: id -> entry with "
                              f"results, digest, command, commits); allowed: a file `rfl source-size record` wrote")
    return rec


def merge(path, new: dict[str, dict]) -> dict:
    """The record at ``path`` with ``new`` entries replacing those of the same claims, written
    (claims sorted by id); returns it."""
    from rfl import io

    rec = read_record(path)
    claims = {**rec["claims"], **new}
    rec = {"about": ABOUT, "claims": {c: claims[c] for c in sorted(claims)}}
    with io.atomic_path(path) as tmp:
        tmp.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
    return rec


# ---- beside the default verdicts ---------------------------------------------------------------------------
def annotate(results: list[dict], record: dict | None, paper: dict | None, toy: bool = False) -> None:
    """Each judged claim of ``results`` (claims.json records) with its ``source_size``: the
    record's entry (``record``) with ``state`` CURRENT or STALE (its digest against today's
    config/paper.yaml, ``paper``) and the ``results`` of its setting; or ``{state: NOT_RUN}`` for
    an undecided claim whose decider is config/paper.yaml (not in a toy-size report); else none."""
    from rfl.claims.verdicts import UNDECIDED

    for r in results:
        entry = (record or {}).get("claims", {}).get(r["id"])
        if r["verdict"] is None:
            continue
        if entry is None:
            if not toy and r["verdict"] == UNDECIDED and PAPER in (r.get("decide") or ""):
                r["source_size"] = {"state": NOT_RUN}
            continue
        same = [x for x in entry["results"] if x.get("setting") == r.get("setting")]
        now = digest(paper, r["id"], list(entry["experiments"])) if paper else None
        r["source_size"] = {**{k: v for k, v in entry.items() if k != "results"},
                            "results": same or entry["results"],
                            "state": CURRENT if now == entry["digest"] else STALE}
