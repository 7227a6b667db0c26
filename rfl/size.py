"""An experiment's size against the paper's: its ``paper_size`` declaration (config schema,
``$defs/paper_size``) compared with what it runs.

A declaration names its ``source`` and any of: the dataset's parameters (S, N, d, r, ...),
``rounds``, ``seeds`` (how many), ``batch_size``, ``K`` (the local-step values) and ``alpha``
(the fixed step, or alpha0 of a decaying rule). ``size_differences`` lists the declared keys
whose value differs; ``describe_size`` words them for the reproduction report, e.g.
"S = 6 of 60, rounds 300 of 2500, seeds 1 of 4 (PCAStief_Syn_numagentincreas.m)".

``budget`` is no size: the reasons why the experiment keeps a size below what its claims need
to decide (``budget: {seeds: <why>}``: fewer seeds than ``rfl.claims.stats.MIN_SEEDS``, the
fewest that decide a comparison or a rate); ``budget_note`` words it, and ``describe_size``
adds it while the experiment runs that few seeds.
"""

from __future__ import annotations

import math

#: the keys that are not dataset parameters, in the order they are reported
RUN_KEYS = ("rounds", "seeds", "batch_size", "K", "alpha")
#: the keys of ``paper_size`` that are no size
NOT_SIZES = ("source", "budget")
AT_PAPER_SIZE = "at the paper's size"
UNDECLARED = "no paper size declared"


def actual_size(config: dict, experiment: str, key: str):
    """What ``experiment`` runs for the paper_size ``key``: a dataset parameter (None if the
    dataset does not set it), rounds, the number of seeds, the batch size, the sorted K values
    of its methods, or its step's alpha (alpha0 for a decaying rule)."""
    exp = config["experiments"][experiment]
    if key == "rounds":
        return exp["rounds"]
    if key == "seeds":
        return len(exp["seeds"])
    if key == "batch_size":
        return exp.get("batch_size")
    if key == "K":
        return sorted({k for m in exp["methods"] for k in m.get("K", [])})
    if key == "alpha":
        step = exp.get("step") or {}
        return step.get("alpha", step.get("alpha0"))
    return config["datasets"][exp["dataset"]]["params"].get(key)


def _paper_value(key: str, value):
    """The declared value, K as a sorted list."""
    if key == "K":
        return sorted(value) if isinstance(value, list) else [value]
    return value


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def size_differences(config: dict, experiment: str) -> list[tuple[str, object, object]]:
    """(key, actual, paper) for every key of the experiment's ``paper_size`` whose value differs
    from what it runs: the dataset's parameters first (in the declaration's order), then
    RUN_KEYS. Empty without a declaration, or at the paper's size."""
    declared = config["experiments"][experiment].get("paper_size") or {}
    keys = [k for k in declared if k not in NOT_SIZES and k not in RUN_KEYS]
    keys += [k for k in RUN_KEYS if k in declared]
    out = []
    for key in keys:
        actual, paper = actual_size(config, experiment, key), _paper_value(key, declared[key])
        if not _same(actual, paper):
            out.append((key, actual, paper))
    return out


def budget_note(config: dict, experiment: str) -> str | None:
    """Why ``experiment`` keeps a size below what its claims need, while it does: "1 seed by
    the budget (3 decide a comparison): <reason>" from ``paper_size.budget.seeds`` (None with
    enough seeds), "500 rounds by the budget: <reason>" from ``paper_size.budget.rounds`` (None
    at the source's rounds or more), "4096 replicas by the budget: <reason>" from
    ``paper_size.budget.replicas``;
    joined by "; ", None without a reason."""
    from rfl.claims.stats import MIN_SEEDS

    budget = (config["experiments"][experiment].get("paper_size") or {}).get("budget") or {}
    notes = []
    if budget.get("seeds") is not None:
        n = actual_size(config, experiment, "seeds")
        if n < MIN_SEEDS:
            notes.append(f"{n} seed{'s' if n != 1 else ''} by the budget ({MIN_SEEDS} decide a "
                         f"comparison): {budget['seeds']}")
    if budget.get("rounds") is not None:
        declared = (config["experiments"][experiment].get("paper_size") or {}).get("rounds")
        n = actual_size(config, experiment, "rounds")
        if declared is None or n < declared:
            notes.append(f"{n} round{'s' if n != 1 else ''} by the budget: {budget['rounds']}")
    if budget.get("replicas") is not None:
        r = int(config["experiments"][experiment].get("replicas", 1))
        notes.append(f"{r} replica{'s' if r != 1 else ''} by the budget: {budget['replicas']}")
    return "; ".join(notes) or None


def _value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    return "none" if v is None else str(v)


def _words(key: str, actual: str, paper: str) -> str:
    """One difference: "S = 6 of 60", "rounds 300 of 2500", "seeds 1 of 4", "B = 50 of 500"."""
    if key in ("rounds", "seeds"):
        return f"{key} {actual} of {paper}"
    name = {"batch_size": "B"}.get(key, key)
    return f"{name} = {actual} of {paper}"


def describe_size(config: dict, experiments) -> str:
    """How the ``experiments`` (names; e.g. those a claim is judged on) compare with the paper's
    size: "at the paper's size (<source>)"; or their differences, e.g. "S = 6 of 60, rounds 300
    of 2500 (<source>)"; experiments whose differences name the same keys and source are merged,
    a value that varies listed across them in order ("S = 6, 10 of 60, 80"); when they differ in
    other keys or sources, each group is named: "<exp>, <exp>: <differences>; <exp>: no paper
    size declared"."""
    rows = []                                   # (experiment, source, differences as text, budget)
    for e in experiments:
        declared = config["experiments"][e].get("paper_size")
        if declared is not None and "budget" in declared and not set(declared) - set(NOT_SIZES):
            declared = None                     # a budget, and no size of the source's
        source = None if declared is None else declared["source"]
        diffs = size_differences(config, e) if declared is not None else []
        rows.append((e, source, tuple((k, _value(a), _value(p)) for k, a, p in diffs), budget_note(config, e)))
    shapes: dict[tuple, list] = {}              # (source, keys that differ, budget) -> its rows
    for row in rows:                            # (every experiment at the paper's size: one group)
        key = (AT_PAPER_SIZE, (), row[3]) if row[1] is not None and not row[2] else \
            (row[1], tuple(k for k, _, _ in row[2]), row[3])
        shapes.setdefault(key, []).append(row)
    phrases = [([r[0] for r in group],
                (f"{AT_PAPER_SIZE} ({'; '.join(dict.fromkeys(r[1] for r in group))})" if source == AT_PAPER_SIZE
                 else _merged(source, keys, [r[2] for r in group])) + (f"; {note}" if note else ""))
               for (source, keys, note), group in shapes.items()]
    if len(phrases) == 1:
        return phrases[0][1]
    return "; ".join(f"{', '.join(names)}: {phrase}" for names, phrase in phrases)


def _merged(source, keys: tuple, diffs: list) -> str:
    """One phrase for experiments whose differences name the same ``keys``: a value the same
    for all once, one that varies listed in order ("S = 6, 10 of 60, 80")."""
    if source is None:
        return UNDECLARED
    if not keys:
        return f"{AT_PAPER_SIZE} ({source})"
    words = []
    for i, key in enumerate(keys):
        actual, paper = ([d[i][j] for d in diffs] for j in (1, 2))
        words.append(_words(key, *(v[0] if len(set(v)) == 1 else ", ".join(v) for v in (actual, paper))))
    return ", ".join(words) + f" ({source})"
