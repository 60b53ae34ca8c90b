r"""Published positional settings of real models, as plain data, and two helpers to read them.

Each entry keeps the key names of the model's own ``config.json`` where it has one, and a
``source`` naming where the numbers were checked (paper, model card or released config; the
survey's Table 4 of representative LLMs is the starting list). A number that could not be
checked is left out and named under ``absent`` instead of guessed.

``describe_model(name)`` turns an entry into numbers you can plot: for a RoPE model the
frequencies $\theta_i'$ (after any ``rope_scaling``), their wavelengths $2\pi/\theta_i'$, the
attention factor, and the critical dimension of the unscaled RoPE at its training length.

``layer_rope(config)`` reads the models that give each layer its own RoPE (Gemma 3 and 4, GPT-OSS,
Llama 4's NoPE layers, the Qwen VL models' M-RoPE): one entry per layer, from either spelling of a
``config.json``, the transformers 4 keys or the transformers 5 ``rope_parameters`` keyed by layer type.
"""
import difflib
import math

from .rope_scaling import critical_dimension, longrope_attention_factor, rope_inv_freq, wavelengths

#: the attention kinds a ``layer_types`` list may name: the ones Hugging Face's configs write for these models
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")

MODELS = {
    "GPT-2": {
        "mechanism": "learned_absolute",
        "n_positions": 1024,
        "source": "GPT-2 (Radford et al., 2019): context 1024, learned position embeddings; "
                  "Hugging Face gpt2 config.json n_positions 1024; survey Table 4.",
    },
    "T5": {
        "mechanism": "relative_bias",
        "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128,
        "source": "T5 (Raffel et al., 2020); transformers T5Config defaults "
                  "relative_attention_num_buckets=32, relative_attention_max_distance=128; survey Table 4.",
    },
    "BLOOM": {
        "mechanism": "alibi",
        "source": "BLOOM (BigScience, 2022), ALiBi instead of position embeddings; survey Table 4.",
    },
    "Falcon-RW-1B": {
        "mechanism": "alibi",
        "max_position_embeddings": 2048,
        "source": "tiiuae/falcon-rw-1b config.json (\"alibi\": true, max_position_embeddings 2048); "
                  "the RefinedWeb research models.",
    },
    "Falcon-7B": {
        "mechanism": "rope",
        "head_dim": 64,
        "rope_theta": 10000.0,
        "max_position_embeddings": 2048,
        "source": "tiiuae/falcon-7b model card (\"Positional embeddings: rotary\") and config.json "
                  "(\"alibi\": false, hidden_size 4544 / 71 heads = 64, rope_theta 10000).",
        "notes": "The survey's Table 4 lists Falcon under ALiBi. The released Falcon-7B/40B use "
                 "rotary embeddings; only the Falcon-RW research models (1B, 7B) use ALiBi.",
    },
    "LLaMA-7B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 10000.0,
        "max_position_embeddings": 2048,
        "source": "LLaMA (Touvron et al., 2023a): RoPE, 2K context; survey Table 4. "
                  "theta is the RoPE paper's 10000.",
    },
    "Llama-2-7B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 10000.0,
        "max_position_embeddings": 4096,
        "source": "Llama 2 (Touvron et al., 2023b): context 2K -> 4K; meta-llama/Llama-2-7b-hf "
                  "config.json (rope_theta 10000.0, max_position_embeddings 4096, 4096 / 32 heads).",
    },
    "Code-Llama-7B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 16384,
        "source": "Code Llama (Roziere et al., 2023): base raised to 1e6, trained on 16K sequences; "
                  "codellama/CodeLlama-7b-hf config.json (rope_theta 1000000, max_position_embeddings "
                  "16384); survey Table 4.",
    },
    "Llama-3-8B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 500000.0,
        "max_position_embeddings": 8192,
        "source": "Llama 3 (Dubey et al., 2024): RoPE base 500,000; meta-llama/Meta-Llama-3-8B "
                  "config.json (rope_theta 500000.0, max_position_embeddings 8192); survey Table 4.",
    },
    "Llama-3.1-8B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 500000.0,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "source": "meta-llama/Llama-3.1-8B config.json (rope_scaling llama3: factor 8, low 1, "
                  "high 4, original 8192; head_dim 128; max_position_embeddings 131072).",
    },
    "Qwen2-7B-Instruct": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        "source": "Qwen2 technical report (base 1e6, 32K); Qwen/Qwen2-7B-Instruct model card, "
                  "'Processing Long Texts' (the rope_scaling block above); survey Table 4.",
        "notes": "The YaRN block is opt-in: the shipped config.json has none, and the model card "
                 "says to add it only for inputs beyond 32,768 tokens, since it is static.",
    },
    "Qwen3-0.6B": {
        "mechanism": "rope",
        "head_dim": 128,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 40960,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        "source": "Qwen/Qwen3-0.6B config.json (rope_theta 1000000, head_dim 128, "
                  "max_position_embeddings 40960); Qwen3 docs: 32,768 in pre-training, 131,072 with "
                  "YaRN factor 4; survey Table 4.",
        "notes": "The YaRN block is opt-in, added by hand for long inputs, as for Qwen2. It is the "
                 "one Qwen documents for the Qwen3 family and the larger models' cards repeat; "
                 "the 0.6B card gives a context length of 32,768 and no YaRN setting.",
    },
    "Phi-3-mini-128k-instruct": {
        "mechanism": "rope",
        "head_dim": 96,
        "rope_theta": 10000.0,
        "max_position_embeddings": 131072,
        "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 4096},
        "absent": ["short_factor", "long_factor"],
        "source": "microsoft/Phi-3-mini-128k-instruct config.json (hidden_size 3072 / 32 heads = 96, "
                  "rope_theta 10000.0, max_position_embeddings 131072, original_max_position_embeddings "
                  "4096 at the top level, rope_scaling type longrope); survey Table 4.",
        "notes": "The two 48-number factor lists are not stored: only parts of them could be read, "
                 "and they changed between revisions of the model repository (long_factor starts "
                 "1.07, 1.12, ... on main but 1.03, 1.05, ... in an earlier revision). Paste them "
                 "from the revision you use. original_max_position_embeddings is copied into "
                 "rope_scaling here because rope_inv_freq reads it from there.",
    },
    "Phi-2": {
        "mechanism": "rope",
        "hidden_size": 2560,
        "num_attention_heads": 32,
        "head_dim": 80,
        "partial_rotary_factor": 0.4,
        "rope_theta": 10000.0,
        "max_position_embeddings": 2048,
        "source": "microsoft/phi-2 config.json as mirrored in several public repositories (hidden_size 2560, "
                  "num_attention_heads 32, partial_rotary_factor 0.4, rope_theta 10000.0, "
                  "max_position_embeddings 2048).",
        "notes": "Partial rotary: only int(80 * 0.4) = 32 of each head's 80 channels turn; the other 48 carry "
                 "no position. The survey names partial rotary among the settings a checkpoint must record "
                 "(section 9.1) but lists no such model; this entry is the example. head_dim is "
                 "hidden_size / num_attention_heads, written out.",
    },
    "Gemma-7B": {
        "mechanism": "rope",
        "head_dim": 256,
        "rope_theta": 10000.0,
        "max_position_embeddings": 8192,
        "source": "Gemma (Gemma Team, 2024): RoPE in every layer, 8K training length; google/gemma-7b "
                  "config.json (head_dim 256, rope_theta 10000.0, max_position_embeddings 8192).",
    },
    "DeepSeek-V2-Lite": {
        "mechanism": "rope_decoupled",
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "rope_theta": 10000.0,
        "num_attention_heads": 16,
        "kv_lora_rank": 512,
        "v_head_dim": 128,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                         "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707},
        "absent": ["max_position_embeddings"],
        "source": "deepseek-ai/DeepSeek-V2-Lite config.json as mirrored in several public "
                  "repositories (qk_rope_head_dim 64, qk_nope_head_dim 128, rope_theta 10000, the "
                  "yarn block above); DeepSeek-V2 report (decoupled RoPE in MLA); survey Table 4. "
                  "num_attention_heads 16, kv_lora_rank 512 and v_head_dim 128 from MaxText's "
                  "checkpoint converter (convert_deepseek_family_ckpt.py, deepseek2-16b).",
        "notes": "The full DeepSeek-V2 is left out: public copies of its config disagree on "
                 "mscale (0.707 or 1.0). With mscale == mscale_all_dim the factor on cos/sin is 1.",
    },
    "DeepSeek-V3": {
        "mechanism": "rope_decoupled",
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "rope_theta": 10000.0,
        "num_attention_heads": 128,
        "kv_lora_rank": 512,
        "v_head_dim": 128,
        "max_position_embeddings": 163840,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                         "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
        "source": "deepseek-ai/DeepSeek-V3 config.json as quoted in NVIDIA/Megatron-LM issue #1418 "
                  "(the yarn block above, max_position_embeddings 163840); DeepSeek-V3 inference/model.py "
                  "defaults (qk_rope_head_dim 64, rope_theta 10000, rope_factor 40, beta_fast 32, "
                  "beta_slow 1, mscale 1.0, original_seq_len 4096); survey Table 4. num_attention_heads 128, "
                  "kv_lora_rank 512 and v_head_dim 128 from MaxText's checkpoint converter "
                  "(convert_deepseek_family_ckpt.py, deepseek3-671b).",
        "notes": "Only 64 of each query/key head's 192 dimensions are rotated; the other 128 carry "
                 "no position. The attention code multiplies the softmax scale by "
                 "(0.1 ln 40 + 1)^2, YaRN's temperature, instead of scaling cos and sin. MLA caches, per "
                 "token and layer, the kv_lora_rank = 512 numbers of the compressed latent and the 64 of "
                 "the one shared rotary key.",
    },
    "LongCat-Flash": {
        "mechanism": "rope_decoupled",
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "rope_theta": 10000000.0,
        "max_position_embeddings": 131072,
        "source": "survey Table 4: LongCat-Flash follows MLA, with a 64-dimensional RoPE subspace, a "
                  "128-dimensional NoPE subspace, theta 10^7 and maximum position 131K in the official "
                  "configuration of its first version (LongCat-Flash-Chat config.json); 131K is read as "
                  "131072.",
        "notes": "The survey also reports that the 2601 version's public configuration sets theta to 10^6.",
    },
    "Gemma-3-4B": {
        "mechanism": "per_layer_rope",
        "num_hidden_layers": 34,
        "head_dim": 256,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "absent": ["max_position_embeddings"],
        "source": "google/gemma-3-4b-it config.json text_config as mirrored in public test fixtures (a "
                  "Rust ModelConfig test 'test_gemma3_4b_config_from_json': num_hidden_layers 34, head_dim 256, "
                  "sliding_window 1024, sliding_window_pattern 6, rope_theta 1000000.0, rope_local_base_freq "
                  "10000.0, rope_scaling {factor 8.0, rope_type linear}); Gemma 3 report: 5 local layers to 1 "
                  "global, local base 10k, global base 1M with positional interpolation by 8.",
        "notes": "transformers reads the v4 keys as two layer types: sliding layers get rope_local_base_freq "
                 "and no scaling, full layers rope_theta and rope_scaling (Gemma3TextConfig."
                 "convert_rope_params_to_dict); layer i is full when (i + 1) % 6 == 0. max_position_embeddings "
                 "is left out: the copies seen disagree (32768 and 131072).",
    },
    "Gemma-3-27B": {
        "mechanism": "per_layer_rope",
        "num_hidden_layers": 62,
        "head_dim": 128,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "absent": ["max_position_embeddings"],
        "source": "google/gemma-3-27b-it config.json text_config as quoted in a public write-up of Gemma 3's "
                  "layer pattern (num_hidden_layers 62, head_dim 128, sliding_window 1024, "
                  "sliding_window_pattern 6, rope_theta 1000000.0, rope_local_base_freq 10000.0); the linear "
                  "factor 8 on global layers from the Gemma 3 report, as for Gemma-3-4B.",
        "notes": "62 layers at a pattern of 6: layers 5, 11, ..., 59 are global (10), the other 52 local.",
    },
    "Gemma-4-E2B": {
        "mechanism": "per_layer_rope",
        "num_hidden_layers": 35,
        "head_dim": 256,
        "global_head_dim": 512,
        "sliding_window": 512,
        "max_position_embeddings": 131072,
        "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7,
        "rope_parameters": {
            "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
        },
        "source": "google/gemma-4-E2B-it config.json text_config as mirrored in public test fixtures (a Rust "
                  "'real_gemma4_e2b_text_config': num_hidden_layers 35, head_dim 256, global_head_dim 512, "
                  "sliding_window 512, max_position_embeddings 131072, the rope_parameters above, layer_types "
                  "4 sliding then 1 full, seven times); transformers 5.18 Gemma4TextConfig (full layers take "
                  "global_head_dim as their head_dim; defaults proportional, 0.25, 1e6 and default, 1e4).",
        "notes": "The full layers' heads are 512 wide and only int(0.25 * 512 // 2) = 64 of their 256 pairs "
                 "turn, at base^(-2i/512); the other 192 pairs have frequency 0. Not fetched from the model "
                 "repository itself; no copy seen disagrees.",
    },
    "Llama-4-Scout-17B-16E": {
        "mechanism": "per_layer_rope",
        "num_hidden_layers": 48,
        "head_dim": 128,
        "rope_theta": 500000.0,
        "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(48)],
        "attn_temperature_tuning": True,
        "floor_scale": 8192,
        "attn_scale": 0.1,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192},
        "absent": ["max_position_embeddings"],
        "source": "meta-llama/Llama-4-Scout-17B-16E config.json text_config as mirrored in a public "
                  "re-implementation (configs/text_config.py: num_hidden_layers 48, head_dim 128, rope_theta "
                  "500000, no_rope_layer_interval 4, floor_scale 8192, attn_scale 0.1, temperature tuning on); "
                  "a MaxText config modelled on the same config.json repeats floor_scale 8192 and attn_scale "
                  "0.1; transformers 5.18 Llama4TextConfig builds no_rope_layers as "
                  "int((i + 1) % 4 != 0): 1 turns, 0 is a NoPE layer. rope_scaling from the same config.json "
                  "quoted whole with its Hugging Face address in AMD-AGI/Primus PR #165 (llama3, factor 16, "
                  "low 1, high 1, original 8192); Meta's meta-llama/llama-models PR #322 agrees: only Scout "
                  "uses scaled RoPE, rope_scaling_factor 16.",
        "notes": "Every fourth layer (3, 7, ..., 47) has no RoPE and scales its queries by "
                 "1 + 0.1 log(floor((pos + 1) / 8192) + 1) (positional.temperature); the other 36 layers "
                 "rotate with llama3 scaling. A printed factor 8, high 4 seen in a public note is transformers' "
                 "conversion-script default (convert_llama4_weights_to_hf.py), not Scout's file.",
    },
    "GPT-OSS-20B": {
        "mechanism": "per_layer_rope",
        "num_hidden_layers": 24,
        "head_dim": 64,
        "sliding_window": 128,
        "max_position_embeddings": 131072,
        "rope_theta": 150000.0,
        "layer_types": ["sliding_attention", "full_attention"] * 12,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 4096},
        "source": "openai/gpt-oss-20b config.json as summarised in a public mirror's architecture notes "
                  "(EchoCog/gpt-oss-20b docs/gpt-oss-20b-architecture.md: 24 layers alternating "
                  "sliding_attention and full_attention, sliding_window 128, head_dim 64, "
                  "max_position_embeddings 131072, rope_theta 150000, yarn factor 32, initial context 4096); "
                  "beta_fast 32, beta_slow 1 and truncate false from transformers 5.18 GptOssConfig's "
                  "default rope_parameters, which the same notes match on every field they name.",
        "notes": "One YaRN for every layer: the two layer types differ in their window, not their RoPE. "
                 "truncate false keeps the ramp's ends fractional.",
    },
    "Qwen2.5-VL-7B": {
        "mechanism": "mrope",
        "num_hidden_layers": 28,
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 128000,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
        "source": "Qwen/Qwen2.5-VL-7B-Instruct config.json as copied in NVIDIA/TensorRT-LLM "
                  "tests/unittest/_torch/modeling/test_modeling_qwen2_5vl.py, QWEN2_5_VL_7B_CONFIG (hidden_size "
                  "3584, num_attention_heads 28, so head_dim 128; max_position_embeddings 128000; rope_theta "
                  "1000000.0; rope_scaling {type mrope, mrope_section [16, 24, 24]}; num_hidden_layers cut to 2 "
                  "there, its comment giving 28 for the full model); mrope_section [16, 24, 24] again in "
                  "QwenLM/Qwen2.5-VL README.md, 'Processing Long Texts'. transformers reads type mrope as "
                  "default frequencies.",
        "notes": "The 64 pairs are split 16 / 24 / 24 among the time, height and width position ids "
                 "(positional.mrope). The same README says the shipped config.json 'is set for context length "
                 "up to 32,768 tokens': 128000 is the config's field, 32,768 the length Qwen vouches for.",
    },
    "Qwen3-VL-8B": {
        "mechanism": "mrope",
        "num_hidden_layers": 36,
        "head_dim": 128,
        "rope_theta": 5000000.0,
        "max_position_embeddings": 262144,
        "rope_scaling": {"mrope_section": [24, 20, 20], "mrope_interleaved": True},
        "absent": ["rope_scaling.rope_type"],
        "source": "Qwen/Qwen3-VL-8B-Instruct as loaded by pytorch/torchtitan "
                  "torchtitan/experiments/qwen3_vl/__init__.py, qwen3_vl_configs['8B'] (n_layers 36, head_dim "
                  "128, RoPE theta 5000000.0, mrope_section [24, 20, 20]; config_registry.py points it at "
                  "Qwen3-VL-8B-Instruct); NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/qwen_vl/"
                  "qwen3_vl_provider.py (rotary_base 5000000.0 'from HuggingFace config', mrope_section "
                  "[24, 20, 20], citing the 8B config.json); QwenLM/Qwen3-VL README.md, 'Processing Long Texts' "
                  "('The current config.json is set for context length up to 256K tokens'; its rope_scaling "
                  "carries mrope_section [24, 20, 20] and mrope_interleaved true, original length 262144).",
        "notes": "Interleaved M-RoPE: the time, height and width ids take turns across the frequencies "
                 "instead of holding three blocks. rope_type is left out: no copy tied to the 8B model shows "
                 "it; read without one, rope_scaling gives the default frequencies (in transformers and here). "
                 "transformers 5.18's Qwen3VLTextConfig has default_theta 5e5, so the base must come from "
                 "the config.",
    },
    "Kimi-K3": {
        "mechanism": "nope",
        "source": "survey Table 4: no explicit position encoding in MLA's queries and keys; position "
                  "sensitivity comes implicitly from Kimi Delta Attention's recursive gating and decay, "
                  "and the report states the design continues training to a 1M context without RoPE "
                  "rescaling or interpolation.",
    },
}

