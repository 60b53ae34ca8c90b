"""Proportional RoPE (Gemma 4) against NeoX partial rotary, and layer_rope on both spellings of a config.json.
Expected numbers are worked by hand from theta_i = base^(-2i/d)."""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional.model_configs import MODELS, describe_model, layer_rope
from mini_transformer.positional.rope_scaling import rope_inv_freq


def N(x):
    return backend.to_numpy(x)


def test_proportional_keeps_full_width_frequencies_for_the_first_pairs_and_zero_after(each_backend):
    # head_dim 16, base 10^4: theta_i = 10^(-i/2); p = 0.5 keeps int(0.5 * 16 // 2) = 4 pairs; factor 2 halves all
    inv_freq, factor = rope_inv_freq(16, 10000.0, {"rope_type": "proportional", "factor": 2.0},
                                     partial_rotary_factor=0.5)
    expected = np.array([1.0, 10 ** -0.5, 0.1, 10 ** -1.5, 0, 0, 0, 0]) / 2
    np.testing.assert_allclose(N(inv_freq), expected, rtol=1e-15, atol=0)
    assert factor == 1.0


def test_proportional_rounds_the_turning_pairs_down_as_transformers_does():
    # p * d // 2: 0.3 * 10 = 3.0000000000000004, // 2 = 1 pair; 0.25 * 12 = 3, // 2 = 1 pair; p = 0: none turn
    assert np.count_nonzero(N(rope_inv_freq(10, 100.0, {"rope_type": "proportional"}, partial_rotary_factor=0.3)[0])) == 1
    assert np.count_nonzero(N(rope_inv_freq(12, 100.0, {"rope_type": "proportional"}, partial_rotary_factor=0.25)[0])) == 1
    assert not N(rope_inv_freq(8, 100.0, {"rope_type": "proportional"}, partial_rotary_factor=0.0)[0]).any()
    full = N(rope_inv_freq(8, 100.0, {"rope_type": "proportional"})[0])        # p = 1: plain RoPE, 10^(-i/2)
    np.testing.assert_allclose(full, [1.0, 10 ** -0.5, 0.1, 10 ** -1.5], rtol=1e-15)


def test_porting_neox_partial_rotary_as_proportional_is_caught():
    # same p = 0.5 on a 16-wide head: NeoX turns 8 channels at base^(-2i/8), proportional 4 pairs at base^(-2i/16)
    neox = N(rope_inv_freq(16, 10000.0, partial_rotary_factor=0.5)[0])
    prop = N(rope_inv_freq(16, 10000.0, {"rope_type": "proportional"}, partial_rotary_factor=0.5)[0])
    np.testing.assert_allclose(neox, [1.0, 0.1, 0.01, 0.001], rtol=1e-15)
    assert len(neox) == 4 and len(prop) == 8
    assert abs(neox[1] - prop[1]) > 0.2                                        # 0.1 against 10^-0.5 = 0.316


@pytest.mark.parametrize("p,message", [(1.5, r"partial_rotary_factor is 1.5; .* \[0, 1\]"),
                                       ("half", r"partial_rotary_factor is 'half'")])
def test_proportional_refuses_a_fraction_outside_0_1(p, message):
    with pytest.raises(ValueError, match=message):
        rope_inv_freq(16, 10000.0, {"rope_type": "proportional"}, partial_rotary_factor=p)


GEMMA3_V4 = {"num_hidden_layers": 6, "head_dim": 8, "sliding_window_pattern": 3, "rope_theta": 10000.0,
             "rope_local_base_freq": 100.0, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
GEMMA3_V5 = {"num_hidden_layers": 6, "head_dim": 8,
             "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
             "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                                 "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}}}


@pytest.mark.parametrize("config", [GEMMA3_V4, GEMMA3_V5], ids=["v4", "v5"])
def test_local_and_global_layers_get_their_own_base_in_either_spelling(config):
    layers = layer_rope(config)
    assert [entry["layer_type"] for entry in layers] == ["sliding_attention", "sliding_attention", "full_attention"] * 2
    for entry in layers:
        if entry["layer_type"] == "sliding_attention":                        # base 100, d 8: 100^(-i/4), unscaled
            np.testing.assert_allclose(N(entry["inv_freq"]), [1, 0.1 ** 0.5, 0.1, 0.1 ** 1.5], rtol=1e-15)
        else:                                                                  # base 10^4, d 8: 10^(-i), over 4
            np.testing.assert_allclose(N(entry["inv_freq"]), [0.25, 0.025, 0.0025, 0.00025], rtol=1e-15)
        assert entry["attention_factor"] == 1.0


