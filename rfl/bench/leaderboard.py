"""The leaderboard: per problem, each method's final excess risk across the reported seeds and
its budget to reach accuracy levels; across problems, performance profiles.

Per (problem, method), over the reported seeds (the same seeds, draws and x_1 for every method):
  - the final excess risk F(x_T) - F*: its median and the order-statistic interval of the median
    at 95% (``rfl.claims.stats.interval(..., "sign")``, scipy.stats' binomial; fewer than 6
    seeds give no finite 95% interval and it shows as [-inf, inf]); a diverged seed counts +inf;
  - for each level l of ``LEVELS``: the rounds, gradient evaluations and floats communicated
    until the excess risk first falls to l x the seed's initial excess risk (median over seeds;
    a seed that never reaches it counts +inf, shown as "-");
  - the wall time of the whole run (seconds inside the algorithm, median), and its total
    gradient evaluations and floats;
  - the step (tuned, given or declared: ``rfl.bench.tuning``; a tuned step at an end of the grid
    is flagged: a wider grid might have chosen another).
A method that cannot run on a problem has a row saying why.

Every number comes from one frame with a row per run and round (``read_runs``): pointed at the
per-run tables today, at a merged results table later, the leaderboard does not change.
Profiles (``rfl.bench.profile``): the final excess risk (floored at 1e-12 x the median initial
excess risk, so that a run at F* to rounding is not infinitely better), and the gradient
evaluations to reach 1e-2 x the initial excess risk.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io
from rfl.claims import stats

#: accuracy levels, as fractions of a seed's initial excess risk F(x_1) - F*
LEVELS = (1e-1, 1e-2, 1e-3)
#: the level of the budget profile
PROFILE_LEVEL = 1e-2
#: the floor of the final excess risk in its profile, relative to the initial excess risk
FLOOR = 1e-12
#: the interval of the median
LEVEL = 0.95
#: the columns ``read_runs`` gives (one row per run and round)
FRAME_COLUMNS = ("problem", "method", "label", "origin", "phase", "seed", "alpha", "step_from",
                 "rounds", "round", "excess_risk", "grad_evals", "floats", "wall_time", "status")


def level_text(level: float) -> str:
    return f"{level:.0e}".replace("e-0", "e-")


def read_runs(tables) -> pd.DataFrame:
    """One row per run and round of the benchmark's run tables (paths of ``X.csv`` with
    ``X.meta.json`` beside, each checked by ``rfl.io.read_run_table``), with the run's
    benchmark parameters as columns (``FRAME_COLUMNS``). The one reader of the leaderboard."""
    frames = []
    io.check_sampler_versions(tables)
    for path in tables:
        table, meta = io.read_run_table(path)
        spec = meta["spec"]
        b = spec.get("bench")
        if not isinstance(b, dict):
            raise io.RunTableError(f"{path}: not a benchmark run (its spec has no 'bench' record)")
        t = table[["round", "excess_risk", "grad_evals", "floats", "wall_time", "status"]].copy()
        for key, value in (("problem", b["problem"]), ("method", b["method"]), ("label", b["label"]),
                           ("origin", b["origin"]), ("phase", b["phase"]), ("seed", spec["seed"]),
                           ("alpha", spec["step"]["alpha"]), ("step_from", b["step_from"]),
                           ("rounds", spec["rounds"])):
            t[key] = value
        frames.append(t)
    if not frames:
        return pd.DataFrame(columns=list(FRAME_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(FRAME_COLUMNS)]


def seed_record(run: pd.DataFrame) -> dict:
    """The numbers of one run (its rows, rounds in order): final, initial excess risk, budget to
    each level, totals."""
    rounds = int(run["rounds"].iloc[0])
    last = run.iloc[-1]
    ok = int(last["round"]) == rounds and last["status"] == "ok" and np.isfinite(last["excess_risk"])
    er0 = float(run["excess_risk"].iloc[0])
    rec = {"final": float(last["excess_risk"]) if ok else math.inf, "initial": er0,
           "wall_time": float(last["wall_time"]), "grad_evals_total": float(last["grad_evals"]),
           "floats_total": float(last["floats"])}
    good = run[run["status"] == "ok"]
    for level in LEVELS:
        hit = good[good["excess_risk"] <= level * er0]
        first = hit.iloc[0] if len(hit) else None
        for unit in ("round", "grad_evals", "floats"):
            rec[f"{unit}@{level}"] = float(first[unit]) if first is not None else math.inf
    return rec


def rows(frame: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The leaderboard: one row per problem and method of ``spec`` (rfl.bench.plan's
    ``leaderboard_spec``), from ``frame`` (``read_runs``)."""
    why = {(u["problem"], u["method"]): u["reason"] for u in spec["unavailable"]}
    out = []
    report = frame[frame["phase"] == "report"]
    for p in spec["problems"]:
        block = []
        for m in spec["methods"]:
            row = {"problem": p, "method": m["id"], "label": m["label"], "origin": m["origin"]}
            if (p, m["id"]) in why:
                block.append({**row, "status": "cannot run", "reason": why[(p, m["id"])]})
                continue
            runs = report[(report["problem"] == p) & (report["method"] == m["id"])]
            seeds = sorted(runs["seed"].unique())
            recs = pd.DataFrame([seed_record(runs[runs["seed"] == s].sort_values("round")) for s in seeds],
                                index=seeds)
            if recs.empty:
                block.append({**row, "status": "no runs", "reason": "no run table of it was given"})
                continue
            iv = stats.interval(recs["final"], "sign", level=LEVEL)
            alpha, source = float(runs["alpha"].iloc[0]), runs["step_from"].iloc[0]
            grid = spec["grids"][p]
            if source == "tuned" and len(grid) > 1 and alpha in (min(grid), max(grid)):
                source = "tuned, at the grid's edge"
            row.update(status="ok", reason="", step=alpha, step_from=source,
                       seeds=len(seeds), final_median=float(np.median(recs["final"])),
                       final_low=iv.low, final_high=iv.high,
                       initial_median=float(np.median(recs["initial"])))
            for level in LEVELS:
                for unit, name in (("round", "rounds"), ("grad_evals", "grad_evals"), ("floats", "floats")):
                    row[f"{name}_to_{level_text(level)}"] = float(np.median(recs[f"{unit}@{level}"]))
            row.update(wall_time_s=float(np.median(recs["wall_time"])),
                       grad_evals_total=float(np.median(recs["grad_evals_total"])),
                       floats_total=float(np.median(recs["floats_total"])))
            row["_per_seed"] = np.maximum(recs["final"], FLOOR * recs["initial"].clip(lower=0) + np.finfo(float).tiny)
            block.append(row)
        ranked = sorted([r for r in block if r["status"] == "ok"], key=lambda r: (r["final_median"], r["label"]))
        for i, r in enumerate(ranked, 1):
            r["rank"] = i
            other = next((o for o in ranked if o is not r), None)
            if other is not None:
                iv = paired_ratio(r["_per_seed"], other["_per_seed"])
                r.update(versus=other["method"], versus_ratio=iv.shown()[0], versus_low=iv.shown()[1],
                         versus_high=iv.shown()[2], versus_verdict=verdict(iv))
        for r in block:
            r.pop("_per_seed", None)
        out += ranked + [r for r in block if r["status"] != "ok"]
    cols = ["problem", "rank", "method", "label", "origin", "status", "reason", "step", "step_from",
            "seeds", "final_median", "final_low", "final_high", "initial_median"]
    cols += [f"{u}_to_{level_text(lv)}" for lv in LEVELS for u in ("rounds", "grad_evals", "floats")]
    cols += ["wall_time_s", "grad_evals_total", "floats_total",
             "versus", "versus_ratio", "versus_low", "versus_high", "versus_verdict"]
    df = pd.DataFrame(out, columns=cols)
    df["rank"] = df["rank"].astype("Int64")
    df["seeds"] = df["seeds"].astype("Int64")
    return df


