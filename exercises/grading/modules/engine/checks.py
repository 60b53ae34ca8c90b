r"""Checks of ``solutions/engine.py`` (chapter 0): cases and known mistakes for every exercise."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show


def _tril(T):
    return np.tril(np.ones((T, T), dtype=bool))


def _some_kept(shape, seed):
    """A random boolean mask ``shape`` that keeps the first key of every row and every key of the first row."""
    mask = np.random.default_rng(seed).random(shape) > 0.4
    mask[..., 0] = True
    mask[..., 0, :] = True  # no column all False either, so a softmax over the wrong axis stays finite
    return mask


# ---------------------------------------------------------------------------
# Host softmax with one reader's slip in it, for the misconceptions
# ---------------------------------------------------------------------------

def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_with(slip):
    def softmax(x, mask=None):
        if mask is None or slip == "mask_ignored":
            return _sm(x, -2 if slip == "wrong_axis" else -1)
        if slip == "mask_zero_filled":
            return _sm(np.where(mask, x, 0.0))
        if slip == "masked_after_normalising":
            return _sm(x) * mask
        if slip == "wrong_axis":
            return _sm(np.where(mask, x, -np.inf), axis=-2)
        raise ValueError(slip)
    return softmax


# ---------------------------------------------------------------------------
# 0.1 softmax
# ---------------------------------------------------------------------------

def _softmax_cases():
    hand = np.array([0.0, math.log(2.0), math.log(3.0)])
    x = normal((2, 3, 5), 1)
    scores = normal((2, 2, 4, 4), 2)
    x_masked = normal((2, 3, 5), 3)
    mask = _some_kept((3, 5), 4)
    big = normal((3, 6), 5) * 10.0 + 1000.0
    x32 = normal((2, 4, 6), 6, np.float32)
    single = normal((4, 1), 7)
    return [Case("worked example: [0, ln 2, ln 3]", (hand,), show=show("x", hand)),
            Case("rows of (2, 3, 5), no mask", (x,), show=show("x", x, "standard normal, seed 1")),
            Case("causal mask on (B, H, T, T) = (2, 2, 4, 4) scores", (scores, _tril(4)),
                 show=f"{show('x', scores, 'standard normal, seed 2')}; mask = lower triangle of a (4, 4) "
                      "array of True (key j <= query i)"),
            Case("a (3, 5) mask broadcast over (2, 3, 5) scores", (x_masked, mask),
                 show=f"{show('x', x_masked, 'standard normal, seed 3')}; mask: (3, 5), random, first key "
                      "always kept"),
            Case("large scores, around 1000", (big,),
                 show=show("x", big, "1000 + 10 * standard normal, seed 5; e^1000 is inf in float64, so "
                                     "subtract each row's maximum before the exponential")),
            Case("float32 scores", (x32,), show=show("x", x32, "standard normal, seed 6")),
            Case("a single key: T_k = 1", (single,), show=show("x", single))]


SOFTMAX = Target("softmax", "array", _softmax_cases, [
    Misconception("wrong_axis", "softmax over the wrong axis",
                  "A row of scores is one query against every key: normalise over the last axis (axis=-1, "
                  "keepdims=True), so that each row, not each column, sums to 1.",
                  _softmax_with("wrong_axis")),
    Misconception("mask_ignored", "the mask is ignored",
                  "Where mask is False the weight must be exactly 0: set those scores to -inf before the "
                  "exponential (xp.where(mask, x, -xp.inf)), so e^(-inf) = 0 drops them from the sum.",
                  _softmax_with("mask_ignored")),
    Misconception("mask_zero_filled", "masked scores set to 0 instead of -inf",
                  "A score of 0 still gets weight e^0 / sum: it is a perfectly ordinary score. A masked score "
                  "must be -inf, whose weight is exactly 0.",
                  _softmax_with("mask_zero_filled")),
    Misconception("masked_after_normalising", "masked weights zeroed after normalising",
                  "Zeroing the masked weights after dividing by the sum leaves rows that sum to less than 1. "
                  "Mask the scores first (-inf), then exponentiate and normalise over what is left.",
                  _softmax_with("masked_after_normalising")),
])


# ---------------------------------------------------------------------------
# 0.2 softmax_backward
# ---------------------------------------------------------------------------

def _backward_cases():
    def y_of(shape, seed, mask=None):
        x = normal(shape, seed)
        return _sm(x if mask is None else np.where(mask, x, -np.inf))

    hand_y, hand_gy = np.array([0.5, 0.5]), np.array([1.0, 0.0])
    y, gy = y_of((2, 3, 5), 11), normal((2, 3, 5), 12)
    ym, gym = y_of((2, 2, 4, 4), 13, _tril(4)), normal((2, 2, 4, 4), 14)
    row, grow = y_of((6,), 15), normal((6,), 16)
    ones_y, ones_gy = y_of((3, 4), 17), np.ones((3, 4))
    y32, gy32 = y_of((2, 3, 5), 18).astype(np.float32), normal((2, 3, 5), 19, np.float32)
    return [Case("worked example: y = [0.5, 0.5], gy = [1, 0]", (hand_y, hand_gy),
                 show=f"{show('y', hand_y)}; {show('gy', hand_gy)}"),
            Case("rows of (2, 3, 5)", (y, gy),
                 show=f"y = softmax of standard normal (2, 3, 5) scores, seed 11; gy: standard normal, seed 12"),
            Case("causally masked (2, 2, 4, 4)", (ym, gym),
                 show="y = softmax of standard normal (2, 2, 4, 4) scores under a causal mask (zeros above the "
                      "diagonal), seed 13; gy: standard normal, seed 14"),
            Case("a single row, y of shape (6,)", (row, grow),
                 show=f"y = softmax of a standard normal row, seed 15; {show('gy', grow)}"),
            Case("gy all ones: the loss is sum(y) = 1 everywhere", (ones_y, ones_gy),
                 show="y = softmax of standard normal (3, 4) scores, seed 17; gy = ones((3, 4))"),
            Case("float32", (y32, gy32),
                 show="y = softmax of standard normal (2, 3, 5) scores, seed 18, as float32; gy: float32, seed 19")]


def _dot(y, gy, axis=-1):
    return (gy * y).sum(axis=axis, keepdims=True)


SOFTMAX_BACKWARD = Target("softmax_backward", "array", _backward_cases, [
    Misconception("diagonal_only", "only the diagonal of the Jacobian",
                  "gy * y * (1 - y) keeps dy_j/dx_j = y_j (1 - y_j) and drops dy_i/dx_j = -y_i y_j for i != j: "
                  "every output of a row depends on every input of that row. Sum over i: "
                  "gx_j = sum_i gy_i y_i (delta_ij - y_j) = y_j (gy_j - sum_i gy_i y_i).",
                  lambda y, gy: gy * y * (1 - y)),
    Misconception("missing_output_factor", "the factor y_j is missing",
                  "gx_j = y_j (gy_j - sum_i gy_i y_i): the whole bracket is multiplied by the output y_j. "
                  "Without it a masked entry (y_j = 0) would get a gradient.",
                  lambda y, gy: gy - _dot(y, gy)),
    Misconception("sum_over_everything", "the sum runs over the whole array, not each row",
                  "sum_i gy_i y_i is one number per row: sum over the last axis with keepdims=True. Summing "
                  "everything mixes the rows, which never touch each other in a softmax.",
                  lambda y, gy: y * (gy - (gy * y).sum())),
    Misconception("sum_over_wrong_axis", "the sum runs over the wrong axis",
                  "The softmax normalised over the last axis, so its backward sums over the last axis too: "
                  "(gy * y).sum(axis=-1, keepdims=True).",
                  lambda y, gy: y * (gy - _dot(y, gy, axis=-2))),
    Misconception("sign_flipped", "the sign is flipped",
                  "gx = y * (gy - sum(gy * y)), not y * (sum(gy * y) - gy): raising a score raises its own "
                  "weight, so with gy = e_j the gradient at j is positive.",
                  lambda y, gy: y * (_dot(y, gy) - gy)),
])


# ---------------------------------------------------------------------------
# 0.3 cross_entropy
# ---------------------------------------------------------------------------

def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _picked(values, targets):
    return np.take_along_axis(values, targets[..., None], axis=-1)[..., 0]


def _ce_cases():
    uniform, t_uniform = np.zeros((4, 8)), np.array([0, 3, 5, 7])
    hand, t_hand = np.array([[0.0, math.log(3.0)], [0.0, math.log(3.0)]]), np.array([1, 0])
    z, t = normal((2, 5, 16), 21), np.random.default_rng(22).integers(0, 16, (2, 5))
    wrong, t_wrong = np.array([[0.0, 800.0, -5.0]]), np.array([0])
    big, t_big = normal((3, 10), 23) * 5.0 + 1000.0, np.random.default_rng(24).integers(0, 10, (3,))
    z32, t32 = normal((4, 6), 25, np.float32), np.random.default_rng(26).integers(0, 6, (4,))
    return [Case("uniform logits, V = 8: ln 8", (uniform, t_uniform),
                 show=f"logits = zeros((4, 8)); {show('targets', t_uniform)}"),
            Case("worked example: p = [1/4, 3/4]", (hand, t_hand),
                 show=f"{show('logits', hand)}; {show('targets', t_hand)}"),
            Case("(B, T, V) = (2, 5, 16)", (z, t),
                 show=f"logits: standard normal (2, 5, 16), seed 21; targets: random in [0, 16), seed 22"),
            Case("confident and wrong: the target's logit is 800 below the best", (wrong, t_wrong),
                 show=f"{show('logits', wrong)}; {show('targets', t_wrong)}; the target's probability, "
                      "e^-800, is 0 in float64 and ln 0 = -inf: use the log-sum-exp form, never log(softmax)"),
            Case("large logits, around 1000", (big, t_big),
                 show=f"logits: 1000 + 5 * standard normal (3, 10), seed 23; {show('targets', t_big)}; e^1000 is "
                      "inf in float64, so subtract each row's maximum first"),
            Case("float32 logits", (z32, t32),
                 show=f"logits: standard normal (4, 6) float32, seed 25; {show('targets', t32)}")]


CROSS_ENTROPY = Target("cross_entropy", "float", _ce_cases, [
    Misconception("bits", "log base 2: bits, not nats",
                  "The book's losses are in nats: the natural logarithm (xp.log). Yours are larger by "
                  "1 / ln 2 = 1.44; a uniform guess over V tokens must score ln V, not log2 V.",
                  lambda z, t: float(-_picked(_log_softmax(z), t).mean() / math.log(2.0))),
    Misconception("sum_not_mean", "summed over the targets instead of averaged",
                  "Divide by the number of targets: the loss is the mean of -ln p over every predicted "
                  "token, so it does not grow with the batch or the sequence length.",
                  lambda z, t: float(-_picked(_log_softmax(z), t).sum())),
    Misconception("sign", "the sign is missing",
                  "ln p is negative (p < 1); the loss is its negative, -ln p, so it is positive and 0 only "
                  "for a certain, correct prediction.",
                  lambda z, t: float(_picked(_log_softmax(z), t).mean())),
    Misconception("unnormalised", "the logit is used as a log-probability",
                  "A logit is not a log-probability: subtract the log-sum-exp of its row, "
                  "ln p_t = z_t - c - ln sum_v e^(z_v - c), before taking the target's entry.",
                  lambda z, t: float(-_picked(z, t).mean())),
])


TARGETS = [SOFTMAX, SOFTMAX_BACKWARD, CROSS_ENTROPY]


# ---------------------------------------------------------------------------
# Held-out cases: other shapes, seeds and masks, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _softmax_held_out():
    return [Case("held-out 0", (normal((3, 7), 81),), show="(held out)"),
            Case("held-out 1", (normal((1, 3, 5, 5), 82), _tril(5)), show="(held out)"),
            Case("held-out 2", (normal((2, 9), 83) * 30.0 - 500.0,), show="(held out)")]


def _backward_held_out():
    y = _sm(normal((4, 7), 84))
    ym = _sm(np.where(_tril(5), normal((2, 5, 5), 85), -np.inf))
    return [Case("held-out 0", (y, normal((4, 7), 86)), show="(held out)"),
            Case("held-out 1", (ym, normal((2, 5, 5), 87)), show="(held out)")]


def _ce_held_out():
    g = np.random.default_rng(88)
    return [Case("held-out 0", (normal((3, 4, 11), 89), g.integers(0, 11, (3, 4))), show="(held out)"),
            Case("held-out 1", (normal((7, 3), 90) * 4.0 - 600.0, g.integers(0, 3, (7,))), show="(held out)")]


HELD_OUT = {"softmax": _softmax_held_out, "softmax_backward": _backward_held_out, "cross_entropy": _ce_held_out}
