"""The engine's reference ops: every op gradchecked in float64, hand-worked values, and clear errors.

Every test here runs twice, on NumPy and on the strict stand-in backend whose
arrays refuse implicit conversion exactly as CuPy's do. The fast kernels are
checked against these ops in ``test_kernels.py``.
"""
import math

import numpy as np
import pytest

import mini_transformer.engine.functional as F
from mini_transformer import Tensor, no_grad
from mini_transformer.engine import backend
from mini_transformer.engine.autograd import pad
from mini_transformer.engine.gradcheck import assert_gradcheck

pytestmark = pytest.mark.usefixtures("each_backend")

TOL = 1e-6


def t64(*shape, seed=0, positive=False, requires_grad=True):
    a = np.random.default_rng(seed).normal(size=shape)
    if positive:
        a = np.abs(a) + 0.5
    return Tensor(a, requires_grad=requires_grad, dtype="float64")


def idx(a):
    return backend.asarray(np.asarray(a))


# (name, function of the inputs, input shapes, positive inputs?)
OPS = [
    ("add broadcast", lambda a, b: a + b, [(2, 3, 4), (3, 1)], False),
    ("sub broadcast", lambda a, b: a - b, [(4,), (2, 3, 4)], False),
    ("mul broadcast", lambda a, b: a * b, [(2, 1, 4), (3, 1)], False),
    ("div broadcast", lambda a, b: a / b, [(2, 3), (3,)], True),
    ("scalar ops", lambda a: (2.0 - a) * 3.0 / 4.0 + 1.0, [(3, 2)], False),
    ("rdiv", lambda a: 1.0 / a, [(3,)], True),
    ("neg", lambda a: -a, [(2, 3)], False),
    ("pow", lambda a: a ** 3, [(2, 3)], False),
    ("pow fractional", lambda a: a ** 0.5, [(2, 3)], True),
    ("matmul 2d", lambda a, b: a @ b, [(3, 4), (4, 5)], False),
    ("matmul batched weight", lambda a, b: a @ b, [(2, 3, 4), (4, 5)], False),
    ("matmul batched broadcast", lambda a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)], False),
    ("sum all", lambda a: a.sum(), [(2, 3)], False),
    ("sum axis keepdims", lambda a: a.sum(axis=1, keepdims=True), [(2, 3, 4)], False),
    ("sum axes", lambda a: a.sum(axis=(0, 2)), [(2, 3, 4)], False),
    ("mean axis", lambda a: a.mean(axis=-1), [(2, 3, 4)], False),
    ("mean all", lambda a: a.mean(), [(2, 3)], False),
    ("max axis", lambda a: a.max(axis=1), [(2, 5, 3)], False),
    ("max all keepdims", lambda a: a.max(keepdims=True), [(4, 3)], False),
    ("reshape", lambda a: a.reshape(6, 2) * 1.0, [(3, 4)], False),
    ("transpose", lambda a: a.transpose(2, 0, 1), [(2, 3, 4)], False),
    ("T", lambda a: a.T, [(2, 3)], False),
    ("getitem slice", lambda a: a[1:, ::2], [(3, 5)], False),
    ("getitem int and None", lambda a: a[1, None, :, -1], [(3, 4, 2)], False),
    ("gather repeated", lambda a: a[idx([0, 2, 0, 0])], [(3, 4)], False),
    ("gather 2d ids", lambda a: a[idx([[1, 1], [0, 2]])], [(3, 4)], False),
    ("concat", lambda a, b: F.concat([a, b, a], axis=1), [(2, 3), (2, 1)], False),
    ("stack", lambda a, b: F.stack([a, b], axis=1), [(2, 3), (2, 3)], False),
    ("split", lambda a: F.split(a, [1, 3], axis=-1)[1] * F.split(a, 2, axis=0)[0].sum(), [(2, 4)], False),
    ("pad", lambda a: pad(a, [(0, 0), (1, 2)]), [(2, 3)], False),
    ("exp", lambda a: a.exp(), [(2, 3)], False),
    ("log", lambda a: a.log(), [(2, 3)], True),
    ("sqrt", lambda a: a.sqrt(), [(2, 3)], True),
    ("tanh", lambda a: a.tanh(), [(2, 3)], False),
    ("relu", lambda a: F.relu(a), [(3, 4)], False),
    ("gelu", lambda a: F.gelu(a), [(3, 4)], False),
    ("where", lambda a, b: F.where(a > 0, a, b), [(3, 4), (4,)], False),
    ("masked_fill", lambda a: a.masked_fill(a < 0, 0.5), [(3, 4)], False),
    ("astype", lambda a: a.astype("float64") * 2.0, [(3,)], False),
    ("softmax", lambda a: F.softmax(a, axis=-1), [(2, 3, 5)], False),
    ("softmax axis 0", lambda a: F.softmax(a, axis=0), [(4, 3)], False),
    ("log_softmax", lambda a: F.log_softmax(a, axis=-1), [(2, 3, 5)], False),
    ("layer_norm", lambda a, w, b: F.layer_norm(a, w, b), [(2, 3, 6), (6,), (6,)], False),
    ("rms_norm", lambda a, w: F.rms_norm(a, w), [(2, 3, 6), (6,)], False),
    ("attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)], False),
    ("attention bias", lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, bias=b),
     [(2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4), (1, 2, 3, 3)], False),
]


