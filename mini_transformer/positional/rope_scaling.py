r"""RoPE frequencies, and the context-extension methods that rescale them.

RoPE rotates pair $i$ of a query or key at position $m$ by the angle $m\,\theta_i$, with

$$\theta_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, d/2 - 1,$$

where $d$ is the rotary dimension (``d_head`` times ``partial_rotary_factor``) and ``base`` is
the config's ``rope_theta``. A model trained at length $L$ has only ever seen the angles
$0 \dots L\,\theta_i$. Every method here changes the $\theta_i$ (and some also the softmax
temperature) so that a longer context lands on angles the model already knows.

One entry point, ``rope_inv_freq``, reads a ``rope_scaling`` dict spelled exactly as in a
published ``config.json``, so you can paste one in. With $s$ = ``factor``:

==============  ================================================================
``rope_type``   what happens to $\theta_i$
==============  ================================================================
default         nothing
linear          $\theta_i / s$ (position interpolation, Chen et al. 2023)
ntk             base becomes $\text{base}\cdot s^{d/(d-2)}$ (NTK-aware)
dynamic         ntk, with $s$ chosen from the current sequence length
ntk_by_parts    keep fast pairs, divide slow pairs by $s$, ramp in between (YaRN paper)
yarn            ntk_by_parts, plus the attention factor $0.1\ln s + 1$
longrope        $\theta_i / \lambda_i$ with searched per-pair factors $\lambda_i$
llama3          by parts again, but the bands are set by wavelength (Llama 3.1)
proportional    the first pairs keep $\theta_i$ over the full head, the rest stop (Gemma 4)
==============  ================================================================

The second value returned, ``attention_factor``, multiplies cos and sin, so it scales both q
and k and therefore the attention logits by ``attention_factor**2``. That is how the Hugging
Face reference (``transformers/modeling_rope_utils.py``) applies it, and YaRN's
$1/\sqrt{t} = 0.1\ln s + 1$ is exactly that per-vector factor.

Frequencies are float64 arrays of the active backend; factors are plain Python floats.
"""
import math
import warnings
from typing import NamedTuple

from ..engine.backend import asarray, to_numpy, xp
from ..engine.validate import check_int

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn", "longrope", "llama3", "proportional")

# Every key a published rope_scaling block uses for the methods above. Others draw a warning.
KNOWN_KEYS = frozenset({
    "rope_type", "type", "factor", "original_max_position_embeddings", "attention_factor",
    "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate",
    "short_factor", "long_factor", "low_freq_factor", "high_freq_factor",
})


# ---------------------------------------------------------------------------
# Plain RoPE: frequencies, wavelengths, rotations
# ---------------------------------------------------------------------------

def thetas(head_dim, base):
    r"""The RoPE frequencies $\theta_i = \text{base}^{-2i/d}$, one per pair, as float64.

    ``head_dim`` is the number of rotated dimensions $d$ (even); the result has $d/2$ entries,
    from $\theta_0 = 1$ (one radian per token) down to $\text{base}^{-(d-2)/d}$.
    """
    _check_even(head_dim)
    two_i = xp.arange(0, head_dim, 2, dtype="float64")  # (d/2,) = 2i
    return base ** (-two_i / head_dim)  # (d/2,)


def wavelengths(head_dim, base):
    r"""Tokens per full turn of each pair: $\lambda_i = 2\pi/\theta_i = 2\pi\,\text{base}^{2i/d}$."""
    return 2 * math.pi / thetas(head_dim, base)


def rotations_within(head_dim, base, train_len):
    r"""Full turns pair $i$ makes in ``train_len`` tokens: $\rho_i = L\,\theta_i / (2\pi)$.

    This is YaRN's $r(d)$. A pair with $\rho_i < 1$ never completed a cycle in training.
    """
    return train_len * thetas(head_dim, base) / (2 * math.pi)


