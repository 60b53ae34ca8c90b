"""The positional code against Hugging Face transformers' own: per-layer RoPE, proportional RoPE and Llama 4's
temperature tuning, to 1e-6, on configurations the library's unit tests were not written from.

transformers computes its frequencies in float32, so 1e-6 (relative, with 1e-6 absolute for the zero pairs) is
its rounding, not ours."""
import math

import numpy as np
import pytest

transformers = pytest.importorskip(
    "transformers", reason="Hugging Face transformers is not installed; pip install -r requirements-dev.txt "
                           "runs these cross-checks.")
torch = pytest.importorskip("torch", reason="PyTorch is not installed; pip install -r requirements-dev.txt.")

from mini_transformer.engine import backend  # noqa: E402
from mini_transformer.positional.model_configs import layer_rope  # noqa: E402
from mini_transformer.positional.rope_scaling import rope_inv_freq  # noqa: E402
from mini_transformer.positional.temperature import llama4_attention_scales  # noqa: E402

TOL = dict(rtol=1e-6, atol=1e-6)


def ours(entry):
    return backend.to_numpy(entry["inv_freq"])


def theirs(rotary, layer_type=None):
    name = "inv_freq" if layer_type is None else f"{layer_type}_inv_freq"
    scaling = "attention_scaling" if layer_type is None else f"{layer_type}_attention_scaling"
    return getattr(rotary, name).double().numpy(), getattr(rotary, scaling)


GEMMA3 = dict(num_hidden_layers=8, head_dim=48, hidden_size=96, num_attention_heads=2, num_key_value_heads=1,
              sliding_window_pattern=4, rope_theta=250000.0, rope_local_base_freq=5000.0,
              rope_scaling={"rope_type": "linear", "factor": 3.0})


def test_gemma3_v4_keys_match_transformers_layer_by_layer():
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding
    config = transformers.Gemma3TextConfig(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in GEMMA3.items()})
    rotary = Gemma3RotaryEmbedding(config)
    layers = layer_rope(GEMMA3)
    assert [e["layer_type"] for e in layers] == config.layer_types
    for entry in layers:
        inv_freq, scaling = theirs(rotary, entry["layer_type"])
        np.testing.assert_allclose(ours(entry), inv_freq, **TOL)
        assert entry["attention_factor"] == pytest.approx(scaling, rel=1e-6)


GEMMA4 = {"num_hidden_layers": 6, "hidden_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
          "head_dim": 32, "global_head_dim": 80,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                          "sliding_attention", "full_attention"],
          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 20000.0},
                              "full_attention": {"rope_type": "proportional", "rope_theta": 3000000.0,
                                                 "partial_rotary_factor": 0.3, "factor": 2.0}}}


def test_gemma4_proportional_rope_matches_transformers():
    # 0.3 * 80 // 2 = 12 of the 40 pairs turn: the rounding and the full width are what is checked
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding
    import copy
    config = transformers.Gemma4TextConfig(**copy.deepcopy(GEMMA4))
    rotary = Gemma4TextRotaryEmbedding(config)
    layers = layer_rope(GEMMA4)
    for entry in layers:
        inv_freq, scaling = theirs(rotary, entry["layer_type"])
        assert len(ours(entry)) == len(inv_freq)
        np.testing.assert_allclose(ours(entry), inv_freq, **TOL)
        assert entry["attention_factor"] == pytest.approx(scaling, rel=1e-6)
    assert np.count_nonzero(ours(layers[1])) == 12


@pytest.mark.parametrize("head_dim,p,base,factor", [(64, 0.25, 1e6, 1.0), (100, 0.37, 12345.0, 1.5), (30, 1.0, 500.0, 4.0)])
def test_proportional_frequencies_match_transformers_init_function(head_dim, p, base, factor):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    config = transformers.LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                                      rope_parameters={"rope_type": "proportional", "rope_theta": base,
                                                       "partial_rotary_factor": p, "factor": factor})
    inv_freq, scaling = ROPE_INIT_FUNCTIONS["proportional"](config, None)
    mine, mine_scaling = rope_inv_freq(head_dim, base, {"rope_type": "proportional", "factor": factor},
                                       partial_rotary_factor=p)
    np.testing.assert_allclose(backend.to_numpy(mine), inv_freq.double().numpy(), **TOL)
    assert mine_scaling == scaling


GPT_OSS = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
           "head_dim": 40, "max_position_embeddings": 65536, "rope_theta": 75000.0,
           "layer_types": ["sliding_attention", "full_attention"] * 2,
           "rope_scaling": {"rope_type": "yarn", "factor": 16.0, "beta_fast": 24.0, "beta_slow": 2.0,
                            "truncate": False, "original_max_position_embeddings": 2048}}


def test_gpt_oss_yarn_matches_transformers():
    import copy
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssRotaryEmbedding
    config = transformers.GptOssConfig(**copy.deepcopy(GPT_OSS))
    inv_freq, scaling = theirs(GptOssRotaryEmbedding(config))
    for entry in layer_rope(GPT_OSS):
        np.testing.assert_allclose(ours(entry), inv_freq, **TOL)
        assert entry["attention_factor"] == pytest.approx(scaling, rel=1e-6)


def test_llama4_nope_layers_and_temperature_match_transformers_attention():
    # a NoPE layer of Llama4TextAttention with identity projections: its output is softmax(tau q k / sqrt d) v,
    # so the attention weights it returns give tau back, and they must equal ours for every query position
    from transformers.models.llama4.modeling_llama4 import Llama4TextAttention
    cfg = dict(num_hidden_layers=4, hidden_size=8, num_attention_heads=1, num_key_value_heads=1, head_dim=8,
               rope_theta=10000.0, no_rope_layers=[1, 0, 1, 1], floor_scale=3, attn_scale=0.4,
               attn_temperature_tuning=True, attention_chunk_size=64, intermediate_size=16, intermediate_size_mlp=16)
    config = transformers.Llama4TextConfig(**cfg)
    config._attn_implementation = "eager"
    assert [e is None for e in layer_rope(cfg)] == [not config.no_rope_layers[i] for i in range(4)]
    attention = Llama4TextAttention(config, layer_idx=1).double()
    with torch.no_grad():
        for proj in (attention.q_proj, attention.k_proj, attention.v_proj, attention.o_proj):
            proj.weight.copy_(torch.eye(8, dtype=torch.float64))
    T = 11
    x = torch.tensor(np.random.default_rng(0).normal(size=(1, T, 8)))
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1)[None, None]
    _, weights = attention(x, position_embeddings=None, attention_mask=causal)
    tau = backend.to_numpy(llama4_attention_scales(backend.asarray(np.arange(T)), floor_scale=3, attn_scale=0.4))
    scores = x[0].numpy() @ x[0].numpy().T / math.sqrt(8) * tau[:, None]
    scores = np.where(np.tril(np.ones((T, T))) > 0, scores, -np.inf)
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(weights[0, 0].detach().numpy(), expected, rtol=1e-6, atol=1e-9)