def paired_ratio(mine: pd.Series, other: pd.Series) -> stats.Interval:
    """Final excess risk of one method over another's, paired by seed (both ran on the seed's
    draws and x_1): the geometric mean of the per-seed ratios and its Student-t interval at
    ``LEVEL`` (``rfl.claims.stats.interval`` of the log ratios; a seed where one diverged is
    +-inf). Seeds run by one method only are left out."""
    both = mine.index.intersection(other.index)
    with np.errstate(invalid="ignore"):
        sample = np.log(mine[both].astype(float)) - np.log(other[both].astype(float))
    return stats.interval(pd.Series(sample, dtype=float), "t", level=LEVEL, log=True)


def verdict(iv: stats.Interval) -> str:
    """"lower" / "higher" when the ratio's interval lies below / above 1, "no difference
    shown" when it straddles 1, "undecided" with fewer than ``rfl.claims.stats.MIN_SEEDS`` seeds."""
    if iv.n < stats.MIN_SEEDS or np.isnan(iv.estimate):
        return "undecided"
    return "lower" if iv.high < 0 else "higher" if iv.low > 0 else "no difference shown"


def measures(board: pd.DataFrame, spec: dict) -> dict[str, pd.DataFrame]:
    """The profiles' measures, problems x method ids (inf: cannot run, diverged, not reached)."""
    ids = [m["id"] for m in spec["methods"]]
    final = pd.DataFrame(np.inf, index=spec["problems"], columns=ids)
    budget = final.copy()
    col = f"grad_evals_to_{level_text(PROFILE_LEVEL)}"
    for _, r in board[board["status"] == "ok"].iterrows():
        floor = FLOOR * r["initial_median"] if r["initial_median"] > 0 else FLOOR
        final.loc[r["problem"], r["method"]] = max(r["final_median"], floor)
        budget.loc[r["problem"], r["method"]] = max(r[col], 1.0)
    return {"final excess risk (median over seeds)": final,
            f"gradient evaluations to {level_text(PROFILE_LEVEL)} x initial excess risk": budget}


