r"""Intervals and verdicts: how a measured effect settles a claim.

A claim is settled by an interval, not by one number. Three intervals cover every result here:

=====================  ============================================================================
``t_interval``         the mean of a few per-seed values and its 95% Student-t interval,
                       $\bar x \pm t_{0.975,\,n-1}\, s/\sqrt{n}$ (seeds are the unit of replication)
``wilson_interval``    a proportion $k/n$ (passkeys found, heads over a threshold) and its 95% Wilson
                       score interval, which stays inside $[0, 1]$ and is sensible at $k = 0$ or $k = n$
``bootstrap_interval`` the mean of many per-window values and its 95% percentile bootstrap interval,
                       where training several seeds is too costly (say so where it is used)
=====================  ============================================================================

The verdict rule (written out in ``chapters/README.md``) reads the interval:

* **reproduces** when the whole interval lies on the claimed side of the threshold,
* **does not reproduce** when the whole interval lies on the other side,
* **not established** when the interval contains the threshold; the run could have detected an
  effect about as large as the interval's half-width;
* **not tested here**, the one verdict the interval does not give: the claim's stated conditions are out of
  this model's or run's reach (a sink "at scale" on 8,000 times less data), or the row only evaluates a
  formula or measures a different quantity. The record keeps its interval and says why (``not_tested``).

A proportion over several seeds is the t interval of the per-seed shares (``share_record``), never one
Wilson interval pooled over the seeds (seeds differ far more than the heads or keys of one seed); the pooled
Wilson interval is kept beside it, for reading only. Every seed equal gives a t interval of width zero,
printed as "all N seeds: V", never as "± 0.00".

``claim_record`` packs per-seed values, the interval and the verdict into the dict an experiment saves
under ``"claims"`` in its result file; the ledger test recomputes both from the stored values.
Plain Python (``math``, ``random``): these are a handful of host numbers, not arrays.
"""
import functools
import math
import random

LEVEL = 0.95
Z_975 = 1.959963984540054  # the standard normal's 0.975 quantile
VERDICTS = ("reproduces", "does not reproduce", "not established", "not tested here")
NOT_TESTED = VERDICTS[3]
SIDES = ("above", "below")
KINDS = ("t", "wilson", "bootstrap")


def _check_values(values, least, name="values"):
    vals = [float(v) for v in values]
    if len(vals) < least:
        raise ValueError(f"{name} needs at least {least} numbers for an interval, got {len(vals)}.")
    bad = [v for v in vals if not math.isfinite(v)]
    if bad:
        raise ValueError(f"{name} must be finite numbers, got {bad[0]!r} among them.")
    return vals


def t_pdf(x, df):
    r"""Student's t density, $\frac{\Gamma((\nu+1)/2)}{\sqrt{\nu\pi}\,\Gamma(\nu/2)}(1 + x^2/\nu)^{-(\nu+1)/2}$."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def t_cdf(x, df, steps=4000):
    r"""$P(T \le x)$ for $x \ge 0$: one half plus Simpson's rule on the density from 0 to $x$."""
    if x < 0:
        return 1.0 - t_cdf(-x, df, steps)
    h = x / steps
    s = t_pdf(0.0, df) + t_pdf(x, df)
    s += sum((4 if i % 2 else 2) * t_pdf(i * h, df) for i in range(1, steps))
    return 0.5 + s * h / 3


@functools.lru_cache(maxsize=None)
def t_quantile(p, df):
    r"""The $p$ quantile of Student's t with ``df`` degrees of freedom, by bisection on ``t_cdf`` ($p > 1/2$)."""
    if not 0.5 < p < 1:
        raise ValueError(f"p must lie in (0.5, 1), got {p}.")
    if df < 1:
        raise ValueError(f"df must be at least 1, got {df}.")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def t_interval(values):
    r"""Mean, 95% half-width and interval of a few per-seed values: $\bar x \pm t_{0.975,n-1}\,s/\sqrt n$.

    Returns ``(mean, half_width, lo, hi)``. Needs at least two values (one seed has no spread).
    """
    x = _check_values(values, 2)
    n = len(x)
    mean = sum(x) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
    hw = t_quantile(0.975, n - 1) * s / math.sqrt(n)
    return mean, hw, mean - hw, mean + hw