class CriticalDimension(NamedTuple):
    """Where the pairs stop completing a full turn within the training length."""
    pair: int     # first pair index i whose wavelength 2*pi/theta_i reaches train_len
    d_extra: int  # the same boundary counted in dimensions, 2 * pair (Liu et al.'s d_extra)


def critical_dimension(head_dim, base, train_len):
    r"""The first pair whose period reaches the training length, in pairs and in dimensions.

    The survey (after LongRoPE2) writes $r_{crit} = \min\{r : T_r \ge L\}$ with
    $T_r = 2\pi\,\text{base}^{2r/d}$. Liu et al., "Scaling Laws of RoPE-based Extrapolation",
    count the same boundary in dimensions:

    $$d_{extra} = 2\left\lceil \frac{d}{2}\log_{\text{base}}\frac{L}{2\pi} \right\rceil,$$

    which is $2\,r_{crit}$. For $d = 128$, base 10000, $L = 4096$ (Llama 2) that is pair 46,
    $d_{extra} = 92$: the last 36 dimensions never see a full period in training. If every
    pair completes a turn, ``pair`` is $d/2$.
    """
    lam = wavelengths(head_dim, base)  # (d/2,), increasing with i
    # The wavelengths increase with i, so the first one that reaches L sits right after
    # all the ones that fall short of it.
    pair = int(xp.sum(lam < train_len))
    return CriticalDimension(pair=pair, d_extra=2 * pair)


def extrapolation_bound(head_dim, base, train_len, pretrain_base=10000.0):
    r"""Liu et al.'s extrapolation limit after fine-tuning with a new ``base``:

    $$T_{extra} = 2\pi\,\beta^{d_{extra}/d},$$

    where $\beta$ is the new base and $d_{extra}$ comes from pre-training
    (``pretrain_base``, ``train_len``). It is the period the critical dimension has under the
    new base. The paper treats it as an estimate for Llama 2, not a guarantee.
    """
    d_extra = critical_dimension(head_dim, pretrain_base, train_len).d_extra
    return 2 * math.pi * base ** (d_extra / head_dim)


def base_for_length(head_dim, target_len, train_len, pretrain_base=10000.0):
    r"""The base whose ``extrapolation_bound`` is ``target_len``: $\beta = (T/2\pi)^{d/d_{extra}}$.

    This is the exact inverse of ``extrapolation_bound``. The paper's closed form,
    $\beta_0 = 10000^{\log_{L/2\pi}(T/2\pi)}$, is the same with the ceiling in $d_{extra}$
    dropped; since the ceiling only raises $d_{extra}$, it never asks for a larger base
    than the paper's.
    """
    d_extra = critical_dimension(head_dim, pretrain_base, train_len).d_extra
    if d_extra == 0:
        raise ValueError(
            f"With train_len={train_len} no pair completes a turn (train_len is below 2*pi), so "
            "there is no critical dimension to stretch. Use a training length of at least 7 tokens.")
    return (target_len / (2 * math.pi)) ** (head_dim / d_extra)


def wavelength_table(head_dim=128, base=10000.0, pairs=(0, 16, 32, 48, 63), threshold=8192):
    r"""Rows of $(i, \theta_i, \lambda_i)$ for ``pairs``, plus the first pair with $\lambda_i > $ ``threshold``.

    Each row is a dict with ``pair``, ``theta``, ``wavelength``, ``above_threshold`` and
    ``first_above_threshold`` (True on the one row where the wavelength first exceeds the
    threshold). That row is added in pair order if it is not among ``pairs``. The defaults are
    the book's Exercise 2 (d_head 128, base 10000, an 8k context).
    """
    half = head_dim // 2
    for i in pairs:
        if not 0 <= i < half:
            raise ValueError(f"pairs contains {i}, but head_dim={head_dim} has pairs 0..{half - 1}.")
    theta = to_numpy(thetas(head_dim, base)).tolist()
    lam = to_numpy(wavelengths(head_dim, base)).tolist()
    first = next((i for i in range(half) if lam[i] > threshold), None)
    chosen = sorted(set(pairs) | ({first} if first is not None else set()))
    return [{"pair": i, "theta": theta[i], "wavelength": lam[i], "above_threshold": lam[i] > threshold,
             "first_above_threshold": i == first} for i in chosen]