_SUMMARIES = {
    "learned_absolute": "Learned absolute positions: one trainable vector per position, added to "
                        "the token embedding. Positions past the table have no vector at all.",
    "relative_bias": "Relative position bias: each head learns one scalar per bucket of the offset "
                     "j - i, exact for small offsets and logarithmic out to the maximum distance; "
                     "every larger offset shares the last bucket.",
    "alibi": "ALiBi: no position vectors; each head adds -m_h * (i - j) to the attention logits, "
             "with fixed geometric slopes m_h.",
    "rope": "RoPE: queries and keys are rotated pair by pair by angle m * theta_i, so scores "
            "depend on the offset only.",
    "rope_decoupled": "Decoupled RoPE (MLA): a small separate slice of each query/key head is "
                      "rotated; the compressed content part carries no position.",
    "per_layer_rope": "Per-layer RoPE: each layer type has its own base, scaling or width (local layers "
                      "a small base, global ones a large one), and some layers may have no RoPE at all.",
    "mrope": "Multimodal RoPE (M-RoPE): the rotary pairs are split among time, height and width position "
             "ids; text tokens carry the same id on all three, so for text it is plain RoPE.",
    "nope": "No positional encoding in attention (NoPE): queries and keys are never rotated and no "
            "bias is added; order reaches attention only through other layers.",
}


