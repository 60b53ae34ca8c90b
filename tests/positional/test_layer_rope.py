"""Proportional RoPE (Gemma 4) against NeoX partial rotary, and layer_rope on both spellings of a config.json.
Expected numbers are worked by hand from theta_i = base^(-2i/d)."""
import warnings

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional.model_configs import MODELS, describe_model, layer_rope
from mini_transformer.positional.rope_scaling import proportional_inv_freq, rope_inv_freq


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


@pytest.mark.parametrize("p", [1.5, -0.5, "half", True])
def test_proportional_refuses_a_fraction_outside_0_1(p):
    with pytest.raises(ValueError) as refused:
        rope_inv_freq(16, 10000.0, {"rope_type": "proportional"}, partial_rotary_factor=p)
    assert str(refused.value) == (f"partial_rotary_factor is {p!r}; proportional RoPE keeps that fraction of the pairs "
                                  "turning, so it must lie in [0, 1].")


@pytest.mark.parametrize("head_dim,message", [
    (0, "head_dim must be an integer >= 1, got 0."),                           # the sentence every rope type gives
    (True, "head_dim must be an integer >= 1, got True."),
    (8.0, "head_dim must be an integer >= 1, got 8.0."),
    (1, "head_dim must be an integer >= 2 and even, got 1 (RoPE rotates pairs of channels)."),
    (7, "head_dim must be an integer >= 2 and even, got 7 (RoPE rotates pairs of channels)."),
])
def test_proportional_refuses_a_head_width_as_the_other_rope_types_do(head_dim, message):
    with pytest.raises(ValueError) as refused:
        rope_inv_freq(head_dim, 10000.0, {"rope_type": "proportional"})
    assert str(refused.value) == message


def test_proportional_inv_freq_defaults_to_every_pair_turning_unscaled():
    # p = 1 and factor 1: plain RoPE over d 8, base 10^4, 10^(-i)
    np.testing.assert_allclose(N(proportional_inv_freq(8, 10000.0)), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)


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
    assert [entry["layer"] for entry in layers] == [0, 1, 2, 3, 4, 5]
    for entry in layers:
        if entry["layer_type"] == "sliding_attention":                        # base 100, d 8: 100^(-i/4), unscaled
            np.testing.assert_allclose(N(entry["inv_freq"]), [1, 0.1 ** 0.5, 0.1, 0.1 ** 1.5], rtol=1e-15)
            assert (entry["rope_theta"], entry["rope_type"]) == (100.0, "default")
        else:                                                                  # base 10^4, d 8: 10^(-i), over 4
            np.testing.assert_allclose(N(entry["inv_freq"]), [0.25, 0.025, 0.0025, 0.00025], rtol=1e-15)
            assert (entry["rope_theta"], entry["rope_type"]) == (10000.0, "linear")
        assert entry["attention_factor"] == 1.0 and entry["head_dim"] == 8 and entry["partial_rotary_factor"] == 1.0


def test_a_sliding_window_pattern_of_1_makes_every_layer_full():
    # layer i is full when (i + 1) is a multiple of the pattern: with 1, every layer
    layers = layer_rope({"num_hidden_layers": 3, "head_dim": 8, "rope_theta": 1e4, "sliding_window_pattern": 1})
    assert [entry["layer_type"] for entry in layers] == ["full_attention"] * 3


def test_llama4_no_rope_layers_are_none_and_gemma4_full_layers_take_the_global_width():
    llama4 = layer_rope({"num_hidden_layers": 4, "head_dim": 4, "rope_theta": 100.0, "no_rope_layers": [1, 1, 0, 1]})
    assert llama4[2] is None and all(llama4[i] is not None for i in (0, 1, 3))
    assert [e["layer_type"] for e in llama4 if e] == ["chunked_attention"] * 3
    assert [e["layer"] for e in llama4 if e] == [0, 1, 3]
    # keyed by layer type as transformers 5 writes it, the NoPE layers' full_attention entry null
    keyed = layer_rope({"num_hidden_layers": 4, "head_dim": 4, "no_rope_layers": [1, 1, 0, 1],
                        "rope_parameters": {"chunked_attention": {"rope_theta": 100.0}, "full_attention": None}})
    assert keyed[2] is None and [e["layer"] for e in keyed if e] == [0, 1, 3]
    np.testing.assert_allclose(N(keyed[3]["inv_freq"]), [1.0, 0.1], rtol=1e-15)    # 100^(-2i/4)
    gemma4 = layer_rope({"num_hidden_layers": 2, "head_dim": 4, "global_head_dim": 8,
                         "layer_types": ["sliding_attention", "full_attention"],
                         "rope_parameters": {"sliding_attention": {"rope_theta": 100.0},
                                             "full_attention": {"rope_type": "proportional", "rope_theta": 10000.0,
                                                                "partial_rotary_factor": 0.5}}})
    assert gemma4[0]["head_dim"] == 4 and gemma4[1]["head_dim"] == 8
    np.testing.assert_allclose(N(gemma4[1]["inv_freq"]), [1.0, 0.1, 0, 0], rtol=1e-15)