@pytest.mark.parametrize("name,f,shapes,positive", OPS, ids=[o[0] for o in OPS])
def test_gradcheck(name, f, shapes, positive):
    inputs = [t64(*s, seed=i, positive=positive) for i, s in enumerate(shapes)]
    assert_gradcheck(f, inputs, tol=TOL)


def test_gradcheck_attention_with_causal_mask_and_scale():
    mask = backend.asarray(np.tril(np.ones((4, 4), dtype=bool)))
    inputs = [t64(1, 2, 4, 3, seed=i) for i in range(3)]
    assert_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask=mask, scale=0.3), inputs, tol=TOL)


@pytest.mark.parametrize("ignore", [None, 1])
def test_gradcheck_cross_entropy(ignore):
    targets = idx([[0, 1, 2], [1, 3, 1]])
    assert_gradcheck(lambda z: F.cross_entropy(z, targets, ignore_index=ignore), [t64(2, 3, 4)], tol=TOL)


def test_gradcheck_dropout_with_fixed_mask():
    assert_gradcheck(lambda a: F.dropout(a, 0.3, backend.rng(7)), [t64(4, 5)], tol=TOL)


# ---------------------------------------------------------------------------
# Numbers worked out by hand
# ---------------------------------------------------------------------------

def test_softmax_of_zero_and_ln2_is_one_third_two_thirds():
    y = F.softmax(Tensor([0.0, math.log(2.0)], dtype="float64"))
    np.testing.assert_allclose(y.numpy(), [1 / 3, 2 / 3], rtol=1e-12)


def test_log_softmax_of_equal_logits_is_minus_ln_n():
    y = F.log_softmax(Tensor(np.zeros((2, 4)), dtype="float64"))
    np.testing.assert_allclose(y.numpy(), np.full((2, 4), -math.log(4)), rtol=1e-12)


def test_log_softmax_cross_entropy_and_token_nll_take_each_rows_own_max():
    # rows 2000 apart, equal within each: -ln 2 everywhere; a max over the whole array would leave e^{-2000} = 0
    # in row 1's sum and give ln 0
    z = np.array([[0.0, 0.0], [-2000.0, -2000.0]])
    np.testing.assert_allclose(F.log_softmax(Tensor(z, dtype="float64")).numpy(), np.full((2, 2), -math.log(2)),
                               rtol=1e-12)
    targets = backend.asarray(np.array([0, 1]))
    assert F.cross_entropy(Tensor(z, dtype="float64"), targets).item() == pytest.approx(math.log(2), rel=1e-12)
    nll = backend.to_numpy(F.token_nll(backend.asarray(z), targets))
    np.testing.assert_allclose(nll, [math.log(2)] * 2, rtol=1e-12)


