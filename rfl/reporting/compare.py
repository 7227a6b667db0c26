"""``rfl compare A B``: what changed between two result sets, for a reviewer of a change.

A result set is a ``claims.json`` (``rfl reproduction``), or a directory holding one (at its
top or in ``paper_tables/``) and, where the benchmark wrote one, a leaderboard CSV
(``LEADERBOARDS``, looked for in the same places). Per claim (keyed by its id and the setting
of a sweep): whether it is in both, its verdict and margin in each, and which cells of its
evidence and which notes changed. Per leaderboard cell (a row keyed by its leading text
columns, e.g. problem and method; a cell by that key and its column): the two values and, for
numbers, the relative change. Markdown, changed items only, with counts of the unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

#: the file names a leaderboard may have in a result set's directory
LEADERBOARDS = ("leaderboard.csv",)
#: where in a result set's directory its files are looked for
PLACES = (".", "paper_tables", "leaderboard")
#: at most this many changed evidence cells are listed per claim
MAX_CELLS = 5


class CompareError(ValueError):
    """A result set that cannot be compared (one line naming the file and why)."""


def _find(root: Path, names) -> Path | None:
    for place in PLACES:
        for name in names:
            p = root / place / name
            if p.is_file():
                return p
    return None


def load_set(path) -> dict:
    """{claims: list | None, leaderboard: DataFrame | None, where: [files]} of a result set."""
    path = Path(path)
    if path.is_dir():
        claims_path, board_path = _find(path, ("claims.json",)), _find(path, LEADERBOARDS)
        if claims_path is None and board_path is None:
            raise CompareError(f"{path}: holds no claims.json and no {' or '.join(LEADERBOARDS)} "
                               f"(looked in {', '.join(PLACES)}); allowed: a result set's "
                               f"directory or its claims.json")
    elif path.suffix == ".json":
        claims_path, board_path = path, None
    else:
        raise CompareError(f"{path}: not a result set; allowed: a claims.json or a directory "
                           f"holding one (and a leaderboard)")
    out = {"claims": None, "leaderboard": None, "where": []}
    if claims_path is not None:
        out["claims"] = _read_claims(claims_path)
        out["where"].append(str(claims_path))
    if board_path is not None:
        try:
            out["leaderboard"] = pd.read_csv(board_path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise CompareError(f"{board_path}: not a CSV leaderboard "
                               f"({' '.join(str(exc).split())[:120]})") from None
        out["where"].append(str(board_path))
    return out


def _read_claims(path: Path) -> list[dict]:
    try:
        claims = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CompareError(f"{path}: not valid JSON; allowed: the claims.json rfl reproduction "
                           f"wrote") from None
    if not isinstance(claims, list) or not all(isinstance(c, dict) and "id" in c and "verdict" in c
                                               for c in claims):
        raise CompareError(f"{path}: not a list of judged claims (records with 'id' and "
                           f"'verdict'); allowed: the claims.json rfl reproduction wrote")
    return claims


def _md(v) -> str:
    text = "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    return text.replace("|", "\\|").replace("\n", " ")


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return x == y


def _row_cells(rows_a: list, rows_b: list) -> list[str]:
    """The evidence cells that differ: "row i, column: a -> b" (rows matched by position)."""
    out = []
    for i in range(max(len(rows_a), len(rows_b))):
        ra = rows_a[i] if i < len(rows_a) else {}
        rb = rows_b[i] if i < len(rows_b) else {}
        for col in dict.fromkeys([*ra, *rb]):
            if not _same(ra.get(col), rb.get(col)):
                out.append(f"row {i + 1}, {col}: {_md(ra.get(col))} -> {_md(rb.get(col))}")
    return out


def compare_claims(a: list[dict], b: list[dict]) -> list[str]:
    """Markdown: per claim (id, setting) in either set, what changed."""
    key = lambda c: (c["id"], c.get("setting") or "")  # noqa: E731
    ka, kb = {key(c): c for c in a}, {key(c): c for c in b}
    order = list(dict.fromkeys([*ka, *kb]))
    rows, unchanged = [], 0
    for k in order:
        ca, cb = ka.get(k), kb.get(k)
        name = k[0] + (f" [setting {k[1]}]" if k[1] else "")
        if ca is None or cb is None:
            rows.append((name, ca, cb, "only in " + ("B" if ca is None else "A")))
            continue
        what = []
        if ca["verdict"] != cb["verdict"]:
            what.append("verdict")
        if ca.get("margin") != cb.get("margin"):
            what.append("margin")
        cells = _row_cells(ca.get("rows") or [], cb.get("rows") or [])
        if cells:
            what.append(f"evidence ({len(cells)} cell(s): " + "; ".join(cells[:MAX_CELLS])
                        + ("; ..." if len(cells) > MAX_CELLS else "") + ")")
        if (ca.get("notes") or []) != (cb.get("notes") or []):
            what.append("notes")
        if what:
            rows.append((name, ca, cb, ", ".join(what)))
        else:
            unchanged += 1
    flipped = lambda r: bool(r[1] and r[2] and r[1]["verdict"] != r[2]["verdict"])  # noqa: E731
    rows.sort(key=lambda r: not flipped(r))          # changed verdicts first, else in order
    verdicts = sum(map(flipped, rows))
    lines = ["## Claims", "",
             f"{len(order)} claim(s): {verdicts} verdict(s) changed, {len(rows)} changed in all "
             f"(verdict, margin, evidence, notes, or in one set only), {unchanged} unchanged.", ""]
    if rows:
        lines += ["| claim | verdict A | verdict B | margin A | margin B | changed |",
                  "|---|---|---|---|---|---|"]
        for name, ca, cb, what in rows:
            lines.append(f"| {_md(name)} | {_md(ca and ca['verdict'])} | {_md(cb and cb['verdict'])} "
                         f"| {_md(ca and ca.get('margin'))} | {_md(cb and cb.get('margin'))} | {_md(what)} |")
        lines.append("")
    return lines


def _scalar(v):
    """A numpy scalar as its Python value."""
    return v.item() if hasattr(v, "item") else v


def _key_columns(df: pd.DataFrame) -> list[str]:
    """The leading text columns of a leaderboard (the row's key), at least its first column."""
    keys = []
    for col in df.columns:
        if pd.api.types.is_numeric_dtype(df[col]):
            break
        keys.append(col)
    return keys or list(df.columns[:1])


def compare_leaderboards(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Markdown: per leaderboard cell (row key, column) present in either, what changed."""
    keys = _key_columns(a)
    if _key_columns(b) != keys:
        raise CompareError(f"the leaderboards are keyed by different columns ({', '.join(keys)} "
                           f"against {', '.join(_key_columns(b))}); allowed: two of one format")
    ia = {tuple(r[keys]): r for _, r in a.iterrows()}
    ib = {tuple(r[keys]): r for _, r in b.iterrows()}
    values = [c for c in dict.fromkeys([*a.columns, *b.columns]) if c not in keys]
    changed, same = [], 0
    for k in dict.fromkeys([*ia, *ib]):
        ra, rb = ia.get(k), ib.get(k)
        label = ", ".join(map(str, k))
        if ra is None or rb is None:
            changed.append((label, "(row)", "-" if ra is None else "present",
                            "-" if rb is None else "present", "only in " + ("B" if ra is None else "A")))
            continue
        for col in values:
            x, y = (_scalar(r[col]) if col in r.index else None for r in (ra, rb))
            if _same(x, y) or (x is not None and y is not None and pd.isna(x) and pd.isna(y)):
                same += 1
                continue
            change = ""
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   for v in (x, y)) and x != 0:
                change = f"{(y - x) / abs(x):+.1%}"
            changed.append((label, col, _md(x), _md(y), change))
    lines = ["## Leaderboard", "",
             f"{len(changed)} cell(s) changed or in one set only, {same} unchanged "
             f"(rows keyed by {', '.join(keys)}).", ""]
    if changed:
        lines += [f"| {', '.join(keys)} | column | A | B | change |", "|---|---|---|---|---|"]
        lines += [f"| {_md(r)} | {_md(c)} | {x} | {y} | {ch} |" for r, c, x, y, ch in changed]
        lines.append("")
    return lines


def compare(path_a, path_b) -> str:
    """The comparison of result sets ``path_a`` (A) and ``path_b`` (B) as Markdown: the claims
    where both have claims.json, the leaderboard where both have one (a part one set lacks is
    said to be missing there)."""
    a, b = load_set(path_a), load_set(path_b)
    lines = ["# What changed from A to B", "",
             f"- A: {', '.join(a['where'])}", f"- B: {', '.join(b['where'])}", ""]
    compared = False
    for part, title, fn in (("claims", "Claims", compare_claims),
                            ("leaderboard", "Leaderboard", compare_leaderboards)):
        if a[part] is not None and b[part] is not None:
            lines += fn(a[part], b[part])
            compared = True
        elif a[part] is not None or b[part] is not None:
            lines += [f"## {title}", "", f"Only {'A' if a[part] is not None else 'B'} has "
                      f"{'claims' if part == 'claims' else 'a leaderboard'}: nothing to compare.", ""]
    if not compared:
        raise CompareError(f"{path_a} and {path_b} have no part in common (claims.json, "
                           f"{' or '.join(LEADERBOARDS)}); allowed: two result sets of one kind")
    return "\n".join(lines)