@pytest.mark.parametrize("spelling", ["type", "rope_type"])
def test_mrope_reads_as_plain_frequencies_and_keeps_its_sections(spelling):
    scaling = {spelling: "mrope", "mrope_section": [1, 1, 2], "mrope_interleaved": True}   # Qwen3-VL adds interleaved
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                         # no key is left over as unknown
        layers = layer_rope({"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2,
                             "rope_theta": 10000.0, "rope_scaling": scaling})
    assert layers[0]["rope_type"] == "default" and layers[0]["mrope_section"] == [1, 1, 2]
    assert layers[0]["mrope_interleaved"] is True
    np.testing.assert_allclose(N(layers[0]["inv_freq"]), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)


@pytest.mark.parametrize("config,expected,partial", [
    # NeoX partial rotary from the top level: rotary_dim 0.5 * 16 = 8, so 10^4^(-2i/8) = 10^(-i)
    ({"num_hidden_layers": 1, "head_dim": 16, "rope_theta": 1e4, "partial_rotary_factor": 0.5},
     [1.0, 0.1, 0.01, 0.001], 0.5),
    # a layer's own factor wins over the top level's: rotary_dim 0.25 * 16 = 4, 10^4^(-2i/4) = (1, 0.01)
    ({"num_hidden_layers": 1, "head_dim": 16, "partial_rotary_factor": 0.5,
      "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.25}}, [1.0, 0.01], 0.25),
], ids=["top_level", "layer_wins"])
def test_partial_rotary_factor_from_the_top_level_applies_where_the_layer_gives_none(config, expected, partial):
    entry = layer_rope(config)[0]
    np.testing.assert_allclose(N(entry["inv_freq"]), expected, rtol=1e-15)
    assert entry["partial_rotary_factor"] == partial


# NTK-by-parts at d 8, base 10^4, factor 2 and trained length L = 2048 (worked in test_rope_scaling.py's BY_PARTS_8):
# the pair turning n times in L is log10(L / (2 pi n)); n = 32 at 1.008 -> 1, n = 1 at 2.513 -> 3, so gamma is
# (1, 1, 0.5, 0) and theta' = (1, 0.1, 0.0075, 0.0005). With L = 8192 or 16384 the ramp ends at pair 4 instead.
BY_PARTS_L2048 = [1.0, 0.1, 0.0075, 0.0005]
YARN_ATTENTION_2 = 0.1 * np.log(2) + 1
# Llama 3.1 at d 8, base 10^4, L 1000, factor 2, low 1, high 4: wavelengths 2 pi (1, 10, 100, 1000); pair 1 (62.8)
# under L/4 is kept, pair 3 (6283) over L is halved, pair 2 (628) blends with g = (1000/(200 pi) - 1)/3.
LLAMA3_G = (5 / np.pi - 1) / 3


@pytest.mark.parametrize("config,expected,attention_factor", [
    # the block's own original length, not max_position_embeddings
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "max_position_embeddings": 8192,
                  "rope_parameters": {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e4,
                                      "original_max_position_embeddings": 2048}},
                 BY_PARTS_L2048, YARN_ATTENTION_2, id="yarn_block_length"),
    # Phi-3 keeps the original length at the top level; transformers 5 gives it priority over the block's
    # (modeling_rope_utils, standardize_rope_params: "give priority to self.original_max_position_embeddings")
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 16384,
                  "original_max_position_embeddings": 2048,
                  "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8192}},
                 BY_PARTS_L2048, YARN_ATTENTION_2, id="yarn_top_level_length_wins"),
    # no original length anywhere: max_position_embeddings stands in, for llama3 too (transformers' setdefault)
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 1000,
                  "rope_scaling": {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0}},
                 [1.0, 0.1, 0.005 * (1 + LLAMA3_G), 0.0005], 1.0, id="llama3_max_position_embeddings"),
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "max_position_embeddings": 2048,
                  "rope_parameters": {"rope_type": "ntk_by_parts", "factor": 2.0, "rope_theta": 1e4}},
                 BY_PARTS_L2048, 1.0, id="ntk_by_parts_max_position_embeddings"),
    # Phi-3-mini-128k's shape: L 4096 at the top level, 16384 positions; no seq_len, so the short factors divide:
    # 10^(-i) / (1, 2, 1, 2); attention factor sqrt(1 + ln(16384/4096) / ln 4096) = sqrt(1 + 2/12)
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 1e4, "max_position_embeddings": 16384,
                  "original_max_position_embeddings": 4096,
                  "rope_scaling": {"type": "longrope", "short_factor": [1, 2, 1, 2], "long_factor": [1, 2, 4, 8]}},
                 [1.0, 0.05, 0.01, 0.0005], np.sqrt(7 / 6), id="longrope_phi3"),
])
def test_the_trained_length_is_read_as_transformers_reads_it(config, expected, attention_factor):
    entry = layer_rope(config)[0]
    np.testing.assert_allclose(N(entry["inv_freq"]), expected, rtol=1e-12)
    assert entry["attention_factor"] == pytest.approx(attention_factor, rel=1e-15)