def test_cross_entropy_hand_values():
    # uniform logits over 4 classes: -ln(1/4) = ln 4, whatever the target
    loss = F.cross_entropy(Tensor(np.zeros((1, 4)), dtype="float64"), idx([2]))
    assert abs(loss.item() - math.log(4)) < 1e-12
    # logits [0, ln 3]: p = [1/4, 3/4]; target 1 costs -ln(3/4), target 0 costs ln 4; ignored row counts for nothing
    logits = Tensor([[0.0, math.log(3.0)], [0.0, math.log(3.0)], [5.0, -5.0]], dtype="float64")
    loss = F.cross_entropy(logits, idx([1, 0, -1]), ignore_index=-1)
    assert abs(loss.item() - (-math.log(0.75) + math.log(4)) / 2) < 1e-12


def test_cross_entropy_of_confident_one_hot_logits_is_near_zero():
    logits = Tensor(np.eye(3) * 50.0, dtype="float64")
    loss = F.cross_entropy(logits, idx([0, 1, 2]))
    assert 0 <= loss.item() < 1e-20 + 2 * math.exp(-50)


def test_layer_norm_of_a_constant_row_is_the_bias():
    x = Tensor(np.full((2, 5), 3.7), dtype="float64")
    w = Tensor(np.arange(1.0, 6.0), dtype="float64")
    b = Tensor([0.1, 0.2, 0.3, 0.4, 0.5], dtype="float64")
    np.testing.assert_allclose(F.layer_norm(x, w, b).numpy(), [[0.1, 0.2, 0.3, 0.4, 0.5]] * 2, atol=1e-12)


