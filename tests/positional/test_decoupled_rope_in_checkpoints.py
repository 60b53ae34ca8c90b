r"""Decoupled RoPE's two rotary parts, as chapter 11 reads them from DeepSeek-style checkpoints: the rotary query
against the one shared rotary key makes the scheme's score bias, and a token's rotary key depends on that token
alone (which is what lets MLA cache it once for all heads).
"""
import numpy as np

from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import rng, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT


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