def test_yarn_reads_its_original_length_from_max_position_embeddings_when_the_block_has_none():
    config = {"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 10000.0, "max_position_embeddings": 64,
              "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0}}
    given = dict(config, rope_parameters={**config["rope_parameters"], "original_max_position_embeddings": 64})
    np.testing.assert_allclose(N(layer_rope(config)[0]["inv_freq"]), N(layer_rope(given)[0]["inv_freq"]), rtol=0)
    assert layer_rope(config)[0]["attention_factor"] == pytest.approx(0.1 * np.log(4) + 1, rel=1e-15)


NEEDS_HEAD_WIDTH = ("The config gives neither head_dim nor hidden_size and num_attention_heads, so the width of a "
                    "head is unknown; add head_dim.")
NEEDS_LAYERS = "; layer_rope needs the number of layers, a positive integer."
KNOWN_TYPES = "the layer types it reads are full_attention, sliding_attention, chunked_attention."
NEEDS_PATTERN = "; it must be a positive integer (every pattern-th layer is full attention, Gemma 3 uses 6)."


@pytest.mark.parametrize("config,message", [
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "layer_types": ["full_attention"]},
                 "config['layer_types'] has 1 entries, but num_hidden_layers is 2; it needs exactly one layer type per "
                 "layer.", id="too_few_layer_types"),
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "rope_theta": 1e4, "layer_types": ["linear_attention"]},
                 f"config['layer_types'] names 'linear_attention', which layer_rope does not know; {KNOWN_TYPES}",
                 id="unknown_layer_type"),
    # two unknown names, in sorted order; a JSON null among them sorts by str(), 'None' before 'mamba'
    pytest.param({"num_hidden_layers": 3, "head_dim": 8, "rope_theta": 1e4,
                  "layer_types": ["sliding_attention", "mamba", "linear_attention"]},
                 f"config['layer_types'] names 'linear_attention', 'mamba', which layer_rope does not know; {KNOWN_TYPES}",
                 id="two_unknown_layer_types"),
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "layer_types": ["mamba", None]},
                 f"config['layer_types'] names None, 'mamba', which layer_rope does not know; {KNOWN_TYPES}",
                 id="null_layer_type"),
    pytest.param({"num_hidden_layers": 1, "head_dim": 8},
                 "The 'full_attention' layers have no RoPE base: give rope_theta (in rope_parameters for transformers 5 "
                 "configs, at the top level for older ones); layer_rope does not guess a model's default.",
                 id="no_rope_theta_v4"),
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "rope_parameters": {"rope_type": "default"}},
                 "The 'full_attention' layers have no RoPE base: give rope_theta (in rope_parameters for transformers 5 "
                 "configs, at the top level for older ones); layer_rope does not guess a model's default.",
                 id="no_rope_theta_v5"),
    pytest.param({"num_hidden_layers": 1, "head_dim": 8, "layer_types": ["sliding_attention"],
                  "rope_parameters": {"full_attention": {"rope_theta": 1e4}, "chunked_attention": {"rope_theta": 1e4}}},
                 "config['rope_parameters'] is keyed by layer type but has no entry for 'sliding_attention', which "
                 "layer_types uses; its keys are 'full_attention', 'chunked_attention'.", id="no_entry_for_a_type"),
    # Llama 4 as transformers labels it: its NoPE layers are full_attention, so a keyed dict must say what they use
    pytest.param({"num_hidden_layers": 4, "head_dim": 8, "no_rope_layers": [1, 1, 0, 1],
                  "rope_parameters": {"chunked_attention": {"rope_theta": 5e5}}},
                 "config['rope_parameters'] is keyed by layer type but has no entry for 'full_attention', which "
                 "layer_types uses; its keys are 'chunked_attention'.", id="llama4_nope_layers_are_full_attention"),
    pytest.param({"num_hidden_layers": 0, "head_dim": 8, "rope_theta": 1e4},
                 "config['num_hidden_layers'] is 0" + NEEDS_LAYERS, id="zero_layers"),
    pytest.param({"num_hidden_layers": True, "head_dim": 8, "rope_theta": 1e4},
                 "config['num_hidden_layers'] is True" + NEEDS_LAYERS, id="bool_layers"),
    pytest.param({"num_hidden_layers": "6", "head_dim": 8, "rope_theta": 1e4},
                 "config['num_hidden_layers'] is '6'" + NEEDS_LAYERS, id="string_layers"),
    pytest.param({"head_dim": 8, "rope_theta": 1e4}, "config['num_hidden_layers'] is None" + NEEDS_LAYERS,
                 id="no_layer_count"),
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "no_rope_layers": [1]},
                 "config['no_rope_layers'] has 1 entries, but the model has num_hidden_layers=2; it needs one per layer "
                 "(1: RoPE, 0: NoPE).", id="too_few_no_rope_layers"),
    pytest.param({"num_hidden_layers": 1, "rope_theta": 1e4}, NEEDS_HEAD_WIDTH, id="no_head_width"),
    pytest.param({"num_hidden_layers": 1, "rope_theta": 1e4, "hidden_size": 16}, NEEDS_HEAD_WIDTH,
                 id="hidden_size_without_heads"),
    pytest.param({"num_hidden_layers": 1, "rope_theta": 1e4, "num_attention_heads": 2}, NEEDS_HEAD_WIDTH,
                 id="heads_without_hidden_size"),
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "sliding_window_pattern": 0},
                 "config['sliding_window_pattern'] is 0" + NEEDS_PATTERN, id="pattern_0"),
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "sliding_window_pattern": True},
                 "config['sliding_window_pattern'] is True" + NEEDS_PATTERN, id="pattern_true"),
    pytest.param({"num_hidden_layers": 2, "head_dim": 8, "rope_theta": 1e4, "sliding_window_pattern": "6"},
                 "config['sliding_window_pattern'] is '6'" + NEEDS_PATTERN, id="pattern_string"),
])
def test_a_config_layer_rope_cannot_read_is_refused_with_a_sentence(config, message):
    with pytest.raises(ValueError) as refused:
        layer_rope(config)
    assert str(refused.value) == message


