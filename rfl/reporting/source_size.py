"""A claim's verdict at the source's size in words (``rfl.source_size`` records it; a claims.json
record carries it as ``source_size``): the line of REPRODUCTION.md and the claim page, and the
summary's cell. Kept apart from the record so that the claims' rendering needs no config."""

from __future__ import annotations

#: the committed record of source-size verdicts (relative to the repository)
RECORD = "records/source_size.json"
#: the config the record's runs are subsets of
PAPER = "config/paper.yaml"
#: the states of a claims.json record's ``source_size``
CURRENT, STALE, NOT_RUN = "current", "stale", "not run"


def seeds_text(entry: dict) -> str:
    """"10 seeds" (the experiments' seeds, each value once); an experiment run on replicas
    (independent chains per seed) as "1 seed x 32768 replicas"."""
    n = list(dict.fromkeys(f"{x['seeds']} seed{'s' if x['seeds'] != 1 else ''}"
                           + (f" x {x['replicas']} replicas" if x.get("replicas") else "")
                           for x in entry["experiments"].values()))
    return ", ".join(n)


def verdict_text(entry: dict) -> str:
    """The entry's verdict(s): "reproduced"; per setting "reproduced (setting a = 1); ...";
    "stale (recorded: ...)"; "not run"."""
    if entry["state"] == NOT_RUN:
        return "not run"
    v = recorded(entry)
    return v if entry["state"] == CURRENT else f"stale (recorded: {v})"


def recorded(entry: dict) -> str:
    """The recorded verdict(s) of an entry, with their settings where there are several."""
    res = entry["results"]
    return "; ".join(x["verdict"] + (f" ({x['setting']})" if x.get("setting") and len(res) > 1 else "")
                     for x in res)


def line(entry: dict) -> str:
    """One Markdown line on the claim's verdict at the source's size, for REPRODUCTION.md and
    the claim pages."""
    if entry["state"] == NOT_RUN:
        return (f"**At the source's size: not run** (no record in `{RECORD}`; `rfl source-size subset` "
                f"writes the subset of `{PAPER}` that runs its experiments, `rfl source-size record` "
                f"records its verdict).")
    commits = ", ".join(c[:10] for c in entry["commits"])
    how = f"{seeds_text(entry)}; rfl {commits}, {entry['date']}"
    margins = "; ".join(x["margin"] for x in entry["results"] if x.get("margin"))
    if entry["state"] == STALE:
        return (f"**At the source's size: stale.** A verdict was recorded ({recorded(entry)}; {how}), "
                f"but the claim's definition or its experiments in `{PAPER}` have changed since: it is "
                f"not current. Rerun: `{entry['command']}`, then `rfl source-size record`.")
    return (f"**At the source's size: {verdict_text(entry)}** ({how}; `{PAPER}`: {entry['size']})."
            + (f" Margin: {margins}." if margins else "") + f" Reproduce: `{entry['command']}`.")
