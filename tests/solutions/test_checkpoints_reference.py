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
    with pytest.raises(ValueError, match="\\(n_heads \\+ 2 n_kv_heads\\) \\* d_head = 24 expected"):
        checkpoints.port_qk_weights(W[:, :20], 2, 4)
    with pytest.raises(ValueError, match="rotary_dim=3 must be even"):
        checkpoints.port_qk_weights(W, 2, 4, 3)


def test_a_grouped_query_port_moves_the_columns_worked_by_hand():
    # 4 query heads of 4 share 2 key-value heads: 16 query columns, 8 key, 8 value (32 in all).
    # P = (0, 2, 1, 3) inside each of the 4 query heads, and inside each of the 2 key heads
    # (columns 16-19 and 20-23); the values 24-31 stay.
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(32.0)), 4, 4, n_kv_heads=2))
    assert got.tolist() == [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15,
                            16, 18, 17, 19, 20, 22, 21, 23, *range(24, 32)]
    # the keys permuted by the query head count would cut the 8 key columns into 4 pieces of 2,
    # where P = (0, 1) moves nothing: the port above is not that
    assert got[16:24].tolist() != list(range(16, 24))
    # multi-query: 2 query heads of 8 and one key-value head; P = (0, 2, 4, 6, 1, 3, 5, 7)
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(32.0)), 2, 8, n_kv_heads=1))
    assert got.tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15,
                            16, 18, 20, 22, 17, 19, 21, 23, *range(24, 32)]
    # 2 query heads of 6, one key-value head, rotary_dim 4: channels 4 and 5 of every head stay
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(24.0)), 2, 6, 4, n_kv_heads=1))
    assert got.tolist() == [0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11, 12, 14, 13, 15, 16, 17, *range(18, 24)]
    # n_kv_heads equal to n_heads is multi-head attention, the default
    W = rng(1).normal(size=(8, 24))
    assert xp.array_equal(checkpoints.port_qk_weights(W, 2, 4, n_kv_heads=2), checkpoints.port_qk_weights(W, 2, 4))


def test_a_grouped_query_port_refuses_a_bad_head_count_or_width():
    W = rng(0).normal(size=(16, 32))                  # 4 query heads of 4, 2 key-value heads
    for bad in (3, 0, -2, 8, 2.5, True):
        with pytest.raises(ValueError, match=f"n_kv_heads={bad!r} must be a positive integer that divides n_heads=4"):
            checkpoints.port_qk_weights(W, 4, 4, n_kv_heads=bad)
    # the multi-head width (48) for a grouped-query layer: the key block is 2 * 4 wide, not 4 * 4
    with pytest.raises(ValueError, match="= 32 expected \\(queries 16, keys 8, values 8\\)"):
        checkpoints.port_qk_weights(rng(0).normal(size=(16, 48)), 4, 4, n_kv_heads=2)


def test_a_ported_grouped_query_model_computes_what_the_interleaved_one_did():
    """A grouped-query checkpoint (4 query heads, 2 key-value heads) run as the multi-head model whose key and
    value heads are repeated: query head h reads key-value head h // 2. Porting, then repeating, computes
    what the interleaved model did; the keys permuted by the query head count do not."""
    H, H_kv, d = 4, 2, 8
    d_q, d_kv = H * d, H_kv * d
    widen = np.concatenate([np.arange(d_q)] + [start + (h // 2) * d + np.arange(d)
                                               for start in (d_q, d_q + d_kv) for h in range(H)])
    cfg = dict(vocab_size=16, d_model=d_q, n_layers=2, n_heads=H, max_len=16, positional="rope")
    old = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True})).to_dtype("float64")
    g = rng(5)
    grouped = {k: g.host.normal(0, 0.5, size=v.shape[:-1] + (d_q + 2 * d_kv,) if ".W_qkv." in k else v.shape)
               for k, v in old.state_dict().items()}
    old.load_state_dict({k: v[..., widen] if ".W_qkv." in k else v for k, v in grouped.items()})
    new = TinyGPT(GPTConfig(**cfg)).to_dtype("float64")
    ids = g.integers(0, 16, (2, 10))

    def served(port):
        new.load_state_dict({k: port(v)[..., widen] if ".W_qkv." in k else v for k, v in grouped.items()})
        with no_grad():
            return float(xp.abs(new(ids).data - old(ids).data).max())

    assert served(lambda v: to_numpy(checkpoints.port_qk_weights(asarray(v), H, d, n_kv_heads=H_kv))) < 1e-10
    # the slip, by hand: queries right (P = (0, 2, 4, 6, 1, 3, 5, 7) in each head of 8), but the 16 key
    # columns cut into 4 heads of 4 with P = (0, 2, 1, 3) in each, instead of 2 heads of 8
    queries = [h * 8 + c for h in range(4) for c in (0, 2, 4, 6, 1, 3, 5, 7)]
    keys_by_query_heads = [32 + h * 4 + c for h in range(4) for c in (0, 2, 1, 3)]
    slip = queries + keys_by_query_heads + list(range(48, 64))
    assert served(lambda v: v[..., slip]) > 0.1
    # and the right order by hand, the keys by their 2 heads of 8, serves the same model
    keys = [32 + h * 8 + c for h in range(2) for c in (0, 2, 4, 6, 1, 3, 5, 7)]
    assert served(lambda v: v[..., queries + keys + list(range(48, 64))]) < 1e-10


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