def wilson_interval(successes, trials):
    r"""A proportion $\hat p = k/n$ and its 95% Wilson score interval.

    $\frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}$ with $z = 1.96$.
    Returns ``(p_hat, lo, hi)``.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive whole number, got {trials!r}.")
    if isinstance(successes, bool) or not isinstance(successes, int) or not 0 <= successes <= trials:
        raise ValueError(f"successes must be a whole number from 0 to trials={trials}, got {successes!r}.")
    n, z2 = trials, Z_975 ** 2
    p = successes / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    hw = Z_975 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # the score interval contains p_hat and lies in [0, 1]; at k = 0 or k = n one end is p_hat itself, which
    # rounding misses by 1e-16 (3 of 3 ended at 0.9999999999999998, 0 of 21 started at 1.4e-17)
    return p, max(0.0, min(p, centre - hw)), min(1.0, max(p, centre + hw))


def bootstrap_interval(values, resamples=2000, seed=0):
    r"""Mean and 95% percentile-bootstrap interval of many values (windows, keys), resampled with a fixed seed.

    Returns ``(mean, lo, hi)``: the 2.5th and 97.5th percentiles of ``resamples`` resampled means.
    """
    x = _check_values(values, 2)
    if resamples < 100:
        raise ValueError(f"resamples must be at least 100 for a 95% interval, got {resamples}.")
    rng = random.Random(seed)
    n = len(x)
    means = sorted(sum(rng.choices(x, k=n)) / n for _ in range(resamples))
    return sum(x) / n, means[int(0.025 * resamples)], means[int(math.ceil(0.975 * resamples)) - 1]


def verdict(lo, hi, claimed, threshold=0.0):
    r"""The verdict rule: where the interval ``[lo, hi]`` lies against ``threshold``, on the ``claimed`` side.

    ``claimed="above"``: the claim says the effect exceeds the threshold; ``"below"``: that it stays under it.
    """
    if claimed not in SIDES:
        raise ValueError(f"claimed must be one of {SIDES}, got {claimed!r}.")
    if not lo <= hi:
        raise ValueError(f"an interval needs lo <= hi, got lo={lo} and hi={hi}.")
    above, below = lo > threshold, hi < threshold
    if not (above or below):
        return "not established"
    return "reproduces" if above == (claimed == "above") else "does not reproduce"


def claim_record(effect, claimed, threshold=0.0, values=None, successes=None, trials=None, kind=None,
                 seeds=None, note="", not_tested=""):
    r"""What an experiment saves for one claim: the raw values, the interval, and the verdict by the rule.

    ``effect`` says in words what was measured (and in which unit); ``kind`` is ``"t"`` (per-seed
    values, default when ``values`` is given), ``"bootstrap"`` (many windows or keys), or
    ``"wilson"`` (``successes`` out of ``trials``, of one model: one seed at most). ``not_tested``, a
    sentence, says why the claim's conditions are out of this run's reach: the verdict is then
    "not tested here", and the interval's own verdict is kept as ``interval_verdict``.
    """
    if kind is None:
        kind = "wilson" if trials is not None else "t"
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    rec = {"effect": effect, "kind": kind, "claimed": claimed, "threshold": float(threshold)}
    if kind == "wilson":
        if seeds is not None and len(seeds) > 1:
            raise ValueError(f"a Wilson interval is of one model, got seeds={list(seeds)}: a share over several "
                             f"seeds is the t interval of the per-seed shares (share_record).")
        mean, lo, hi = wilson_interval(successes, trials)
        rec.update(successes=successes, trials=trials)
    else:
        if values is None:
            raise ValueError(f"kind={kind!r} needs values, got none.")
        vals = [float(v) for v in values]
        if kind == "t":
            mean, _, lo, hi = t_interval(vals)
        else:
            mean, lo, hi = bootstrap_interval(vals)
        rec["values"] = vals
    if seeds is not None:
        rec["seeds"] = list(seeds)
    rec.update(mean=mean, interval=[lo, hi], half_width=(hi - lo) / 2, verdict=verdict(lo, hi, claimed, threshold))
    if not_tested:
        rec.update(interval_verdict=rec["verdict"], verdict=NOT_TESTED, not_tested=not_tested)
    if note:
        rec["note"] = note
    return rec


def share_record(effect, claimed, threshold, successes, trials, seeds, note="", not_tested=""):
    r"""A proportion over several seeds: the t interval of the per-seed shares $k_s / n_s$, with the Wilson
    interval of the pooled counts kept beside it (``pooled_wilson``), for reading, not for the verdict.

    ``successes`` and ``trials`` hold one count per seed (or per run), in the order of ``seeds``.
    """
    if not len(successes) == len(trials) == len(seeds):
        raise ValueError(f"successes, trials and seeds need one entry per seed, got {len(successes)}, "
                         f"{len(trials)} and {len(seeds)}.")
    for k, n in zip(successes, trials):
        wilson_interval(k, n)  # each seed's count is checked as a proportion
    rec = claim_record(effect, claimed, threshold, values=[k / n for k, n in zip(successes, trials)], kind="t",
                       seeds=seeds, note=note, not_tested=not_tested)
    k, n = sum(successes), sum(trials)
    _, lo, hi = wilson_interval(k, n)
    rec.update(successes_per_seed=list(successes), trials_per_seed=list(trials),
               pooled_wilson={"successes": k, "trials": n, "interval": [lo, hi]})
    return rec


def recompute(record):
    r"""The interval and verdict of a saved claim record, recomputed from its raw values (the ledger test's check)."""
    if "pooled_wilson" in record:
        return share_record(record["effect"], record["claimed"], record["threshold"], record["successes_per_seed"],
                            record["trials_per_seed"], record["seeds"], not_tested=record.get("not_tested", ""))
    return claim_record(record["effect"], record["claimed"], record["threshold"], values=record.get("values"),
                        successes=record.get("successes"), trials=record.get("trials"), kind=record["kind"],
                        not_tested=record.get("not_tested", ""))


def all_equal(values):
    r"""The one value every seed gave, or None when they differ (then the interval has a width to print)."""
    vals = [float(v) for v in values]
    return vals[0] if vals and all(v == vals[0] for v in vals) else None


def format_interval(mean, lo, hi, digits=2):
    r"""``"1.53 ± 0.04"`` for a symmetric interval, ``"0.81 [0.70, 0.89]"`` for an asymmetric one.

    Never prints "± 0.00", which a reader takes for certainty: a narrow interval gets as many more digits
    as its half-width needs (up to 6); an interval of width zero (every seed equal) is refused, since it is
    "all N seeds: V" (``format_record``).
    """
    if hi - lo <= 0:
        raise ValueError(f"the interval [{lo}, {hi}] has width zero, which would print as ± 0: every seed gave the "
                         f"same value, so say 'all N seeds: V' (format_record does).")
    while digits < 6 and float(f"{(hi - lo) / 2:.{digits}f}") == 0:
        digits += 1
    hw_lo, hw_hi = mean - lo, hi - mean
    if abs(hw_lo - hw_hi) <= 0.5 * 10 ** -digits:
        return f"{mean:.{digits}f} ± {(hi - lo) / 2:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def format_record(record, digits=2):
    r"""One claim record as the ledger prints it: ``"+0.01 ± 0.02 (3 seeds): not established"``.

    Every seed equal prints as ``"all 10 seeds: 1.00: reproduces"``; a share over seeds adds its pooled counts
    and their Wilson interval, ``"0.40 ± 0.37 (3 seeds; pooled 19/48: 0.40 [0.27, 0.54]): reproduces"``.
    """
    lo, hi = record["interval"]
    unit = {"t": "seeds", "bootstrap": "values"}.get(record["kind"])
    same = all_equal(record["values"]) if record["kind"] == "t" else None
    if same is not None:
        return f"all {len(record['values'])} {unit}: {same:.{digits}f}: {record['verdict']}"
    n = f"{record['successes']}/{record['trials']}" if record["kind"] == "wilson" else f"{len(record['values'])} {unit}"
    pooled = record.get("pooled_wilson")
    if pooled:
        plo, phi = pooled["interval"]
        p = pooled["successes"] / pooled["trials"]
        n += f"; pooled {pooled['successes']}/{pooled['trials']}: {format_interval(p, plo, phi, digits)}"
    return f"{format_interval(record['mean'], lo, hi, digits)} ({n}): {record['verdict']}"
