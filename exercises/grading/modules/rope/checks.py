r"""Checks of ``solutions/rope.py`` (chapter 6): cases and known mistakes for every exercise."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.drill_target import Drill
from exercises.grading.targets import Case, Misconception, Target, normal, show
from exercises.grading.wire import Recorded


# ---------------------------------------------------------------------------
# RoPE helpers in host NumPy, for the cases and the misconceptions
# ---------------------------------------------------------------------------

def _rh(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def _ri(x):
    return np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def _half_to_interleaved(d):
    """0, d/2, 1, d/2 + 1, ...: turns rotate-half tables into repeat-interleave ones (the inverse of 6.9's answer)."""
    i = np.arange(d // 2)
    return np.stack([i, i + d // 2], axis=-1).reshape(d)


class _Rope:
    """Host RoPE tables with hooks that the misconceptions override."""

    def __init__(self, d_head, base=10000.0):
        self.d, self.base0 = d_head, base

    def base(self):
        return self.base0

    def theta(self):
        return self.base() ** (-np.arange(0, self.d, 2, dtype=np.float64) / self.d)

    def positions(self, T, offset):
        return np.arange(offset, offset + T, dtype=np.float64)

    def layout(self, a):
        return np.concatenate([a, a], axis=-1)

    def __call__(self, T, offset=0):
        a = self.layout(self.positions(T, offset)[:, None] * self.theta()[None, :])
        return np.cos(a), np.sin(a)


def _tables(d, T, offset=0, interleaved=False):
    """The reference's tables, as the chapter builds them: rotate-half, or reordered into repeat-interleave."""
    from mini_transformer.engine.backend import to_numpy
    from solutions import rope as reference
    cos, sin = (to_numpy(t) for t in reference.RotaryEmbedding(d)(T, offset))
    if interleaved:
        back = np.argsort(to_numpy(reference.interleaved_to_half_permutation(d)))
        return cos[:, back], sin[:, back]
    return cos, sin


# ---------------------------------------------------------------------------
# 6.1 rotate_half and 6.7 rotate_interleaved
# ---------------------------------------------------------------------------

def _rotate_cases():
    hand = np.array([1.0, 2.0, 3.0, 4.0])
    pair = np.array([[0.5, -2.0]])
    x = normal((2, 3, 5, 8), 1)
    one = normal((1, 2, 1, 16), 2)
    x32 = normal((2, 4, 6), 3, np.float32)
    return [Case("worked example", (hand,), show=show("x", hand)),
            Case("a single pair, d = 2", (pair,), show=show("x", pair)),
            Case("(B, H, T, d_head) = (2, 3, 5, 8)", (x,), show=show("x", x, "standard normal, seed 1")),
            Case("T = 1", (one,), show=show("x", one, "standard normal, seed 2")),
            Case("float32 input", (x32,), show=show("x", x32, "standard normal, seed 3"))]


def _halves(x):
    h = x.shape[-1] // 2
    return x[..., :h], x[..., h:]


ROTATE_HALF = Target("rotate_half", "array", _rotate_cases, [
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

ROTATE_INTERLEAVED = Target("rotate_interleaved", "array", _rotate_cases, [
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
# 6.2 apply_rotary and 6.8 apply_rotary_interleaved
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
            x = normal(shape, seed, dtype)
            cos, sin = _tables(shape[-1], shape[-2], offset, interleaved)
            layout = "repeat-interleave" if interleaved else "rotate-half"
            out.append(Case(label, (x, cos, sin),
                            show=f"{show('x', x, f'standard normal, seed {seed}')}; cos, sin: the "
                                 f"{layout} tables of positions {offset}..{offset + shape[-2] - 1}, "
                                 f"d_head = {shape[-1]}, base 10000"))
        return out
    return build


def _cast(fn):
    return lambda x, cos, sin: fn(x, cos, sin).astype(x.dtype)


_DTYPE_HINT_APPLY = ("A float32 x must come back float32 even though cos and sin are float64: "
                     "cast the result with .astype(x.dtype).")

APPLY_ROTARY = Target("apply_rotary", "array", _apply_cases(False), [
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
    Misconception("missing_rotate_term", "the rotate_half(x) * sin term is missing",
                  "x * cos alone shrinks every pair instead of turning it. A rotation also moves part of each "
                  "channel into its partner: add rotate_half(x) * sin.",
                  _cast(lambda x, c, s: x * c)),
], dtype_hint=_DTYPE_HINT_APPLY)

APPLY_ROTARY_INTERLEAVED = Target("apply_rotary_interleaved", "array", _apply_cases(True), [
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
            ("base 500000 (Llama 3), offset 300", dict(d_head=64, base=500000.0), 2, 300)]:
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


class _Inverted(_Rope):
    def theta(self):
        return self.base() ** (np.arange(0, self.d, 2, dtype=np.float64) / self.d)


class _PairIndexExponent(_Rope):
    def theta(self):
        return self.base() ** (-np.arange(self.d // 2, dtype=np.float64) / self.d)


class _SinCosSwapped(_Rope):
    def __call__(self, T, offset=0):
        cos, sin = super().__call__(T, offset)
        return sin, cos


class _PositionsFromOne(_Rope):
    def positions(self, T, offset):
        return super().positions(T, offset + 1)


class _Float32Tables(_Rope):
    """Frequencies, positions and angles in float32, cast to float64 at the end."""

    def theta(self):
        return (np.float32(self.base()) ** (-np.arange(0, self.d, 2, dtype=np.float32) / np.float32(self.d)))

    def positions(self, T, offset):
        return super().positions(T, offset).astype(np.float32)

    def __call__(self, T, offset=0):
        a = self.layout(self.positions(T, offset)[:, None] * self.theta()[None, :])  # float32 angles
        return np.cos(a).astype(np.float64), np.sin(a).astype(np.float64)


_DUPLICATE_HINT = ("Pair i is channel i together with channel i + d_head/2, so its angle m * theta_i must "
                   "appear in column i and again in column i + d_head/2: concatenate the (T, d_head/2) angles "
                   "with themselves along the last axis.")

ROTARY_EMBEDDING = Target("RotaryEmbedding", "cos_sin", _rope_cases, [
    Misconception("offset_ignored", "offset ignored",
                  "The rows are positions offset, ..., offset + T - 1. With the offset dropped, every decode "
                  "step rotates the new token as if it sat at position 0.", _OffsetIgnored),
    Misconception("angles_not_duplicated", "angles not duplicated across the two halves",
                  "You repeated each angle in neighbouring columns (2i, 2i+1): that is the interleaved "
                  "layout. " + _DUPLICATE_HINT, _RepeatInterleave),
    Misconception("angles_not_duplicated", "angles not duplicated across the two halves",
                  "You gave each of the d_head channels its own frequency. " + _DUPLICATE_HINT, _PerChannel),
    Misconception("inverted_frequencies", "frequencies grow instead of shrinking",
                  "theta_i = base ** (-2i / d_head): the exponent is negative, so pair 0 turns fastest "
                  "(theta_0 = 1) and the last pair slowest.", _Inverted),
    Misconception("pair_index_exponent", "the exponent uses i / d_head instead of 2i / d_head",
                  "theta_i = base ** (-2i / d_head) for pair i = 0 .. d_head/2 - 1 (equivalently the even "
                  "channel numbers 0, 2, 4, ... divided by d_head). The last pair must reach nearly 1/base.",
                  _PairIndexExponent),
    Misconception("cos_sin_swapped", "returned (sin, cos)",
                  "Return the tables in the order (cos, sin); at position 0 cos is all ones.", _SinCosSwapped),
    Misconception("positions_from_one", "positions start at offset + 1",
                  "Row t of the tables is position offset + t, so the first row of RotaryEmbedding(d)(T) is "
                  "position 0, where nothing turns: cos is all ones and sin all zeros.", _PositionsFromOne),
    Misconception("float32_tables", "tables computed in float32 instead of float64",
                  "The frequencies, positions or angles are float32 somewhere (an arange or a base without "
                  "dtype=float64, or float32 inputs). Near position 1000, float32 numbers are 6e-5 apart, so an "
                  "angle there is off by up to 3e-5 radians, which a long context feels. Build every step in "
                  "float64.",
                  _Float32Tables, match_tol=(1e-3, 1e-3)),
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
            ("base 500, 40 and 7", 16, 40, 7, 25, {"base": 500.0}, np.float64),
            ("float32 q and k", 8, 6, 2, 26, {}, np.float32)]:
        q, k = normal((d,), seed, dtype), normal((d,), seed + 100, dtype)
        kw = "".join(f", {a}={b!r}" for a, b in ctor.items())
        # the reader's code gets the reference's tables for the two positions it needs, never its code
        rotary = Recorded.of(RotaryEmbedding(d, **ctor), [((1,), {"offset": m}), ((1,), {"offset": n})],
                             attrs=("d_head", "base", "inv_freq"))
        out.append(Case(label, (q, k, m, n, rotary),
                        show=f"{show('q', q)}; {show('k', k)}; m = {m}, n = {n}; "
                             f"rotary = RotaryEmbedding({d}{kw})"))
    return out


def _rot(x, rotary, p):
    cos, sin = rotary(1, offset=p)
    return (x[None, :] * np.asarray(cos) + _rh(x[None, :]) * np.asarray(sin))[0]


RELATIVE_SCORE = Target("relative_score", "float", _score_cases, [
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
# 6.6 wavelength_table
# ---------------------------------------------------------------------------

def _wave_cases():
    return [Case(f"d_head {d}, base {b:g}", (d, b), show=f"d_head = {d}, base = {b!r}")
            for d, b in [(8, 10000.0), (2, 10000.0), (128, 10000.0), (64, 500000.0), (16, 100.0)]]


def _wave(d, b, exponent_scale=2.0, scale=2 * math.pi, sign=1.0, n=None):
    i = np.arange(d // 2 if n is None else n, dtype=np.float64)
    return scale * b ** (sign * exponent_scale * i / d)


WAVELENGTH_TABLE = Target("wavelength_table", "array", _wave_cases, [
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
# 6.10 decode
# ---------------------------------------------------------------------------

def _decode_cases():
    from solutions.rope import RotaryEmbedding
    out = []
    for label, (B, H, T, d), prefill, seed in [("T 8, prefill 4", (2, 2, 8, 8), 4, 41),
                                               ("prefill 1: every token on its own", (1, 2, 6, 8), 1, 42),
                                               ("the whole prompt at once: prefill = T", (1, 1, 5, 4), 5, 43),
                                               ("d_head 16, T 10, prefill 3", (1, 2, 10, 16), 3, 44)]:
        q, k, v = (normal((B, H, T, d), seed + i) for i in range(3))
        # every call a reader's loop could make, right or wrong: (prefill or 1 tokens) at any offset up to T + 1
        calls = [((n,), {"offset": o}) for n in sorted({1, prefill}) for o in range(T + 2)]
        rotary = Recorded.of(RotaryEmbedding(d), calls, attrs=("d_head", "base", "inv_freq"))
        out.append(Case(label, (q, k, v, prefill, rotary),
                        show=f"q, k, v: (B, H, T, d_head) = {(B, H, T, d)}, standard normal, seeds {seed}.."
                             f"{seed + 2}; prefill = {prefill}; rotary = RotaryEmbedding({d})"))
    return out


def _host_attention(q, k, v, q_pos, k_pos):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(k_pos[None, :] <= q_pos[:, None], scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _host_rotate(x, rotary, n, offset):
    cos, sin = (np.asarray(t) for t in rotary(n, offset=offset))
    return x * cos + _rh(x) * sin


def _decoding(position_of):
    """A host decode whose step at token t (after the prompt) rotates it to ``position_of(t, prefill)``."""
    def run(q, k, v, prefill, rotary):
        T = q.shape[-2]
        keys, outs = [], []
        for start, stop in [(0, prefill)] + [(t, t + 1) for t in range(prefill, T)]:
            p = 0 if start == 0 else position_of(start, prefill)
            keys.append(_host_rotate(k[..., start:stop, :], rotary, stop - start, p))
            q_new = _host_rotate(q[..., start:stop, :], rotary, stop - start, p)
            outs.append(_host_attention(q_new, np.concatenate(keys, axis=-2), v[..., :stop, :],
                                        np.arange(start, stop), np.arange(stop)))
        return np.concatenate(outs, axis=-2)
    return run


DECODE = Target("decode", "array", _decode_cases, [
    Misconception("offset_reset", "every decoded token sits at position 0",
                  "The prompt's tokens are right and every later one is wrong: the new token's position is the "
                  "number of tokens already in the cache (token t sits at t), not 0.",
                  _decoding(lambda t, prefill: 0)),
    Misconception("offset_off_by_one", "the decoded tokens are one position off",
                  "Token t sits at position t: after the prompt's positions 0 .. prefill - 1 the next token is at "
                  "prefill, which is the number of tokens in the cache, not one less or one more.",
                  _decoding(lambda t, prefill: t - 1)),
    Misconception("offset_frozen_at_prefill", "every decoded token sits at the position right after the prompt",
                  "The offset must grow by one at every step: token t is at t, not at prefill.",
                  _decoding(lambda t, prefill: prefill)),
])


# ---------------------------------------------------------------------------
# 6.9 interleaved_to_half_permutation
# ---------------------------------------------------------------------------

def _perm_cases():
    return [Case(f"d_head {d}", (d,), show=f"d_head = {d}") for d in (2, 4, 8, 16, 64)]


INTERLEAVED_TO_HALF = Target("interleaved_to_half_permutation", "int_array", _perm_cases, [
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


TARGETS = [ROTATE_HALF, ROTATE_INTERLEAVED, APPLY_ROTARY, APPLY_ROTARY_INTERLEAVED, ROTARY_EMBEDDING, RELATIVE_SCORE,
           WAVELENGTH_TABLE, INTERLEAVED_TO_HALF, DECODE]

# the timed drill, `python -m exercises drill rope`: the target from the chapter's "Retype by hand" table
DRILL = Drill(("rotate_half", "apply_rotary", "RotaryEmbedding"), minutes=15)


# ---------------------------------------------------------------------------
# Held-out cases: other shapes, seeds, offsets and bases, in the instructor's copy and the Gradescope bundle
# only (a student copy never holds them)
# ---------------------------------------------------------------------------

def _rotate_held_out():
    return [Case(f"held-out {i}", (normal(shape, seed),), show="(held out)")
            for i, (shape, seed) in enumerate([((3, 12), 51), ((1, 1, 7, 32), 52), ((2, 2, 2, 2, 6), 53)])]


def _apply_held_out(interleaved):
    def build():
        out = []
        for i, (shape, offset, seed) in enumerate([((1, 4, 7, 12), 3, 61), ((3, 1, 2, 32), 250, 62),
                                                   ((9, 6), 1, 63)]):
            x = normal(shape, seed)
            cos, sin = _tables(shape[-1], shape[-2], offset, interleaved)
            out.append(Case(f"held-out {i}", (x, cos, sin), show="(held out)"))
        return out
    return build


def _rope_held_out():
    return [Case(f"held-out {i}", (d,), ctor, (T,), {"offset": offset}, show="(held out)")
            for i, (d, ctor, T, offset) in enumerate([(12, {}, 9, 5), (32, {"base": 1000.0}, 2, 4000),
                                                      (6, {}, 1, 0)])]


def _wave_held_out():
    return [Case(f"held-out {i}", (d, b), show="(held out)") for i, (d, b) in enumerate([(32, 10000.0), (6, 1000.0),
                                                                                        (256, 1000000.0)])]


def _perm_held_out():
    return [Case(f"held-out {i}", (d,), show="(held out)") for i, d in enumerate((6, 12, 128))]


def _score_held_out():
    from solutions.rope import RotaryEmbedding
    out = []
    for i, (d, m, n, seed, ctor) in enumerate([(12, 50, 47, 161, {}), (32, 7, 7000, 162, {"base": 2000.0}),
                                              (4, 1, 0, 163, {})]):
        q, k = normal((d,), seed), normal((d,), seed + 100)
        rotary = Recorded.of(RotaryEmbedding(d, **ctor), [((1,), {"offset": m}), ((1,), {"offset": n})],
                             attrs=("d_head", "base", "inv_freq"))
        out.append(Case(f"held-out {i}", (q, k, m, n, rotary), show="(held out)"))
    return out


def _decode_held_out():
    from solutions.rope import RotaryEmbedding
    out = []
    for i, ((B, H, T, d), prefill, seed) in enumerate([((2, 1, 7, 6), 2, 171), ((1, 3, 9, 8), 6, 174)]):
        q, k, v = (normal((B, H, T, d), seed + j) for j in range(3))
        calls = [((n,), {"offset": o}) for n in sorted({1, prefill}) for o in range(T + 2)]
        rotary = Recorded.of(RotaryEmbedding(d), calls, attrs=("d_head", "base", "inv_freq"))
        out.append(Case(f"held-out {i}", (q, k, v, prefill, rotary), show="(held out)"))
    return out


HELD_OUT = {"relative_score": _score_held_out, "decode": _decode_held_out,
            "rotate_half": _rotate_held_out, "rotate_interleaved": _rotate_held_out,
            "apply_rotary": _apply_held_out(False), "apply_rotary_interleaved": _apply_held_out(True),
            "RotaryEmbedding": _rope_held_out, "wavelength_table": _wave_held_out,
            "interleaved_to_half_permutation": _perm_held_out}
