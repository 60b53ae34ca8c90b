r"""More cases for ``stats``, each closing a gap that mutation testing found (bench_results/mutation_2026-12-06/stats.md).

Expected numbers are closed forms or worked by hand, never values computed by ``stats`` itself:

* Student's t with one degree of freedom is the Cauchy distribution, density $1/(\pi(1 + x^2))$ and
  distribution function $1/2 + \arctan(x)/\pi$; with two, density $(2 + x^2)^{-3/2}$ and distribution function
  $1/2 + x / (2\sqrt{2 + x^2})$, so $t_{p,2} = (2p - 1)\sqrt{2 / (4p(1 - p))}$: $t_{0.975,2} = 0.95\sqrt{2/0.0975}
  = 4.302652729749464$ and $t_{0.975,1} = \tan(0.475\pi) = 12.706204736174698$.
* The Wilson interval at $k = 0$ is $[0, z^2/(n + z^2)]$ and at $k = n$ is $[n/(n + z^2), 1]$, with
  $z^2 = 3.841459$: 0 of 8 is $[0, 0.324408]$, 1 of 1 is $[0.206549, 1]$.
"""
import math
import types

import pytest

from mini_transformer.evaluation import stats


@pytest.mark.parametrize("x", [0.0, 0.5, 1.0, 2.5, 7.0])
def test_t_density_and_distribution_match_the_closed_forms_for_one_and_two_degrees_of_freedom(x):
    assert stats.t_pdf(x, 1) == pytest.approx(1 / (math.pi * (1 + x * x)), rel=1e-12)
    assert stats.t_pdf(x, 2) == pytest.approx((2 + x * x) ** -1.5, rel=1e-12)
    assert stats.t_cdf(x, 1) == pytest.approx(0.5 + math.atan(x) / math.pi, abs=1e-10)
    assert stats.t_cdf(x, 2) == pytest.approx(0.5 + x / (2 * math.sqrt(2 + x * x)), abs=1e-10)
    # below zero by symmetry: P(T <= -x) = 1 - P(T <= x)
    assert stats.t_cdf(-x, 2) == pytest.approx(0.5 - x / (2 * math.sqrt(2 + x * x)), abs=1e-10)


def test_t_cdf_below_zero_mirrors_the_same_simpson_rule():
    # steps=2 on the Cauchy density from 0 to 1: (0.5 / 3)(f(0) + 4 f(0.5) + f(1)) = (1 + 3.2 + 0.5) / (6 pi),
    # so P(T <= 1) = 0.5 + 4.7 / (6 pi) and P(T <= -1) = 0.5 - 4.7 / (6 pi) with the same two steps
    assert stats.t_cdf(1.0, 1, steps=2) == pytest.approx(0.5 + 4.7 / (6 * math.pi), abs=1e-14)
    assert stats.t_cdf(-1.0, 1, steps=2) == pytest.approx(0.5 - 4.7 / (6 * math.pi), abs=1e-14)


@pytest.mark.parametrize("df, exact", [(1, 12.706204736174698), (2, 4.302652729749464)])
def test_t_quantile_matches_the_closed_form_when_computed_afresh(df, exact):
    # __wrapped__ skips the cache, so the bisection on t_cdf really runs here
    assert stats.t_quantile.__wrapped__(0.975, df) == pytest.approx(exact, abs=1e-8)


@pytest.mark.parametrize("k, n, lo, hi", [(0, 8, 0.0, 0.32440756), (1, 1, 0.20654931, 1.0)])
def test_wilson_at_the_ends_has_its_closed_form(k, n, lo, hi):
    p, got_lo, got_hi = stats.wilson_interval(k, n)
    assert (p, got_lo, got_hi) == pytest.approx((k / n, lo, hi), abs=1e-8)


@pytest.mark.parametrize("n", range(1, 61))
def test_wilson_stays_inside_zero_one_at_both_ends(n):
    # unclipped, 16 of 16 ends at 1.0000000000000002 and 0 of 21 starts at -1.4e-17 in floating point
    for k in (0, n):
        p, lo, hi = stats.wilson_interval(k, n)
        assert 0.0 <= lo <= p <= hi <= 1.0


