r"""Published positional settings of real models, as plain data, and two helpers to read them.

Each entry keeps the key names of the model's own ``config.json`` where it has one, and a
``source`` naming where the numbers were checked (paper, model card or released config; the
survey's Table 4 of representative LLMs is the starting list). A number that could not be
checked is left out and named under ``absent`` instead of guessed.

``describe_model(name)`` turns an entry into numbers you can plot: for a RoPE model the
frequencies $\theta_i'$ (after any ``rope_scaling``), their wavelengths $2\pi/\theta_i'$, the
attention factor, and the critical dimension of the unscaled RoPE at its training length.
"""
import difflib
import math

from .rope_scaling import critical_dimension, longrope_attention_factor, rope_inv_freq, wavelengths

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
    "nope": "No positional encoding in attention (NoPE): queries and keys are never rotated and no "
            "bias is added; order reaches attention only through other layers.",
}


def list_models():
    """Names of the stored models, in the order of the survey's table."""
    return list(MODELS)


def describe_model(name):
    r"""A dict describing ``name``'s positional scheme, with numbers for RoPE models.

    Every result has ``name``, ``mechanism``, ``summary``, ``source`` and the stored fields.
    RoPE entries add ``rotary_dim`` (``qk_rope_head_dim``, else ``head_dim`` times any
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
