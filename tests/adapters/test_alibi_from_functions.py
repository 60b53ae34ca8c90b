"""from_functions.alibi: a model that runs the reader's slopes and bias trains exactly like the library's."""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import tasks
from mini_transformer.engine.autograd import Tensor
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional.alibi import ALiBi
from exercises.adapters import from_functions
from exercises.adapters.side_by_side import train_side_by_side
from solutions import alibi as reference

CFG = GPTConfig(vocab_size=16, d_model=24, n_layers=1, n_heads=6, max_len=8, positional="alibi")  # 6 heads: the
# authors' rule for a head count that is not a power of two is inside the model too


def batches(g):
    b = tasks.copy_task(8, 4, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


@pytest.mark.parametrize("with_bias", [False, True], ids=["slopes only", "slopes and bias"])
def test_the_reference_functions_train_exactly_like_the_library(with_bias):
    scheme = from_functions.alibi(reference.alibi_slopes, reference.alibi_bias if with_bias else None)
    res = train_side_by_side(CFG, scheme, batches, steps=6)
    assert res.first_difference is None and res.max_difference <= 1e-12, res.report()


def naive_slopes(n_heads):  # 2^(-8h/H) for every H: wrong for 6 heads
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)


def bias_rewarding_distance(n_heads, T_q, T_k):
    return -reference.alibi_bias(n_heads, T_q, T_k)


@pytest.mark.parametrize("slopes, bias", [(naive_slopes, None), (reference.alibi_slopes, bias_rewarding_distance)],
                         ids=["power-of-two rule for 6 heads", "bias with the wrong sign"])
def test_a_wrong_function_is_reported_where_the_curves_part(slopes, bias):
    res = train_side_by_side(CFG, from_functions.alibi(slopes, bias), batches, steps=6)
    assert res.first_difference == 0 and "the curves part at step 0" in res.report()


def test_cached_decoding_with_your_bias_equals_the_full_forward():
    model = TinyGPT(CFG).to_dtype("float64")
    model.positional = from_functions.alibi(reference.alibi_slopes, reference.alibi_bias)
    x = np.random.default_rng(0).integers(0, 16, (2, 8))
    full = model(x).numpy()
    cache = model.new_cache()
    steps = [model(x[:, :3], cache=cache).numpy()] + [model(x[:, t:t + 1], cache=cache).numpy() for t in range(3, 8)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-12)  # T_q = 1 against T_k keys


def test_an_encoder_gets_the_symmetric_form_from_your_slopes():
    cfg = GPTConfig(**{**CFG.to_dict(), "positional": "alibi"})
    library, yours = TinyEncoder(cfg).to_dtype("float64"), TinyEncoder(cfg).to_dtype("float64")
    yours.positional = from_functions.alibi(reference.alibi_slopes, bidirectional=True)
    x = np.random.default_rng(1).integers(0, 16, (2, 8))
    np.testing.assert_allclose(yours(x).numpy(), library(x).numpy(), atol=1e-12)


def test_gaps_and_misuse_are_refused_in_a_sentence():
    scheme = from_functions.alibi(reference.alibi_slopes, reference.alibi_bias)
    q = Tensor(backend.rng(0).normal(size=(1, 2, 1, 4)))
    with pytest.raises(ValueError, match="consecutive keys"):
        scheme.score_bias(q, q, backend.asarray([9]), backend.asarray([0, 1, 7, 8, 9]), 0)  # sinks, then a window
    wrong_shape = from_functions.alibi(reference.alibi_slopes, lambda H, tq, tk: reference.alibi_bias(H, tq, tk)[0])
    with pytest.raises(ValueError, match=r"need \(1, H, T_q, T_k\)"):
        wrong_shape.score_bias(q, q, backend.asarray([2]), backend.asarray([0, 1, 2]), 0)
    with pytest.raises(ValueError, match="causal form"):
        from_functions.alibi(reference.alibi_slopes, reference.alibi_bias, bidirectional=True)


def test_the_signature_names_your_function():
    assert from_functions.alibi(reference.alibi_slopes).signature() == {
        "from_functions": "solutions.alibi.alibi_slopes", "bidirectional": False}
    assert from_functions.alibi(reference.alibi_slopes, reference.alibi_bias).signature()["from_functions"] == \
        "solutions.alibi.alibi_bias"
    assert ALiBi(4).signature() == {"bidirectional": False}