def list_models():
    """Names of the stored models, in the order of the survey's table."""
    return list(MODELS)


def describe_model(name):
    r"""A dict describing ``name``'s positional scheme, with numbers for RoPE models.

    Every result has ``name``, ``mechanism``, ``summary``, ``source`` and the stored fields.
    Per-layer and M-RoPE entries add ``layers``, ``layer_rope`` of the entry. RoPE entries add ``rotary_dim`` (``qk_rope_head_dim``, else ``head_dim`` times any
    ``partial_rotary_factor``), ``inv_freq`` ($\theta_i'$ after ``rope_scaling``, at
    ``seq_len`` = ``max_position_embeddings``), ``attention_factor``, ``wavelengths``
    ($2\pi/\theta_i'$) and ``critical_dimension`` (of the unscaled RoPE at ``train_len``, the
    trained length: ``original_max_position_embeddings`` when there is scaling), plus
    ``frequencies_scaled`` (False where the scaling could not be applied, e.g. LongRoPE factor
    lists that are not stored) and ``base_wavelengths`` of the unscaled RoPE.
    """
    if name not in MODELS:
        close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.4)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"No stored model named {name!r}.{hint} Known models: {', '.join(MODELS)}.")
    entry = MODELS[name]
    out = {"name": name, "summary": _SUMMARIES[entry["mechanism"]], **entry}
    if entry["mechanism"] in ("per_layer_rope", "mrope"):
        out["layers"] = layer_rope(entry)
        return out
    if entry["mechanism"] not in ("rope", "rope_decoupled"):
        return out
    rotary_dim = entry.get("qk_rope_head_dim") or int(entry["head_dim"] * entry.get("partial_rotary_factor", 1.0))
    scaling = entry.get("rope_scaling")
    max_pos = entry.get("max_position_embeddings")
    train_len = (scaling or {}).get("original_max_position_embeddings", max_pos)
    lists_missing = bool(set(entry.get("absent", ())) & {"short_factor", "long_factor"})
    if lists_missing:
        # Without the searched factors we can show the base frequencies and LongRoPE's attention factor only.
        inv_freq = rope_inv_freq(rotary_dim, entry["rope_theta"])[0]
        attention_factor = longrope_attention_factor(max_pos / train_len, train_len)
    else:
        inv_freq, attention_factor = rope_inv_freq(
            rotary_dim, entry["rope_theta"], scaling, seq_len=max_pos, max_position_embeddings=max_pos)
    out.update(
        rotary_dim=rotary_dim,
        train_len=train_len,
        inv_freq=inv_freq,
        frequencies_scaled=scaling is not None and not lists_missing,
        attention_factor=attention_factor,
        wavelengths=2 * math.pi / inv_freq,
        critical_dimension=critical_dimension(rotary_dim, entry["rope_theta"], train_len),
        base_wavelengths=wavelengths(rotary_dim, entry["rope_theta"]),
    )
    return out


