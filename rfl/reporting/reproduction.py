"""REPRODUCTION.md: each claim the config declares, the measured evidence and a verdict.

Everything here is computed from result files (run tables and their metadata, and the
tables the workflow wrote). The claims and the rules that judge them are declared in the
config and live in ``rfl.claims``; this module writes their judgements, with a provenance
header, as Markdown and as ``claims.json``. A disagreement with the paper is reported as such.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

import numpy as np

from rfl import io


def data_lines(spec: dict) -> list[str]:
    """One line per kind of data a problem recorded in its runs' metadata (``data``, e.g.
    which MNIST images stood in, or a generated fixture), naming the experiments that used it."""
    used: dict[str, list[str]] = {}
    for experiment, paths in spec["runs"].items():
        notes = [io.run_meta(p).get("data") or {} for p in paths]
        for note in {n.get("images_note") or n.get("note") for n in notes} - {None}:
            used.setdefault(note, []).append(experiment)
    return [f"- data: {note}: {', '.join(sorted(exps))}" for note, exps in sorted(used.items())]


def provenance(spec: dict) -> list[str]:
    metas = [io.run_meta(p) for paths in spec["runs"].values() for p in paths[:1]]
    commits = sorted({m["commit"] for m in metas})
    versions = metas[0]["versions"] if metas else {}
    n_runs = sum(len(v) for v in spec["runs"].values())
    diverged = [p for paths in spec["runs"].values() for p in paths
                if io.run_meta(p)["status"] != "ok"]
    files = spec.get("configfiles") or ["config/config.yaml"]
    out = []
    if spec["config"].get("toy_size"):
        out += [f"**Toy size.** `{', '.join(files)}` runs every experiment at toy size to exercise the "
                "workflow: its sizes decide nothing, so every claim below is undecided, with what "
                "its rule gave at toy size. The evidence about the paper is the default config's "
                "report (`config/config.yaml`) or the paper-size one (`config/paper.yaml`).", ""]
    out += data_lines(spec)
    out += [f"- config: {', '.join(f'`{f}`' for f in files)}"
            + (f" (outputs under `{spec['config']['output_dir']}`)" if spec["config"].get("output_dir") else ""),
            f"- runs: {n_runs} ({len(diverged)} diverged"
           + (": " + ", ".join(Path(p).stem for p in diverged[:10]) if diverged else "") + ")",
           f"- code: commit(s) {', '.join(commits)}",
           *([f"- not run (data absent): " + "; ".join(
               line.split(": ", 1)[0].removeprefix("skipped ") + " (" + line.split(": ", 1)[1] + ")"
               for line in spec["skipped"].values())] if spec.get("skipped") else []),
           *([f"- run in `config/paper.yaml` only: " + "; ".join(
               f"{e} ({why})" for e, why in spec["paper_only"].items())] if spec.get("paper_only") else []),
           "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
           f"- written: {written().isoformat(timespec='seconds')}"]
    return out


def written() -> _dt.datetime:
    """When the report is written: now, or $SOURCE_DATE_EPOCH (seconds since 1970, UTC) where
    set, the reproducible-builds convention, so that one set of runs gives one report byte for
    byte (the test that redraws it from a merged results table sets it)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc)
    return _dt.datetime.now(_dt.timezone.utc)
def write_report(spec: dict, out_md) -> None:
    """REPRODUCTION.md from the claims the config declares (``rfl.claims``): the summary
    (``rfl.reporting.triage``), then every claim by section; and ``claims.json`` beside it: one
    record per judged claim (the HTML report reads it)."""
    from rfl.claims.judge import judge_all, sections

    from .order import restore
    from .triage import summary_lines

    io.check_sampler_versions([p for paths in spec["runs"].values() for p in paths])
    results = judge_all(spec)
    beside_source_size(spec, results)
    head = ["# Reproduction report", "",
            "Written by `rfl reproduction` from the result files of this workflow run; do not edit. "
            "Each claim of the papers is set against what was measured here, with the rule "
            "that decides the verdict and the size it was judged at.", "", *provenance(spec), "",
            "## Summary", "", *summary_lines(restore(spec), results)]
    with io.atomic_path(out_md) as tmp:
        tmp.write_text("\n".join(head + sections(results)) + "\n")
    with io.atomic_path(Path(out_md).with_name("claims.json")) as tmp:
        tmp.write_text(json.dumps(results, indent=1, default=_json_default) + "\n")


def beside_source_size(spec: dict, results: list[dict]) -> None:
    """Each judged claim with its verdict at the source's size (``rfl.source_size.annotate``)
    where the spec names the record and config/paper.yaml (``source_size``); nothing without."""
    from rfl import source_size

    where = spec.get("source_size")
    if not where:
        return
    from rfl import config as rflconfig

    record = source_size.read_record(where["record"])
    paper = rflconfig.load(where["paper"]) if record["claims"] else None
    source_size.annotate(results, record, paper, toy=bool(spec["config"].get("toy_size")))


def _json_default(v):
    """numpy scalars as Python numbers (NaN and inf as JSON's extension values)."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")
