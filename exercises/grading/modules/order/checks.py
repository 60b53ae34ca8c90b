r"""Checks of ``solutions/order.py`` (chapter 1): cases and known mistakes for every exercise."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show


# ---------------------------------------------------------------------------
# 1.1 permutation_gap
# ---------------------------------------------------------------------------

def _gap_cases():
    hand_y, hand_perm = np.array([[1.0, 2.0, 3.0]]), np.array([2, 0, 1])
    hand_y_perm = np.array([[3.0, 1.0, 2.0]])
    perm5 = np.random.default_rng(31).permutation(5)  # [2, 1, 4, 3, 0]: not its own inverse
    y = normal((2, 5, 3), 32)
    y_noisy = y[:, perm5].copy()
    y_noisy[1, 3, 2] += 0.25  # one output of one token moved
    square = normal((3, 3, 4), 33)
    perm3 = np.array([1, 2, 0])
    other = normal((3, 3, 4), 34)
    flat = normal((4, 6), 35)
    perm6 = np.array([5, 0, 1, 2, 3, 4])
    return [Case("worked example, an equivariant f", (hand_y, hand_y_perm, hand_perm),
                 show=f"{show('y', hand_y)}; {show('y_perm', hand_y_perm)}; {show('perm', hand_perm)}"),
            Case("(B, T, d) = (2, 5, 3), an equivariant f", (y, y[:, perm5], perm5),
                 show=f"y: standard normal (2, 5, 3), seed 32; y_perm = y[:, perm]; {show('perm', perm5)}"),
            Case("one output moved by 0.25", (y, y_noisy, perm5),
                 show=f"y: standard normal (2, 5, 3), seed 32; y_perm = y[:, perm] with 0.25 added at "
                      f"[1, 3, 2]; {show('perm', perm5)}"),
            Case("B = T = 3, an order-aware f", (square, other, perm3),
                 show=f"y, y_perm: standard normal (3, 3, 4), seeds 33 and 34; {show('perm', perm3)}"),
            Case("B = T = 3, an equivariant f", (square, square[:, perm3], perm3),
                 show=f"y: standard normal (3, 3, 4), seed 33; y_perm = y[:, perm]; {show('perm', perm3)}"),
            Case("(B, T) = (4, 6) with no feature axis, a rotation by one", (flat, flat[:, perm6] - 0.5, perm6),
                 show=f"y: standard normal (4, 6), seed 35; y_perm = y[:, perm] - 0.5; {show('perm', perm6)}")]


PERMUTATION_GAP = Target("permutation_gap", "float", _gap_cases, [
    Misconception("inverse_permutation", "un-shuffled with the inverse permutation",
                  "The token now at position t is the one that sat at perm[t], so its old output is y[:, perm][:, t]: "
                  "compare y_perm with y[:, perm]. Indexing with argsort(perm) (or writing y_perm into "
                  "positions perm) undoes the shuffle instead; the two agree only when perm is its own "
                  "inverse, as a reversal is.",
                  lambda y, y_perm, perm: float(np.abs(y_perm - y[:, np.argsort(perm)]).max())),
    Misconception("invariance", "compared with the unshuffled output",
                  "|f(x_perm) - f(x)| asks for invariance: the same output whatever the order. Equivariance "
                  "lets the outputs move with their tokens: compare y_perm with y[:, perm].",
                  lambda y, y_perm, perm: float(np.abs(y_perm - y).max())),
    Misconception("mean_not_max", "the mean absolute difference instead of the largest",
                  "One token whose output moved is enough to break equivariance, and a mean dilutes it by the "
                  "size of the array: return the largest absolute difference.",
                  lambda y, y_perm, perm: float(np.abs(y_perm - y[:, perm]).mean())),
    Misconception("no_abs", "the largest signed difference, without the absolute value",
                  "An output that moved down is as wrong as one that moved up: take the absolute value "
                  "before the max.",
                  lambda y, y_perm, perm: float((y_perm - y[:, perm]).max())),
])


# ---------------------------------------------------------------------------
# 1.2 self_attention
# ---------------------------------------------------------------------------

def _attention(x, W_q, W_k, W_v, causal=False, slip=""):
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    d_k = W_k.shape[-1]
    scale = {"no_scaling": 1.0, "scaled_by_d_k": 1.0 / d_k}.get(slip, 1.0 / math.sqrt(d_k))
    s = q @ np.swapaxes(k, -1, -2) * scale
    T = x.shape[-2]
    masks = causal or slip == "always_causal"
    if slip == "mask_ignored":
        masks = False
    if masks:
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        s = np.where((j >= i) if slip == "mask_flipped" else (j <= i), s, -np.inf)
    axis = -2 if slip == "softmax_over_queries" else -1
    w = np.exp(s - s.max(axis=axis, keepdims=True))
    return (w / w.sum(axis=axis, keepdims=True)) @ v


def _slip(key, title, hint):
    return Misconception(key, title, hint, lambda x, W_q, W_k, W_v, causal=False: _attention(x, W_q, W_k, W_v, causal,
                                                                                              slip=key))


def _attention_cases():
    out = []
    for label, (B, T, d, d_k, d_v), causal, seed, dtype in [
            ("(B, T, d_model) = (2, 5, 4), an encoder", (2, 5, 4, 3, 2), False, 41, np.float64),
            ("(2, 5, 4), causal", (2, 5, 4, 3, 2), True, 41, np.float64),
            ("T = 1, causal", (2, 1, 4, 4, 4), True, 42, np.float64),
            ("(1, 6, 8), d_k = 8, causal", (1, 6, 8, 8, 8), True, 43, np.float64),
            ("(3, 7, 6), d_k = 4, an encoder", (3, 7, 6, 4, 5), False, 44, np.float64),
            ("a longer sequence: (2, 12, 6), an encoder", (2, 12, 6, 6, 6), False, 48, np.float64),
            ("float32, an encoder", (2, 4, 4, 4, 4), False, 45, np.float32),
            ("float32, causal", (2, 4, 4, 4, 4), True, 45, np.float32)]:
        x = normal((B, T, d), seed, dtype)
        W_q, W_k, W_v = (normal(s, seed + 100 * n, dtype) for n, s in enumerate([(d, d_k), (d, d_k), (d, d_v)], 1))
        out.append(Case(label, (x, W_q, W_k, W_v), {"causal": causal},
                        show=f"{show('x', x, f'standard normal, seed {seed}')}; W_q, W_k: ({d}, {d_k}), W_v: "
                             f"({d}, {d_v}), standard normal, seeds {seed + 100}, {seed + 200}, {seed + 300}; "
                             f"causal={causal}"))
    x = normal((1, 4, 3), 46)
    zero, W_v = np.zeros((3, 3)), normal((3, 2), 47)
    out.append(Case("W_q = 0: every score equal, causal", (x, zero, zero, W_v), {"causal": True},
                    show=f"{show('x', x, 'standard normal, seed 46')}; W_q = W_k = zeros((3, 3)); W_v: (3, 2), "
                         "standard normal, seed 47; causal=True"))
    return out


SELF_ATTENTION = Target("self_attention", "array", _attention_cases, [
    _slip("always_causal", "the causal mask is applied even with causal=False",
          "causal=False is an encoder: every query sees every key, so do not mask at all. Only causal=True "
          "hides the keys j > i."),
    _slip("mask_ignored", "causal=True does not mask anything",
          "With causal=True query i may look only at keys j <= i: set the scores of j > i to -inf before "
          "the softmax."),
    _slip("mask_flipped", "the mask hides the past instead of the future",
          "Keep key j for query i when j <= i (the lower triangle, diagonal included). Yours keeps j >= i: "
          "the first query then sees everything and the last only itself."),
    _slip("no_scaling", "the scores are not divided by sqrt(d_k)",
          "Scaled dot-product attention divides Q K^T by sqrt(d_k), the keys' width (W_k.shape[-1]), so the "
          "scores do not grow with the width."),
    _slip("scaled_by_d_k", "the scores are divided by d_k instead of sqrt(d_k)",
          "The scale is 1 / sqrt(d_k): a dot product of d_k unit-variance terms has standard deviation sqrt(d_k)."),
    _slip("softmax_over_queries", "the softmax runs over the queries",
          "Each query spreads its attention over the keys: normalise each row of the (T_q, T_k) scores, over "
          "the last axis."),
])


# ---------------------------------------------------------------------------
# 1.3 uniform_causal_attention
# ---------------------------------------------------------------------------

def _uniform_cases():
    marker = np.array([[1.0], [0.0], [0.0], [0.0]])
    v = normal((2, 5, 3), 51)
    v4 = normal((2, 2, 6, 4), 52)
    one = normal((3, 1, 2), 53)
    v32 = normal((2, 7, 3), 54, np.float32)
    return [Case("worked example: a marker on the first token", (marker,), show=show("v", marker)),
            Case("(B, T, d) = (2, 5, 3)", (v,), show=show("v", v, "standard normal, seed 51")),
            Case("(B, H, T, d) = (2, 2, 6, 4)", (v4,), show=show("v", v4, "standard normal, seed 52")),
            Case("T = 1", (one,), show=show("v", one)),
            Case("float32", (v32,), show=show("v", v32, "standard normal, seed 54"))]


def _count(T, dtype):
    return np.arange(1, T + 1, dtype=dtype)[:, None]


UNIFORM_CAUSAL_ATTENTION = Target("uniform_causal_attention", "array", _uniform_cases, [
    Misconception("divides_by_T", "divided by T instead of the number of visible tokens",
                  "Query i sees i + 1 keys (0 .. i), so its equal weights are 1 / (i + 1), not 1 / T: divide "
                  "the running sum by 1, 2, ..., T.",
                  lambda v: (np.cumsum(v, axis=-2) / v.shape[-2]).astype(v.dtype)),
    Misconception("no_division", "a running sum, not a running mean",
                  "Softmax weights sum to 1, so equal weights over i + 1 keys are 1 / (i + 1) each: divide "
                  "the running sum by the count.",
                  lambda v: np.cumsum(v, axis=-2)),
    Misconception("sees_everything", "every token averages all T tokens",
                  "That is the encoder (no mask): every output is the same mean, and position is lost. Under "
                  "the causal mask token i averages only tokens 0 .. i.",
                  lambda v: np.broadcast_to(v.mean(axis=-2, keepdims=True), v.shape).copy()),
    Misconception("sees_the_future", "token i averages tokens i .. T-1",
                  "The causal mask hides the future: token i sees tokens 0 .. i (a running mean from the "
                  "start), not i .. T-1.",
                  lambda v: (np.flip(np.cumsum(np.flip(v, -2), axis=-2), -2)
                             / np.flip(_count(v.shape[-2], v.dtype), 0)).astype(v.dtype)),
])


TARGETS = [PERMUTATION_GAP, SELF_ATTENTION, UNIFORM_CAUSAL_ATTENTION]


# ---------------------------------------------------------------------------
# Held-out cases: other shapes, seeds and permutations, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _gap_held_out():
    perm = np.random.default_rng(91).permutation(7)
    y = normal((3, 7, 2), 92)
    moved = y[:, perm].copy()
    moved[0, 1, 1] -= 1.5
    return [Case("held-out 0", (y, y[:, perm], perm), show="(held out)"),
            Case("held-out 1", (y, moved, perm), show="(held out)")]


def _attention_held_out():
    out = []
    for i, ((B, T, d, d_k, d_v), causal, seed) in enumerate([((1, 9, 5, 3, 4), True, 95), ((2, 3, 2, 2, 3), False, 96),
                                                             ((3, 6, 4, 4, 1), True, 97)]):
        x = normal((B, T, d), seed)
        W_q, W_k, W_v = (normal(s, seed + 100 * n) for n, s in enumerate([(d, d_k), (d, d_k), (d, d_v)], 1))
        out.append(Case(f"held-out {i}", (x, W_q, W_k, W_v), {"causal": causal}, show="(held out)"))
    return out


HELD_OUT = {"permutation_gap": _gap_held_out, "self_attention": _attention_held_out,
            "uniform_causal_attention": lambda: [Case(f"held-out {i}", (normal(shape, seed),), show="(held out)")
                                                 for i, (shape, seed) in enumerate([((1, 9, 2), 93),
                                                                                    ((2, 3, 4, 5), 94)])]}
