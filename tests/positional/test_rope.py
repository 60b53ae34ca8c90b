r"""RoPE (Su et al., 2021): the quarter turn, the relative property, complex multiplication, the two
pairings, norms, partial rotary, the scaled frequencies, the op's gradient and the scheme's signature.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.positional import (
    apply_rotary, apply_rotary_complex, rope_channel_permutation, RotaryEmbedding, rotate_half,
    rotate_interleaved,
)

from positional_helpers import A, N, randn, make, T, P

pytestmark = pytest.mark.usefixtures("each_backend")


def test_rotate_half():
    np.testing.assert_array_equal(N(rotate_half(A([1.0, 2.0, 3.0, 4.0]))), [-3.0, -4.0, 1.0, 2.0])
    np.testing.assert_array_equal(N(rotate_interleaved(A([1.0, 2.0, 3.0, 4.0]))), [-2.0, 1.0, -4.0, 3.0])


def _score(rope, q, k, m, n, interleaved=False):
    cos_m, sin_m = rope(1, offset=m)
    cos_n, sin_n = rope(1, offset=n)
    return float((apply_rotary(q, cos_m, sin_m, interleaved) * apply_rotary(k, cos_n, sin_n, interleaved)).sum())


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_relative_position_property(interleaved):
    rope = RotaryEmbedding(16, interleaved=interleaved)
    q, k = randn(1, 16, seed=1), randn(1, 16, seed=2)
    assert math.isclose(_score(rope, q, k, 3, 1, interleaved), _score(rope, q, k, 103, 101, interleaved),
                        rel_tol=1e-12)
    assert not math.isclose(_score(rope, q, k, 3, 1, interleaved), _score(rope, q, k, 3, 2, interleaved),
                            rel_tol=1e-3)


def test_rope_matches_complex_multiplication():
    # by hand: d 2, theta_0 = 1; (1, 0) at position 1 turns to (cos 1, sin 1); (0, 1) to (-sin 1, cos 1)
    rope = RotaryEmbedding(2, interleaved=True)
    cos, sin = rope(1, offset=1)
    np.testing.assert_allclose(N(apply_rotary(A([[1.0, 0.0], [0.0, 1.0]])[:, None, :], cos, sin, True))[:, 0],
                               [[0.5403023058681398, 0.8414709848078965], [-0.8414709848078965, 0.5403023058681398]],
                               atol=1e-15)
    d, T, offset = 8, 5, 7
    x = randn(2, 3, T, d, seed=3)
    pos = backend.asarray(np.arange(offset, offset + T))
    inv_freq = A([10000.0 ** (-2 * i / d) for i in range(d // 2)])
    reference = N(apply_rotary_complex(x, pos, inv_freq))
    cos, sin = RotaryEmbedding(d, interleaved=True)(T, offset)
    np.testing.assert_allclose(N(apply_rotary(x, cos, sin, interleaved=True)), reference, atol=1e-12)
    # the rotate-half convention is the same rotation after the channel permutation P
    P = rope_channel_permutation(d)
    cos, sin = RotaryEmbedding(d)(T, offset)
    np.testing.assert_allclose(N(apply_rotary(x[..., P], cos, sin)), reference[..., N(P)], atol=1e-12)


def test_rope_conventions_give_identical_scores_after_the_channel_permutation():
    d = 16
    # P by hand for d 8: even channels first, then odd ones
    np.testing.assert_array_equal(N(rope_channel_permutation(8)), [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(N(rope_channel_permutation(8, rotary_dim=4)), [0, 2, 1, 3, 4, 5, 6, 7])
    q, k = randn(1, d, seed=4), randn(1, d, seed=5)
    P = rope_channel_permutation(d)
    half, inter = RotaryEmbedding(d), RotaryEmbedding(d, interleaved=True)
    for m, n in [(0, 0), (5, 2), (40, 41)]:
        assert _score(half, q[..., P], k[..., P], m, n) == pytest.approx(_score(inter, q, k, m, n, True), abs=1e-12)
    # without the permutation the two conventions are different models
    assert abs(_score(half, q, k, 5, 2) - _score(inter, q, k, 5, 2, True)) > 1e-3


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_preserves_norms(interleaved):
    x = randn(2, 4, 9, 16, seed=6)
    cos, sin = RotaryEmbedding(16, interleaved=interleaved)(9, offset=1000)
    np.testing.assert_allclose(np.linalg.norm(N(apply_rotary(x, cos, sin, interleaved)), axis=-1),
                               np.linalg.norm(N(x), axis=-1), rtol=1e-12)


def test_rope_scores_are_not_monotone_in_distance():
    # q = k = all ones, d 8, rotate-half: pair (i, i+4) is (1, 1), so score(delta) = sum_i 2 cos(delta theta_i),
    # theta = (1, .1, .01, .001).  delta 3: 2(cos 3 + cos .3 + cos .03 + cos .003) = 2(-.98999 + .95534 + .99955
    # + 1.00000) = 3.9298;  delta 6: 2(cos 6 + cos .6 + cos .06 + cos .006) = 2(.96017 + .82534 + .99820 + .99998)
    # = 7.5674. The farther key scores higher.
    rope = RotaryEmbedding(8)
    ones = A(np.ones((1, 8)))
    s3, s6 = _score(rope, ones, ones, 3, 0), _score(rope, ones, ones, 6, 0)
    assert s3 == pytest.approx(2 * (math.cos(3) + math.cos(0.3) + math.cos(0.03) + math.cos(0.003)), abs=1e-13)
    assert s6 == pytest.approx(2 * (math.cos(6) + math.cos(0.6) + math.cos(0.06) + math.cos(0.006)), abs=1e-13)
    assert s6 > s3


def test_partial_rotary_turns_only_the_first_channels():
    d = 8
    rope = RotaryEmbedding(d, partial_rotary_factor=0.5)
    cos, sin = rope(6, offset=2)
    assert cos.shape == (6, 4)
    # theta over the rotary width r = 4: (1, 10000^(-2/4) = 0.01); position 2, pair 1 -> cos(0.02)
    assert float(cos[0, 1]) == pytest.approx(math.cos(0.02), abs=1e-15)
    x = randn(1, 1, 6, d, seed=7)
    y = N(apply_rotary(x, cos, sin))
    np.testing.assert_array_equal(y[..., 4:], N(x)[..., 4:])
    assert np.abs(y[..., :4] - N(x)[..., :4]).max() > 1e-2
    q, k = randn(1, d, seed=8), randn(1, d, seed=9)
    assert _score(rope, q, k, 9, 4) == pytest.approx(_score(rope, q, k, 25, 20), abs=1e-12)


def test_rope_scaling_modes():
    d = 8
    # linear by 2: angle (m / 2) theta_i, so position 8 sees what position 4 saw without scaling
    lin, plain = RotaryEmbedding(d, scaling="linear", factor=2.0), RotaryEmbedding(d)
    for a, b in zip(lin(1, offset=8), plain(1, offset=4)):
        np.testing.assert_allclose(N(a), N(b), atol=1e-15)
    # NTK by 2: base' = 10000 * 2^(8/6), theta_i' = base'^(-2i/8): theta_0 = 1 unchanged, and
    # theta_3' = 10000^(-3/4) * 2^(-1) = 0.001 / 2 = 0.0005 (the last pair slowed by exactly s)
    ntk = RotaryEmbedding(d, scaling="ntk", factor=2.0)
    assert float(ntk.inv_freq[0]) == 1.0
    assert float(ntk.inv_freq[-1]) == pytest.approx(0.0005, rel=1e-12)
    assert float(ntk.inv_freq[-1]) < float(plain.inv_freq[-1])
    # the seed-style front is only a way to write the dict
    as_dict = RotaryEmbedding(d, rope_scaling={"rope_type": "ntk", "factor": 2.0})
    np.testing.assert_array_equal(N(ntk.inv_freq), N(as_dict.inv_freq))
    # YaRN's attention factor multiplies cos and sin: 0.1 ln 4 + 1 = 1.1386294361 at position 0
    yarn = RotaryEmbedding(d, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                            "original_max_position_embeddings": 2048})
    cos, sin = yarn(1, offset=0)
    np.testing.assert_allclose(N(cos), 1.138629436111989, rtol=1e-14)
    np.testing.assert_array_equal(N(sin), 0.0)


def test_the_public_apply_rotary_takes_a_tensor_and_its_gradient():
    from mini_transformer.engine.gradcheck import assert_gradcheck
    from mini_transformer.positional import RotaryEmbedding, apply_rotary
    for interleaved in (False, True):
        cos, sin = RotaryEmbedding(4, interleaved=interleaved)(3, offset=2)
        a = np.random.default_rng(1).normal(size=(1, 2, 3, 4))
        x = Tensor(backend.asarray(a), requires_grad=True)
        np.testing.assert_allclose(N(apply_rotary(x, cos, sin, interleaved)),
                                   N(apply_rotary(backend.asarray(a), cos, sin, interleaved)), rtol=0, atol=1e-15)
        # linear in x, so only rounding is left (see tests/engine/test_functional.py)
        assert_gradcheck(lambda t: apply_rotary(t, cos, sin, interleaved), [x], tol=1e-9)


@pytest.mark.parametrize("interleaved, want", [
    # d_head 4, base 100: theta = (1, 0.1). x = (1, 0, 0, 1) at position 2.
    # rotate-half pairs (0, 2), (1, 3): (1, 0) turned by 2 -> (cos 2, sin 2); (0, 1) turned by .2 -> (-sin .2, cos .2)
    (False, [-0.4161468365471424, -0.19866933079506122, 0.9092974268256817, 0.9800665778412416]),
    # interleaved pairs (0, 1), (2, 3): (1, 0) turned by 2, (0, 1) turned by .2
    (True, [-0.4161468365471424, 0.9092974268256817, -0.19866933079506122, 0.9800665778412416]),
], ids=["rotate-half", "interleaved"])
def test_rope_rotate_by_hand_with_the_config_base(interleaved, want):
    scheme = make("rope", {"rope_interleaved": interleaved}, d_model=4, n_heads=1, rope_base=100.0)
    out = N(scheme.rotate(T([[[[1.0, 0.0, 0.0, 1.0]]]]), P([2]), 0))[0, 0, 0]
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-15)


def test_rope_tables_for_no_positions_are_empty_even_when_they_depend_on_the_length():
    rope = make("rope", d_model=8, n_heads=1, rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    cos, sin = rope.rotary.at(P(np.zeros(0)))
    assert N(cos).shape == (0, 8) and N(sin).shape == (0, 8)


def test_rope_signature_by_hand():
    from mini_transformer.positional import RoPE
    plain = make("rope", d_model=8, n_heads=1)                    # d_head 8, max_len 16
    assert plain.signature() == {"rope_interleaved": False, "partial_rotary_factor": 1.0, "rope_base": 10000.0,
                                 "rope_scaling": None, "max_len": 16, "rope_theta": 10000.0, "rotary_dim": 8,
                                 "pairing": "rotate-half (i, i + d/2)", "rope_type": "default",
                                 "original_max_position_embeddings": 16, "target_max_position_embeddings": 16}
    # YaRN trained at 4, stretched 2x, in a model whose max_len is 16: the record keeps 4 and 8, not 16
    yarn = {"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4}
    sig = make("rope", {"rope_interleaved": True}, d_model=8, n_heads=1, rope_scaling=yarn).signature()
    assert (sig["pairing"], sig["rope_type"], sig["original_max_position_embeddings"],
            sig["target_max_position_embeddings"]) == ("interleaved (2i, 2i+1)", "yarn", 4, 8)
    assert RoPE(8).signature()["target_max_position_embeddings"] is None      # built with no length at all
    assert RoPE(8, rope_scaling={"type": "dynamic", "factor": 2.0}, max_position_embeddings=4).rerotate_keys


# ---------------------------------------------------------------------------
# The rotation as an op: its backward by central differences
# ---------------------------------------------------------------------------

TOL = 1e-9   # the op is linear in x, so central differences leave only rounding (tests/engine/test_functional.py)


def t64(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True, dtype="float64")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("r", [4, 2])
def test_gradcheck_apply_rotary_conventions_and_partial(interleaved, r):
    ang = np.random.default_rng(3).normal(size=(3, r // 2))
    ang = np.repeat(ang, 2, axis=-1) if interleaved else np.concatenate([ang, ang], axis=-1)
    cos, sin = backend.asarray(np.cos(ang)), backend.asarray(np.sin(ang))
    assert_gradcheck(lambda x: apply_rotary(x, cos, sin, interleaved=interleaved), [t64(2, 2, 3, 4)], tol=TOL)
