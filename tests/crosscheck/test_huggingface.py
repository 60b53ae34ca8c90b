"""The positional code against Hugging Face transformers' own: per-layer RoPE, proportional RoPE, Llama 4's
temperature tuning, M-RoPE's ids and tables (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) and GPT-OSS's sink attention, to 1e-6,
on configurations the library's unit tests were not written from.

transformers computes its frequencies in float32, so 1e-6 (relative, with 1e-6 absolute for the zero pairs) is
its rounding, not ours."""
import math

import numpy as np
import pytest

transformers = pytest.importorskip(
    "transformers", reason="Hugging Face transformers is not installed; pip install -r requirements-dev.txt "
                           "runs these cross-checks.")
torch = pytest.importorskip("torch", reason="PyTorch is not installed; pip install -r requirements-dev.txt.")

from mini_transformer.engine import backend, functional  # noqa: E402
from mini_transformer.engine.autograd import Tensor  # noqa: E402
from mini_transformer.positional.model_configs import layer_rope  # noqa: E402
from mini_transformer.positional.mrope import MRoPE, mrope_cos_sin, mrope_position_ids  # noqa: E402
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


# ---------------------------------------------------------------------------
# M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL)
# ---------------------------------------------------------------------------

MERGE = 2                                      # spatial_merge_size: the vision tower merges 2 x 2 patches per token
SEGMENTS = [("text", 3), ("image", (1, 2, 3)), ("text", 4), ("image", (1, 5, 2)), ("text", 2)]


def qwen_inputs(segments):
    """input_ids, mm_token_type_ids (0 text, 1 image, 2 video) and the grids BEFORE merging, as the processor gives."""
    types, image_grids, video_grids = [], [], []
    for segment in segments:
        if segment[0] == "text":
            types += [0] * segment[1]
            continue
        t, h, w = segment[1]
        types += [1 if segment[0] == "image" else 2] * (t * h * w)
        (image_grids if segment[0] == "image" else video_grids).append([t, h * MERGE, w * MERGE])
    ids = torch.arange(len(types))[None] + 100                     # the ids' values are never read, only the types
    grids = [torch.tensor(g, dtype=torch.long) if g else None for g in (image_grids, video_grids)]
    return ids, torch.tensor(types, dtype=torch.int32)[None], *grids


def rope_index(model_class, config):
    """get_rope_index is a method of the model that reads only its config and get_vision_position_ids: a stand-in
    carrying those runs the library's code without building the vision tower and the language model."""
    stand_in = type("RopeIndex", (), {"config": config, "get_rope_index": model_class.get_rope_index,
                                      "get_vision_position_ids": model_class.get_vision_position_ids})
    return stand_in().get_rope_index


def test_mrope_position_ids_match_qwen2_vl_get_rope_index():
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel
    config = transformers.Qwen2VLConfig(vision_config={"spatial_merge_size": MERGE})
    ids, types, image_grids, _ = qwen_inputs(SEGMENTS)
    position_ids, delta = rope_index(Qwen2VLModel, config)(ids, types, image_grid_thw=image_grids)
    mine = backend.to_numpy(mrope_position_ids(SEGMENTS))
    np.testing.assert_array_equal(mine, position_ids[:, 0].numpy())
    assert mine.max() + 1 - mine.shape[1] == delta.item()          # the offset generation continues from
    assert mine[:, -1].tolist() == [3 + 3 + 4 + 5 + 1] * 3         # hand-worked: images cost max(h, w) ids, 3 and 5


def test_mrope_position_ids_match_qwen2_5_vl_get_rope_index_with_a_video():
    # a video of 3 frames at 0.25 s per grid and 4 tokens per second: time ids 0, 1, 2, within max(h, w) = 3,
    # the case where the library's next start (max(h, w)) and ours (one past the largest id) agree
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
    config = transformers.Qwen2_5_VLConfig(vision_config={"spatial_merge_size": MERGE, "tokens_per_second": 4})
    segments = [("text", 2), ("image", (1, 3, 1)), ("text", 3), ("video", (3, 3, 2), 0.25), ("text", 2)]
    ids, types, image_grids, video_grids = qwen_inputs([s[:2] for s in segments])
    position_ids, _ = rope_index(Qwen2_5_VLModel, config)(
        ids, types, image_grid_thw=image_grids, video_grid_thw=video_grids,
        second_per_grid_ts=torch.tensor([0.25]))
    mine = backend.to_numpy(mrope_position_ids(segments, tokens_per_second=4))
    np.testing.assert_array_equal(mine, position_ids[:, 0].numpy())


