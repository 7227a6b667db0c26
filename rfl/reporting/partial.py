"""Why a claim is only partly reproduced: the quantity its rule compares, measured, and where it
falls. Each function reads curves or summary rows computed from run files and returns report
lines (no verdict of its own).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TAIL = 0.1          # the level reached: median of the last 10% of rounds (as ``plateau``)


def _level(curve: pd.Series) -> float:
    c = curve.dropna()
    n = max(3, len(c) // 10)
    return float(c.iloc[-n:].median())           # (NaN for a curve without a value)


def avg_vs_ags(K, avg: pd.Series, ags: pd.Series, factor: float = 2.0) -> list[str]:
    """Lines explaining where RFedAvg's and RFedAGS's median curves (excess risk per round) part
    by more than ``factor`` (the rule's: within ``factor`` at every round): the last round they
    are within it, the round of the largest ratio, the levels each reaches (median of the last
    10% of rounds), how much each curve varies within those rounds, and which of these makes
    the rule fail. Empty if they never part."""
    both = pd.concat([avg.rename("avg"), ags.rename("ags")], axis=1).dropna()
    both = both[(both > 0).all(axis=1) & np.isfinite(both).all(axis=1)]
    if both.empty:
        return []
    ratio = both["ags"] / both["avg"]
    apart = np.abs(np.log(ratio)) > np.log(factor)
    if not apart.any():
        return []
    first = int(ratio.index[np.argmax(apart.values)])
    worst = int(np.abs(np.log(ratio)).idxmax())
    a_lvl, g_lvl = _level(avg), _level(ags)
    together = ratio.loc[:first - 1]             # (empty if they part at the first round)
    lines = [f"- K = {K}: the curves stay within a factor {factor:g} up to round {first - 1}"
             + (f" (ratio RFedAGS/RFedAvg between {together.min():.2f} and {together.max():.2f}, "
                f"while the excess risk falls from {float(both['ags'].iloc[0]):.2e} to "
                f"{float(both['ags'].loc[first - 1]):.2e})" if len(together) else "")
             + f"; from round {first} on they part, and the ratio furthest from 1, "
             f"{float(ratio.loc[worst]):.3g}, is at round {worst}."]
    n = max(3, len(both) // 10)
    tail = both.iloc[-n:]
    t_ratio = tail["ags"] / tail["avg"]
    spread = {k: float(tail[k].max() / tail[k].min()) for k in ("ags", "avg")}
    lines.append(f"  Over the last {n} rounds (median of those rounds): RFedAGS {g_lvl:.2e}, RFedAvg "
                 f"{a_lvl:.2e} (ratio {g_lvl / a_lvl:.3g}); within those rounds each median curve "
                 f"varies by a factor {spread['ags']:.3g} (RFedAGS) and {spread['avg']:.3g} (RFedAvg) "
                 f"from its lowest to its highest value, and their per-round ratio lies between "
                 f"{float(t_ratio.min()):.3g} and {float(t_ratio.max()):.3g}.")
    same_level = abs(np.log(g_lvl / a_lvl)) <= np.log(factor)
    noisy = max(spread.values()) > factor
    if same_level and noisy:
        lines.append(f"  So the two reach the same level within a factor {factor:g}; the rule fails on "
                     f"the round-to-round variation of the medians at that level, which is larger "
                     f"than the factor {factor:g} it allows at every round.")
    elif not same_level and not noisy:
        lines.append("  Both have levelled off at different levels: with this fixed step the two "
                     "methods reach different stationary levels, while their transients agree.")
    elif not same_level:
        lines.append("  The levels differ by more than the rule's factor, and the curves still "
                     "vary by more than that within the last rounds.")
    else:
        lines.append(f"  The levels agree within a factor {factor:g} and are steady: the curves part "
                     f"on the way there (largest ratio at round {worst}).")
    return lines
