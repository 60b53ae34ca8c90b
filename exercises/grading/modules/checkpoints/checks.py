r"""Checks of ``solutions/checkpoints.py`` (chapter 11): the port and the reading of published configs."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show


# ---------------------------------------------------------------------------
# 11.1 port_qk_weights
# ---------------------------------------------------------------------------

def _order(n_heads, d_head, r=None, n_kv_heads=None, per_head=True, inverse=False, blocks="qk",
           keys_by_query_heads=False):
    r"""The column order of a port, with the slips a reader makes as switches.

    ``r`` the rotary width (None: the whole head); ``n_kv_heads`` the key-value heads (None: ``n_heads``);
    ``per_head=False`` treats all heads of a block as one; ``inverse`` takes P^{-1} instead of P; ``blocks``
    names the blocks that are permuted (the value block, when named, takes the key block's order);
    ``keys_by_query_heads`` cuts the key block into ``n_heads`` heads of ``n_kv_heads * d_head / n_heads``
    channels (rotary width scaled alike), as ``permute(w_k, n_heads)`` does in a conversion script.
    """
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    Dq, Dkv = n_heads * d_head, n_kv * d_head

    def block(n, d, r):
        if not per_head:
            n, d, r = 1, n * d, None
        r = d if r is None else r
        within = np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2), np.arange(r, d)])
        if inverse:
            within = np.argsort(within)
        return np.concatenate([h * d + within for h in range(n)])

    q = block(n_heads, d_head, r)
    if keys_by_query_heads:
        w = Dkv // n_heads
        k = block(n_heads, w, None if r is None else r * w // d_head)
    else:
        k = block(n_kv, d_head, r)
    return np.concatenate([q if "q" in blocks else np.arange(Dq), Dq + (k if "k" in blocks else np.arange(Dkv)),
                           Dq + Dkv + (k if "v" in blocks else np.arange(Dkv))])


def _port(**slip):
    def port(W, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
        return W[..., _order(n_heads, d_head, rotary_dim, n_kv_heads, **slip)]
    return port


def _bias_forgotten(W, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    return W.copy() if W.ndim == 1 else W[..., _order(n_heads, d_head, rotary_dim, n_kv_heads)]


def _port_cases():
    out = []
    for label, shape, H, kv, d, r, seed, dtype in [
            ("2 heads of 8 channels, every channel turns", (16, 48), 2, None, 8, None, 31, np.float64),
            ("the bias: a 1-D array (3 d_model,)", (48,), 2, None, 8, None, 32, np.float64),
            ("3 heads of 6, rotary_dim 4 (partial rotary)", (18, 54), 3, None, 6, 4, 33, np.float64),
            ("4 heads of 4", (16, 48), 4, None, 4, None, 34, np.float64),
            ("two layers' weights stacked: (2, d_model, 3 d_model)", (2, 8, 24), 2, None, 4, None, 35, np.float64),
            ("rotary_dim equal to d_head, written out", (12, 36), 2, None, 6, 6, 36, np.float64),
            ("a single head of one pair", (2, 6), 1, None, 2, None, 37, np.float64),
            ("float32 weight", (8, 24), 2, None, 4, None, 38, np.float32),
            ("grouped-query: 4 query heads of 8 share 2 key-value heads", (32, 64), 4, 2, 8, None, 39, np.float64),
            ("multi-query: 4 query heads of 8, one key-value head", (32, 48), 4, 1, 8, None, 40, np.float64),
            ("grouped-query bias, 4 query heads of 4, 2 key-value heads", (32,), 4, 2, 4, None, 41, np.float64),
            ("grouped-query, 6 query heads of 8, 3 key-value heads, rotary_dim 4", (48, 96), 6, 3, 8, 4, 42,
             np.float64),
            ("n_kv_heads equal to n_heads, written out", (16, 48), 2, 2, 8, None, 43, np.float64)]:
        W = normal(shape, seed, dtype)
        kwargs = {} if r is None else {"rotary_dim": r}
        note = "" if r is None else f", rotary_dim = {r}"
        if kv is not None:
            kwargs["n_kv_heads"] = kv
            note += f", n_kv_heads = {kv}"
        out.append(Case(label, (W, H, d), kwargs,
                        show=f"{show('W_qkv', W, f'standard normal, seed {seed}')}; n_heads = {H}, d_head = {d}{note}"))
    return out


PORT_QK_WEIGHTS = Target("port_qk_weights", "array", _port_cases, [
    Misconception("whole_width", "one permutation across all heads at once",
                  "P acts inside each head: new channel c of head h is old channel h * d_head + P[c]. A single "
                  "even-then-odd order over all n_heads * d_head columns of a block moves channels from one head "
                  "into another.", _port(per_head=False)),
    Misconception("inverse", "the inverse permutation: rotate-half to interleaved",
                  "New channel c must hold old channel P[c], P = (0, 2, 4, ..., 1, 3, 5, ...): index the columns "
                  "with P, W[..., P]. Yours puts old channel c at new position P[c], which is argsort(P), the way "
                  "back. The two agree only for 4 channels or fewer.", _port(inverse=True)),
    Misconception("values_too", "the value block is permuted too",
                  "Values are never rotated, so their channels keep their meaning: permute the query and key "
                  "blocks only. A permuted value block reorders the output channels that W_o reads.",
                  _port(blocks="qkv")),
    Misconception("queries_only", "only the query block is permuted",
                  "Scores pair a rotated query with a rotated key: both blocks must move to the rotate-half "
                  "order, the key block (the n_kv_heads * d_head columns after the queries) too.",
                  _port(blocks="q")),
    Misconception("keys_only", "only the key block is permuted",
                  "Scores pair a rotated query with a rotated key: both blocks must move to the rotate-half "
                  "order, the query block (the first d_model columns) too.", _port(blocks="k")),
    Misconception("rotary_dim_ignored", "partial rotary ignored: the whole head is permuted",
                  "Only the first rotary_dim channels of a head turn; P reorders those, and channels rotary_dim .. "
                  "d_head - 1 stay where they are.",
                  lambda W, n_heads, d_head, rotary_dim=None, n_kv_heads=None:
                  W[..., _order(n_heads, d_head, None, n_kv_heads)]),
    Misconception("keys_by_query_heads", "keys permuted by the query head count",
                  "With grouped-query attention the key block has n_kv_heads heads of d_head channels, not n_heads: "
                  "P acts inside each of those n_kv_heads heads. Cutting the key block into n_heads pieces (as "
                  "permute(w_k, n_heads) would) splits every key head, and pairs channels that RoPE never paired. "
                  "The Hugging Face Llama conversion script permutes k_proj with num_key_value_heads.",
                  _port(keys_by_query_heads=True)),
    Misconception("bias_forgotten", "the bias (a 1-D array) comes back unported",
                  "The permutation acts on the last axis, whatever comes before it: a bias (3 d_model,) is ported "
                  "like a weight's columns.", _bias_forgotten),
])


# ---------------------------------------------------------------------------
# 11.3 rope_frequencies and 11.4 critical_pair
# ---------------------------------------------------------------------------

#: published configs, with the keys of their config.json (the factor lists of Phi-3 left out)
CONFIGS = [
    ("Llama-2-7B", {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 10000.0,
                    "max_position_embeddings": 4096}),
    ("Gemma-7B: head_dim given, and not hidden_size / heads", {
        "hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "rope_theta": 10000.0,
        "max_position_embeddings": 8192}),
    ("Phi-2: partial rotary, 0.4 of each head", {
        "hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4, "rope_theta": 10000.0,
        "max_position_embeddings": 2048}),
    ("Llama-3.1-8B: base 500000, trained at 8192, served at 131072", {
        "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0, "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192}}),
    ("DeepSeek-V3: decoupled RoPE, qk_rope_head_dim 64", {
        "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
        "rope_theta": 10000.0, "max_position_embeddings": 163840,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}}),
    ("Phi-3-mini-128k: original_max_position_embeddings at the top level", {
        "hidden_size": 3072, "num_attention_heads": 32, "rope_theta": 10000.0, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope"}}),
    ("a small config without rope_theta (the default 10000)", {
        "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 128}),
]


def _config_cases():
    return [Case(label, (dict(config),), show=f"config = {config!r}") for label, config in CONFIGS]


def _rotary_width(c, head=None, partial=True, rope_dim=True):
    if rope_dim and c.get("qk_rope_head_dim"):
        return int(c["qk_rope_head_dim"])
    d = head(c) if head else (c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"])
    return int(d * (c.get("partial_rotary_factor", 1.0) if partial else 1.0))


def _freqs(c, base=None, two=2.0, **width):
    r = _rotary_width(c, **width)
    b = float(c.get("rope_theta", 10000.0)) if base is None else base
    return b ** (-two * np.arange(r // 2, dtype=np.float64) / r)


ROPE_FREQUENCIES = Target("rope_frequencies", "array", _config_cases, [
    Misconception("head_dim_ignored", "head_dim ignored: hidden_size // num_attention_heads used instead",
                  "When a config gives head_dim, that is the head size: Gemma-7B has 16 heads of 256 channels "
                  "although 3072 / 16 = 192. Use hidden_size // num_attention_heads only when head_dim is absent.",
                  lambda c: _freqs(c, head=lambda c: c["hidden_size"] // c["num_attention_heads"])),
    Misconception("hidden_size_as_head", "hidden_size used as the head size",
                  "RoPE turns the channels of one head: head_dim, or hidden_size // num_attention_heads.",
                  lambda c: _freqs(c, head=lambda c: c["hidden_size"])),
    Misconception("partial_ignored", "partial_rotary_factor ignored",
                  "With partial rotary only int(head_dim * partial_rotary_factor) channels turn (32 of Phi-2's 80), "
                  "and the frequencies use that width: theta_i = rope_theta ** (-2i / r).",
                  lambda c: _freqs(c, partial=False)),
    Misconception("rope_dim_ignored", "qk_rope_head_dim ignored",
                  "Decoupled RoPE (DeepSeek's MLA) turns a separate slice of qk_rope_head_dim channels: that is "
                  "the rotary width, whatever hidden_size // num_attention_heads is.",
                  lambda c: _freqs(c, rope_dim=False)),
    Misconception("default_base", "rope_theta ignored: base 10000 always",
                  "Read the base from rope_theta (500000 for Llama 3, 10^6 for Qwen); 10000 is only the default "
                  "when the key is absent.", lambda c: _freqs(c, base=10000.0)),
    Misconception("pair_index_exponent", "the exponent uses i / r instead of 2i / r",
                  "theta_i = rope_theta ** (-2i / r) for pair i = 0 .. r/2 - 1: the last pair reaches nearly "
                  "1 / rope_theta.", lambda c: _freqs(c, two=1.0)),
])


def _critical(c, L=None, scale=1, shift=0):
    lam = 2 * math.pi / _freqs(c)
    s = c.get("rope_scaling") or {}
    length = L(c) if L else (s.get("original_max_position_embeddings") or c.get("original_max_position_embeddings")
                             or c["max_position_embeddings"])
    return scale * int(np.sum(lam < length)) + shift


CRITICAL_PAIR = Target("critical_pair", "float", _config_cases, [
    Misconception("serving_length", "the serving length used instead of the training length",
                  "A config with a scaling block serves max_position_embeddings tokens but was trained at "
                  "original_max_position_embeddings (in rope_scaling, or at the top level as in Phi-3): "
                  "Llama-3.1-8B trained at 8192, not 131072.",
                  lambda c: _critical(c, L=lambda c: c["max_position_embeddings"])),
    Misconception("top_level_missed", "the top-level original_max_position_embeddings missed",
                  "Some configs (Phi-3) write original_max_position_embeddings at the top level, not inside "
                  "rope_scaling: look in both places before falling back to max_position_embeddings.",
                  lambda c: _critical(c, L=lambda c: (c.get("rope_scaling") or {}).get(
                      "original_max_position_embeddings") or c["max_position_embeddings"])),
    Misconception("dimensions", "counted dimensions, not pairs",
                  "r_crit is a pair index: the number of pairs whose wavelength falls short of L. Liu et al.'s "
                  "d_extra = 2 r_crit counts dimensions (92 for Llama 2, where r_crit = 46).",
                  lambda c: _critical(c, scale=2)),
    Misconception("off_by_one", "the last pair that turns, not the first that does not",
                  "r_crit = min{i : 2 pi / theta_i >= L}: the first pair whose wavelength reaches L, which is "
                  "the count of pairs that fall short of it.", lambda c: _critical(c, shift=-1)),
])

TARGETS = [PORT_QK_WEIGHTS, ROPE_FREQUENCIES, CRITICAL_PAIR]


# ---------------------------------------------------------------------------
# Held-out cases: other head counts, widths and configs, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _port_held_out():
    out = []
    for i, (shape, H, kv, d, r, seed) in enumerate([((24, 72), 3, None, 8, None, 131), ((40, 56), 5, 1, 8, 4, 132),
                                                   ((12,), 2, None, 2, None, 133), ((3, 16, 32), 4, 2, 4, None, 134)]):
        kwargs = {} if r is None else {"rotary_dim": r}
        if kv is not None:
            kwargs["n_kv_heads"] = kv
        out.append(Case(f"held-out {i}", (normal(shape, seed, np.float64), H, d), kwargs, show="(held out)"))
    return out


HELD_OUT_CONFIGS = [
    {"hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 500000.0, "max_position_embeddings": 131072,
     "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "original_max_position_embeddings": 8192,
                      "low_freq_factor": 1.0, "high_freq_factor": 4.0}},
    {"hidden_size": 2560, "num_attention_heads": 32, "rope_theta": 10000.0, "partial_rotary_factor": 0.4,
     "max_position_embeddings": 4096},
    {"hidden_size": 96, "num_attention_heads": 6, "rope_theta": 1000.0, "max_position_embeddings": 256},
]


def _config_held_out():
    return [Case(f"held-out {i}", (dict(c),), show="(held out)") for i, c in enumerate(HELD_OUT_CONFIGS)]


HELD_OUT = {"port_qk_weights": _port_held_out, "rope_frequencies": _config_held_out,
            "critical_pair": _config_held_out}
