r"""What the grader checks, and the known-wrong variants it compares against.

This module is the grader's private knowledge. It runs inside the grading worker and its
feedback never quotes code: it names the stage that failed (signature, type, shape, dtype,
NaN, misconception, numbers) and shows numbers and inputs, never the reference's source.

Every target has a list of cases (fixed seeds, float64 unless the case is the float32 one),
and a list of misconceptions: small host-NumPy implementations of the mistakes readers
make. When your output matches one of them on every case, the feedback names the mistake.
"""
import copy
import inspect
import math
import numbers
import traceback
from dataclasses import dataclass, field

import numpy as np  # host NumPy: the grader compares on the host

from exercises.generate import function_is_stub

# ---------------------------------------------------------------------------
# Plumbing
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """One call: ``impl(*args, **kwargs)``, or for a class ``impl(*args, **kwargs)(*call_args, **call_kwargs)``."""
    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    call_args: tuple = ()
    call_kwargs: dict = field(default_factory=dict)
    show: str = ""  # the input, as the feedback prints it


@dataclass
class Misconception:
    key: str  # stable name, asserted by tests/test_grader.py
    title: str  # shown to the reader
    hint: str  # what to look at
    impl: object  # same calling convention as the target, host NumPy


@dataclass
class Target:
    module: str
    name: str
    output: str  # "array", "int_array", "cos_sin" or "float"
    cases: object  # () -> list[Case]
    misconceptions: list
    methods: tuple = ()  # for a class: the methods the reader writes
    elementwise_arg: str = ""  # name of an input whose entries line up with the output's
    dtype_hint: str = ""

    @property
    def key(self):
        return f"{self.module}.{self.name}"

    @property
    def is_class(self):
        return bool(self.methods)

    def invoke(self, impl, case):
        if self.is_class:
            return impl(*case.args, **case.kwargs)(*case.call_args, **case.call_kwargs)
        return impl(*case.args, **case.kwargs)


def _rng(seed):
    return np.random.default_rng(seed)


def _normal(shape, seed, dtype=np.float64):
    return _rng(seed).standard_normal(shape).astype(dtype)


def _show(name, a, note=""):
    a = np.asarray(a)
    if a.size <= 16:
        return f"{name} = {np.array2string(a, precision=4, separator=', ')}"
    return f"{name}: shape {a.shape}, {a.dtype}{', ' + note if note else ''}"


def _type_name(x):
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


# ---------------------------------------------------------------------------
# RoPE helpers in host NumPy, for the cases and the misconceptions
# ---------------------------------------------------------------------------