def test_llama4_no_rope_layers_are_none_and_gemma4_full_layers_take_the_global_width():
    llama4 = layer_rope({"num_hidden_layers": 4, "head_dim": 4, "rope_theta": 100.0, "no_rope_layers": [1, 1, 0, 1]})
    assert llama4[2] is None and all(llama4[i] is not None for i in (0, 1, 3))
    assert [e["layer_type"] for e in llama4 if e] == ["chunked_attention"] * 3
    gemma4 = layer_rope({"num_hidden_layers": 2, "head_dim": 4, "global_head_dim": 8,
                         "layer_types": ["sliding_attention", "full_attention"],
                         "rope_parameters": {"sliding_attention": {"rope_theta": 100.0},
                                             "full_attention": {"rope_type": "proportional", "rope_theta": 10000.0,
                                                                "partial_rotary_factor": 0.5}}})
    assert gemma4[0]["head_dim"] == 4 and gemma4[1]["head_dim"] == 8
    np.testing.assert_allclose(N(gemma4[1]["inv_freq"]), [1.0, 0.1, 0, 0], rtol=1e-15)


def test_mrope_reads_as_plain_frequencies_and_keeps_its_sections():
    layers = layer_rope({"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "rope_theta": 10000.0,
                         "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}})
    assert layers[0]["rope_type"] == "default" and layers[0]["mrope_section"] == [1, 1, 2]
    np.testing.assert_allclose(N(layers[0]["inv_freq"]), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)


def test_yarn_reads_its_original_length_from_max_position_embeddings_when_the_block_has_none():
    config = {"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 10000.0, "max_position_embeddings": 64,
              "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0}}
    given = dict(config, rope_parameters={**config["rope_parameters"], "original_max_position_embeddings": 64})
    np.testing.assert_allclose(N(layer_rope(config)[0]["inv_freq"]), N(layer_rope(given)[0]["inv_freq"]), rtol=0)
    assert layer_rope(config)[0]["attention_factor"] == pytest.approx(0.1 * np.log(4) + 1, rel=1e-15)


@pytest.mark.parametrize("config,message", [
    ({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "layer_types": ["full_attention"]},
     r"layer_types'\] has 1 entries, but num_hidden_layers is 2"),
    ({"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 1e4, "layer_types": ["linear_attention"]},
     r"names 'linear_attention', which layer_rope does not know; the layer types it reads are full_attention"),
    ({"num_hidden_layers": 1, "head_dim": 8}, r"The 'full_attention' layers have no RoPE base: give rope_theta"),
    ({"num_hidden_layers": 1, "head_dim": 8, "layer_types": ["sliding_attention"],
      "rope_parameters": {"full_attention": {"rope_theta": 1e4}}}, r"has no entry for 'sliding_attention'"),
    ({"num_hidden_layers": 0, "head_dim": 8, "rope_theta": 1e4}, r"num_hidden_layers'\] is 0"),
    ({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "no_rope_layers": [1]},
     r"no_rope_layers'\] has 1 entries, but the model has num_hidden_layers=2"),
    ({"num_hidden_layers": 1, "rope_theta": 1e4}, r"neither head_dim nor hidden_size"),
    ({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "sliding_window_pattern": 0},
     r"sliding_window_pattern'\] is 0"),
])
def test_a_config_layer_rope_cannot_read_is_refused_with_a_sentence(config, message):
    with pytest.raises(ValueError, match=message):
        layer_rope(config)


@pytest.mark.parametrize("name", [n for n, e in MODELS.items() if e["mechanism"] in ("per_layer_rope", "mrope")])
def test_every_per_layer_model_is_described_layer_by_layer(name):
    entry = MODELS[name]
    layers = describe_model(name)["layers"]
    assert len(layers) == entry["num_hidden_layers"] and entry["source"]
    assert all(e is None or len(e["inv_freq"]) == e["head_dim"] // 2 for e in layers)


def test_the_published_layer_patterns():
    gemma3 = describe_model("Gemma-3-27B")["layers"]
    assert [i for i, e in enumerate(gemma3) if e["layer_type"] == "full_attention"] == list(range(5, 62, 6))
    scout = describe_model("Llama-4-Scout-17B-16E")["layers"]
    assert [i for i, e in enumerate(scout) if e is None] == list(range(3, 48, 4))
    gemma4 = describe_model("Gemma-4-E2B")["layers"]
    assert np.count_nonzero(N(gemma4[4]["inv_freq"])) == 64 and len(gemma4[4]["inv_freq"]) == 256
