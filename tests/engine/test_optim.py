"""The optimisers, clipping and the schedule (``engine/optim.py``, and the fast AdamW of ``kernels/adamw.py``), on both CPU backends."""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend, kernels, nn
from mini_transformer.engine.optim import SGD, AdamW, cosine_lr

from two_layer import TwoLayer, ops  # noqa: F401  (ops is a fixture)

pytestmark = pytest.mark.usefixtures("each_backend")


def _param(value):
    return nn.Parameter(backend.asarray(np.array(value, dtype="float64")))


def test_adamw_two_steps_by_hand(ops):
    # A single 1x1 weight (so it is decayed), lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1.
    w = _param([[1.0]])
    opt = ops.AdamW([w], lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    w.grad = backend.asarray(np.array([[0.5]]))
    opt.step()
    # m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25: step = 0.5 / (0.5 + 1e-8); decay 0.1*0.1*1 = 0.01
    assert abs(w.item() - (1.0 - 0.01 - 0.1 * 0.5 / (0.5 + 1e-8))) < 1e-15
    assert abs(w.item() - 0.890000002) < 1e-9
    w.grad = backend.asarray(np.array([[-1.0]]))
    opt.step()
    m = 0.9 * 0.05 + 0.1 * -1.0              # -0.055
    v = 0.999 * 0.00025 + 0.001 * 1.0        # 0.00124975
    m_hat, v_hat = m / (1 - 0.9 ** 2), v / (1 - 0.999 ** 2)
    theta1 = 0.890000002
    expected = theta1 - 0.1 * 0.1 * theta1 - 0.1 * m_hat / (math.sqrt(v_hat) + 1e-8)
    assert abs(w.item() - expected) < 1e-9
    assert abs(expected - 0.9177104) < 1e-6  # 0.890000002 - 0.0089 + 0.0366103


def test_adamw_state_is_each_parameters_moments_and_the_step(ops):
    # one step with g = 0.5 on a 1x1 weight and g = [2, -2] on a vector: m = 0.1 g, v = 0.001 g^2 (betas 0.9, 0.999)
    w, b = _param([[1.0]]), _param([0.0, 0.0])
    opt = ops.AdamW([w, b], lr=0.1)
    assert sorted(opt.state_dict()) == ["m.0", "m.1", "t", "v.0", "v.1"]
    assert all(not np.any(v) for k, v in opt.state_dict().items())               # zeros before the first step
    w.grad, b.grad = backend.asarray(np.array([[0.5]])), backend.asarray(np.array([2.0, -2.0]))
    opt.step()
    state = opt.state_dict()
    assert state["t"] == 1 and state["m.0"].shape == (1, 1) and state["v.1"].shape == (2,)
    np.testing.assert_allclose(state["m.0"], [[0.05]], rtol=1e-12)
    np.testing.assert_allclose(state["v.0"], [[0.00025]], rtol=1e-12)
    np.testing.assert_allclose(state["m.1"], [0.2, -0.2], rtol=1e-12)
    np.testing.assert_allclose(state["v.1"], [0.004, 0.004], rtol=1e-12)
    state["m.1"][:] = 99.0                                                        # a copy: the optimiser is untouched
    np.testing.assert_allclose(opt.state_dict()["m.1"], [0.2, -0.2], rtol=1e-12)


def test_adamw_refuses_the_state_of_another_model_in_a_sentence(ops):
    opt = ops.AdamW([_param([[1.0]]), _param([0.0, 0.0])], lr=0.1)
    state = opt.state_dict()
    del state["v.1"]
    with pytest.raises(ValueError, match=r"the state has no entry 'v.1', but the optimiser has 2 parameters; the "
                                         r"state belongs to another model"):
        opt.load_state_dict(state)
    state = opt.state_dict()
    state["m.0"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"'m.0' has shape \(3,\), but parameter 0 has shape \(1, 1\)"):
        opt.load_state_dict(state)


def test_adamw_does_not_decay_vectors(ops):
    b = _param([1.0])
    opt = ops.AdamW([b], lr=0.1, weight_decay=0.5)
    b.grad = backend.asarray(np.array([0.0]))
    opt.step()
    assert b.item() == 1.0


def test_adamw_decays_every_matrix_and_no_vector_wherever_they_sit(ops):
    # matrix, vector, matrix, matrix: the last two share one stretch of the fast AdamW's flat buffer. With zero
    # gradients the Adam term is 0 / (0 + eps) = 0, so one step only decays: theta (1 - lr lambda)
    params = [_param([[1.0, 2.0]]), _param([3.0]), _param([[4.0]]), _param([[5.0], [6.0]])]
    opt = ops.AdamW(params, lr=0.1, weight_decay=0.5)
    if ops is kernels.FAST:
        assert opt.decayed == [[0, 2], [3, 6]]
    for p in params:
        p.grad = backend.xp.zeros(p.shape, dtype=p.dtype)
    opt.step()
    got = np.concatenate([backend.to_numpy(p.data).ravel() for p in params])
    np.testing.assert_allclose(got, [0.95, 1.9, 3.0, 3.8, 4.75, 5.7], rtol=1e-15)
    assert got[2] == 3.0                                              # the vector: exactly untouched


def test_sgd_momentum_by_hand():
    w = _param([2.0])
    opt = SGD([w], lr=0.1, momentum=0.9)
    for g in (1.0, 1.0):
        w.grad = backend.asarray(np.array([g]))
        opt.step()
    # v1 = 1, w = 2 - 0.1 = 1.9; v2 = 0.9 + 1 = 1.9, w = 1.9 - 0.19 = 1.71
    assert abs(w.item() - 1.71) < 1e-12


def test_optimizer_updates_reach_the_model_and_loading_keeps_them_connected():
    model = TwoLayer(backend.rng(0))
    opt = SGD(model.parameters(), lr=1.0)
    model.load_state_dict(TwoLayer(backend.rng(3)).state_dict())
    for p in model.parameters():
        p.grad = backend.xp.ones(p.shape, dtype=p.dtype)
    before = model.state_dict()
    opt.step()
    after = model.state_dict()
    assert all(np.allclose(after[k], before[k] - 1.0) for k in before)


def test_clip_grad_norm_scales_to_the_limit(ops):
    a, b = _param([0.0, 0.0]), _param([0.0])
    a.grad, b.grad = backend.asarray(np.array([3.0, 0.0])), backend.asarray(np.array([4.0]))
    total = ops.clip_grad_norm([a, b], 1.0)
    assert abs(total - 5.0) < 1e-12
    assert np.allclose(backend.to_numpy(a.grad), [0.6, 0.0], atol=1e-6)
    assert np.allclose(backend.to_numpy(b.grad), [0.8], atol=1e-6)


def test_clip_grad_norm_leaves_a_shared_gradient_array_alone_and_keeps_each_dtype(ops):
    # two parameters holding the same gradient array (as x + x gives): clipping must not scale it in place
    a, b = _param([3.0]), _param([4.0])
    shared = backend.asarray(np.array([3.0]))
    a.grad = b.grad = shared
    c = nn.Parameter(backend.asarray(np.array([0.0], dtype="float32")))
    c.grad = backend.asarray(np.array([0.0], dtype="float32"))
    total = ops.clip_grad_norm([a, b, c], 1.0)
    assert abs(total - 18 ** 0.5) < 1e-12
    assert backend.to_numpy(shared).tolist() == [3.0]                 # the original array, unscaled
    np.testing.assert_allclose(backend.to_numpy(a.grad), [3.0 / 18 ** 0.5], rtol=1e-6)
    assert c.grad.dtype == np.float32


def test_clip_grad_norm_without_gradients_returns_zero_and_touches_nothing(ops):
    a = _param([1.0, 2.0])
    assert ops.clip_grad_norm([a], 1.0) == 0.0 and a.grad is None


def test_cosine_schedule_endpoints():
    assert cosine_lr(0, 1.0, 10, 110) == pytest.approx(0.1)
    assert cosine_lr(9, 1.0, 10, 110) == pytest.approx(1.0)
    assert cosine_lr(60, 1.0, 10, 110, min_lr=0.0) == pytest.approx(0.5)
    assert cosine_lr(110, 1.0, 10, 110, min_lr=0.1) == pytest.approx(0.1)


def test_optimizer_rejects_bad_settings():
    with pytest.raises(ValueError, match="lr must be positive, got -1"):
        SGD([_param([1.0])], lr=-1)
    with pytest.raises(ValueError, match="no parameters"):
        AdamW([])


def test_changing_the_dtype_after_building_the_optimiser_keeps_training(ops):
    # model.to_dtype gives every parameter a new array; the fast AdamW's flat buffer must notice, not go stale
    model = TwoLayer(backend.rng(0))
    opt = ops.AdamW(model.parameters(), lr=0.1, weight_decay=0.0)
    model.to_dtype("float64")
    for p in model.parameters():
        p.grad = backend.xp.ones(p.shape, dtype=p.dtype)
    before = model.state_dict()
    opt.step()
    after = model.state_dict()
    # first Adam step with g = 1: m_hat = 1, v_hat = 1, so every weight moves by -lr / (1 + eps)
    for k in before:
        assert after[k].dtype == np.float64, k
        np.testing.assert_allclose(after[k], before[k] - 0.1 / (1 + 1e-8), rtol=1e-12, atol=1e-12, err_msg=k)
    assert all(p.data.dtype == np.float64 for p in model.parameters())


def test_an_optimiser_refuses_a_parameter_whose_shape_changed(ops):
    w = _param([[1.0, 2.0]])
    opt = ops.AdamW([w], lr=0.1)
    w.grad = backend.xp.ones(w.shape, dtype=w.dtype)
    opt.step()
    w.data = backend.xp.zeros((3, 1), dtype=w.dtype)
    w.grad = backend.xp.ones(w.shape, dtype=w.dtype)
    with pytest.raises(ValueError, match="shape"):
        opt.step()
