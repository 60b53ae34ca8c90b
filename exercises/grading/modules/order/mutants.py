r"""Mutants for chapter 1's reader test: attention that is secretly order-aware, in one way each.

Each wraps a correct ``self_attention`` (the reference, or in a student copy the reader's own once it
passes) and hides a dependence on position in it, the way real models and real bugs do: a mask left
on, a local window, a marker on one position, a symmetric distance penalty, a faint signal. None of
them changes a shape, so only a test that shuffles the right way, at the right length and with the
right tolerance, sees them.
"""
import math

from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _attention_with(change):
    """A mutant of self_attention: ``change(self_attention, x, W_q, W_k, W_v, causal)`` in place of the call."""
    def make(self_attention):
        @wraps_function(self_attention)
        def self_attention_mutant(x, W_q, W_k, W_v, causal=False):
            return change(self_attention, x, W_q, W_k, W_v, causal)
        return self_attention_mutant
    return make


def _window(attention, x, W_q, W_k, W_v, causal, width=8):
    # each query sees only keys fewer than `width` positions away: the same function as long as T <= width
    T = x.shape[-2]
    rows = []
    for i in range(T):
        lo, hi = max(0, i - width + 1), min(T, i + width)
        rows.append(attention(x[..., lo:hi, :], W_q, W_k, W_v, causal)[..., i - lo, :])
    return xp.stack(rows, axis=-2)


def _first_marked(attention, x, W_q, W_k, W_v, causal):
    x = x.copy()
    x[..., 0, :] += 0.5  # a marker on the first position, as a [CLS] or BOS embedding would add
    return attention(x, W_q, W_k, W_v, causal)


def _faint(attention, x, W_q, W_k, W_v, causal):
    T, d = x.shape[-2:]
    t = xp.arange(T, dtype=x.dtype)[:, None]
    signal = 1e-7 * xp.sin(t * xp.arange(1, d + 1, dtype=x.dtype)[None, :])  # (T, d) a positional table, tiny
    return attention(x + signal, W_q, W_k, W_v, causal)


def _symmetric_distance(attention, x, W_q, W_k, W_v, causal, alpha=0.05):
    # the scores gain -alpha (i - j)^2, a penalty in the distance alone, through three extra channels:
    # query features s (-i^2, 2i, -1) against key features s (1, j, j^2) give -s^2 (i - j)^2
    T, d = x.shape[-2:]
    d_k = W_k.shape[-1]
    t = xp.arange(T, dtype=x.dtype)
    features = xp.stack([t * t, t, xp.ones(T, dtype=x.dtype)], axis=-1)  # (T, 3)
    x_more = xp.concatenate([x, xp.broadcast_to(features, x.shape[:-1] + (3,))], axis=-1)
    s = math.sqrt(alpha * math.sqrt(d_k + 3))  # the attention divides by sqrt(d_k + 3)

    def widened(W, extra):
        top = xp.concatenate([W, xp.zeros((d, extra.shape[1]), dtype=W.dtype)], axis=1)
        bottom = xp.concatenate([xp.zeros((3, W.shape[1]), dtype=W.dtype), extra.astype(W.dtype)], axis=1)
        return xp.concatenate([top, bottom], axis=0)

    to_query = s * xp.asarray([[-1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, -1.0]])
    to_key = s * xp.asarray([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    W_v_more = xp.concatenate([W_v, xp.zeros((3, W_v.shape[1]), dtype=W_v.dtype)], axis=0)
    return attention(x_more, widened(W_q, to_query), widened(W_k, to_key), W_v_more, causal)


READER_TESTS = [ReaderTest("test_self_attention_is_permutation_equivariant", [
    Mutant("always_causal", "self_attention", "applies the causal mask even with causal=False",
           "shuffle the tokens and compare the outputs with the shuffled originals: every random shuffle catches it.",
           _attention_with(lambda A, x, W_q, W_k, W_v, causal: A(x, W_q, W_k, W_v, True)),
           misconception="always_causal"),
    Mutant("local_window", "self_attention", "each query sees only keys fewer than 8 positions away",
           "use sequences longer than 8 tokens, and a random shuffle: a window is symmetric, so a reversal cannot see it.",
           _attention_with(_window)),
    Mutant("first_position_marked", "self_attention", "adds a marker to the token at position 0",
           "use shuffles that move position 0: one that only swaps later tokens cannot see it.",
           _attention_with(_first_marked)),
    Mutant("symmetric_distance_penalty", "self_attention", "subtracts 0.05 (i - j)^2 from the scores",
           "use a random shuffle: a penalty in the distance alone is unchanged by a reversal.",
           _attention_with(_symmetric_distance)),
    Mutant("faint_position", "self_attention", "adds a positional signal of size 1e-7",
           "compare at the level of rounding (about 1e-12 of the output's size): xp.allclose's default "
           "tolerance of 1e-5 lets it through.",
           _attention_with(_faint)),
])]
