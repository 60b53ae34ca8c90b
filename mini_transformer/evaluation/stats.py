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

The verdict rule (written out in ``chapters/README.md``) reads only the interval:

* **reproduces** when the whole interval lies on the claimed side of the threshold,
* **does not reproduce** when the whole interval lies on the other side,
* **not established** when the interval contains the threshold; the run could have detected an
  effect about as large as the interval's half-width.

``claim_record`` packs per-seed values, the interval and the verdict into the dict an experiment saves
under ``"claims"`` in its result file; the ledger test recomputes both from the stored values.
Plain Python (``math``, ``random``): these are a handful of host numbers, not arrays.
"""
import functools
import math
import random

LEVEL = 0.95
Z_975 = 1.959963984540054  # the standard normal's 0.975 quantile
VERDICTS = ("reproduces", "does not reproduce", "not established")
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
    return p, max(0.0, centre - hw), min(1.0, centre + hw)


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
                 seeds=None, note=""):
    r"""What an experiment saves for one claim: the raw values, the interval, and the verdict by the rule.

    ``effect`` says in words what was measured (and in which unit); ``kind`` is ``"t"`` (per-seed
    values, default when ``values`` is given), ``"bootstrap"`` (many windows or keys), or
    ``"wilson"`` (``successes`` out of ``trials``).
    """
    if kind is None:
        kind = "wilson" if trials is not None else "t"
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    rec = {"effect": effect, "kind": kind, "claimed": claimed, "threshold": float(threshold)}
    if kind == "wilson":
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
    if note:
        rec["note"] = note
    return rec


def recompute(record):
    r"""The interval and verdict of a saved claim record, recomputed from its raw values (the ledger test's check)."""
    return claim_record(record["effect"], record["claimed"], record["threshold"], values=record.get("values"),
                        successes=record.get("successes"), trials=record.get("trials"), kind=record["kind"])


def format_interval(mean, lo, hi, digits=2):
    r"""``"1.53 ± 0.04"`` for a symmetric interval, ``"0.81 [0.70, 0.89]"`` for an asymmetric one."""
    hw_lo, hw_hi = mean - lo, hi - mean
    if abs(hw_lo - hw_hi) <= 0.5 * 10 ** -digits:
        return f"{mean:.{digits}f} ± {(hi - lo) / 2:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def format_record(record, digits=2):
    r"""One claim record as the ledger prints it: ``"+0.01 ± 0.02 (3 seeds): not established"``."""
    lo, hi = record["interval"]
    text = format_interval(record["mean"], lo, hi, digits)
    n = f"{record['successes']}/{record['trials']}" if record["kind"] == "wilson" else \
        f"{len(record['values'])} {'seeds' if record['kind'] == 't' else 'values'}"
    return f"{text} ({n}): {record['verdict']}"