class CyclingDraws:
    """A stand-in for random.Random whose j-th resample is n copies of value j: the resampled means are known."""

    def __init__(self, seed):
        self.j = 0

    def choices(self, x, k):
        v = x[self.j % len(x)]
        self.j += 1
        return [v] * k


@pytest.mark.parametrize("resamples", [100, 1000])
def test_bootstrap_percentiles_drop_two_and_a_half_percent_on_each_side(monkeypatch, resamples):
    # means 0, 1, ..., 99 (each resamples/100 times): the 2.5th and 97.5th percentiles are 2 and 97,
    # leaving 0, 1 below and 98, 99 above
    monkeypatch.setattr(stats, "random", types.SimpleNamespace(Random=CyclingDraws))
    mean, lo, hi = stats.bootstrap_interval([float(i) for i in range(100)], resamples=resamples)
    assert (mean, lo, hi) == (49.5, 2.0, 97.0)


def test_bootstrap_of_two_values_spans_both():
    # a resample of [0, 1] has mean 0 with probability 1/4 and 1 with probability 1/4, far more than 2.5%
    assert stats.bootstrap_interval([0.0, 1.0]) == (0.5, 0.0, 1.0)


@pytest.mark.parametrize("lo, hi, claimed, threshold, expected", [
    (0.1, 0.3, "above", None, "reproduces"),  # the default threshold is 0
    (-0.3, -0.1, "below", None, "reproduces"),
    (0.0, 0.2, "above", 0.0, "not established"),  # lo on the threshold: the interval contains it
    (-0.2, 0.0, "above", 0.0, "not established"),  # hi on the threshold
    (0.05, 0.09, "below", 0.05, "not established"),
    (0.01, 0.05, "below", 0.05, "not established"),
    (0.0500001, 0.09, "below", 0.05, "does not reproduce"),
    (0.01, 0.0499999, "below", 0.05, "reproduces"),
])
def test_verdict_on_each_side_of_the_threshold_and_on_it(lo, hi, claimed, threshold, expected):
    args = (lo, hi, claimed) if threshold is None else (lo, hi, claimed, threshold)
    assert stats.verdict(*args) == expected
    swapped = {"reproduces": "does not reproduce", "does not reproduce": "reproduces"}.get(expected, expected)
    assert stats.verdict(*args[:2], "below" if claimed == "above" else "above", *args[3:]) == swapped


def test_claim_record_defaults_and_note():
    # 0.9, 1.0, 1.1: mean 1, s = 0.1, half-width 4.3027 * 0.1 / sqrt(3) = 0.2484, so [0.75, 1.25] is above 0
    rec = stats.claim_record("gain", "above", values=[0.9, 1.0, 1.1])
    assert rec["threshold"] == 0.0 and rec["verdict"] == "reproduces" and "note" not in rec
    assert rec["half_width"] == pytest.approx(0.248414, abs=1e-6)
    noted = stats.claim_record("gain", "above", values=[0.9, 1.0, 1.1], note="seed 2 restarted")
    assert noted["note"] == "seed 2 restarted"


def test_a_bootstrap_record_is_kept_recomputed_and_printed_as_values():
    rec = stats.claim_record("window loss gap", "above", -0.1, values=[0.0, 1.0], kind="bootstrap")
    assert (rec["kind"], rec["mean"], rec["interval"], rec["verdict"]) == ("bootstrap", 0.5, [0.0, 1.0], "reproduces")
    again = stats.recompute(rec)
    assert (again["kind"], again["interval"]) == ("bootstrap", [0.0, 1.0])
    assert stats.format_record(rec) == "0.50 ± 0.50 (2 values): reproduces"