@pytest.mark.parametrize("config", [[("num_hidden_layers", 2)], "config.json"], ids=["list", "str"])
def test_a_config_that_is_not_a_dict_is_refused_with_its_type(config):
    with pytest.raises(ValueError) as refused:
        layer_rope(config)
    assert str(refused.value) == f"layer_rope takes a config.json read as a dict, got {type(config).__name__}."


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
    # Scout's llama3 scaling, factor 16, low = high = 1, trained length 8192: by hand, pair i of a head of 128
    # at base 5e5 has wavelength 2 pi 5e5^(i/64), under 8192 up to pair 34 (6692), over it from pair 35 (8219)
    assert {e["rope_type"] for e in scout if e is not None} == {"llama3"}
    inv_freq = N(scout[0]["inv_freq"])
    assert inv_freq[34] == pytest.approx(5e5 ** (-68 / 128), rel=1e-12)
    assert inv_freq[35] == pytest.approx(5e5 ** (-70 / 128) / 16, rel=1e-12)
    assert inv_freq[63] == pytest.approx(5e5 ** (-126 / 128) / 16, rel=1e-12)
    gemma4 = describe_model("Gemma-4-E2B")["layers"]
    assert np.count_nonzero(N(gemma4[4]["inv_freq"])) == 64 and len(gemma4[4]["inv_freq"]) == 256
