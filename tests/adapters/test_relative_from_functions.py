r"""Chapters 4 and 5: the reader's functions inside the model, and the references they are graded against.

1. ``solutions/relative.py`` and the 2-D index of ``solutions/t5.py`` on numbers worked by hand.
2. ``shift_op``: a relative shift written on plain arrays becomes an op whose gradient is the
   library's, checked by central differences; a function that does more than move entries is refused.
3. ``from_functions`` of Shaw, Transformer-XL, T5 and the 2-D bias: with the reference functions the
   model trains exactly as the library's does (float64, side by side); with a wrong one the curves part.
"""
import numpy as np
import pytest

import mini_transformer.engine.functional as F
from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.model import tasks
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from exercises.adapters import from_functions
from exercises.adapters.from_functions import shift_op
from exercises.adapters.side_by_side import train_side_by_side
from solutions import relative, t5

# ---------------------------------------------------------------------------
# 1. The references, by hand
# ---------------------------------------------------------------------------


def test_clipped_relative_index_by_hand(each_backend):
    # query at 5, keys 0..7, k = 2: j - i = -5 .. 2, clipped to -2 .. 2, plus 2
    got = relative.clipped_relative_index(backend.asarray(np.array([5])), backend.asarray(np.arange(8)), 2)
    assert backend.to_numpy(got).tolist() == [[0, 0, 0, 0, 1, 2, 3, 4]]
    # a square block, k = 1: the diagonal is row 1, above it row 2, below it row 0
    sq = backend.to_numpy(relative.clipped_relative_index(backend.asarray(np.arange(3)), backend.asarray(np.arange(3)), 1))
    assert sq.tolist() == [[1, 2, 2], [0, 1, 2], [0, 0, 1]]


def test_relative_shift_by_hand(each_backend):
    x = backend.asarray(np.arange(6.0).reshape(2, 3))        # T_q 2, distances d_hi, d_hi - 1, d_hi - 2
    assert backend.to_numpy(relative.relative_shift(x)).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    # T_q 3, T_k 2 (L 4): row i starts at column 2 - i
    x = backend.asarray(np.arange(12.0).reshape(3, 4))
    assert backend.to_numpy(relative.relative_shift(x)).tolist() == [[2.0, 3.0], [5.0, 6.0], [8.0, 9.0]]


def test_relative_shift_equals_the_direct_gather_with_leading_axes():
    rng = np.random.default_rng(0)
    for T_q, T_k in [(1, 5), (4, 4), (5, 2), (3, 7)]:
        x = rng.normal(size=(2, 3, T_q, T_q + T_k - 1))
        i, j = np.arange(T_q)[:, None], np.arange(T_k)[None, :]
        np.testing.assert_array_equal(relative.relative_shift(x), x[..., i, j + T_q - 1 - i])
    with pytest.raises(ValueError, match="needs at least"):
        relative.relative_shift(np.zeros((3, 2)))


def test_swin_index_by_hand_and_translation_invariant(each_backend):
    # w = 2: tokens (0,0) (0,1) (1,0) (1,1); row (dy + 1) * 3 + (dx + 1)
    assert backend.to_numpy(t5.swin_relative_index(2)).tolist() == [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3],
                                                                    [8, 7, 5, 4]]
    idx = backend.to_numpy(t5.swin_relative_index(7))
    assert idx.shape == (49, 49) and idx.min() == 0 and idx.max() == 168 and len(np.unique(idx)) == 169
    # the pair (2,3)-(4,5) and the pair (0,1)-(2,3) have the same offset (-2, -2): the same row
    assert idx[2 * 7 + 3, 4 * 7 + 5] == idx[0 * 7 + 1, 2 * 7 + 3] == (-2 + 6) * 13 + (-2 + 6)


# ---------------------------------------------------------------------------
# 2. shift_op: a shift on arrays as a trainable op
# ---------------------------------------------------------------------------

def t64(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True, dtype="float64")


@pytest.mark.parametrize("T_q,T_k", [(1, 6), (4, 4), (3, 2)])
def test_shift_op_gradchecks_and_matches_the_library(each_backend, T_q, T_k):
    assert_gradcheck(lambda x: shift_op(relative.relative_shift, x), [t64(2, 2, T_q, T_q + T_k - 1)], tol=1e-6)
    x, gy = t64(2, 3, T_q, T_q + T_k - 1, seed=1), np.random.default_rng(2).normal(size=(2, 3, T_q, T_k))
    mine, lib = shift_op(relative.relative_shift, x), F.relative_shift(x)[..., :T_k]
    assert np.array_equal(mine.numpy(), lib.numpy())
    (mine * Tensor(gy)).sum().backward()
    g_mine = x.grad.copy()
    x.grad = None
    (lib * Tensor(gy)).sum().backward()
    assert np.array_equal(backend.to_numpy(g_mine), backend.to_numpy(x.grad))


