"""Wrong port_qk_weights, rope_frequencies and critical_pair, each as a reader might write it."""
import math

from mini_transformer.engine.backend import xp
from mini_transformer.positional.rope import rope_channel_permutation


# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("port_one_permutation", "checkpoints.port_qk_weights", "misconception", "whole_width"),
    ("port_with_argsort", "checkpoints.port_qk_weights", "misconception", "inverse"),
    ("port_all_three_blocks", "checkpoints.port_qk_weights", "misconception", "values_too"),
    ("port_keys_forgotten", "checkpoints.port_qk_weights", "misconception", "queries_only"),
    ("port_whole_head", "checkpoints.port_qk_weights", "misconception", "rotary_dim_ignored"),
    ("port_keys_by_query_heads", "checkpoints.port_qk_weights", "misconception", "keys_by_query_heads"),
    ("port_bias_left_alone", "checkpoints.port_qk_weights", "misconception", "bias_forgotten"),
    ("port_in_place", "checkpoints.port_qk_weights", "mutated", None),
    ("frequencies_from_hidden_over_heads", "checkpoints.rope_frequencies", "shape", "head_dim_ignored"),
    ("frequencies_whole_head", "checkpoints.rope_frequencies", "shape", "partial_ignored"),
    ("frequencies_base_10000", "checkpoints.rope_frequencies", "misconception", "default_base"),
    ("frequencies_mla_as_mha", "checkpoints.rope_frequencies", "shape", "rope_dim_ignored"),
    ("frequencies_float32", "checkpoints.rope_frequencies", "dtype", None),
    ("critical_at_max_positions", "checkpoints.critical_pair", "misconception", "serving_length"),
    ("critical_scaling_block_only", "checkpoints.critical_pair", "misconception", "top_level_missed"),
    ("critical_d_extra", "checkpoints.critical_pair", "misconception", "dimensions"),
    ("critical_last_full_turn", "checkpoints.critical_pair", "misconception", "off_by_one"),
    ("critical_as_array", "checkpoints.critical_pair", "type", None),
]


# ---------------------------------------------------------------------------
# port_qk_weights
# ---------------------------------------------------------------------------

def _per_head(n_heads, d_head, r):
    perm = rope_channel_permutation(d_head, r)
    return xp.concatenate([h * d_head + perm for h in range(n_heads)])


def _blocks(n_heads, d_head, n_kv_heads):
    """The widths of the query block and of the key (and value) block."""
    return n_heads * d_head, (n_heads if n_kv_heads is None else n_kv_heads) * d_head