def _rh(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def _ri(x):
    return np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def _half_to_interleaved(d):
    """0, d/2, 1, d/2 + 1, ...: turns rotate-half tables into repeat-interleave ones (the inverse of 6.8's answer)."""
    i = np.arange(d // 2)
    return np.stack([i, i + d // 2], axis=-1).reshape(d)


class _Rope:
    """Host RoPE tables with hooks that the misconceptions override."""

    def __init__(self, d_head, base=10000.0, scaling=None, factor=1.0):
        self.d, self.base0, self.scaling, self.factor = d_head, base, scaling, factor

    def base(self):
        return self.base0 * self.factor ** (self.d / (self.d - 2)) if self.scaling == "ntk" else self.base0

    def theta(self):
        return self.base() ** (-np.arange(0, self.d, 2, dtype=np.float64) / self.d)

    def positions(self, T, offset):
        pos = np.arange(offset, offset + T, dtype=np.float64)
        return pos / self.factor if self.scaling == "linear" else pos

    def layout(self, a):
        return np.concatenate([a, a], axis=-1)

    def __call__(self, T, offset=0):
        a = self.layout(self.positions(T, offset)[:, None] * self.theta()[None, :])
        return np.cos(a), np.sin(a)


def _tables(d, T, offset=0, interleaved=False):
    cos, sin = _Rope(d)(T, offset)
    if interleaved:
        p = _half_to_interleaved(d)
        return cos[:, p], sin[:, p]
    return cos, sin


# ---------------------------------------------------------------------------
# 6.1 rotate_half and 6.6 rotate_interleaved
# ---------------------------------------------------------------------------

def _rotate_cases():
    hand = np.array([1.0, 2.0, 3.0, 4.0])
    pair = np.array([[0.5, -2.0]])
    x = _normal((2, 3, 5, 8), 1)
    one = _normal((1, 2, 1, 16), 2)
    x32 = _normal((2, 4, 6), 3, np.float32)
    return [Case("worked example", (hand,), show=_show("x", hand)),
            Case("a single pair, d = 2", (pair,), show=_show("x", pair)),
            Case("(B, H, T, d_head) = (2, 3, 5, 8)", (x,), show=_show("x", x, "standard normal, seed 1")),
            Case("T = 1", (one,), show=_show("x", one, "standard normal, seed 2")),
            Case("float32 input", (x32,), show=_show("x", x32, "standard normal, seed 3"))]


def _halves(x):
    h = x.shape[-1] // 2
    return x[..., :h], x[..., h:]


ROTATE_HALF = Target("rope", "rotate_half", "array", _rotate_cases, [
    Misconception("sign_error", "sign error in rotate_half",
                  "The minus belongs on the second half once it moves to the front: [x1, x2] -> [-x2, x1]. "
                  "You have the rotation by -90 degrees. Check: [1, 2, 3, 4] -> [-3, -4, 1, 2].",
                  lambda x: np.concatenate([_halves(x)[1], -_halves(x)[0]], axis=-1)),
    Misconception("missing_minus", "the halves are swapped but nothing is negated",
                  "Swapping [x1, x2] -> [x2, x1] is a reflection, not a rotation. Negate the half that moves "
                  "to the front: [-x2, x1].",
                  lambda x: np.concatenate([_halves(x)[1], _halves(x)[0]], axis=-1)),
    Misconception("interleaved_pairing", "interleaved pairing instead of rotate-half",
                  "You paired neighbouring channels (2i, 2i+1): that is the interleaved convention. "
                  "rotate_half pairs channel i with channel i + d/2, so split the last axis into two halves, "
                  "not into even and odd channels.", _ri),
])

ROTATE_INTERLEAVED = Target("rope", "rotate_interleaved", "array", _rotate_cases, [
    Misconception("sign_error", "sign error in rotate_interleaved",
                  "Each pair (a, b) must become (-b, a), the complex multiplication by i. You have (b, -a). "
                  "Check: [1, 2, 3, 4] -> [-2, 1, -4, 3].",
                  lambda x: np.stack([x[..., 1::2], -x[..., 0::2]], axis=-1).reshape(x.shape)),
    Misconception("missing_minus", "neighbours are swapped but nothing is negated",
                  "(a, b) -> (b, a) is a reflection. The quarter turn is (a, b) -> (-b, a).",
                  lambda x: np.stack([x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)),
    Misconception("rotate_half_pairing", "rotate-half pairing instead of interleaved",
                  "You paired channel i with channel i + d/2 (the rotate-half convention). The interleaved "
                  "convention pairs channel 2i with channel 2i + 1: use the even and the odd channels.", _rh),
])


# ---------------------------------------------------------------------------
# 6.2 apply_rotary and 6.7 apply_rotary_interleaved
# ---------------------------------------------------------------------------

def _apply_cases(interleaved):
    def build():
        out = []
        for label, shape, offset, dtype, seed in [
                ("(B, H, T, d_head) = (2, 3, 5, 8), offset 0", (2, 3, 5, 8), 0, np.float64, 11),
                ("T = 1 at offset 9 (one decode step)", (2, 2, 1, 8), 9, np.float64, 12),
                ("offset 37", (1, 2, 6, 16), 37, np.float64, 13),
                ("no batch axes: x is (T, d_head)", (5, 4), 0, np.float64, 14),
                ("two batch axes in front of (B, H)", (2, 2, 2, 3, 8), 4, np.float64, 15),
                ("float32 x with float64 tables", (2, 3, 4, 8), 2, np.float32, 16)]:
            x = _normal(shape, seed, dtype)
            cos, sin = _tables(shape[-1], shape[-2], offset, interleaved)
            layout = "repeat-interleave" if interleaved else "rotate-half"
            out.append(Case(label, (x, cos, sin),
                            show=f"{_show('x', x, f'standard normal, seed {seed}')}; cos, sin: the "
                                 f"{layout} tables of positions {offset}..{offset + shape[-2] - 1}, "
                                 f"d_head = {shape[-1]}, base 10000"))
        return out
    return build


def _cast(fn):
    return lambda x, cos, sin: fn(x, cos, sin).astype(x.dtype)


_DTYPE_HINT_APPLY = ("A float32 x must come back float32 even though cos and sin are float64: "
                     "cast the result with .astype(x.dtype).")

APPLY_ROTARY = Target("rope", "apply_rotary", "array", _apply_cases(False), [
    Misconception("sign_error", "sign error: the rotation runs backwards",
                  "x * cos - rotate_half(x) * sin rotates by -angle. RoPE is x * cos + rotate_half(x) * sin: "
                  "the pair (a, b) becomes (a cos t - b sin t, b cos t + a sin t).",
                  _cast(lambda x, c, s: x * c - _rh(x) * s)),
    Misconception("interleaved_pairing", "interleaved pairing with rotate-half tables",
                  "You rotated neighbouring channels (2i, 2i+1), but these tables and this convention pair "
                  "channel i with channel i + d/2. Use rotate_half, not an even/odd split.",
                  _cast(lambda x, c, s: x * c + _ri(x) * s)),
    Misconception("cos_sin_swapped", "cos and sin swapped",
                  "The unrotated part is multiplied by cos and the quarter-turned part by sin; at position 0 "
                  "(angle 0) the result must equal x.",
                  _cast(lambda x, c, s: x * s + _rh(x) * c)),
], dtype_hint=_DTYPE_HINT_APPLY)

APPLY_ROTARY_INTERLEAVED = Target("rope", "apply_rotary_interleaved", "array", _apply_cases(True), [
    Misconception("rotate_half_pairing", "rotate-half pairing with interleaved tables",
                  "These tables are in the repeat-interleave layout and pair channel 2i with 2i + 1. "
                  "Quarter-turn with the even/odd split (rotate_interleaved), not rotate_half.",
                  _cast(lambda x, c, s: x * c + _rh(x) * s)),
    Misconception("sign_error", "sign error: the rotation runs backwards",
                  "x * cos - rotate_interleaved(x) * sin rotates by -angle; the sign in front of the "
                  "quarter-turned term is +.",
                  _cast(lambda x, c, s: x * c - _ri(x) * s)),
    Misconception("tables_reordered", "the tables were reordered a second time",
                  "cos and sin arrive already in the repeat-interleave layout (columns 2i and 2i + 1 hold the "
                  "angle of pair i). Use them as they are; do not permute them again.",
                  _cast(lambda x, c, s: x * c[..., _half_to_interleaved(x.shape[-1])]
                        + _ri(x) * s[..., _half_to_interleaved(x.shape[-1])])),
    Misconception("cos_sin_swapped", "cos and sin swapped",
                  "The unrotated part is multiplied by cos and the quarter-turned part by sin.",
                  _cast(lambda x, c, s: x * s + _ri(x) * c)),
], dtype_hint=_DTYPE_HINT_APPLY)


# ---------------------------------------------------------------------------
# 6.3 RotaryEmbedding
# ---------------------------------------------------------------------------

def _rope_cases():
    out = []
    for label, ctor, T, offset in [
            ("d_head 8, T 5, offset 0", dict(d_head=8), 5, 0),
            ("T = 1", dict(d_head=8), 1, 0),
            ("offset 7 > 0", dict(d_head=16), 4, 7),
            ("a long way out: offset 1000", dict(d_head=64), 3, 1000),
            ("a single pair, d_head = 2", dict(d_head=2), 3, 2),
            ("base 100", dict(d_head=8, base=100.0), 6, 0),
            ("scaling='linear', factor 4", dict(d_head=16, scaling="linear", factor=4.0), 5, 8),
            ("scaling='ntk', factor 4", dict(d_head=16, scaling="ntk", factor=4.0), 5, 8),
            ("scaling='ntk', factor 2, d_head 64, offset 300", dict(d_head=64, scaling="ntk", factor=2.0), 2, 300)]:
        d = ctor.pop("d_head")
        kw = ", ".join(f"{k}={v!r}" for k, v in ctor.items())
        out.append(Case(label, (d,), ctor, (T,), {"offset": offset},
                        show=f"RotaryEmbedding({d}{', ' + kw if kw else ''})({T}, offset={offset})"))
    return out


class _OffsetIgnored(_Rope):
    def positions(self, T, offset):
        return super().positions(T, 0)


class _RepeatInterleave(_Rope):
    def layout(self, a):
        return np.repeat(a, 2, axis=-1)


class _PerChannel(_Rope):
    def theta(self):
        return self.base() ** (-np.arange(self.d, dtype=np.float64) / self.d)

    def layout(self, a):
        return a


class _NtkAsLinear(_Rope):
    def base(self):
        return self.base0

    def positions(self, T, offset):
        pos = np.arange(offset, offset + T, dtype=np.float64)
        return pos / self.factor if self.scaling in ("linear", "ntk") else pos


class _LinearAsNtk(_Rope):
    def base(self):
        return self.base0 * self.factor ** (self.d / (self.d - 2)) if self.scaling in ("linear", "ntk") else self.base0

    def positions(self, T, offset):
        return np.arange(offset, offset + T, dtype=np.float64)


class _Swapped(_Rope):
    def base(self):
        return self.base0 * self.factor ** (self.d / (self.d - 2)) if self.scaling == "linear" else self.base0

    def positions(self, T, offset):
        pos = np.arange(offset, offset + T, dtype=np.float64)
        return pos / self.factor if self.scaling == "ntk" else pos


class _Inverted(_Rope):
    def theta(self):
        return self.base() ** (np.arange(0, self.d, 2, dtype=np.float64) / self.d)


class _PairIndexExponent(_Rope):
    def theta(self):
        return self.base() ** (-np.arange(self.d // 2, dtype=np.float64) / self.d)


class _NtkExponentMissing(_Rope):
    def base(self):
        return self.base0 * self.factor if self.scaling == "ntk" else self.base0


class _SinCosSwapped(_Rope):
    def __call__(self, T, offset=0):
        cos, sin = super().__call__(T, offset)
        return sin, cos


_DUPLICATE_HINT = ("Pair i is channel i together with channel i + d_head/2, so its angle m * theta_i must "
                   "appear in column i and again in column i + d_head/2: concatenate the (T, d_head/2) angles "
                   "with themselves along the last axis.")

ROTARY_EMBEDDING = Target("rope", "RotaryEmbedding", "cos_sin", _rope_cases, [
    Misconception("offset_ignored", "offset ignored",
                  "The rows are positions offset, ..., offset + T - 1. With the offset dropped, every decode "
                  "step rotates the new token as if it sat at position 0.", _OffsetIgnored),
    Misconception("angles_not_duplicated", "angles not duplicated across the two halves",
                  "You repeated each angle in neighbouring columns (2i, 2i+1): that is the interleaved "
                  "layout. " + _DUPLICATE_HINT, _RepeatInterleave),
    Misconception("angles_not_duplicated", "angles not duplicated across the two halves",
                  "You gave each of the d_head channels its own frequency. " + _DUPLICATE_HINT, _PerChannel),
    Misconception("ntk_as_linear", "NTK scaling done as linear scaling",
                  "For scaling='ntk' keep the positions as they are and change the base instead: "
                  "base' = base * factor ** (d_head / (d_head - 2)). Dividing positions by factor is "
                  "position interpolation, scaling='linear'.", _NtkAsLinear),
    Misconception("linear_as_ntk", "linear scaling done as NTK scaling",
                  "For scaling='linear' (position interpolation) divide the positions by factor and keep "
                  "the base. Raising the base is what scaling='ntk' does.", _LinearAsNtk),
    Misconception("linear_ntk_swapped", "linear and NTK scaling swapped",
                  "scaling='linear' divides the positions by factor; scaling='ntk' keeps positions and uses "
                  "base * factor ** (d_head / (d_head - 2)). Yours does each the other's way.", _Swapped),
    Misconception("inverted_frequencies", "frequencies grow instead of shrinking",
                  "theta_i = base ** (-2i / d_head): the exponent is negative, so pair 0 turns fastest "
                  "(theta_0 = 1) and the last pair slowest.", _Inverted),
    Misconception("pair_index_exponent", "the exponent uses i / d_head instead of 2i / d_head",
                  "theta_i = base ** (-2i / d_head) for pair i = 0 .. d_head/2 - 1 (equivalently the even "
                  "channel numbers 0, 2, 4, ... divided by d_head). The last pair must reach nearly 1/base.",
                  _PairIndexExponent),
    Misconception("ntk_exponent_missing", "NTK base scaled by factor, without the exponent",
                  "NTK-aware scaling uses base * factor ** (d_head / (d_head - 2)), so that the slowest pair "
                  "stretches by exactly factor.", _NtkExponentMissing),
    Misconception("cos_sin_swapped", "returned (sin, cos)",
                  "Return the tables in the order (cos, sin); at position 0 cos is all ones.", _SinCosSwapped),
], methods=("__init__", "__call__"))


# ---------------------------------------------------------------------------
# 6.4 relative_score
# ---------------------------------------------------------------------------

def _score_cases():
    from solutions.rope import RotaryEmbedding
    out = []
    for label, d, m, n, seed, ctor, dtype in [
            ("query at 3, key at 1", 8, 3, 1, 21, {}, np.float64),
            ("same offset further out: 103 and 101", 8, 103, 101, 21, {}, np.float64),
            ("same position, 0 and 0", 8, 0, 0, 22, {}, np.float64),
            ("key after the query: 5 and 9", 16, 5, 9, 23, {}, np.float64),
            ("far apart: 1000 and 2", 64, 1000, 2, 24, {}, np.float64),
            ("NTK-scaled rotary, factor 2", 16, 40, 7, 25, {"scaling": "ntk", "factor": 2.0}, np.float64),
            ("float32 q and k", 8, 6, 2, 26, {}, np.float32)]:
        q, k = _normal((d,), seed, dtype), _normal((d,), seed + 100, dtype)
        kw = "".join(f", {a}={b!r}" for a, b in ctor.items())
        out.append(Case(label, (q, k, m, n, RotaryEmbedding(d, **ctor)),
                        show=f"{_show('q', q)}; {_show('k', k)}; m = {m}, n = {n}; "
                             f"rotary = RotaryEmbedding({d}{kw})"))
    return out


def _rot(x, rotary, p):
    cos, sin = rotary(1, offset=p)
    return (x[None, :] * np.asarray(cos) + _rh(x[None, :]) * np.asarray(sin))[0]


RELATIVE_SCORE = Target("rope", "relative_score", "float", _score_cases, [
    Misconception("positions_swapped", "positions swapped",
                  "Rotate q by its own position m and k by its own position n. Swapping them gives "
                  "q^T R_(m-n) k instead of q^T R_(n-m) k.",
                  lambda q, k, m, n, r: float(np.sum(_rot(q, r, n) * _rot(k, r, m)))),
    Misconception("only_query_rotated", "only the query is rotated",
                  "Both vectors are rotated, each by its own position; the key rotation is what cancels the "
                  "absolute part and leaves n - m.",
                  lambda q, k, m, n, r: float(np.sum(_rot(q, r, m) * k))),
    Misconception("unrotated", "nothing is rotated",
                  "Apply the rotary tables of position m to q and of position n to k before the dot product.",
                  lambda q, k, m, n, r: float(np.sum(q * k))),
])


# ---------------------------------------------------------------------------
# 6.5 wavelength_table
# ---------------------------------------------------------------------------

def _wave_cases():
    return [Case(f"d_head {d}, base {b:g}", (d, b), show=f"d_head = {d}, base = {b!r}")
            for d, b in [(8, 10000.0), (2, 10000.0), (128, 10000.0), (64, 500000.0), (16, 100.0)]]


def _wave(d, b, exponent_scale=2.0, scale=2 * math.pi, sign=1.0, n=None):
    i = np.arange(d // 2 if n is None else n, dtype=np.float64)
    return scale * b ** (sign * exponent_scale * i / d)


WAVELENGTH_TABLE = Target("rope", "wavelength_table", "array", _wave_cases, [
    Misconception("frequencies", "returned the frequencies theta_i, not the wavelengths",
                  "The wavelength of pair i is the number of tokens for one full turn: 2 * pi / theta_i.",
                  lambda d, b: _wave(d, b, scale=1.0, sign=-1.0)),
    Misconception("missing_two_pi", "the factor 2 * pi is missing",
                  "One full turn is 2 * pi radians, so the wavelength is 2 * pi / theta_i, not 1 / theta_i.",
                  lambda d, b: _wave(d, b, scale=1.0)),
    Misconception("pair_index_exponent", "the exponent uses i / d_head instead of 2i / d_head",
                  "theta_i = base ** (-2i / d_head), so the wavelength is 2 * pi * base ** (2i / d_head).",
                  lambda d, b: _wave(d, b, exponent_scale=1.0)),
    Misconception("one_per_channel", "one entry per channel instead of one per pair",
                  "There are d_head / 2 pairs and each has one wavelength: return (d_head/2,) values.",
                  lambda d, b: _wave(d, b, exponent_scale=1.0, n=d)),
])


# ---------------------------------------------------------------------------
# 6.8 interleaved_to_half_permutation
# ---------------------------------------------------------------------------

def _perm_cases():
    return [Case(f"d_head {d}", (d,), show=f"d_head = {d}") for d in (2, 4, 8, 16, 64)]


INTERLEAVED_TO_HALF = Target("rope", "interleaved_to_half_permutation", "int_array", _perm_cases, [
    Misconception("inverse", "the inverse permutation",
                  "Yours is 0, d/2, 1, d/2 + 1, ...: that carries rotate-half data into interleaved order. "
                  "This exercise goes the other way: perm[j] is the interleaved channel that belongs at "
                  "rotate-half channel j, so x[..., perm] is in rotate-half order. The first half takes the "
                  "first channel of every interleaved pair (the even ones), the second half their partners.",
                  lambda d: _half_to_interleaved(d)),
    Misconception("identity", "the identity",
                  "The two conventions pair different channels, so some channels must move. Interleaved "
                  "pair (2i, 2i + 1) must land on the rotate-half pair (i, i + d_head/2).",
                  lambda d: np.arange(d)),
    Misconception("pair_order", "each pair is stored second-channel first",
                  "Within a pair, the first channel (the one multiplied by cos and receiving -sin of its "
                  "partner) comes first: rotate-half channel i holds interleaved channel 2i, and channel "
                  "i + d_head/2 holds 2i + 1.",
                  lambda d: np.concatenate([np.arange(1, d, 2), np.arange(0, d, 2)])),
], dtype_hint="A permutation is an array of integer indices; build it from integer aranges.")


# ---------------------------------------------------------------------------
# Drill: sinusoidal_positional_encoding
# ---------------------------------------------------------------------------

def _sin_cases():
    return [Case(f"T {T}, d_model {d}" + (f", base {b:g}" if b != 10000.0 else ""), (T, d),
                 {} if b == 10000.0 else {"base": b},
                 show=f"T = {T}, d_model = {d}, base = {b!r}")
            for T, d, b in [(2, 4, 10000.0), (1, 4, 10000.0), (10, 16, 10000.0), (50, 64, 10000.0), (7, 8, 100.0)]]


def _pe(T, d, base=10000.0, omega_exp=None, layout="pairs", swap=False, first=0):
    pos = np.arange(first, first + T, dtype=np.float64)[:, None]
    i = np.arange(d // 2, dtype=np.float64)
    omega = base ** (-(2 * i if omega_exp is None else omega_exp(i)) / d)
    a = pos * omega[None, :]
    s, c = (np.cos(a), np.sin(a)) if swap else (np.sin(a), np.cos(a))
    if layout == "halves":
        return np.concatenate([s, c], axis=-1)
    return np.stack([s, c], axis=-1).reshape(T, d)


SINUSOIDAL = Target("sinusoidal", "sinusoidal_positional_encoding", "array", _sin_cases, [
    Misconception("sin_cos_swapped", "sin and cos swapped",
                  "Even columns hold sin, odd columns hold cos: row 0 is [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, swap=True)),
    Misconception("halves_layout", "all the sines first, then all the cosines",
                  "The two members of a pair sit next to each other: column 2i is sin and column 2i + 1 is "
                  "cos of the same angle. Interleave them instead of concatenating.",
                  lambda T, d, base=10000.0: _pe(T, d, base, layout="halves")),
    Misconception("frequency_exponent", "wrong exponent in the frequencies",
                  "omega_i = base ** (-2i / d_model) for pair i = 0 .. d_model/2 - 1. If you loop over the "
                  "even column numbers j = 2i, the exponent is -j / d_model, not -2j / d_model.",
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: i)),
    Misconception("frequency_exponent", "wrong exponent in the frequencies",
                  "omega_i = base ** (-2i / d_model) for pair i = 0 .. d_model/2 - 1. If you loop over the "
                  "even column numbers j = 2i, the exponent is -j / d_model, not -2j / d_model.",
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: 4 * i)),
    Misconception("positions_from_one", "positions start at 1",
                  "Row t encodes position t and the first row is position 0: [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, first=1)),
])


# ---------------------------------------------------------------------------
# Drill: ALiBi
# ---------------------------------------------------------------------------

def _slopes_rule(n, first_power=1, pick=0):
    def pow2(c):
        h = np.arange(first_power, first_power + c, dtype=np.float64)
        return 2.0 ** (-8.0 * h / c)
    c = 1 << (n.bit_length() - 1)
    if c == n:
        return pow2(n)
    return np.concatenate([pow2(c), pow2(2 * c)[pick::2][: n - c]])


def _slope_cases():
    return [Case(f"{n} head{'s' if n > 1 else ''}", (n,), show=f"n_heads = {n}") for n in (8, 1, 2, 16, 6, 3, 12)]


ALIBI_SLOPES = Target("alibi", "alibi_slopes", "array", _slope_cases, [
    Misconception("non_power_of_two", "the power-of-two formula used for every head count",
                  "2^(-8h/H) is the rule only when H is a power of two. Otherwise take the slopes of the "
                  "largest power of two c below H, then every other slope (the 1st, 3rd, ...) of the 2c "
                  "sequence. For 6 heads: 1/4, 1/16, 1/64, 1/256, 1/2, 1/8.",
                  lambda n: 2.0 ** (-8.0 * np.arange(1, n + 1) / n)),
    Misconception("starts_at_one", "the first slope is 1",
                  "Head h = 1 .. H gets 2^(-8h/H): the first slope is 2^(-8/H) (1/2 for 8 heads), not 2^0.",
                  lambda n: _slopes_rule(n, first_power=0)),
    Misconception("duplicate_slopes", "the extra slopes repeat ones already used",
                  "For H not a power of two, the extra heads take the 1st, 3rd, 5th, ... slope of the 2c "
                  "sequence: those fall between the c slopes you already have. The 2nd, 4th, ... repeat them.",
                  lambda n: _slopes_rule(n, pick=1)),
    Misconception("reversed", "slopes in increasing order",
                  "Head 1 has the steepest slope 2^(-8/H); the slopes shrink from there.",
                  lambda n: _slopes_rule(n)[::-1].copy()),
])


def _bias_cases():
    return [Case(f"H {H}, T_q {tq}, T_k {tk}", (H, tq, tk), show=f"n_heads = {H}, T_q = {tq}, T_k = {tk}")
            for H, tq, tk in [(8, 5, 5), (4, 1, 7), (1, 1, 1), (6, 3, 3), (2, 3, 6)]]


def _bias(H, tq, tk, sign=-1.0, q_start=None, clamp=True, batch=True):
    from solutions.alibi import alibi_slopes
    q = np.arange(tk - tq if q_start is None else q_start, (tk - tq if q_start is None else q_start) + tq)[:, None]
    dist = (q - np.arange(tk)[None, :]).astype(np.float64)
    if clamp:
        dist = np.maximum(dist, 0.0)
    b = sign * np.asarray(alibi_slopes(H))[:, None, None] * dist[None]
    return b[None] if batch else b


ALIBI_BIAS = Target("alibi", "alibi_bias", "array", _bias_cases, [
    Misconception("positive_sign", "the bias rewards distance",
                  "ALiBi subtracts m_h * (i - j): far keys lose score. Yours adds it.",
                  lambda H, tq, tk: _bias(H, tq, tk, sign=1.0)),
    Misconception("queries_at_start", "queries placed at the first T_q positions",
                  "The queries are the last T_q of the T_k positions (one decode step is a single query at "
                  "position T_k - 1). Start the query positions at T_k - T_q.",
                  lambda H, tq, tk: _bias(H, tq, tk, q_start=0)),
    Misconception("future_not_clamped", "future keys get a bonus",
                  "For j > i, -m_h * (i - j) is positive. Clamp the distance at 0 so future keys get bias 0; "
                  "the causal mask removes them anyway.",
                  lambda H, tq, tk: _bias(H, tq, tk, clamp=False)),
    Misconception("missing_batch_axis", "no leading batch axis",
                  "Return (1, H, T_q, T_k) so the bias broadcasts against scores (B, H, T_q, T_k).",
                  lambda H, tq, tk: _bias(H, tq, tk, batch=False)),
])


# ---------------------------------------------------------------------------
# Drill: T5 buckets
# ---------------------------------------------------------------------------

def _t5(rel, bidirectional=True, num_buckets=32, max_distance=128, flip=False, halve=True,
        causal_abs=False, cap=True):
    n = (rel if flip else -rel).astype(np.int64)
    ret = np.zeros_like(n)
    if bidirectional:
        if halve:
            num_buckets //= 2
        ret += (n < 0).astype(np.int64) * num_buckets
        n = np.abs(n)
    else:
        n = np.abs(n) if causal_abs else np.maximum(n, 0)
    max_exact = num_buckets // 2
    large = max_exact + (np.log(np.maximum(n, max_exact) / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).astype(np.int64)
    if cap:
        large = np.minimum(large, num_buckets - 1)
    return ret + np.where(n < max_exact, n, large)


def _t5_cases():
    hand = np.array([-1, 1, 0, -16, -200, 200])
    wide = np.arange(-200, 201)
    mid = np.arange(-100, 101)
    grid = np.arange(12)[None, :] - np.arange(12)[:, None]
    small32 = np.arange(-40, 41, dtype=np.int32)
    return [Case("hand-worked distances", (hand,), show=_show("relative_position", hand)),
            Case("-200 .. 200, bidirectional", (wide,), show="relative_position = arange(-200, 201)"),
            Case("-200 .. 200, causal", (wide,), {"bidirectional": False},
                 show="relative_position = arange(-200, 201), bidirectional=False"),
            Case("a (T_q, T_k) = (12, 12) grid", (grid,),
                 show="relative_position[i, j] = j - i for i, j in 0..11"),
            Case("16 buckets, max_distance 64", (mid,), {"num_buckets": 16, "max_distance": 64},
                 show="relative_position = arange(-100, 101), num_buckets=16, max_distance=64"),
            Case("16 buckets, max_distance 64, causal", (mid,),
                 {"bidirectional": False, "num_buckets": 16, "max_distance": 64},
                 show="relative_position = arange(-100, 101), bidirectional=False, num_buckets=16, "
                      "max_distance=64"),
            Case("int32 input", (small32,), show="relative_position = arange(-40, 41) as int32"),
            Case("a single zero", (np.array([0]),), show="relative_position = [0]")]


T5_BUCKET = Target("t5", "relative_position_bucket", "int_array", _t5_cases, [
    Misconception("direction_flipped", "past and future swapped",
                  "relative_position = key_pos - query_pos is negative for keys in the past. Past keys use "
                  "the lower buckets; future keys (relative_position > 0) the upper half when bidirectional.",
                  lambda r, bidirectional=True, num_buckets=32, max_distance=128:
                  _t5(r, bidirectional, num_buckets, max_distance, flip=True)),
    Misconception("not_halved", "num_buckets not halved for the two directions",
                  "Bidirectional buckets split in two: num_buckets // 2 for the past, the same number for "
                  "the future. Halve num_buckets before computing max_exact.",
                  lambda r, bidirectional=True, num_buckets=32, max_distance=128:
                  _t5(r, bidirectional, num_buckets, max_distance, halve=False)),
    Misconception("causal_abs", "causal mode keeps future distances",
                  "With bidirectional=False, future keys collapse to distance 0 (clamp at 0), since the mask "
                  "removes them anyway; taking the absolute value gives them real buckets.",
                  lambda r, bidirectional=True, num_buckets=32, max_distance=128:
                  _t5(r, bidirectional, num_buckets, max_distance, causal_abs=True)),
    Misconception("no_cap", "distances past max_distance overflow the last bucket",
                  "Cap the logarithmic buckets at num_buckets - 1: every distance from max_distance on "
                  "shares the last bucket.",
                  lambda r, bidirectional=True, num_buckets=32, max_distance=128:
                  _t5(r, bidirectional, num_buckets, max_distance, cap=False)),
], elementwise_arg="relative_position")


TARGETS = {t.key: t for t in [ROTATE_HALF, APPLY_ROTARY, ROTARY_EMBEDDING, RELATIVE_SCORE, WAVELENGTH_TABLE,
                              ROTATE_INTERLEAVED, APPLY_ROTARY_INTERLEAVED, INTERLEAVED_TO_HALF,
                              SINUSOIDAL, ALIBI_SLOPES, ALIBI_BIAS, T5_BUCKET]}


# ---------------------------------------------------------------------------
# The engine: signature, type/shape/dtype, NaN, misconceptions, numbers
# ---------------------------------------------------------------------------

class _Fail(Exception):
    def __init__(self, kind, message, misconception=None):
        super().__init__(message)
        self.kind, self.message, self.misconception = kind, message, misconception


def _result(target, label, status, kind, message, misconception=None):
    return {"target": target.key, "label": label, "status": status, "kind": kind,
            "misconception": misconception, "message": message}


def _signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def _fmt_sig(name, obj):
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return f"{name}(?)"


def _signature_problems(target, obj, ref):
    pairs = [(target.name, obj, ref)] if not target.is_class else [
        (f"{target.name}.{m}", obj.__dict__.get(m, getattr(obj, m, None)), ref.__dict__[m]) for m in target.methods]
    out = []
    for name, o, r in pairs:
        if o is None or _signature(o) != _signature(r):
            have = _fmt_sig(name, o) if o is not None else f"no {name}"
            out.append(f"expected {_fmt_sig(name, r)}, found {have}")
    return out


def _is_array(x):
    from mini_transformer.backend import is_array
    return is_array(x) or isinstance(x, np.ndarray)


def _host(x):
    from mini_transformer.backend import to_numpy
    return to_numpy(x)


def _form(target, out, exp):
    """The first type, shape or dtype problem of one output, as (kind, sentence), or None."""
    kind = target.output
    if kind == "float":
        ok = (isinstance(out, numbers.Real) and not isinstance(out, (bool, np.bool_))) or \
             (_is_array(out) and getattr(out, "shape", None) == () and np.issubdtype(out.dtype, np.floating))
        return None if ok else ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a Python float "
                                        "(float(...) of the summed products).")
    if kind == "cos_sin":
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a tuple (cos, sin) of two arrays.")
        for name, o, e in zip(("cos", "sin"), out, exp):
            if not _is_array(o):
                return ("type", f"{name} is {_type_name(o)}; expected an array.")
            if o.shape != e.shape:
                return ("shape", f"{name} has shape {o.shape}; expected (T, d_head) = {e.shape}.")
            if o.dtype != e.dtype:
                return ("dtype", f"{name} is {o.dtype}; expected {e.dtype}.")
        return None
    if not _is_array(out):
        return ("type", f"returned {_type_name(out)}; expected an array of the active backend (xp.ndarray).")
    if out.shape != exp.shape:
        return ("shape", f"returned shape {out.shape}; expected {exp.shape}.")
    if kind == "int_array":
        if not np.issubdtype(out.dtype, np.integer):
            return ("dtype", f"returned dtype {out.dtype}; expected an integer array.")
    elif out.dtype != exp.dtype:
        return ("dtype", f"returned dtype {out.dtype}; expected {exp.dtype}.")
    return None


def _shape_note(x):
    shape = getattr(x, "shape", None)
    return f" of shape {shape}" if shape is not None else ""


def _norm(target, out):
    """Host copy of an output, for comparisons."""
    if target.output == "float":
        return float(out)
    if target.output == "cos_sin":
        return tuple(np.array(_host(o)) for o in out)
    return np.array(_host(out))


def _tol(dtype):
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def _parts(target, out):
    """An output as named arrays: [('', a)] or [('cos', c), ('sin', s)]."""
    if target.output == "cos_sin":
        return [("cos", out[0]), ("sin", out[1])]
    if target.output == "float":
        return [("", np.array(out))]
    return [("", out)]


def _close(target, a, b, dtype=None):
    for (_, x), (_, y) in zip(_parts(target, a), _parts(target, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if target.output == "int_array":
            if not np.array_equal(x, y):
                return False
            continue
        rtol, atol = _tol(dtype if dtype is not None else y.dtype)
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=False):
            return False
    return True


def _arrays_in(case):
    return [a for a in list(case.args) + list(case.kwargs.values()) + list(case.call_args)
            + list(case.call_kwargs.values()) if isinstance(a, np.ndarray)]


def _reader_traceback(exc, source_file):
    """The frames of an exception that lie in the reader's file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if source_file and f.filename == source_file]
    if not frames:
        return ""
    return "\n" + "".join(traceback.format_list(frames[-3:])).rstrip()


def _call(target, impl, case):
    """Run impl on a fresh copy of the case's inputs; returns (output, inputs_after, inputs_before)."""
    fresh = copy.deepcopy(case)
    before = [a.copy() for a in _arrays_in(fresh)]
    out = target.invoke(impl, fresh)
    return out, _arrays_in(fresh), before


def _variant_outputs(target, cases):
    out = []
    for m in target.misconceptions:
        row = []
        for case in cases:
            try:
                row.append(_norm(target, target.invoke(m.impl, copy.deepcopy(case))))
            except Exception:
                row.append(None)
        out.append(row)
    return out


def _match(target, cand, expected, cases, variants):
    """The first misconception whose outputs match the candidate's on every case."""
    for m, outs in zip(target.misconceptions, variants):
        differs, ok = False, True
        for c, e, v, case in zip(cand, expected, outs, cases):
            if v is None or c is None:
                continue
            if not _close(target, c, v, _dtype_of(target, e, case)):
                ok = False
                break
            differs = differs or not _close(target, v, e, _dtype_of(target, e, case))
        if ok and differs:
            return m
    return None


def _dtype_of(target, e, case):
    """The dtype whose tolerance applies: the output's, or for a float score its inputs'."""
    if target.output == "cos_sin":
        return e[0].dtype
    if target.output == "float":
        return np.float32 if any(a.dtype == np.float32 for a in _arrays_in(case)) else np.float64
    return e.dtype


def _numbers(target, cand, expected, cases):
    for c, e, case in zip(cand, expected, cases):
        dt = _dtype_of(target, e, case)
        if _close(target, c, e, dt):
            continue
        for (name, x), (_, y) in zip(_parts(target, c), _parts(target, e)):
            x, y = np.asarray(x), np.asarray(y)
            if target.output == "int_array":
                bad = x != y
                tol_note = "exact integers"
            else:
                rtol, atol = _tol(dt)
                bad = ~np.isclose(x, y, rtol=rtol, atol=atol)
                tol_note = f"rtol {rtol:g}, atol {atol:g}"
            if not bad.any():
                continue
            first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
            err = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
            where = f"{name}[{', '.join(map(str, first))}]" if name else (
                f"[{', '.join(map(str, first))}]" if first else "the value")
            msg = (f"numbers: on case '{case.label}', {int(bad.sum())} of {bad.size} entries "
                   f"({100.0 * bad.sum() / bad.size:.1f}%) are wrong ({tol_note}); max abs error {err:.4g}. "
                   f"First bad entry {where}: yours {_num(x[first] if first else x)}, expected "
                   f"{_num(y[first] if first else y)}.")
            if target.elementwise_arg and case.args and isinstance(case.args[0], np.ndarray) \
                    and case.args[0].shape == y.shape:
                msg += f" There {target.elementwise_arg}{list(first)} = {case.args[0][first]}."
            return msg + f"\nInput: {case.show}"
    return "numbers: outputs differ."


def _num(v):
    v = np.asarray(v)
    return f"{v.item():.6g}" if v.dtype.kind == "f" else str(v.item())


def grade_candidate(target, obj, reference, label, source_file=None):
    r"""Grade one reader object against the reference. Returns a result dict; never raises."""
    def fail(kind, message, misconception=None):
        return _result(target, label, "fail", kind, message, misconception)

    # 1. Is it there, and has it been touched?
    if obj is None:
        return fail("missing", f"{target.name} is not defined in your file.")
    if target.is_class != isinstance(obj, type) or not callable(obj):
        want = "a class" if target.is_class else "a function"
        return fail("type", f"{target.name} should be {want}; found {_type_name(obj)}.")
    stubs = {m: function_is_stub(obj.__dict__[m]) for m in target.methods if m in obj.__dict__} \
        if target.is_class else {target.name: function_is_stub(obj)}
    if stubs and all(stubs.values()):
        return _result(target, label, "not attempted", "not attempted", "not attempted")
    if any(stubs.values()):
        left = ", ".join(f"{target.name}.{m}" for m, s in stubs.items() if s)
        return fail("unfinished", f"{left} still raises NotImplementedError; finish it too.")

    # 2. Signature.
    problems = _signature_problems(target, obj, reference)
    if problems:
        return fail("signature", "signature: " + "; ".join(problems) + ". Keep the signature of the stub.")

    # 3. Run every case; a raise, a wrong type or a mutated input stops here.
    cases = target.cases()
    expected = [_norm(target, target.invoke(reference, copy.deepcopy(c))) for c in cases]
    raw = []
    for case, exp in zip(cases, expected):
        try:
            out, after, before = _call(target, obj, case)
        except NotImplementedError as e:
            if str(e) == label:
                return fail("unfinished", f"your code reached the stub's NotImplementedError({label!r}) on case "
                                          f"'{case.label}'; finish every part of {target.name}.")
            return fail("raised", f"raised NotImplementedError: {e} on case '{case.label}'."
                                  f"{_reader_traceback(e, source_file)}\nInput: {case.show}")
        except (Exception, SystemExit) as e:
            return fail("raised", f"raised {type(e).__name__}: {e} on case '{case.label}'."
                                  f"{_reader_traceback(e, source_file)}\nInput: {case.show}")
        form = _form(target, out, exp)
        if form and form[0] == "type":
            return fail("type", f"type: {form[1]} (case '{case.label}')")
        for a, b in zip(after, before):
            if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=True):
                return fail("mutated", f"mutated its input: an input array changed during the call on case "
                                       f"'{case.label}'. Build a new array (e.g. with xp.concatenate) instead "
                                       f"of writing into x.\nInput: {case.show}")
        raw.append(out)

    # 4. Shape and dtype.
    variants = None
    for case, out, exp in zip(cases, raw, expected):
        form = _form(target, out, exp)
        if form:
            variants = _variant_outputs(target, cases)
            cand = [_norm(target, o) for o in raw]
            m = _match(target, cand, expected, cases, variants)
            extra = f"\nThis looks like a known mistake, {m.title}: {m.hint}" if m else ""
            hint = f" {target.dtype_hint}" if form[0] == "dtype" and target.dtype_hint else ""
            return fail(form[0], f"{form[0]}: {form[1]}{hint} (case '{case.label}')\nInput: {case.show}{extra}",
                        m.key if m else None)
    cand = [_norm(target, o) for o in raw]

    # 5. NaN or Inf.
    for case, c in zip(cases, cand):
        for name, x in _parts(target, c):
            x = np.asarray(x)
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0]) if x.ndim else ()
                return fail("nan", f"NaN or Inf: {int((~np.isfinite(x)).sum())} entries of "
                                   f"{name or 'the output'} are not finite on case '{case.label}' "
                                   f"(first at {list(where)}); the expected values are all finite.\n"
                                   f"Input: {case.show}")

    # 6. Right?
    if all(_close(target, c, e, _dtype_of(target, e, case)) for c, e, case in zip(cand, expected, cases)):
        return _result(target, label, "pass", "pass", f"{target.name}: all {len(cases)} cases pass.")

    # 7. A known misconception?
    variants = variants or _variant_outputs(target, cases)
    m = _match(target, cand, expected, cases, variants)
    if m:
        return fail("misconception", f"misconception, {m.title}: {m.hint}", m.key)

    # 8. Numbers.
    return fail("numbers", _numbers(target, cand, expected, cases))