# ---------------------------------------------------------------------------
# Pieces the methods share
# ---------------------------------------------------------------------------

def yarn_mscale(scale, mscale=1.0):
    r"""YaRN's attention factor $0.1\,m\ln s + 1$ (1 when $s \le 1$); $m$ = ``mscale``."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def longrope_attention_factor(factor, original_max_position_embeddings):
    r"""LongRoPE's attention factor $\sqrt{1 + \ln s / \ln L}$ (1 when $s \le 1$), $L$ = trained length."""
    if factor <= 1:
        return 1.0
    return math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))


def by_parts_ramp(head_dim, base, original_len, beta_fast=32.0, beta_slow=1.0, truncate=True):
    r"""How much of each pair NTK-by-parts keeps: $\gamma_i = 1$ keeps $\theta_i$, $0$ divides it by $s$.

    YaRN's rule: a pair that turns more than $\beta$ (``beta_fast``) times within the trained
    length $L$ is kept, one that turns fewer than $\alpha$ (``beta_slow``) times is fully
    interpolated. Solving $L\,\theta_i / 2\pi = n$ for the pair index gives

    $$i(n) = \frac{d\,\ln\big(L / (2\pi n)\big)}{2\ln \text{base}},$$

    and $\gamma_i = 1 - \operatorname{clip}\big((i - i(\beta)) / (i(\alpha) - i(\beta)), 0, 1\big)$,
    with $i(\beta)$ floored and $i(\alpha)$ ceiled when ``truncate`` is set. The paper writes the
    ramp as linear in the rotation count $r$; the authors' released code, the Hugging Face
    reference and DeepSeek's code put the same two thresholds in pair-index space (linear in
    $\log r$), and published YaRN checkpoints are built with that, so we follow the code. The
    two agree on which pairs are kept and which are interpolated; they differ only in between.
    """
    def pair_at(num_rotations):  # the (fractional) pair index that turns num_rotations times in L
        return head_dim * math.log(original_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_at(beta_fast), pair_at(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001  # the reference's guard against a zero-width ramp
    i = xp.arange(head_dim // 2, dtype="float64")  # (d/2,)
    return 1.0 - xp.clip((i - low) / (high - low), 0.0, 1.0)  # (d/2,)


# ---------------------------------------------------------------------------
# The methods, one function each: (d, base, cfg, ...) -> (inv_freq, attention_factor)
# ---------------------------------------------------------------------------

def _position_interpolation(d, base, cfg):
    r"""PI: $\theta_i' = \theta_i / s$, the same as feeding position $m/s$."""
    return thetas(d, base) / _factor(cfg, "linear"), 1.0


def _ntk_aware(d, base, cfg):
    r"""NTK-aware: $\text{base}' = \text{base}\cdot s^{d/(d-2)}$, so $\theta_i' = \theta_i\,s^{-2i/(d-2)}$.

    Pair 0 is untouched and the slowest pair is divided by exactly $s$.
    """
    s = _factor(cfg, "ntk")
    return thetas(d, base * s ** (d / (d - 2))), 1.0


def _dynamic_ntk(d, base, cfg, seq_len, max_position_embeddings):
    r"""Dynamic NTK: NTK-aware with $s$ picked from the current length $\ell$, as the reference does:

    $$s(\ell) = \max\big(1,\; s\,\ell / L - (s - 1)\big),$$

    with $L$ = ``original_max_position_embeddings`` if given, else ``max_position_embeddings``.
    Up to $\ell = L$ this is plain RoPE. (The YaRN paper writes $s(\ell) = \max(1, \ell/L)$,
    the same rule for $s = 1$; the reference's form lets ``factor`` steepen the growth.)
    """
    s = _factor(cfg, "dynamic")
    if seq_len is None:
        raise ValueError(
            "rope_type 'dynamic' picks its scale from the current sequence length, but seq_len is "
            "None. Pass seq_len= the number of positions you are about to encode.")
    train_len = _trained_length(cfg, max_position_embeddings, "dynamic")
    s_now = max(1.0, s * seq_len / train_len - (s - 1))
    return thetas(d, base * s_now ** (d / (d - 2))), 1.0


def _ntk_by_parts(d, base, cfg, max_position_embeddings):
    r"""NTK-by-parts: $\theta_i' = (1-\gamma_i)\,\theta_i/s + \gamma_i\,\theta_i$, $\gamma$ from ``by_parts_ramp``."""
    s = _factor(cfg, cfg["_type"])
    beta_fast = _number(cfg, "beta_fast", None) or 32  # `or`: a null or 0 means "use the default", as in the reference
    beta_slow = _number(cfg, "beta_slow", None) or 1
    if beta_fast <= beta_slow:
        raise ValueError(
            f"rope_scaling has beta_fast={beta_fast} and beta_slow={beta_slow}; beta_fast counts the "
            "rotations above which a pair is kept, so it must be larger (YaRN uses 32 and 1).")
    train_len = _trained_length(cfg, max_position_embeddings, cfg["_type"])
    gamma = by_parts_ramp(d, base, train_len, beta_fast, beta_slow, bool(cfg.get("truncate", True)))
    theta = thetas(d, base)
    return (1 - gamma) * theta / s + gamma * theta


def _yarn(d, base, cfg, max_position_embeddings):
    r"""YaRN: NTK-by-parts frequencies and attention factor $\sqrt{1/t} = 0.1\ln s + 1$.

    DeepSeek's variant gives ``mscale`` and ``mscale_all_dim`` and uses
    $\text{mscale}(s, m) / \text{mscale}(s, m_{all})$, which is 1 when the two are equal; its
    attention code then multiplies the softmax scale by $\text{mscale}(s, m_{all})^2$ itself.
    As in the reference, the ratio is used only when both keys are non-zero, and an explicit
    ``attention_factor`` overrides everything.
    """
    inv_freq = _ntk_by_parts(d, base, cfg, max_position_embeddings)
    s = _factor(cfg, "yarn")
    explicit = _number(cfg, "attention_factor", None)
    mscale, mscale_all_dim = _number(cfg, "mscale", None), _number(cfg, "mscale_all_dim", None)
    if explicit is not None:
        return inv_freq, explicit
    if mscale and mscale_all_dim:
        return inv_freq, yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)
    return inv_freq, yarn_mscale(s)


def _longrope(d, base, cfg, seq_len, max_position_embeddings):
    r"""LongRoPE: $\theta_i' = \theta_i / \lambda_i$, with $\lambda$ = ``long_factor`` once $\ell > L$, else ``short_factor``.

    $L$ = ``original_max_position_embeddings``; with no ``seq_len`` the short factors apply, as
    in the reference. The attention factor is $\sqrt{1 + \ln s / \ln L}$ with $s$ = ``factor``,
    or ``max_position_embeddings`` / $L$ when the dict has no factor (Phi-3's configs).
    """
    train_len = _number(cfg, "original_max_position_embeddings", None)
    if train_len is None:
        raise ValueError(
            "rope_type 'longrope' needs rope_scaling['original_max_position_embeddings'] (the "
            "trained length that decides short versus long factors). Phi-3 configs keep it at the "
            "top level of config.json; copy it into the rope_scaling dict.")
    lam = {key: _factor_list(cfg, key, d // 2) for key in ("short_factor", "long_factor")}
    s = _number(cfg, "factor", None)
    if s is None:
        if max_position_embeddings is None:
            raise ValueError(
                "rope_type 'longrope' needs a scale for its attention factor: give "
                "rope_scaling['factor'] or max_position_embeddings (the extended length).")
        s = max_position_embeddings / train_len
    else:
        _check_factor(s)
    attention_factor = _number(cfg, "attention_factor", None)
    if attention_factor is None:
        attention_factor = longrope_attention_factor(s, train_len)
    use_long = seq_len is not None and seq_len > train_len
    ext = asarray(lam["long_factor" if use_long else "short_factor"], dtype="float64")  # (d/2,)
    return thetas(d, base) / ext, attention_factor


def _llama3(d, base, cfg):
    r"""Llama 3.1: split the pairs by wavelength $\lambda_i$ against the trained length $L$.

    $\lambda_i < L/h$ (``high_freq_factor``): kept. $\lambda_i > L/l$ (``low_freq_factor``):
    divided by $s$. In between, blend with $g = (L/\lambda_i - l)/(h - l)$:
    $\theta_i' = (1-g)\,\theta_i/s + g\,\theta_i$, which is continuous at both edges. With $l = h$
    (Llama 4 Scout: 1 and 1) there is no between: pairs longer than $L/l$ are divided, the rest kept.
    """
    s = _factor(cfg, "llama3")
    low, high = (_number(cfg, key, _REQUIRED, "llama3") for key in ("low_freq_factor", "high_freq_factor"))
    train_len = _number(cfg, "original_max_position_embeddings", _REQUIRED, "llama3")
    if not 0 < low <= high:
        raise ValueError(
            f"rope_scaling has low_freq_factor={low} and high_freq_factor={high}; llama3 needs "
            "0 < low_freq_factor <= high_freq_factor (Llama 3.1 uses 1 and 4, Llama 4 Scout 1 and 1).")
    theta = thetas(d, base)
    lam = 2 * math.pi / theta
    if low == high:                                   # no blended band, and g would divide by zero
        return xp.where(lam > train_len / low, theta / s, theta)
    g = (train_len / lam - low) / (high - low)
    blended = (1 - g) * theta / s + g * theta
    return xp.where(lam < train_len / high, theta, xp.where(lam > train_len / low, theta / s, blended))


def proportional_inv_freq(head_dim, base, partial_rotary_factor=1.0, factor=1.0):
    r"""Proportional RoPE (p-RoPE, Barbero et al. 2024; Gemma 4): $d/2$ frequencies, the slowest ones zero.

    The first $n = \lfloor p\,d / 2 \rfloor$ pairs keep $\theta_i = \text{base}^{-2i/d}$ with $d$ the FULL
    head width, the other $d/2 - n$ pairs turn at frequency 0 (they carry content, no position), and
    ``factor`` divides every one. NeoX partial rotary is not this: it turns the first $p\,d$ channels
    with $\text{base}^{-2i/(p d)}$, so pair 1 there is pair $1/p$ here. $n$ is computed as Hugging
    Face's ``_compute_proportional_rope_parameters`` does, ``int(p * d // 2)``, rounding included.
    """
    _check_even(head_dim)
    p = partial_rotary_factor
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"partial_rotary_factor is {partial_rotary_factor!r}; proportional RoPE keeps that "
                         "fraction of the pairs turning, so it must lie in [0, 1].")
    n_rotated = int(partial_rotary_factor * head_dim // 2)
    theta = thetas(head_dim, base)                                             # (d/2,) over the full width
    keep = xp.arange(head_dim // 2) < n_rotated                                # (d/2,) True for the turning pairs
    return xp.where(keep, theta, 0.0) / _check_factor(factor)


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------

def rope_inv_freq(head_dim, rope_theta=10000.0, rope_scaling=None, seq_len=None,
                  partial_rotary_factor=1.0, max_position_embeddings=None):
    r"""RoPE frequencies after context extension, and the attention factor that goes with them.

    Returns ``(inv_freq, attention_factor)``: a float64 array of length ``rotary_dim // 2``
    (``rotary_dim = int(head_dim * partial_rotary_factor)``, which must be even) holding
    $\theta_i'$, and a float that multiplies cos and sin.

    ``rope_scaling`` is the dict from a model's ``config.json``: ``rope_type`` (or the legacy
    ``type``), ``factor``, ``original_max_position_embeddings``, ``attention_factor``,
    ``beta_fast``, ``beta_slow``, ``mscale``, ``mscale_all_dim``, ``truncate``,
    ``short_factor``, ``long_factor``, ``low_freq_factor``, ``high_freq_factor``. ``seq_len`` is
    the current length (needed by ``dynamic``, it picks the long factors in ``longrope``);
    ``max_position_embeddings`` is the config's field of that name.

    Where ``yarn``'s dict has no ``original_max_position_embeddings`` we fall back to
    ``max_position_embeddings``, as transformers does (some other frameworks use
    ``max_position_embeddings / factor``; the two differ, so give the key when you can).

    ``proportional`` is the exception to the length: it returns ``head_dim // 2`` frequencies, the
    pairs past ``partial_rotary_factor`` of them at 0 (``proportional_inv_freq``).
    """
    check_rope_theta(rope_theta)
    cfg = _read_rope_scaling(rope_scaling)
    rope_type = cfg["_type"]
    if rope_type == "proportional":
        check_int("head_dim", head_dim, minimum=1)
        factor = _number(cfg, "factor", 1.0)
        return proportional_inv_freq(head_dim, rope_theta, partial_rotary_factor, factor), 1.0
    d = _rotary_dim(head_dim, partial_rotary_factor)
    if rope_type == "default":
        return thetas(d, rope_theta), 1.0
    if rope_type == "linear":
        return _position_interpolation(d, rope_theta, cfg)
    if rope_type == "ntk":
        _need_more_than_one_pair(d, rope_type)
        return _ntk_aware(d, rope_theta, cfg)
    if rope_type == "dynamic":
        _need_more_than_one_pair(d, rope_type)
        return _dynamic_ntk(d, rope_theta, cfg, seq_len, max_position_embeddings)
    if rope_type == "ntk_by_parts":
        return _ntk_by_parts(d, rope_theta, cfg, max_position_embeddings), 1.0
    if rope_type == "yarn":
        return _yarn(d, rope_theta, cfg, max_position_embeddings)
    if rope_type == "longrope":
        return _longrope(d, rope_theta, cfg, seq_len, max_position_embeddings)
    return _llama3(d, rope_theta, cfg), 1.0


# ---------------------------------------------------------------------------
# Reading and checking the config, with errors that say what to do
# ---------------------------------------------------------------------------

_REQUIRED = object()


def _read_rope_scaling(rope_scaling):
    """A copy of the dict with its method resolved into cfg['_type']; unknown keys warn."""
    if rope_scaling is None:
        return {"_type": "default"}
    if not isinstance(rope_scaling, dict):
        raise ValueError(
            f"rope_scaling must be a dict like a config.json's rope_scaling block (or None), "
            f"got {type(rope_scaling).__name__} {rope_scaling!r}.")
    cfg = dict(rope_scaling)
    if "rope_theta" in cfg or "partial_rotary_factor" in cfg:
        raise ValueError(
            "rope_scaling carries rope_theta or partial_rotary_factor (transformers 5 keeps them in "
            "rope_parameters). Pass them as the rope_theta= and partial_rotary_factor= arguments "
            "instead, so there is exactly one place that sets them.")
    new, legacy = cfg.get("rope_type"), cfg.get("type")
    if new is not None and legacy is not None and new != legacy:
        raise ValueError(
            f"rope_scaling gives rope_type={new!r} and the legacy type={legacy!r}; they disagree. "
            "Keep one of the two.")
    rope_type = new if new is not None else (legacy if legacy is not None else "default")
    if rope_type not in ROPE_TYPES:
        hint = " Older Phi-3 configs call LongRoPE 'su'; use 'longrope'." if rope_type == "su" else ""
        raise ValueError(f"Unknown rope_type {rope_type!r}. Known rope types: {', '.join(ROPE_TYPES)}.{hint}")
    unknown = sorted(set(cfg) - KNOWN_KEYS)
    if unknown:
        warnings.warn(
            f"rope_scaling has key(s) {unknown} that no rope type here reads; they are ignored. "
            "Check the spelling (for example 'attention_factor', not 'attn_factor').", stacklevel=3)
    cfg["_type"] = rope_type
    return cfg


def _number(cfg, key, default, rope_type=None):
    """cfg[key] as a float; `default` when absent (or an error naming the key when required)."""
    value = cfg.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ValueError(
                f"rope_type {rope_type!r} needs rope_scaling[{key!r}], which is missing. Copy it "
                "from the model's config.json.")
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"rope_scaling[{key!r}] is {value!r}; it must be a number.")
    return float(value)


def _factor(cfg, rope_type):
    return _check_factor(_number(cfg, "factor", _REQUIRED, rope_type))


def _check_factor(s):
    if s < 1:
        raise ValueError(
            f"rope_scaling['factor'] is {s}, but a context-extension factor must be at least 1 "
            "(1 means no extension). Use factor = new context length / trained length.")
    return s


def _factor_list(cfg, key, expected_len):
    values = cfg.get(key)
    if not isinstance(values, (list, tuple)):
        raise ValueError(
            f"rope_type 'longrope' needs rope_scaling[{key!r}] as a list of {expected_len} numbers "
            f"(one per rotated pair), got {values!r}.")
    if len(values) != expected_len:
        raise ValueError(
            f"rope_scaling[{key!r}] has {len(values)} entries, but the rotary dimension has "
            f"{expected_len} pairs, so it needs {expected_len} (one factor per pair).")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"rope_scaling[{key!r}] must hold positive numbers, got {values!r}.")
    return [float(v) for v in values]


def _trained_length(cfg, max_position_embeddings, rope_type):
    """original_max_position_embeddings from the dict, else the config's max_position_embeddings."""
    train_len = _number(cfg, "original_max_position_embeddings", None)
    if train_len is None:
        train_len = max_position_embeddings
    if train_len is None:
        raise ValueError(
            f"rope_type {rope_type!r} needs the trained context length: give "
            "rope_scaling['original_max_position_embeddings'], or max_position_embeddings=.")
    return float(train_len)


def check_rope_theta(rope_theta):
    """Refuse a RoPE base that is not a number above 1."""
    if not (isinstance(rope_theta, (int, float)) and rope_theta > 1):
        raise ValueError(f"rope_theta is {rope_theta!r}; the RoPE base must be a number above 1 (10000 in the RoPE paper).")


def _rotary_dim(head_dim, partial_rotary_factor):
    check_int("head_dim", head_dim, minimum=1)
    if not 0 < partial_rotary_factor <= 1:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor!r}.")
    d = int(head_dim * partial_rotary_factor)
    if d == 0 or d % 2:
        raise ValueError(
            f"head_dim={head_dim} with partial_rotary_factor={partial_rotary_factor} gives "
            f"rotary_dim={d}, but RoPE rotates pairs, so the rotary dimension must be a positive "
            "even number.")
    return d


def _check_even(head_dim):
    check_int("head_dim", head_dim, minimum=2, even=True, why="RoPE rotates pairs of channels")


def _need_more_than_one_pair(d, rope_type):
    if d <= 2:
        raise ValueError(
            f"rope_type {rope_type!r} rescales the base by s^(d/(d-2)), which needs a rotary "
            f"dimension above 2; got {d}.")
