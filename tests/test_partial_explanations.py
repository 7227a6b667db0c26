"""The measured explanations beside partly reproduced claims (rfl/reporting/partial.py), on
curves whose answers are known by construction."""

import numpy as np
import pandas as pd
import pytest

from rfl.reporting import partial


def _curve(start, q, level, T):
    """start * q^t until it reaches ``level``, then flat at ``level``: rounds 0..T."""
    return pd.Series(np.maximum(start * q ** np.arange(T + 1), level), index=np.arange(T + 1))


def test_avg_vs_ags_locates_the_split_and_the_levels():
    """Same transient (x0.5 per round from 1), RFedAGS flat at 4e-6 from round 18, RFedAvg
    flat at 6e-7 from round 21: within a factor 2 up to round 18 (ratio 4e-6/2^-19 = 2.10 at
    19), largest ratio 6.67 at rounds >= 21; both levelled off."""
    ags, avg = _curve(1.0, 0.5, 4e-6, 200), _curve(1.0, 0.5, 6e-7, 200)
    lines = partial.avg_vs_ags(10, avg, ags)
    text = "\n".join(lines)
    assert lines[0].startswith("- K = 10: the curves stay within a factor 2 up to round 18 ")
    assert "from round 19 on they part, and the ratio furthest from 1, 6.67, is at round 21." in text
    assert "RFedAGS 4.00e-06, RFedAvg 6.00e-07 (ratio 6.67)" in text
    assert "Both have levelled off at different levels" in text
    assert partial.avg_vs_ags(1, avg, avg) == []            # identical curves never part


def test_avg_vs_ags_says_when_a_curve_still_moves():
    ags = _curve(1.0, 0.5, 4e-6, 100)
    avg = pd.Series(0.5 ** np.arange(101) + 0.0, index=np.arange(101))   # keeps falling
    assert "still vary by more than that" in "\n".join(partial.avg_vs_ags(10, avg, ags))


def test_avg_vs_ags_same_level_with_round_to_round_noise():
    """Both flat at 3e-6 from round 30 but alternating x3 / x(1/3) in opposite phase from round
    90 on: same median level, per-round ratio up to 9: the rule fails on the variation."""
    T = 100
    ags, avg = _curve(1.0, 0.5, 3e-6, T), _curve(1.0, 0.5, 3e-6, T)
    wiggle = np.where(np.arange(T + 1) % 2, 3.0, 1 / 3.0)
    ags[90:] *= wiggle[90:]
    avg[90:] /= wiggle[90:]
    text = "\n".join(partial.avg_vs_ags(10, avg, ags))
    assert "up to round 89" in text and "the ratio furthest from 1, 0.111, is at round 90." in text
    assert "per-round ratio lies between 0.111 and 9" in text
    assert "same level within a factor 2; the rule fails on the round-to-round variation" in text


def test_avg_vs_ags_numbers_of_the_first_and_last_rounds():
    """The construction of ``test_avg_vs_ags_locates_the_split_and_the_levels``: up to round 18
    the ratio is 1 (rounds 0..17) and 4e-6 / 2^-18 at 18; over the last 20 rounds (10% of 201)
    both are flat."""
    ags, avg = _curve(1.0, 0.5, 4e-6, 200), _curve(1.0, 0.5, 6e-7, 200)
    lines = partial.avg_vs_ags(10, avg, ags)
    assert lines[0] == ("- K = 10: the curves stay within a factor 2 up to round 18 (ratio RFedAGS/RFedAvg "
                        f"between 1.00 and {4e-6 / 2 ** -18:.2f}, while the excess risk falls from 1.00e+00 to "
                        "4.00e-06); from round 19 on they part, and the ratio furthest from 1, 6.67, is at round 21.")
    assert lines[1] == ("  Over the last 20 rounds (median of those rounds): RFedAGS 4.00e-06, RFedAvg 6.00e-07 "
                        "(ratio 6.67); within those rounds each median curve varies by a factor 1 (RFedAGS) and "
                        "1 (RFedAvg) from its lowest to its highest value, and their per-round ratio lies between "
                        "6.67 and 6.67.")
    assert len(lines) == 3


def test_avg_vs_ags_curves_apart_from_round_0():
    avg = pd.Series(np.full(50, 1e-3))
    lines = partial.avg_vs_ags(2, avg, 3 * avg)
    assert lines[0].startswith("- K = 2: the curves stay within a factor 2 up to round -1; from round 0 on")
    assert "(ratio" not in lines[0]


def test_avg_vs_ags_same_steady_level_parting_on_the_way():
    """RFedAGS at 0.8^t, RFedAvg at 0.5^t, both floored at 1e-6: same steady level; they part in
    the transient, the largest ratio where RFedAvg has just reached the floor."""
    t = np.arange(201)
    ags, avg = pd.Series(np.maximum(0.8 ** t, 1e-6)), pd.Series(np.maximum(0.5 ** t, 1e-6))
    worst = int(np.argmax(np.abs(np.log(ags / avg))))
    lines = partial.avg_vs_ags(4, avg, ags)
    assert lines[-1] == (f"  The levels agree within a factor 2 and are steady: the curves part on the way "
                         f"there (largest ratio at round {worst}).")
    assert worst == 20
    # RFedAGS alternating 1e-6, 2e-6 over the last rounds: a spread of exactly the factor 2 is
    # still steady
    wiggly = ags.copy()
    wiggly[-20:] = np.where(np.arange(20) % 2, 2e-6, 1e-6)
    assert partial.avg_vs_ags(4, avg, wiggly)[-1].startswith("  The levels agree within a factor 2 and are steady")
    # a wider factor: never apart
    assert partial.avg_vs_ags(4, avg, ags, factor=2e4) == []


def test_avg_vs_ags_ignores_rounds_without_a_positive_finite_value():
    """Rounds where a curve is 0, inf or NaN cannot be compared: left out; nothing left: no line."""
    ags = pd.Series([1.0, 0.0, np.inf, 1.0, 1.0])
    avg = pd.Series([1.0, 5.0, 5.0, np.nan, 1.0])
    assert partial.avg_vs_ags(1, avg, ags) == []
    assert partial.avg_vs_ags(1, pd.Series([0.0, np.inf]), pd.Series([1.0, 1.0])) == []


def test_avg_vs_ags_level_of_a_short_curve_is_the_median_of_its_last_three_rounds():
    """21 rounds: 10% is 2, so the level is the median of the last 3 (not 4, not the rest)."""
    avg = pd.Series(np.full(21, 1e-3))
    ags = avg.copy()
    ags.iloc[-4:] = [9e-3, 1e-3, 2e-3, 3e-3]
    text = "\n".join(partial.avg_vs_ags(1, avg, ags))
    assert "Over the last 3 rounds (median of those rounds): RFedAGS 2.00e-03, RFedAvg 1.00e-03 (ratio 2)" in text
    assert np.isnan(partial._level(pd.Series([np.nan, np.nan])))