# ---------------------------------------------------------------------------
# Per-layer RoPE: one entry per layer, from either spelling of a config.json
# ---------------------------------------------------------------------------

def layer_rope(config):
    r"""The RoPE of every layer of a model, from its ``config.json`` read as a dict.

    Returns a list with one item per layer (``num_hidden_layers``): ``None`` for a layer that does not
    rotate (a 0 in Llama 4's ``no_rope_layers``, or a layer type whose ``rope_parameters`` is null), else a
    dict with ``layer``, ``layer_type``, ``head_dim``, ``rope_theta``, ``rope_type``, ``inv_freq`` and
    ``attention_factor`` (as ``rope_inv_freq`` returns them), plus ``mrope_section`` and
    ``mrope_interleaved`` where the config has them.

    Both spellings are read. transformers 5: ``rope_parameters``, either one dict for every layer or one per
    layer type (``{"full_attention": {...}, "sliding_attention": {...}}``), each holding its own
    ``rope_theta``. transformers 4: ``rope_theta`` and ``rope_scaling``, and for Gemma 3
    ``rope_local_base_freq``, the unscaled base of its sliding layers (the scaling is the global layers').
    The layer types come from ``layer_types``, else from ``sliding_window_pattern`` (layer $i$ is full when
    $(i + 1)$ is a multiple of it), else every layer is ``full_attention``. A top-level
    ``partial_rotary_factor`` applies where a layer's parameters give none; ``global_head_dim`` (Gemma 4) is
    the head width of the ``full_attention`` layers. An M-RoPE type (``"mrope"``) has plain frequencies: the
    split among time, height and width is ``mrope_section``'s business.
    """
    if not isinstance(config, dict):
        raise ValueError(f"layer_rope takes a config.json read as a dict, got {type(config).__name__}.")
    n_layers = config.get("num_hidden_layers")
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
        raise ValueError(f"config['num_hidden_layers'] is {n_layers!r}; layer_rope needs the number of layers, "
                         "a positive integer.")
    layer_types = _layer_types(config, n_layers)
    params = {t: _rope_parameters(config, t) for t in set(layer_types)}       # one dict (or None) per layer type
    uses_rope = config.get("no_rope_layers")
    if uses_rope is not None and len(uses_rope) < n_layers:
        raise ValueError(f"config['no_rope_layers'] has {len(uses_rope)} entries, but the model has "
                         f"num_hidden_layers={n_layers}; it needs one per layer (1: RoPE, 0: NoPE).")
    layers = []
    for i, layer_type in enumerate(layer_types):
        p = params[layer_type]
        if p is None or (uses_rope is not None and not uses_rope[i]):
            layers.append(None)                                               # a NoPE layer
            continue
        layers.append({"layer": i, "layer_type": layer_type, **p})
    return layers