def port_one_permutation(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    # even-then-odd over the whole block
    q, k = rope_channel_permutation(Dq), rope_channel_permutation(Dkv)
    return W_qkv[..., xp.concatenate([q, Dq + k, xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]


def port_with_argsort(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    # "the permutation's order", the wrong way round
    q = xp.argsort(_per_head(n_heads, d_head, rotary_dim))
    k = xp.argsort(_per_head(Dkv // d_head, d_head, rotary_dim))
    return W_qkv[..., xp.concatenate([q, Dq + k, xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]


def port_all_three_blocks(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    k = _per_head(Dkv // d_head, d_head, rotary_dim)
    return W_qkv[..., xp.concatenate([_per_head(n_heads, d_head, rotary_dim), Dq + k, Dq + Dkv + k])]


def port_keys_forgotten(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    return W_qkv[..., xp.concatenate([_per_head(n_heads, d_head, rotary_dim), xp.arange(Dq, Dq + 2 * Dkv)])]


def port_whole_head(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    q, k = _per_head(n_heads, d_head, None), _per_head(Dkv // d_head, d_head, None)
    return W_qkv[..., xp.concatenate([q, Dq + k, xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]


def port_keys_by_query_heads(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    # "queries and keys have the same number of heads": the key block cut into n_heads pieces,
    # as permute(w_k, n_heads) does when it is given the query head count
    w = Dkv // n_heads
    k = _per_head(n_heads, w, None if rotary_dim is None else rotary_dim * w // d_head)
    return W_qkv[..., xp.concatenate([_per_head(n_heads, d_head, rotary_dim), Dq + k,
                                      xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]


def port_bias_left_alone(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    if W_qkv.ndim == 1:
        return W_qkv.copy()  # "a bias has no columns to reorder"
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    q, k = _per_head(n_heads, d_head, rotary_dim), _per_head(Dkv // d_head, d_head, rotary_dim)
    return W_qkv[..., xp.concatenate([q, Dq + k, xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]


def port_in_place(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    Dq, Dkv = _blocks(n_heads, d_head, n_kv_heads)
    q, k = _per_head(n_heads, d_head, rotary_dim), _per_head(Dkv // d_head, d_head, rotary_dim)
    W_qkv[..., :] = W_qkv[..., xp.concatenate([q, Dq + k, xp.arange(Dq + Dkv, Dq + 2 * Dkv)])]
    return W_qkv


# ---------------------------------------------------------------------------
# rope_frequencies
# ---------------------------------------------------------------------------

def _theta(r, base):
    return base ** (-xp.arange(0, r, 2, dtype="float64") / r)


def frequencies_from_hidden_over_heads(config):
    if config.get("qk_rope_head_dim"):
        return _theta(config["qk_rope_head_dim"], config.get("rope_theta", 10000.0))
    d = config["hidden_size"] // config["num_attention_heads"]
    return _theta(int(d * config.get("partial_rotary_factor", 1.0)), config.get("rope_theta", 10000.0))


def frequencies_whole_head(config):
    if config.get("qk_rope_head_dim"):
        return _theta(config["qk_rope_head_dim"], config.get("rope_theta", 10000.0))
    d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return _theta(d, config.get("rope_theta", 10000.0))


def frequencies_base_10000(config):
    if config.get("qk_rope_head_dim"):
        return _theta(config["qk_rope_head_dim"], 10000.0)
    d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return _theta(int(d * config.get("partial_rotary_factor", 1.0)), 10000.0)


def frequencies_mla_as_mha(config):
    d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return _theta(int(d * config.get("partial_rotary_factor", 1.0)), config.get("rope_theta", 10000.0))


def frequencies_float32(config):
    if config.get("qk_rope_head_dim"):
        r = config["qk_rope_head_dim"]
    else:
        d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        r = int(d * config.get("partial_rotary_factor", 1.0))
    return xp.float32(config.get("rope_theta", 10000.0)) ** (-xp.arange(0, r, 2, dtype="float32") / r)


# ---------------------------------------------------------------------------
# critical_pair
# ---------------------------------------------------------------------------

def _frequencies(config):
    if config.get("qk_rope_head_dim"):
        r = config["qk_rope_head_dim"]
    else:
        d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        r = int(d * config.get("partial_rotary_factor", 1.0))
    return _theta(r, config.get("rope_theta", 10000.0))


def critical_at_max_positions(config):
    lam = 2 * math.pi / _frequencies(config)
    return int(xp.sum(lam < config["max_position_embeddings"]))


def critical_scaling_block_only(config):
    L = (config.get("rope_scaling") or {}).get("original_max_position_embeddings", config["max_position_embeddings"])
    return int(xp.sum(2 * math.pi / _frequencies(config) < L))


def _trained_length(config):
    s = config.get("rope_scaling") or {}
    return (s.get("original_max_position_embeddings") or config.get("original_max_position_embeddings")
            or config["max_position_embeddings"])


def critical_d_extra(config):
    pair = int(xp.sum(2 * math.pi / _frequencies(config) < _trained_length(config)))
    return 2 * pair  # Liu et al.'s d_extra


def critical_last_full_turn(config):
    turned = xp.nonzero(2 * math.pi / _frequencies(config) < _trained_length(config))[0]
    return int(turned[-1])  # the last pair that turns


def critical_as_array(config):
    lam = 2 * math.pi / _frequencies(config)
    return xp.argmax(lam >= _trained_length(config), keepdims=True)  # right index, as a (1,) array
