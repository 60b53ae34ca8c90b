r"""Chapter 11's references (``solutions/checkpoints.py``) against hand-worked numbers and the sources: the port
between the interleaved and rotate-half layouts, RoPE's frequencies from a config, the critical pair.

Expected values are worked by hand here or come from the sources, never from the code under test.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional.model_configs import MODELS
from solutions import checkpoints


def test_port_moves_the_columns_worked_by_hand():
    # 2 heads of 4: P = (0, 2, 1, 3) inside each head of the query and key blocks, values untouched
    row = np.arange(24.0)
    got = to_numpy(checkpoints.port_qk_weights(asarray(row), 2, 4))
    assert got.tolist() == [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15, *range(16, 24)]
    # 1 head of 6 with rotary_dim 4: channels 4 and 5 stay; 2 heads of 8: P = (0, 2, 4, 6, 1, 3, 5, 7)
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(18.0)), 1, 6, 4))
    assert got.tolist() == [0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11, *range(12, 18)]
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(48.0)), 2, 8))
    assert got[:16].tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]


def test_port_keeps_its_input_and_refuses_a_bad_width():
    W = rng(0).normal(size=(8, 24))
    before = W.copy()
    checkpoints.port_qk_weights(W, 2, 4)
    assert xp.array_equal(W, before)
    with pytest.raises(ValueError, match="3 \\* n_heads \\* d_head = 24 expected"):
        checkpoints.port_qk_weights(W[:, :20], 2, 4)
    with pytest.raises(ValueError, match="rotary_dim=3 must be even"):
        checkpoints.port_qk_weights(W, 2, 4, 3)


@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_a_ported_model_computes_what_the_interleaved_one_did(factor):
    """The defining property, on the library's model: RoPE_half(x[P]) = RoPE_interleaved(x)[P] for q and k."""
    cfg = dict(vocab_size=16, d_model=32, n_layers=2, n_heads=2, max_len=16, positional="rope")
    old = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True, "partial_rotary_factor": factor}))
    g = rng(3)
    state = {k: g.host.normal(0, 0.5, size=v.shape) for k, v in old.state_dict().items()}
    old.to_dtype("float64").load_state_dict(state)
    new = TinyGPT(GPTConfig(**cfg, extra={"partial_rotary_factor": factor})).to_dtype("float64")
    r = int(16 * factor)
    new.load_state_dict({k: to_numpy(checkpoints.port_qk_weights(asarray(v), 2, 16, r)) if ".W_qkv." in k else v
                         for k, v in state.items()})
    ids = g.integers(0, 16, (2, 10))
    with no_grad():
        np.testing.assert_allclose(to_numpy(new(ids).data), to_numpy(old(ids).data), atol=1e-10)
        new.load_state_dict(state)  # the weights as they are: a different model
        assert float(xp.abs(new(ids).data - old(ids).data).max()) > 0.1


def test_rope_frequencies_by_hand():
    small = {"hidden_size": 32, "num_attention_heads": 4, "max_position_embeddings": 64}   # d_head 8, base 10000
    np.testing.assert_allclose(to_numpy(checkpoints.rope_frequencies(small)), [1.0, 0.1, 0.01, 0.001], rtol=1e-12)
    phi2 = MODELS["Phi-2"]   # 80 channels, 0.4 of them turn: r = 32, theta_1 = 10000^(-2/32)
    f = to_numpy(checkpoints.rope_frequencies(phi2))
    assert f.shape == (16,) and math.isclose(f[1], 10000.0 ** (-1 / 16), rel_tol=1e-12)
    gemma = {"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "rope_theta": 10000.0}
    assert checkpoints.rope_frequencies(gemma).shape == (128,)            # head_dim wins over 3072 / 16 = 192
    v3 = {"hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "rope_theta": 10000.0}
    assert checkpoints.rope_frequencies(v3).shape == (32,)
    llama3 = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0}
    assert math.isclose(float(checkpoints.rope_frequencies(llama3)[-1]), 500000.0 ** (-126 / 128), rel_tol=1e-12)


def test_critical_pair_by_hand_and_from_the_survey():
    # survey section 6.2: Llama 2, d_h = 128, T_train = 4096 gives d_extra = 92, so r_crit = 46
    assert checkpoints.critical_pair(MODELS["Llama-2-7B"]) == 46
    # Llama 3.1: 2 pi 500000^(i/64) >= 8192 needs i/64 >= ln(8192 / 2 pi) / ln 500000 = 0.54663, so i = 35
    assert checkpoints.critical_pair(MODELS["Llama-3.1-8B"]) == 35
    # Phi-3: trained at 4096 (top level); 2 pi 10^(i/12) >= 4096 needs i >= 33.77, so 34
    phi3 = {"hidden_size": 3072, "num_attention_heads": 32, "rope_theta": 10000.0, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope"}}
    assert checkpoints.critical_pair(phi3) == 34
    # d 16, L 128: wavelengths 6.3, 19.9, 62.8, 198.7, ...: pair 3
    assert checkpoints.critical_pair({"hidden_size": 64, "num_attention_heads": 4,
                                      "max_position_embeddings": 128}) == 3


def test_reference_port_test_passes_on_the_reference():
    checkpoints.test_port(checkpoints.port_qk_weights)