def test_share_record_verdict_pooled_interval_note_and_print():
    # shares 0.5, 0.25, 0: mean 0.25, half-width 4.302653 * 0.25 / sqrt(3) = 0.621034, so [-0.371, 0.871]
    # contains 0.1; pooled 12 of 48: Wilson [0.149206, 0.387844]
    rec = stats.share_record("heads", "above", 0.1, [8, 4, 0], [16, 16, 16], [0, 1, 2])
    assert rec["effect"] == "heads" and rec["kind"] == "t" and rec["verdict"] == "not established"
    assert "note" not in rec and "not_tested" not in rec
    assert rec["pooled_wilson"]["interval"] == pytest.approx([0.149206, 0.387844], abs=1e-6)
    assert stats.format_record(rec) == "0.25 ± 0.62 (3 seeds; pooled 12/48: 0.25 [0.15, 0.39]): not established"
    assert stats.format_record(rec, 3) == ("0.250 ± 0.621 (3 seeds; pooled 12/48: 0.250 [0.149, 0.388]): "
                                           "not established")
    noted = stats.share_record("heads", "above", 0.1, [8, 4, 0], [16, 16, 16], [0, 1, 2], note="seed 2 collapsed")
    assert noted["note"] == "seed 2 collapsed"


@pytest.mark.parametrize("make", [
    lambda: stats.claim_record("gap", "below", 0.05, values=[0.01, 0.02, 0.0], seeds=[0, 1, 2]),
    lambda: stats.claim_record("keys found", "above", 0.5, successes=60, trials=64),
    lambda: stats.claim_record("window gap", "above", -0.1, values=[0.0, 1.0, 0.5], kind="bootstrap"),
    lambda: stats.share_record("heads", "above", 0.1, [8, 4, 0], [16, 16, 16], [0, 1, 2]),
])
def test_recompute_gives_back_the_same_record(make):
    rec = make()
    again = stats.recompute(rec)
    for key in ("effect", "kind", "claimed", "threshold", "mean", "interval", "half_width", "verdict",
                "pooled_wilson"):
        assert again.get(key) == rec.get(key), key


def test_all_equal_of_one_none_and_differing_values():
    assert stats.all_equal([0.5]) == 0.5
    assert stats.all_equal([2, 2.0]) == 2.0
    assert stats.all_equal([]) is None and stats.all_equal([1.0, 1.0, 2.0]) is None


@pytest.mark.parametrize("args, printed", [
    ((0.5, 0.4, 0.6), "0.50 ± 0.10"),  # two digits by default
    ((0.5, 0.494, 0.506), "0.50 ± 0.01"),  # the half-width 0.006 prints as 0.01, so no extra digit
    ((1.0, 1.0 - 2e-9, 1.0 + 2e-9), "1.000000 ± 0.000000"),  # more digits up to 6, no further
    ((2.0, 1.0, 3.5, 0), "2 ± 1"),  # sides 1 and 1.5 differ by half a unit of the last digit: still ±
    ((0.5, 0.3, 0.7045), "0.50 ± 0.20"),  # sides 0.2 and 0.2045 differ by 0.0045, under half of 0.01
    ((0.5, 0.3, 0.71), "0.50 [0.30, 0.71]"),  # sides 0.2 and 0.21 differ by 0.01, over half of 0.01
])
def test_format_interval_digits_and_symmetry(args, printed):
    assert stats.format_interval(*args) == printed


@pytest.mark.parametrize("call, message", [
    (lambda: stats.t_interval([1.0]), "values needs at least 2 numbers for an interval, got 1."),
    (lambda: stats.bootstrap_interval([1.0, 2.0], resamples=99),
     "resamples must be at least 100 for a 95% interval, got 99."),
    (lambda: stats.wilson_interval(1, True), "trials must be a positive whole number, got True."),
    (lambda: stats.wilson_interval(1, 2.5), "trials must be a positive whole number, got 2.5."),
    (lambda: stats.wilson_interval(True, 4), "successes must be a whole number from 0 to trials=4, got True."),
    (lambda: stats.wilson_interval(1.5, 4), "successes must be a whole number from 0 to trials=4, got 1.5."),
    (lambda: stats.claim_record("x", "above", kind="t"), "kind='t' needs values, got none."),
    (lambda: stats.claim_record("x", "above", successes=3, trials=8, seeds=[0, 1]),
     "a Wilson interval is of one model, got seeds=[0, 1]: a share over several seeds is the t interval of the "
     "per-seed shares (share_record)."),
    (lambda: stats.share_record("x", "above", 0.1, [1, 2], [4, 4, 4], [0, 1, 2]),
     "successes, trials and seeds need one entry per seed, got 2, 3 and 3."),
])
def test_bad_input_gets_its_whole_sentence(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message
