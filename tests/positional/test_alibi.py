r"""ALiBi (Press et al., 2022): the slopes for any head count, the causal and the symmetric bias.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from mini_transformer.model import GPTConfig, TinyEncoder
from mini_transformer.positional import alibi_bias, alibi_slopes

from positional_helpers import N, make, P, qk

pytestmark = pytest.mark.usefixtures("each_backend")


def test_alibi_slopes_and_bias():
    # powers of two: 2^(-8h/H); H 8 -> 1/2 .. 1/256
    np.testing.assert_array_equal(N(alibi_slopes(8)), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])
    # H 6: the 4 slopes of H 4 (2^-2, 2^-4, 2^-6, 2^-8), then every other slope of H 8
    # (1/2, 1/8, 1/32, 1/128), the first 6 - 4 = 2 of them
    np.testing.assert_array_equal(N(alibi_slopes(6)), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8])
    # H 12: the 8 slopes of H 8, then every other of H 16 (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5)
    np.testing.assert_allclose(N(alibi_slopes(12)), [2.0 ** -h for h in range(1, 9)]
                               + [0.7071067811865476, 0.3535533905932738, 0.1767766952966369,
                                  0.08838834764831845], rtol=1e-15)
    # H 2 -> slopes 1/16, 1/256. T_q 2 queries at positions 1, 2 over keys 0, 1, 2; -m (i - j), 0 for the future
    np.testing.assert_allclose(N(alibi_bias(2, 2, 3)), [[[[-1 / 16, 0, 0], [-2 / 16, -1 / 16, 0]],
                                                         [[-1 / 256, 0, 0], [-2 / 256, -1 / 256, 0]]]])
    sym = N(alibi_bias(2, 3, 3, bidirectional=True))
    np.testing.assert_array_equal(sym, sym.transpose(0, 1, 3, 2))
    assert sym[0, 0, 0, 2] == -2 / 16


def test_alibi_in_a_decoder_penalises_the_past_only():
    # one decoding step: the query at 5 over keys at 0, 3, 4, 5 (a window that dropped 1 and 2): -m (5 - j)
    scheme = make("alibi", causal=True)
    q, k = qk(1, 4)
    bias = N(scheme.score_bias(q, k, P([5]), P([0, 3, 4, 5]), 0))[0, :, 0]      # (H, 4)
    np.testing.assert_array_equal(bias, [[-5 / 16, -2 / 16, -1 / 16, 0.0], [-5 / 256, -2 / 256, -1 / 256, 0.0]])


def test_alibi_in_an_encoder_is_symmetric_and_is_minus_slope_times_distance():
    # TinyEncoder builds its scheme itself: H 2 gives slopes 2^-4 and 2^-8; the bias is -m |i - j|
    scheme = TinyEncoder(GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=8,
                                   positional="alibi")).positional
    q, k = qk(4, 4)
    pos = P(np.arange(10, 14))
    bias = N(scheme.score_bias(q, k, pos, pos, 0))[0]         # (H, 4, 4)
    np.testing.assert_array_equal(bias, bias.transpose(0, 2, 1))
    distance = np.array([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]])
    np.testing.assert_array_equal(bias[0], -distance / 16)
    np.testing.assert_array_equal(bias[1], -distance / 256)
