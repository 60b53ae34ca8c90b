"""The absolute schemes computed by the reader's functions: sinusoidal and learned ``from_functions``.

A correct function trains the model exactly as the library does; a wrong one parts at the first
step; a function that cannot be used inside a model is refused with a sentence.
"""
import math

import numpy as np
import pytest

from mini_transformer.model import tasks
from mini_transformer.engine.autograd import Tensor, no_grad
from mini_transformer.engine.backend import asarray, to_numpy
from mini_transformer.model import GPTConfig, TinyGPT
from exercises.adapters import from_functions
from exercises.adapters.side_by_side import train_side_by_side
from solutions import learned as learned_reference
from solutions import sinusoidal as sinusoidal_reference


def batches(g):
    b = tasks.copy_task(8, 4, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


def config(positional, **kw):
    return GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=kw.pop("max_len", 8),
                     positional=positional, **kw)


# ---------------------------------------------------------------------------
# Sinusoidal
# ---------------------------------------------------------------------------

def test_the_reference_encoding_trains_exactly_like_the_library():
    scheme = from_functions.sinusoidal(sinusoidal_reference.sinusoidal_positional_encoding)
    res = train_side_by_side(config("sinusoidal"), scheme, batches, steps=4)
    assert res.first_difference is None and res.max_difference <= 1e-12


def test_a_swapped_encoding_parts_at_the_first_step():
    def swapped(T, d_model, base=10000.0):
        pe = sinusoidal_reference.sinusoidal_positional_encoding(T, d_model, base)
        return pe.reshape(T, d_model // 2, 2)[..., ::-1].reshape(T, d_model)  # cos in even columns
    res = train_side_by_side(config("sinusoidal"), from_functions.sinusoidal(swapped), batches,
                             steps=3)
    assert res.first_difference == 0 and "the curves part at step 0" in res.report()


def test_the_encoding_is_read_at_the_tokens_own_positions():
    """embed at offset 5 adds the rows of positions 5, 6, 7: sin(5), cos(5) ... worked by hand for d_model 2."""
    scheme = from_functions.sinusoidal(sinusoidal_reference.sinusoidal_positional_encoding)
    out = to_numpy(scheme.embed(asarray(np.zeros((1, 3, 2))), 5))
    np.testing.assert_allclose(out[0], [[math.sin(t), math.cos(t)] for t in (5, 6, 7)], atol=1e-15)
    assert scheme.signature() == {"sinusoidal_base": 10000.0,
                                  "from_functions": "solutions.sinusoidal.sinusoidal_positional_encoding"}


def test_a_table_of_the_wrong_shape_is_refused_in_a_sentence():
    scheme = from_functions.sinusoidal(
        lambda T, d_model, base=10000.0: sinusoidal_reference.sinusoidal_positional_encoding(T, d_model, base)[:, ::2])
    with pytest.raises(ValueError, match=r"returned shape \(3, 2\); it must return \(T, d_model\)"):
        scheme.embed(asarray(np.zeros((1, 3, 4))), 0)


# ---------------------------------------------------------------------------
# Learned
# ---------------------------------------------------------------------------

def start_table(cfg):
    """The table a fresh model of ``cfg`` starts from, in float64 as side_by_side trains."""
    return TinyGPT(cfg).positional.weight.data.astype("float64")


def test_the_reference_lookup_trains_exactly_like_the_library():
    cfg = config("learned")
    scheme = from_functions.learned(learned_reference.position_rows, start_table(cfg))
    res = train_side_by_side(cfg, scheme, batches, steps=4)
    assert res.first_difference is None and res.max_difference <= 1e-12


def test_a_lookup_one_row_late_parts_at_the_first_step():
    cfg = config("learned", max_len=9)
    late = lambda weight, T, offset=0: weight[None, offset + 1:offset + T + 1]  # noqa: E731
    res = train_side_by_side(cfg, from_functions.learned(late, start_table(cfg)), batches, steps=3)
    assert res.first_difference == 0


def test_the_table_is_copied_and_trained():
    table = np.arange(16.0).reshape(8, 2)
    scheme = from_functions.learned(learned_reference.position_rows, table)
    assert scheme.max_positions == 8 and [n for n, _ in scheme.named_parameters()] == ["weight"]
    assert scheme.signature() == {"max_len": 8, "from_functions": "solutions.learned.position_rows"}
    out = scheme.embed(Tensor(asarray(np.zeros((2, 3, 2)))), 4)
    (out * out).sum().backward()
    grad = to_numpy(scheme.weight.grad)
    np.testing.assert_array_equal(grad[4:7], 2 * 2 * table[4:7])  # d(sum x^2)/dx = 2x, two sequences
    assert not grad[:4].any() and not grad[7:].any()  # rows no token sat at get exactly nothing
    table[0, 0] = 99.0
    assert float(to_numpy(scheme.weight.data)[0, 0]) == 0.0  # the scheme holds its own copy


def test_a_lookup_that_drops_the_gradient_is_refused_in_a_sentence():
    scheme = from_functions.learned(lambda weight, T, offset=0: weight.data[None, offset:offset + T],
                                                       np.zeros((8, 2)))
    with pytest.raises(ValueError, match=r"plain ndarray .* slice the table instead"):
        scheme.rows(3, 0)
    scheme = from_functions.learned(lambda weight, T, offset=0: weight[offset:offset + T],
                                                       np.zeros((8, 2)))
    with pytest.raises(ValueError, match=r"returned shape \(3, 2\); it must return \(1, T, d_model\)"):
        scheme.rows(3, 0)


def test_cached_generation_runs_the_functions_at_the_cached_positions():
    """With the reference lookup, cached and uncached generation agree; with the offset ignored they part."""
    cfg = config("learned", max_len=16, seed=3)
    model = TinyGPT(cfg)
    prompt = asarray(np.array([[1, 5, 2, 7]]))
    ignored = lambda weight, T, offset=0: weight[None, :T]  # noqa: E731
    runs = {}
    for name, fn in [("reference", learned_reference.position_rows), ("offset ignored", ignored)]:
        model.positional = from_functions.learned(fn, model.positional.weight.data)
        with no_grad():
            runs[name] = [to_numpy(model.generate(prompt, 10, greedy=True, use_cache=c)) for c in (True, False)]
    np.testing.assert_array_equal(*runs["reference"])
    cached, full = runs["offset ignored"]
    assert (cached != full).any()
