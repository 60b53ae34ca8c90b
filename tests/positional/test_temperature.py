"""Llama 4's attention temperature tuning: the scale by hand, the NoPE layer that applies it, its gradient,
and the KV cache against a full pass."""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import gradcheck
from mini_transformer.model import TinyGPT
from mini_transformer.positional import NoPETemperature, llama4_attention_scales
from mini_transformer import Tensor
from tests.positional.positional_helpers import A, N, P, T, logits


def host(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


@pytest.mark.parametrize("pos,expected", [
    (0, 1.0),                                   # floor(1 / 8192) = 0: log 1 = 0
    (8190, 1.0),                                # floor(8191 / 8192) = 0 still
    (8191, 1 + 0.1 * math.log(2)),              # the first step: floor(8192 / 8192) = 1
    (16383, 1 + 0.1 * math.log(3)),             # floor(16384 / 8192) = 2
    (24574, 1 + 0.1 * math.log(3)),             # floor(24575 / 8192) = 2, one short of the next step
    (81919, 1 + 0.1 * math.log(11)),            # floor(81920 / 8192) = 10
])
def test_the_scale_by_hand_at_llama4_settings(each_backend, pos, expected):
    got = N(llama4_attention_scales(P([pos]), floor_scale=8192, attn_scale=0.1))
    assert got.dtype == np.float64
    assert got[0] == pytest.approx(expected, rel=1e-15, abs=0)


def test_the_scale_keeps_the_shape_of_the_positions(each_backend):
    got = N(llama4_attention_scales(P([[0, 3], [4, 7]]), floor_scale=4, attn_scale=1.0))
    np.testing.assert_allclose(got, [[1.0, 1 + math.log(2)], [1 + math.log(2), 1 + math.log(3)]], rtol=1e-15)


NEEDS_FLOOR = "llama4_attention_scales: floor_scale must be an integer >= 1, got {} (tokens per step)."
NEEDS_ATTN = "llama4_attention_scales: attn_scale is {}; it must be a number of at least 0 (Llama 4 uses 0.1)."
BAD_SETTINGS = [
    pytest.param({"floor_scale": 0}, NEEDS_FLOOR.format(0), id="floor_scale_0"),
    pytest.param({"floor_scale": 8192.0}, NEEDS_FLOOR.format(8192.0), id="floor_scale_float"),
    pytest.param({"attn_scale": -0.1}, NEEDS_ATTN.format(-0.1), id="attn_scale_negative"),
    pytest.param({"attn_scale": True}, NEEDS_ATTN.format(True), id="attn_scale_bool"),
]


@pytest.mark.parametrize("kwargs,message", BAD_SETTINGS + [
    pytest.param({"positions": [-1, 0]}, "llama4_attention_scales: positions include -1; positions count tokens from 0, "
                 "so none may be negative.", id="negative_position"),
])
def test_bad_settings_are_refused_with_a_sentence(kwargs, message):
    args = {"positions": [0, 1], "floor_scale": 8192, "attn_scale": 0.1, **kwargs}
    with pytest.raises(ValueError) as refused:
        llama4_attention_scales(P(args.pop("positions")), **args)
    assert str(refused.value) == message


@pytest.mark.parametrize("kwargs,message", BAD_SETTINGS)
def test_the_scheme_refuses_bad_settings_when_built_not_at_its_first_call(kwargs, message):
    with pytest.raises(ValueError) as refused:
        NoPETemperature(**kwargs)
    assert str(refused.value) == message


def test_no_scale_is_plain_nope(each_backend):
    scheme = NoPETemperature(floor_scale=2, attn_scale=0.0)
    q, k = T(host(1, 2, 5, 4, seed=1)), T(host(1, 2, 5, 4, seed=2))
    pos = P(np.arange(5))
    plain = N(q @ k.transpose(0, 1, 3, 2)) / 2.0
    np.testing.assert_allclose(logits(scheme, q, k, pos, pos), plain, rtol=1e-14, atol=1e-14)


def test_each_query_row_is_multiplied_by_its_scale_and_the_keys_are_not(each_backend):
    # the defining property: the scores of query i are tau(pos_i) times NoPE's, whatever the key's position
    scheme = NoPETemperature(floor_scale=3, attn_scale=0.5)
    q, k = T(host(2, 2, 4, 4, seed=3)), T(host(2, 2, 6, 4, seed=4))
    q_pos, k_pos = P([5, 6, 7, 8]), P(np.arange(3, 9))
    tau = [1 + 0.5 * math.log(p // 3 + 1) for p in (6, 7, 8, 9)]               # floor((pos + 1) / 3), by hand
    plain = N(q @ k.transpose(0, 1, 3, 2)) / 2.0
    got = logits(scheme, q, k, q_pos, k_pos)
    np.testing.assert_allclose(got, plain * np.array(tau)[:, None], rtol=1e-13, atol=1e-13)
    assert scheme.rotate(k, k_pos, 0) is k                                     # keys pass untouched


def test_the_gradient_through_q_and_k_passes_gradcheck():
    scheme = NoPETemperature(floor_scale=2, attn_scale=0.3)
    q_pos, k_pos = P([1, 2, 3]), P([0, 1, 2, 3])
    q = Tensor(A(host(1, 2, 3, 4, seed=5)), requires_grad=True)
    k = Tensor(A(host(1, 2, 4, 4, seed=6)), requires_grad=True)
    worst = gradcheck(lambda q, k: scheme.score_bias(q, k, q_pos, k_pos, 0), [q, k])
    assert worst < 1e-9


def test_in_a_model_the_scale_changes_the_logits_only_from_its_first_step_on():
    # at floor_scale 3, positions 0 and 1 have tau = 1: a model with and without the scale agree there only
    from tests.positional.test_schemes_in_models import build, ids, logits as model_logits
    x = ids(T=6)
    tuned = model_logits(build(TinyGPT, "temperature", {"floor_scale": 3, "attn_scale": 0.7}), x)
    plain = model_logits(build(TinyGPT, "temperature", {"floor_scale": 3, "attn_scale": 0.0}), x)
    np.testing.assert_allclose(tuned[:, :2], plain[:, :2], rtol=1e-12, atol=1e-12)
    assert np.abs(tuned[:, 2:] - plain[:, 2:]).max() > 1e-3


def test_the_score_term_by_hand_with_the_query_count_the_key_count_and_the_width_all_different():
    # d = 4, so 1/sqrt(d) = 1/2; floor_scale 1, attn_scale 1: tau(0) = 1 + log 2, tau(1) = 1 + log 3
    # q.k rows: q_0 = e_0 meets k = (e_0, e_1, 3 e_0) as (1, 0, 3); q_1 = 2 e_1 meets them as (0, 2, 0)
    scheme = NoPETemperature(floor_scale=1, attn_scale=1.0)
    q = np.zeros((1, 1, 2, 4)); q[0, 0, 0, 0] = 1.0; q[0, 0, 1, 1] = 2.0
    k = np.zeros((1, 1, 3, 4)); k[0, 0, 0, 0] = 1.0; k[0, 0, 1, 1] = 1.0; k[0, 0, 2, 0] = 3.0
    got = N(scheme.score_bias(T(q), T(k), P([0, 1]), P([0, 1, 2]), 0))
    expected = [[math.log(2) * 1 / 2, 0.0, math.log(2) * 3 / 2],                  # (tau_0 - 1) q_0.k_j / 2
                [0.0, math.log(3) * 2 / 2, 0.0]]                                   # (tau_1 - 1) q_1.k_j / 2
    np.testing.assert_allclose(got[0, 0], expected, rtol=1e-15, atol=1e-15)


def test_the_defaults_are_llama4s():
    # Llama4TextConfig ships floor_scale 8192 and attn_scale 0.1 (the Llama-4-Scout entry in model_configs)
    assert NoPETemperature().settings.floor_scale == 8192 and NoPETemperature().settings.attn_scale == 0.1
    assert N(llama4_attention_scales(P([8190, 8191])))[0] == 1.0
    assert N(llama4_attention_scales(P([8190, 8191])))[1] == pytest.approx(1 + 0.1 * math.log(2), rel=1e-15)