@pytest.mark.parametrize("bad,why", [
    (lambda x: 2.0 * relative.relative_shift(x), "does more than move entries"),                # scales
    (lambda x: relative.relative_shift(x)[..., ::-1, :], "does more than move entries"),        # mixes rows
    (lambda x: x[..., None], "must keep every axis but the last"),                              # adds an axis
])
def test_shift_op_refuses_what_is_not_a_shift(bad, why):
    with pytest.raises(ValueError, match=why):
        shift_op(bad, t64(1, 3, 5))


# ---------------------------------------------------------------------------
# 3. from_functions: the reader's function inside the model
# ---------------------------------------------------------------------------

def batches(g):
    b = tasks.copy_task(4, 4, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


def config(positional, **extra):
    return GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=9, positional=positional, extra=extra)


def _t5_wrong(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    return t5.relative_position_bucket(-relative_position, bidirectional, num_buckets, max_distance)  # direction


SCHEMES = {
    "shaw": (config("shaw", shaw_k=2), from_functions.shaw, relative.clipped_relative_index,
             lambda q_pos, k_pos, k: 2 * k - relative.clipped_relative_index(q_pos, k_pos, k)),  # sign reversed
    "transformer_xl": (config("transformer_xl"), from_functions.transformer_xl, relative.relative_shift,
                       lambda x: relative.relative_shift(x[..., ::-1])[..., ::-1]),         # the wrong way
    "t5": (config("t5", num_buckets=8, max_distance=6), from_functions.t5, t5.relative_position_bucket,
           _t5_wrong),
    "relative_2d": (config("relative_2d", window_size=3), from_functions.relative_2d, t5.swin_relative_index,
                    lambda w: t5.swin_relative_index(w).T.copy()),                          # offsets negated
}


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_reference_functions_train_exactly_like_the_library(name):
    cfg, adapt, right, _ = SCHEMES[name]
    yours = adapt(right, like=TinyGPT(cfg).positional).to_dtype("float64")
    res = train_side_by_side(cfg, yours, batches, steps=4)
    assert res.first_difference is None and res.max_difference <= 1e-12, res.report()
    assert yours.signature()["from_functions"].endswith(right.__name__)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_wrong_function_parts_at_the_first_step(name):
    cfg, adapt, _, wrong = SCHEMES[name]
    res = train_side_by_side(cfg, adapt(wrong, like=TinyGPT(cfg).positional).to_dtype("float64"),
                             batches, steps=2)
    assert res.first_difference == 0, res.report()


def test_from_functions_copies_the_start_and_trains_its_own_copy():
    lib = TinyGPT(config("t5")).positional
    yours = from_functions.t5(t5.relative_position_bucket, like=lib)
    assert yours.table is not lib.table and np.array_equal(yours.table.data, lib.table.data)
    built = from_functions.shaw(relative.clipped_relative_index, d_head=8, n_layers=2, k=3)
    assert built.k == 3 and len(built.layers) == 2 and built.layers[0].a_K.shape == (7, 8)


def test_transformer_xl_from_functions_in_the_encoder_form():
    cfg = config("transformer_xl")
    lib = TinyEncoder(cfg).to_dtype("float64")
    ids = backend.asarray(np.random.default_rng(3).integers(0, 16, size=(2, 7)))
    want = lib(ids).numpy()
    lib.positional = from_functions.transformer_xl(relative.relative_shift, like=lib.positional)
    assert np.array_equal(lib(ids).numpy(), want)


@pytest.mark.parametrize("name,fn,bad,why", [
    ("t5", t5.relative_position_bucket, lambda *a: t5.relative_position_bucket(*a) - 1,
     "a negative row would silently read from the end"),
    ("t5", t5.relative_position_bucket, lambda *a: t5.relative_position_bucket(*a).astype(float),
     "needs integers"),
    ("relative_2d", t5.swin_relative_index, lambda w: t5.swin_relative_index(w)[:-1], "needs integers"),
])
def test_a_bad_index_is_refused_in_a_sentence(name, fn, bad, why):
    cfg = config(name)
    scheme = getattr(from_functions, name)(bad, like=TinyGPT(cfg).positional)
    with pytest.raises(ValueError, match=why):
        scheme.bias_at(backend.asarray(np.arange(4)), backend.asarray(np.arange(4)))


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_function_schemes_run_on_every_backend(each_backend, name):
    # the strict stand-in refuses host NumPy exactly where CuPy would: the reader's function and the checks
    # around it must stay on the backend
    cfg, adapt, right, _ = SCHEMES[name]
    model = TinyGPT(cfg)
    model.positional = adapt(right, like=model.positional)
    model.zero_grad()
    model(backend.asarray(np.random.default_rng(4).integers(0, 16, size=(2, 9)))).sum().backward()
    assert all(p.grad is not None for p in model.positional.parameters())
