r"""Transformer-XL (Dai et al., 2019): terms (b), (c), (d) by hand, the config's base, consecutive positions.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from positional_helpers import N, make, T, P, set_, qk, SQRT2

pytestmark = pytest.mark.usefixtures("each_backend")


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "encoder"])
def test_transformer_xl_terms_b_c_d_by_hand(causal):
    # d_model 2, one head: R_d = (sin d, cos d) (omega_0 = 1 for any base), W_{k,R} = I, v = (0.5, 0), u = (0, 2),
    # q_0 = (1, 0), q_1 = (0, 1), k_0 = (1, 1), k_1 = (3, 0). A_ij = (q_i + v) . R_{i-j} + u . k_j, over sqrt 2:
    #   (0, 0): (1.5, 0).(0, 1) + 2 = 2            (1, 0): (0.5, 1).(sin 1, cos 1) + 2 = 0.5 sin 1 + cos 1 + 2
    #   (1, 1): (0.5, 1).(0, 1) + 0 = 1            (0, 1): (1.5, 0).(-sin 1, cos 1) + 0 = -1.5 sin 1 (encoder only)
    scheme = make("transformer_xl", d_model=2, n_heads=1, causal=causal)
    set_(scheme.layers[0].W_kR.weight, np.eye(2))
    set_(scheme.v, [[0.5, 0.0]])
    set_(scheme.u, [[0.0, 2.0]])
    q, k = T([[[[1, 0], [0, 1]]]]), T([[[[1, 1], [3, 0]]]])
    pos = P([4, 5])                                          # any two consecutive positions: only i - j counts
    got = N(scheme.score_bias(q, k, pos, pos, 0))[0, 0] * SQRT2
    s1, c1 = math.sin(1.0), math.cos(1.0)
    assert got[0, 0] == pytest.approx(2.0, abs=1e-15) and got[1, 1] == pytest.approx(1.0, abs=1e-15)
    assert got[1, 0] == pytest.approx(0.5 * s1 + c1 + 2.0, abs=1e-15)
    if not causal:
        assert got[0, 1] == pytest.approx(-1.5 * s1, abs=1e-15)


def test_transformer_xl_reads_the_config_s_sinusoidal_base():
    # d_model 4, one head, base 100: R_d = (sin d, cos d, sin(d/10), cos(d/10)); W_{k,R} = I, u = v = 0 and
    # q = (0, 0, 1, 0) leave (b) = sin((i - j)/10), over sqrt(d_head) = 2
    scheme = make("transformer_xl", d_model=4, n_heads=1, causal=False, sinusoidal_base=100.0)
    set_(scheme.layers[0].W_kR.weight, np.eye(4))
    set_(scheme.u, np.zeros((1, 4)))
    set_(scheme.v, np.zeros((1, 4)))
    q = T(np.tile([0.0, 0.0, 1.0, 0.0], (1, 1, 3, 1)))
    got = N(scheme.score_bias(q, q, P([0, 1, 2]), P([0, 1, 2]), 0))[0, 0]
    np.testing.assert_allclose(got, [[math.sin((i - j) / 10) / 2 for j in range(3)] for i in range(3)],
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("q_pos, k_pos, name", [([0, 2], [0, 1, 2], "q_pos"), ([1, 2], [0, 2], "k_pos")])
def test_transformer_xl_refuses_positions_with_a_gap(q_pos, k_pos, name):
    scheme = make("transformer_xl", causal=False)
    q, k = qk(len(q_pos), len(k_pos))
    with pytest.raises(ValueError, match=rf"^transformer_xl: {name} must be consecutive integer positions"):
        scheme.score_bias(q, k, P(q_pos), P(k_pos), 0)
