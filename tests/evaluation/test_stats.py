r"""Intervals and the verdict rule, against published values worked by hand or printed in tables.

The t quantiles are the 0.975 column of any Student-t table; the Wilson intervals are Newcombe (1998),
"Two-sided confidence intervals for the single proportion", Table I, method 3 (the score interval).
"""
import math

import pytest

from mini_transformer.evaluation import stats


@pytest.mark.parametrize("df, table", [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045), (120, 1.980)])
def test_t_quantile_matches_the_printed_table(df, table):
    assert stats.t_quantile(0.975, df) == pytest.approx(table, abs=6e-4)


@pytest.mark.parametrize("k, n, lo, hi", [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                                          (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)])
def test_wilson_matches_newcombe_1998(k, n, lo, hi):
    p, got_lo, got_hi = stats.wilson_interval(k, n)
    assert p == pytest.approx(k / n)
    assert (got_lo, got_hi) == pytest.approx((lo, hi), abs=6e-5)


def test_t_interval_hand_worked():
    # values 1, 2, 3: mean 2, s = 1, half-width t(0.975, 2) / sqrt(3) = 4.3027 / 1.7321 = 2.4841
    mean, hw, lo, hi = stats.t_interval([1.0, 2.0, 3.0])
    assert (mean, hw) == pytest.approx((2.0, 2.4841), abs=1e-4)
    assert (lo, hi) == pytest.approx((2.0 - hw, 2.0 + hw))


def test_bootstrap_is_seeded_and_collapses_on_a_constant():
    assert stats.bootstrap_interval([0.5] * 50) == (0.5, 0.5, 0.5)
    vals = [math.sin(i) for i in range(200)]
    assert stats.bootstrap_interval(vals, seed=3) == stats.bootstrap_interval(vals, seed=3)
    mean, lo, hi = stats.bootstrap_interval(vals)
    # for 200 values the percentile bootstrap is close to the normal interval mean +- 1.96 s / sqrt(n)
    s = math.sqrt(sum((v - mean) ** 2 for v in vals) / 199)
    assert (hi - lo) / 2 == pytest.approx(1.96 * s / math.sqrt(200), rel=0.15)


@pytest.mark.parametrize("lo, hi, claimed, threshold, expected", [
    (0.1, 0.3, "above", 0.0, "reproduces"),
    (-0.3, -0.1, "above", 0.0, "does not reproduce"),
    (-0.1, 0.1, "above", 0.0, "not established"),
    (0.01, 0.04, "below", 0.05, "reproduces"),
    (0.06, 0.09, "below", 0.05, "does not reproduce"),
    (0.02, 0.08, "below", 0.05, "not established"),
])
def test_verdict_rule(lo, hi, claimed, threshold, expected):
    assert stats.verdict(lo, hi, claimed, threshold) == expected


def test_claim_record_recomputes_and_formats():
    rec = stats.claim_record("loss at 8L minus loss at L (nats)", "below", 0.05, values=[0.01, 0.02, 0.0],
                             seeds=[0, 1, 2])
    assert rec["verdict"] == "reproduces" and rec["values"] == [0.01, 0.02, 0.0]
    assert stats.recompute(rec)["interval"] == rec["interval"]
    assert stats.format_record(rec) == "0.01 ± 0.02 (3 seeds): reproduces"
    w = stats.claim_record("keys found", "above", 0.5, successes=60, trials=64)
    assert w["kind"] == "wilson" and w["verdict"] == "reproduces"
    assert stats.format_record(w) == "0.94 [0.85, 0.98] (60/64): reproduces"


@pytest.mark.parametrize("call, words", [
    (lambda: stats.t_interval([1.0]), "at least 2"),
    (lambda: stats.t_interval([1.0, float("nan")]), "finite"),
    (lambda: stats.wilson_interval(5, 4), "from 0 to trials=4, got 5"),
    (lambda: stats.wilson_interval(1, 0), "positive whole number, got 0"),
    (lambda: stats.verdict(0.0, 1.0, "sideways"), "'sideways'"),
    (lambda: stats.verdict(1.0, 0.0, "above"), "lo=1.0 and hi=0.0"),
    (lambda: stats.claim_record("x", "above", kind="z", values=[1, 2]), "'z'"),
])
def test_bad_input_names_the_argument(call, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        call()


def test_not_tested_here_keeps_the_interval_and_says_why():
    rec = stats.claim_record("heads over 0.3", "above", 0.1, values=[0.0, 0.0, 0.125], seeds=[0, 1, 2],
                             not_tested="8,000 times less data than the source")
    assert rec["verdict"] == "not tested here" and rec["interval_verdict"] == "not established"
    assert stats.recompute(rec)["verdict"] == "not tested here" and "not tested here" in stats.VERDICTS


def test_a_share_over_seeds_is_the_t_interval_of_per_seed_shares():
    # shares 8/16, 4/16, 0/16 = 0.5, 0.25, 0: mean 0.25, s = 0.25, half-width 4.3027 * 0.25 / sqrt(3) = 0.6210
    rec = stats.share_record("heads", "above", 0.1, [8, 4, 0], [16, 16, 16], [0, 1, 2])
    assert (rec["mean"], rec["half_width"]) == pytest.approx((0.25, 0.6210), abs=1e-4)
    assert rec["pooled_wilson"]["successes"] == 12 and rec["pooled_wilson"]["trials"] == 48
    assert stats.recompute(rec)["interval"] == rec["interval"]
    with pytest.raises(ValueError, match=r"seeds=\[0, 1, 2\].*per-seed shares"):
        stats.claim_record("heads", "above", 0.1, successes=12, trials=48, seeds=[0, 1, 2])


def test_zero_width_is_all_n_seeds_never_plus_minus_zero():
    with pytest.raises(ValueError, match="width zero.*all N seeds"):
        stats.format_interval(1.0, 1.0, 1.0)
    assert stats.format_interval(0.0005, -0.0009, 0.0019) == "0.001 ± 0.001"  # one more digit, not "0.00 ± 0.00"
    assert stats.format_interval(0.0005, -0.0009, 0.0019, 4) == "0.0005 ± 0.0014"
    same = stats.claim_record("accuracy", "above", 0.9, values=[1.0] * 10)
    assert stats.format_record(same) == "all 10 seeds: 1.00: reproduces"
    narrow = stats.claim_record("gap", "below", 0.05, values=[0.0004, 0.0018, -0.0011, 0.0014, 0.0])
    assert "± 0.00 " not in stats.format_record(narrow) and stats.format_record(narrow).startswith("0.001 ± 0.001 (5 seeds)")