def mrope_rotary(config_class, rotary_class, head_dim, base, section, **extra):
    config = config_class(head_dim=head_dim, hidden_size=2 * head_dim, num_attention_heads=2, num_key_value_heads=1,
                          rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": section,
                                           **extra})
    return rotary_class(config)


@pytest.mark.parametrize("model,head_dim,base,section", [
    ("qwen2_vl", 40, 54321.0, [7, 8, 5]),
    ("qwen2_5_vl", 26, 3000.0, [3, 4, 6]),
    ("qwen3_vl", 36, 777777.0, [8, 5, 5]),            # interleaved: height 1, 4, .., 13; width 2, 5, .., 14
    ("qwen3_vl", 28, 10000.0, [5, 5, 4]),             # height 1, 4, .., 13; width 2, 5, .., 11; time the rest
])
def test_mrope_cos_sin_and_rotated_q_match_transformers(model, head_dim, base, section):
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding, apply_rotary_pos_emb
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding
    classes = {"qwen2_vl": (transformers.Qwen2VLTextConfig, Qwen2VLRotaryEmbedding, False),
               "qwen2_5_vl": (transformers.Qwen2_5_VLTextConfig, Qwen2_5_VLRotaryEmbedding, False),
               "qwen3_vl": (transformers.Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding, True)}
    config_class, rotary_class, interleaved = classes[model]
    extra = {"mrope_interleaved": True} if interleaved else {}
    rotary = mrope_rotary(config_class, rotary_class, head_dim, base, section, **extra)
    pos = mrope_position_ids(SEGMENTS)                                             # (3, T), ids up to 16
    q = np.random.default_rng(3).normal(size=(1, 2, pos.shape[1], head_dim))      # (B, H, T, d_head)
    cos, sin = rotary(torch.tensor(q), torch.tensor(backend.to_numpy(pos))[:, None])   # (1, T, d_head), float32
    mine_cos, mine_sin = mrope_cos_sin(pos, head_dim, base, section, interleaved=interleaved)
    np.testing.assert_allclose(backend.to_numpy(mine_cos), cos[0].double().numpy(), **TOL)
    np.testing.assert_allclose(backend.to_numpy(mine_sin), sin[0].double().numpy(), **TOL)
    # the tables agree to float32's rounding; the turn itself is checked in float64 on our tables, so that the
    # pairing (rotate-half, the same in all three models) is compared exactly and not through |q| times that rounding
    tables = [torch.tensor(backend.to_numpy(t))[None] for t in (mine_cos, mine_sin)]
    theirs_q, _ = apply_rotary_pos_emb(torch.tensor(q), torch.tensor(q), *tables)
    mine_q = MRoPE(head_dim, base, section, interleaved).rotate(backend.asarray(q), pos[:, None], layer=0)
    np.testing.assert_allclose(backend.to_numpy(mine_q), theirs_q.numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# Attention sinks (GPT-OSS)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("T,d_head,sinks", [(7, 12, [0.8, -1.5, 3.0]), (1, 5, [-0.3, 2.2, 0.0])])
def test_sink_attention_matches_gpt_oss_eager_attention(T, d_head, sinks):
    # eager_attention_forward reads module.sinks, .num_key_value_groups and .training; it returns
    # (B, T, H, d_v) and the weights without the sink column
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward
    rng = np.random.default_rng(11)
    q, k, v = (rng.normal(size=(2, 3, T, d_head)) for _ in range(3))                # (B, H, T, d_head)
    module = torch.nn.Module()
    module.sinks = torch.nn.Parameter(torch.tensor(sinks, dtype=torch.float64))
    module.num_key_value_groups, module.training = 1, False
    scaling = d_head ** -0.5
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1)[None, None]
    out, weights = eager_attention_forward(module, torch.tensor(q), torch.tensor(k), torch.tensor(v), causal,
                                           scaling=scaling)
    mask = backend.asarray(np.tril(np.ones((T, T), dtype=bool)))
    y, p = functional.scaled_dot_product_attention(
        Tensor(backend.asarray(q)), Tensor(backend.asarray(k)), Tensor(backend.asarray(v)), mask=mask,
        sinks=Tensor(backend.asarray(np.array(sinks))), return_weights=True)
    np.testing.assert_allclose(backend.to_numpy(y.data), out.transpose(1, 2).detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(p), weights.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert (backend.to_numpy(p).sum(axis=-1) < 1).all()                            # the sink took its share
