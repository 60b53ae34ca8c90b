r"""Sinusoidal positions (Vaswani et al., 2017): the values, the shift as a rotation, the offset-only dot product.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer.positional import sinusoidal_positional_encoding

from positional_helpers import N, make, T

pytestmark = pytest.mark.usefixtures("each_backend")


def test_sinusoidal_values_and_linear_offset_property():
    # d_model 4, base 10000: omega = (1, 10000^(-2/4) = 0.01); PE(t) = (sin t, cos t, sin .01t, cos .01t)
    pe = N(sinusoidal_positional_encoding(3, 4))
    assert pe.shape == (3, 4)
    np.testing.assert_allclose(pe[0], [0.0, 1.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(pe[1], [0.8414709848078965, 0.5403023058681398, 0.009999833334166664,
                                       0.9999500004166653], atol=1e-15)
    np.testing.assert_allclose(pe[2], [0.9092974268256817, -0.4161468365471424, 0.01999866669333308,
                                       0.9998000066665778], atol=1e-15)
    # PE(t + k) = R(k omega_i) PE(t) in each (sin, cos) pair, R(phi) = [[cos, sin], [-sin, cos]], same R for every t
    d, k = 8, 3
    pe = N(sinusoidal_positional_encoding(20, d))
    for i in range(d // 2):
        phi = k * 10000.0 ** (-2 * i / d)
        R = np.array([[math.cos(phi), math.sin(phi)], [-math.sin(phi), math.cos(phi)]])
        np.testing.assert_allclose(pe[k:, 2 * i:2 * i + 2], pe[:-k, 2 * i:2 * i + 2] @ R.T, atol=1e-12)


def test_sinusoidal_dot_product_depends_only_on_the_offset():
    # PE(m) . PE(n) = sum_i [sin(m w) sin(n w) + cos(m w) cos(n w)] = sum_i cos((m - n) w_i)
    d = 16
    pe = N(sinusoidal_positional_encoding(40, d))
    for m, n in [(7, 3), (3, 7), (30, 5), (12, 12)]:
        expected = sum(math.cos((m - n) * 10000.0 ** (-2 * i / d)) for i in range(d // 2))
        assert pe[m] @ pe[n] == pytest.approx(expected, abs=1e-12)


def test_sinusoidal_embed_by_hand_with_the_config_base():
    # d_model 4, base 100: omega = (100^0, 100^(-2/4)) = (1, 0.1); PE(t) = (sin t, cos t, sin .1t, cos .1t)
    scheme = make("sinusoidal", d_model=4, n_heads=1, sinusoidal_base=100.0)
    out = N(scheme.embed(T(np.zeros((1, 2, 4))), 1))[0]      # positions 1 and 2
    np.testing.assert_allclose(out, [[0.8414709848078965, 0.5403023058681398, 0.09983341664682815, 0.9950041652780258],
                                     [0.9092974268256817, -0.4161468365471424, 0.19866933079506122, 0.9800665778412416]],
                               rtol=0, atol=1e-15)
