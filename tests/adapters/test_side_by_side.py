"""Side-by-side training: your functions inside the model give the library's curve, a wrong one parts from it."""
import pytest

from mini_transformer.model import tasks
from mini_transformer.model import GPTConfig
from exercises.adapters import from_functions
from exercises.adapters.side_by_side import train_side_by_side
from solutions import rope as reference

CFG = GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=8, positional="rope")


def batches(g):
    b = tasks.copy_task(8, 4, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


def test_the_reference_functions_train_exactly_like_the_library():
    res = train_side_by_side(CFG, from_functions.rope(reference.RotaryEmbedding(CFG.d_head), reference.apply_rotary),
                             batches, steps=6)
    assert res.first_difference is None and res.max_difference <= 1e-12
    assert "exactly as the library does" in res.report()


@pytest.mark.parametrize("wrong", [
    lambda x, cos, sin: x * cos - reference.rotate_half(x) * sin,              # turns the wrong way
    lambda x, cos, sin: x * cos + reference.rotate_half(x) * cos,              # sin and cos mixed up
])
def test_a_wrong_rotation_is_reported_where_the_curves_part(wrong):
    res = train_side_by_side(CFG, from_functions.rope(reference.RotaryEmbedding(CFG.d_head), wrong), batches, steps=6)
    assert res.first_difference == 0                                           # the very first loss differs
    assert "the curves part at step 0" in res.report()


def test_positions_with_a_gap_are_refused_in_a_sentence():
    scheme = from_functions.rope(reference.RotaryEmbedding(4), reference.apply_rotary)
    from mini_transformer import Tensor
    from mini_transformer.engine import backend
    x = Tensor(backend.rng(0).normal(size=(1, 1, 2, 4)))
    with pytest.raises(ValueError, match="consecutive positions"):
        scheme.rotate(x, backend.asarray([0, 5]), 0)


def test_the_plot_marks_where_the_curves_part():
    from exercises.adapters.side_by_side import SideBySide
    ax = SideBySide(library=[3.0, 2.0, 1.0], yours=[3.0, 2.5, 2.0], tolerance=1e-6).plot(yours="mine")
    assert [line.get_label() for line in ax.get_lines()] == ["library", "mine", "the curves part"]
    assert list(ax.get_lines()[2].get_xdata()) == [1, 1]                      # the vertical line at step 1
    ax = SideBySide(library=[1.0, 0.5], yours=[1.0, 0.5], tolerance=1e-6).plot(log=True)
    assert len(ax.get_lines()) == 2 and ax.get_yscale() == "log"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rope_from_your_functions_turns_like_the_library_at_any_offset(each_backend, dtype):
    # the chapter's side-by-side scheme: tables from RotaryEmbedding, the turn from the public apply_rotary
    import numpy as np
    from mini_transformer import Tensor
    from mini_transformer.engine import backend
    from mini_transformer.positional import make_scheme
    from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary
    mine = from_functions.rope(RotaryEmbedding(4), apply_rotary)
    library = make_scheme(GPTConfig(vocab_size=8, d_model=4, n_heads=1, n_layers=1, max_len=16, positional="rope"),
                          backend.rng(0)).to_dtype("float64")
    x = Tensor(backend.asarray(np.random.default_rng(2).normal(size=(1, 1, 3, 4)).astype(dtype)))
    for pos in ([5, 6, 7], [0]):
        P = backend.asarray(np.asarray(pos, dtype=np.int64))
        got = mine.rotate(x[:, :, :len(pos)], P, 0)
        assert str(got.dtype) == dtype
        np.testing.assert_allclose(backend.to_numpy(got), backend.to_numpy(library.rotate(x[:, :, :len(pos)], P, 0)),
                                   rtol=0, atol=1e-15 if dtype == "float64" else 1e-6)