# ---- writing ---------------------------------------------------------------------------------
def num(v, integer: bool = False) -> str:
    """A cell: '-' for +inf (not reached / diverged), 3 significant digits, integers below 1e5
    as integers."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    v = float(v)
    if math.isinf(v):
        return "-" if v > 0 else "-inf"
    if integer and abs(v) < 1e5:
        return str(int(round(v)))
    return f"{v:.3g}"


def interval_text(r) -> str:
    lo, hi = r["final_low"], r["final_high"]
    show = lambda v: "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:.3g}"
    return f"{num(r['final_median'])} [{show(lo)}, {show(hi)}]"


def versus_text(r, labels: dict) -> str:
    """``0.85 [0.7, 1.02] vs RFedSVRG: no difference shown`` ('' with no other method)."""
    if not isinstance(r.get("versus"), str):
        return ""
    show = lambda v: "inf" if v == math.inf else "0" if v == 0 else f"{v:.3g}"
    return (f"{show(r['versus_ratio'])} [{show(r['versus_low'])}, {show(r['versus_high'])}] vs "
            f"{labels.get(r['versus'], r['versus'])}: {r['versus_verdict']}")


def step_text(r) -> str:
    return f"{num(r['step'])} ({r['step_from']})"


def preamble(spec: dict) -> list[str]:
    """The rules of the comparison, in words (the Markdown's and the HTML's top)."""
    grid = ", ".join(f"{f:.3g}" for f in spec["grid_factors"])
    levels = ", ".join(level_text(lv) for lv in LEVELS)
    toy = (["Smoke size: toy instances that exercise the pipeline; nothing here ranks the methods."]
           if spec["size"] == "smoke" else [])
    return toy + [
        f"Size `{spec['size']}`; reported seeds {', '.join(map(str, spec['seeds']))} (the same seeds, "
        f"mini-batches, participants and starting point for every method on a problem); every agent "
        f"takes part; one budget of rounds T and local steps K per problem.",
        f"Step: each method's step is chosen by one rule: the grid alpha_0 x ({grid}) runs on the "
        f"tuning seed {spec['tuning_seed']} (never reported) and the step with the smallest final "
        f"excess risk is kept (a tie: the smaller step); 'given' is a step set by alpha=..., "
        f"'declared' the strategy's default_step.",
        f"Final excess risk F(x_T) - F*: median over the seeds and the order-statistic interval of "
        f"the median at {LEVEL:.0%} (sign test, scipy.stats; [-inf, inf] with fewer than 6 seeds); "
        f"a diverged seed counts +inf.",
        f"Budget to reach {levels} x the initial excess risk: rounds / gradient evaluations / floats "
        f"communicated (median over seeds; '-': the median seed never reached it); wall time: "
        f"seconds inside the algorithm for the whole run (median; machine-dependent).",
    ]


def summary(board: pd.DataFrame, spec: dict) -> str:
    """Methods x problems, each cell the method's rank on the problem and its median final
    excess risk ('n/a': cannot run there), as a Markdown table (the README shows it)."""
    head = ["method"] + spec["problems"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in spec["methods"]:
        cells = []
        for p in spec["problems"]:
            r = board[(board["problem"] == p) & (board["method"] == m["id"])]
            if r.empty or r.iloc[0]["status"] != "ok":
                cells.append("n/a")
            else:
                cells.append(f"{r.iloc[0]['rank']}: {num(r.iloc[0]['final_median'])}")
        name = m["label"] + (" *(yours)*" if m["origin"] == "yours" else "")
        lines.append("| " + " | ".join([name] + cells) + " |")
    return "\n".join(lines)


README_MARKERS = ("<!-- leaderboard: generated by `rfl bench-table`; edit the generator, not the table -->",
                  "<!-- /leaderboard -->")
#: the line of leaderboard.md that introduces the methods x problems summary
SUMMARY_INTRO = ("Rank on each problem (by the median final excess risk) and that median; n/a: the "
                 "method cannot run there.")


def readme_table(leaderboard_md: str) -> str:
    """The methods x problems summary of a leaderboard.md (the table after SUMMARY_INTRO), as
    the README shows it."""
    lines = leaderboard_md.splitlines()
    if SUMMARY_INTRO not in lines:
        raise ValueError("not a leaderboard.md of rfl bench: its summary line is missing")
    start = lines.index(SUMMARY_INTRO) + 2
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    if len(table) < 3:
        raise ValueError("the leaderboard.md summary table has no method row")
    return "\n".join(table) + "\n"


def markdown(board: pd.DataFrame, spec: dict) -> str:
    lines = ["# Benchmark leaderboard", ""] + [f"- {t}" for t in preamble(spec)] + [
        "", "Performance profiles across problems: [profile.pdf](profile.pdf) "
        "([png](profile.png)); sortable table: [leaderboard.html](leaderboard.html).", "",
        SUMMARY_INTRO, "", summary(board, spec), ""]
    head = (["#", "method", "final excess risk, median [95%]", "step"]
            + [f"to {level_text(lv)}: rounds / grad evals / floats" for lv in LEVELS] + ["wall s"]
            + ["final excess risk / the best other's, paired by seed [95%]"])
    labels = {m["id"]: m["label"] for m in spec["methods"]}
    for p in spec["problems"]:
        b = spec["budgets"][p]
        lines += [f"## {p}", "", f"T = {b['rounds']} rounds, K = {b['K']}, B = {b['batch_size']}; "
                  f"step grid {', '.join(f'{a:g}' for a in spec['grids'][p])}.", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for _, r in board[board["problem"] == p].iterrows():
            name = r["label"] + (" *(yours)*" if r["origin"] == "yours" else "")
            if r["status"] != "ok":
                lines.append(f"| | {name} | {r['status']}: {r['reason']} |" + " |" * (len(head) - 3))
                continue
            budget = [" / ".join(num(r[f"{u}_to_{level_text(lv)}"], integer=True)
                                 for u in ("rounds", "grad_evals", "floats")) for lv in LEVELS]
            lines.append("| " + " | ".join([str(r["rank"]), name, interval_text(r), step_text(r)] + budget
                                           + [num(r["wall_time_s"]), versus_text(r, labels)]) + " |")
        lines.append("")
    return "\n".join(lines)


_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], i = th.cellIndex;
    var asc = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    function key(row) {
      var td = row.cells[i], v = td.getAttribute("data-sort");
      if (v === null) { v = td.textContent; }
      var n = parseFloat(v);
      return isNaN(n) ? [1, v] : [0, n];
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), c = x[0] - y[0];
      if (c === 0) { c = x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0; }
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def _sort_value(v) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "Infinity"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "Infinity" if v == math.inf else "-Infinity" if v == -math.inf else repr(float(v))
    return str(v)


def html_page(board: pd.DataFrame, spec: dict) -> str:
    """One page: the rules, the profile figure, one sortable table per problem (click a column
    header to sort by it; again to reverse), no external file but the figure."""
    e = html.escape
    cols = [("rank", "#"), ("label", "method"), ("final_median", "final excess risk (median)"),
            ("final_low", "low"), ("final_high", "high"), ("step", "step")]
    for lv in LEVELS:
        for u, name in (("rounds", "rounds"), ("grad_evals", "grad evals"), ("floats", "floats")):
            cols.append((f"{u}_to_{level_text(lv)}", f"{name} to {level_text(lv)}"))
    cols += [("wall_time_s", "wall s"), ("grad_evals_total", "grad evals (all)"),
             ("floats_total", "floats (all)"), ("versus_ratio", "ratio to the best other (paired)"),
             ("versus_low", "ratio low"), ("versus_high", "ratio high"), ("versus", "the other"),
             ("versus_verdict", "verdict")]
    labels = {m["id"]: m["label"] for m in spec["methods"]}
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>rfl benchmark leaderboard</title><style>",
             "body{font-family:sans-serif;max-width:110em;margin:1em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;"
             "padding:.2em .5em;text-align:right}td.t,th.t{text-align:left}th{cursor:pointer;"
             "background:#f3f3f3}th[aria-sort=ascending]::after{content:' \\25B2'}"
             "th[aria-sort=descending]::after{content:' \\25BC'}tr.yours{background:#fff6d5}"
             "tr.na td{color:#888}", "</style></head><body>", "<h1>Benchmark leaderboard</h1><ul>"]
    parts += [f"<li>{e(t)}</li>" for t in preamble(spec)]
    parts += ["</ul>", "<p><img src=\"profile.svg\" alt=\"performance profiles\" style=\"max-width:100%\"></p>",
              "<p>Files: <a href=\"leaderboard.csv\">leaderboard.csv</a>, "
              "<a href=\"leaderboard.md\">leaderboard.md</a>, <a href=\"profile.pdf\">profile.pdf</a>, "
              "<a href=\"profile.csv\">profile.csv</a>. Click a column header to sort.</p>"]
    for p in spec["problems"]:
        b = spec["budgets"][p]
        parts.append(f"<h2 id=\"{e(p)}\">{e(p)}</h2><p>T = {b['rounds']} rounds, K = {b['K']}, "
                     f"B = {b['batch_size']}; step grid {e(', '.join(f'{a:g}' for a in spec['grids'][p]))}.</p>")
        parts.append(f"<table class=\"sortable\" id=\"table-{e(p)}\"><thead><tr>"
                     + "".join(f"<th class=\"{'t' if c == 'label' else ''}\">{e(h)}</th>" for c, h in cols)
                     + "</tr></thead><tbody>")
        for _, r in board[board["problem"] == p].iterrows():
            cls = " ".join(c for c in ("yours" if r["origin"] == "yours" else "",
                                       "na" if r["status"] != "ok" else "") if c)
            cells = []
            for c, _ in cols:
                if r["status"] != "ok" and c not in ("label", "rank"):
                    text = f"{r['status']}: {r['reason']}" if c == "final_median" else ""
                    cells.append(f"<td data-sort=\"Infinity\">{e(text)}</td>")
                    continue
                v = r[c]
                text = (str(v) if c == "rank" and v is not pd.NA else "" if c == "rank" else
                        r["label"] if c == "label" else step_text(r) if c == "step" else
                        labels.get(v, "") if c == "versus" else
                        (v if isinstance(v, str) else "") if c == "versus_verdict" else
                        num(v, integer=c.startswith(("rounds", "grad", "floats"))))
                if c in ("final_low", "final_high", "versus_low", "versus_high") and v in (math.inf, -math.inf):
                    text = "inf" if v > 0 else "-inf"
                cells.append(f"<td class=\"{'t' if c == 'label' else ''}\" data-sort=\"{e(_sort_value(v))}\">"
                             f"{e(text)}</td>")
            parts.append(f"<tr class=\"{cls}\" data-method=\"{e(r['method'])}\">" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(parts)


def write_leaderboard(spec: dict, out_csv, tables=None) -> pd.DataFrame:
    """leaderboard.csv at ``out_csv`` and beside it leaderboard.md, leaderboard.html and the
    profiles (profile.pdf/png/svg, their numbers in profile.csv), from ``tables`` (default:
    the spec's)."""
    from rfl.bench.profile import profile_figure

    out = Path(out_csv)
    board = rows(read_runs(spec["tables"] if tables is None else tables), spec)
    io.write_table(out, board)
    labels = {m["id"]: m["label"] + (" (yours)" if m["origin"] == "yours" else "") for m in spec["methods"]}
    prof = profile_figure(measures(board, spec), labels, out.with_name("profile.pdf"))
    long = pd.concat([t.rename(columns=labels).reset_index().melt(id_vars="tau", var_name="method",
                                                                  value_name="rho").assign(measure=name)
                      for name, t in prof.items()], ignore_index=True)
    io.write_table(out.with_name("profile.csv"), long[["measure", "method", "tau", "rho"]])
    for name, text in (("leaderboard.md", markdown(board, spec)), ("leaderboard.html", html_page(board, spec))):
        with io.atomic_path(out.with_name(name)) as tmp:
            tmp.write_text(text)
    return board