def _layer_types(config, n_layers):
    """``layer_types`` as given (checked), else built from ``sliding_window_pattern``, else all full."""
    layer_types = config.get("layer_types")
    if layer_types is None:
        pattern = config.get("sliding_window_pattern")
        if pattern is None and config.get("no_rope_layers") is not None:
            # Llama 4, as transformers labels it: the RoPE layers attend in chunks, the NoPE layers to everything
            return ["chunked_attention" if r else "full_attention" for r in config["no_rope_layers"][:n_layers]]
        if pattern is None:
            return ["full_attention"] * n_layers
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise ValueError(f"config['sliding_window_pattern'] is {pattern!r}; it must be a positive integer "
                             "(every pattern-th layer is full attention, Gemma 3 uses 6).")
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    if len(layer_types) != n_layers:
        raise ValueError(f"config['layer_types'] has {len(layer_types)} entries, but num_hidden_layers is "
                         f"{n_layers}; it needs exactly one layer type per layer.")
    unknown = sorted({t for t in layer_types if t not in LAYER_TYPES}, key=str)
    if unknown:
        raise ValueError(f"config['layer_types'] names {', '.join(repr(t) for t in unknown)}, which layer_rope "
                         f"does not know; the layer types it reads are {', '.join(LAYER_TYPES)}.")
    return list(layer_types)


