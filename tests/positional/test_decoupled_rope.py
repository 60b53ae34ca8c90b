r"""Decoupled RoPE (DeepSeek-V2's MLA): the rotary score depends on the offset, by hand.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import rng, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT

from positional_helpers import N, make, T, P, set_, logits, qk, SQRT2

pytestmark = pytest.mark.usefixtures("each_backend")


def test_decoupled_rope_scores_depend_on_the_offset_not_the_sum():
    # the rotary part is (R_i q^R)^T (R_j k^R) = q^{R T} R_{j-i} k^R; the pair (i, j) = (5, 1) and the pair (4, 2)
    # share the sum i + j = 6 but not the offset, and the pair (7, 3) shares the offset 4 with (5, 1)
    scheme = make("decoupled_rope", {"d_rope": 4})
    q, k = qk(1, 1, same=True)
    at = {(i, j): logits(scheme, q, k, P([i]), P([j]))[..., 0, 0] for i, j in [(5, 1), (4, 2), (7, 3)]}
    np.testing.assert_allclose(at[(7, 3)], at[(5, 1)], rtol=0, atol=1e-12)
    assert np.abs(at[(4, 2)] - at[(5, 1)]).max() > 1e-2


def test_decoupled_rope_rotary_score_by_hand():
    # d_model 2, one head, d_rope 2 (theta_0 = 1): W^{QR} = W^{KR} = I, q = (1, 0), k = (0, 1) at every position,
    # so q^R = (1, 0), k^R = (0, 1). Rotate-half on 2 channels: R_m (a, b) = (a cos m - b sin m, b cos m + a sin m),
    # R_i q^R = (cos i, sin i), R_j k^R = (-sin j, cos j); their product is sin(i - j), over sqrt(d_head) = sqrt 2
    scheme = make("decoupled_rope", {"d_rope": 2}, d_model=2, n_heads=1)
    set_(scheme.layers[0].W_QR.weight, np.eye(2))
    set_(scheme.layers[0].W_KR.weight, np.eye(2))
    q_pos, k_pos = [3, 4], [0, 1, 2, 3, 4]
    q, k = T(np.tile([1.0, 0.0], (1, 1, 2, 1))), T(np.tile([0.0, 1.0], (1, 1, 5, 1)))
    got = N(scheme.score_bias(q, k, P(q_pos), P(k_pos), 0))[0, 0]
    np.testing.assert_allclose(got, [[math.sin(i - j) / SQRT2 for j in k_pos] for i in q_pos], rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------
# The two rotary parts, as chapter 11 reads them from DeepSeek-style checkpoints: the rotary query against the
# one shared rotary key makes the score bias, and a token's rotary key depends on that token alone (which is
# what lets MLA cache it once for all heads)
# ---------------------------------------------------------------------------


def test_decoupled_rope_rotary_parts_make_the_score_bias():
    model = TinyGPT(GPTConfig(d_model=32, n_heads=4, n_layers=2, positional="decoupled_rope")).to_dtype("float64")
    s = model.positional
    g = rng(0)
    q, k = Tensor(g.normal(size=(2, 4, 5, 8))), Tensor(g.normal(size=(2, 4, 7, 8)))
    q_pos, k_pos = xp.arange(2, 7), xp.arange(7)
    key = s.rotary_key(k, k_pos, 1).data
    assert key.shape == (2, 1, 7, s.d_rope)                                   # one key for all heads
    both = s.rotary_query(q, q_pos, 1).data @ xp.swapaxes(key, -1, -2)
    np.testing.assert_allclose(to_numpy(both), to_numpy(s.score_bias(q, k, q_pos, k_pos, 1).data), atol=1e-12)
    # a token's rotary key depends on that token alone: computed alone, it is the same
    alone = s.rotary_key(Tensor(k.data[:, :, 3:4]), k_pos[3:4], 1).data
    np.testing.assert_allclose(to_numpy(alone[:, :, 0]), to_numpy(key[:, :, 3]), atol=1e-12)