def test_layer_norm_and_rms_norm_hand_values():
    # x = [1, 3]: mean 2, variance 1, so xhat = [-1, 1]; rms = sqrt(5), so x/rms = [1, 3]/sqrt(5)
    x = Tensor([[1.0, 3.0]], dtype="float64")
    ones, zeros = Tensor([1.0, 1.0], dtype="float64"), Tensor([0.0, 0.0], dtype="float64")
    np.testing.assert_allclose(F.layer_norm(x, ones, zeros, eps=0.0).numpy(), [[-1.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(F.rms_norm(x, ones, eps=0.0).numpy(), [[1 / 5 ** 0.5, 3 / 5 ** 0.5]], atol=1e-12)


def test_attention_with_equal_scores_averages_values_and_mask_hides_keys():
    q = Tensor(np.zeros((1, 1, 1, 2)), dtype="float64")
    k = Tensor(np.ones((1, 1, 3, 2)), dtype="float64")
    v = Tensor(np.array([1.0, 2.0, 6.0]).reshape(1, 1, 3, 1), dtype="float64")
    assert abs(F.scaled_dot_product_attention(q, k, v).item() - 3.0) < 1e-12
    mask = backend.asarray(np.array([True, True, False]))
    assert abs(F.scaled_dot_product_attention(q, k, v, mask=mask).item() - 1.5) < 1e-12


def test_gelu_hand_values():
    y = F.gelu(Tensor([0.0, 1.0, -1.0], dtype="float64")).numpy()
    u = math.sqrt(2 / math.pi) * (1 + 0.044715)
    np.testing.assert_allclose(y, [0.0, 0.5 * (1 + math.tanh(u)), -0.5 * (1 - math.tanh(u))], rtol=1e-12)


# ---------------------------------------------------------------------------
# Graph mechanics
# ---------------------------------------------------------------------------

def test_gradient_accumulates_when_a_tensor_is_used_twice():
    x = Tensor([3.0], requires_grad=True, dtype="float64")
    (x * x + x).sum().backward()
    assert x.grad.tolist() == [7.0]  # d/dx (x^2 + x) = 2x + 1
    (x * 2.0).sum().backward()       # a second backward adds to .grad
    assert x.grad.tolist() == [9.0]


def test_shared_gradient_arrays_are_not_aliased_into_each_other():
    a = Tensor([1.0], requires_grad=True)
    b = Tensor([2.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad = a.grad * 10
    assert b.grad.tolist() == [1.0]


def test_deep_graph_needs_no_recursion():
    x = Tensor([1.0], requires_grad=True, dtype="float64")
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    assert abs(x.grad.item() - 1.0001 ** 10_000) < 1e-6


def test_no_grad_and_detach_build_no_graph():
    x = Tensor([1.0, 2.0], requires_grad=True)
    with no_grad():
        y = x * 2
    assert not y.requires_grad
    z = (x * 2).detach()
    assert not z.requires_grad and z.numpy().tolist() == [2.0, 4.0]


def test_float32_by_default_float64_on_request():
    assert Tensor([1.0, 2.0]).dtype == "float32"
    assert Tensor(np.zeros(3)).dtype == "float64"  # an array keeps its dtype
    assert Tensor(np.zeros(3), dtype="float32").dtype == "float32"
    assert Tensor([1.0], dtype="float64").dtype == "float64"
    assert (Tensor([1.0]) * 2.0).dtype == "float32"


def test_astype_sends_the_gradient_back_in_the_input_dtype():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x.astype("float64") * 3.0).sum().backward()
    assert x.grad.dtype == "float32" and x.grad.tolist() == [3.0, 3.0]


def test_comparisons_give_masks():
    x = Tensor([-1.0, 0.0, 2.0])
    assert backend.to_numpy(x > 0).tolist() == [False, False, True]
    assert backend.to_numpy(x.eq(0.0)).tolist() == [False, True, False]


# ---------------------------------------------------------------------------
# Bad input: a clear error and nothing else
# ---------------------------------------------------------------------------

def test_mismatched_shapes_name_the_op_and_both_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        Tensor(np.zeros((2, 3))) + Tensor(np.zeros(4))
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        Tensor(np.zeros((2, 3))) @ Tensor(np.zeros((4, 5)))


def test_backward_on_non_scalar_needs_a_gradient():
    x = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"only on a scalar.*shape \(2,\)"):
        (x * 2).backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(TypeError, match="int64"):
        Tensor(np.array([1, 2]), requires_grad=True)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\)"):
        F.cross_entropy(Tensor(np.zeros((2, 3))), idx([0, 3]))
    with pytest.raises(ValueError, match="every target equals ignore_index=-1"):
        F.cross_entropy(Tensor(np.zeros((2, 3))), idx([-1, -1]), ignore_index=-1)


def test_gradcheck_linear_with_and_without_bias():
    assert_gradcheck(lambda x, w, b: F.linear(x, w, b), [t64(2, 3, 4), t64(4, 5, seed=1), t64(5, seed=2)], tol=TOL)
    assert_gradcheck(lambda x, w: F.linear(x, w), [t64(3, 4), t64(4, 2, seed=1)], tol=TOL)


def test_gradcheck_attention_bias_with_full_shape_and_mask():
    mask = backend.asarray(np.tril(np.ones((3, 3), dtype=bool)))
    inputs = [t64(2, 2, 3, 4, seed=i) for i in range(3)] + [t64(2, 2, 3, 3, seed=9)]
    assert_gradcheck(lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, bias=b, mask=mask), inputs, tol=TOL)


def test_attention_needs_a_batch_axis():
    with pytest.raises(ValueError, match=r"q has shape \(3, 4\); it needs at least one batch axis"):
        F.scaled_dot_product_attention(t64(3, 4), t64(3, 4), t64(3, 4))


def test_attention_refuses_a_bias_wider_than_the_scores():
    q = t64(1, 2, 3, 4)
    with pytest.raises(ValueError, match=r"bias of shape \(3, 2, 3, 3\) does not broadcast to the scores' shape "
                                         r"\(1, 2, 3, 3\)"):
        F.scaled_dot_product_attention(q, q, q, bias=t64(3, 2, 3, 3))