def _rope_parameters(config, layer_type):
    """The frequencies of one layer type: a dict of what ``layer_rope`` reports, or None for NoPE."""
    nested = config.get("rope_parameters")
    if nested is not None and any(t in nested for t in LAYER_TYPES):
        if layer_type not in nested:
            raise ValueError(f"config['rope_parameters'] is keyed by layer type but has no entry for "
                             f"{layer_type!r}, which layer_types uses; its keys are {', '.join(map(repr, nested))}.")
        p = nested[layer_type]
        if p is None:
            return None
        p = dict(p)
    elif nested is not None:
        p = dict(nested)                                                       # one v5 dict for every layer
    elif layer_type == "sliding_attention" and "rope_local_base_freq" in config:
        # Gemma 3's v4 keys: the local layers have their own base and none of the global layers' scaling
        p = {"rope_theta": config["rope_local_base_freq"]}
    else:
        p = dict(config.get("rope_scaling") or {})
        p.setdefault("rope_theta", config.get("rope_theta"))
    theta = p.pop("rope_theta", None)
    if theta is None:
        raise ValueError(f"The {layer_type!r} layers have no RoPE base: give rope_theta (in rope_parameters for "
                         "transformers 5 configs, at the top level for older ones); layer_rope does not guess a "
                         "model's default.")
    partial = p.pop("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    mrope = {key: p.pop(key) for key in ("mrope_section", "mrope_interleaved") if key in p}
    rope_type = p.get("rope_type", p.get("type", "default"))
    if rope_type == "mrope":                                                   # M-RoPE's frequencies are plain RoPE's
        p.pop("type", None)
        p["rope_type"] = rope_type = "default"
    if rope_type in ("yarn", "llama3", "longrope"):
        # as transformers does: a top-level original length (Phi-3) wins, else max_position_embeddings
        original = config.get("original_max_position_embeddings", p.get("original_max_position_embeddings"))
        if original is None:
            original = config.get("max_position_embeddings")
        if original is not None:
            p["original_max_position_embeddings"] = original
    head_dim = _head_dim(config, layer_type)
    inv_freq, attention_factor = rope_inv_freq(head_dim, theta, p or None, partial_rotary_factor=partial,
                                               max_position_embeddings=config.get("max_position_embeddings"))
    return {"head_dim": head_dim, "rope_theta": theta, "rope_type": rope_type, "partial_rotary_factor": partial,
            "inv_freq": inv_freq, "attention_factor": attention_factor, **mrope}


def _head_dim(config, layer_type):
    """``head_dim`` (``global_head_dim`` on Gemma 4's full layers), else hidden_size / num_attention_heads."""
    if layer_type == "full_attention" and config.get("global_head_dim"):
        return config["global_head_dim"]
    if config.get("head_dim"):
        return config["head_dim"]
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if not hidden or not heads:
        raise ValueError("The config gives neither head_dim nor hidden_size and num_attention_heads, so the "
                         "width of a head is unknown; add head_dim.")
    return hidden // heads
