"""Wrong mrope_position_ids, proportional_inv_freq, layer_inv_freq, sink_attention and sink_logit_grad, as readers write them."""
import math

from mini_transformer.engine.backend import xp
from mini_transformer.positional.rope_scaling import rope_inv_freq


# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("ids_counting_tokens", "today.mrope_position_ids", "misconception", "tokens_counted"),
    ("ids_column_major", "today.mrope_position_ids", "misconception", "columns_first"),
    ("ids_image_restarts", "today.mrope_position_ids", "misconception", "image_from_zero"),
    ("ids_as_float", "today.mrope_position_ids", "dtype", None),
    ("proportional_as_neox", "today.proportional_inv_freq", "misconception", "neox_exponent"),
    ("proportional_rounded_up", "today.proportional_inv_freq", "misconception", "rounded_up"),
    ("proportional_only_turning", "today.proportional_inv_freq", "shape", None),
    ("layer_with_head_dim", "today.layer_inv_freq", "shape", "global_width_ignored"),
    ("layer_without_partial", "today.layer_inv_freq", "shape", "partial_dropped"),
    ("layer_counted_from_one", "today.layer_inv_freq", "shape", "counted_from_one"),
    ("sink_plain_softmax", "today.sink_attention", "misconception", "sink_ignored"),
    ("sink_scaled_like_scores", "today.sink_attention", "misconception", "sink_scaled"),
    ("sink_as_bos", "today.sink_attention", "misconception", "sink_takes_value"),
    ("sink_sees_the_future", "today.sink_attention", "misconception", "not_causal"),
    ("grad_plus", "today.sink_logit_grad", "misconception", "sign"),
    ("grad_without_p_sink", "today.sink_logit_grad", "misconception", "no_p_sink"),
    ("grad_one_for_all_heads", "today.sink_logit_grad", "misconception", "summed_over_heads"),
]


# ---------------------------------------------------------------------------
# mrope_position_ids
# ---------------------------------------------------------------------------

def _grid(t, h, w, rows_first=True):
    if rows_first:
        cells = [(a, b, c) for a in range(t) for b in range(h) for c in range(w)]
    else:
        cells = [(a, b, c) for a in range(t) for c in range(w) for b in range(h)]
    return [[cell[axis] for cell in cells] for axis in range(3)]


def ids_counting_tokens(segments):
    rows, start = [[], [], []], 0
    for kind, size in segments:
        ids = [list(range(size))] * 3 if kind == "text" else _grid(*size)
        for axis in range(3):
            rows[axis] += [start + i for i in ids[axis]]
        start += len(ids[0])                          # every token moves the position on by one
    return xp.asarray(rows, dtype="int64").reshape(3, -1)


def ids_column_major(segments):
    rows, start = [[], [], []], 0
    for kind, size in segments:
        ids = [list(range(size))] * 3 if kind == "text" else _grid(*size, rows_first=False)
        for axis in range(3):
            rows[axis] += [start + i for i in ids[axis]]
        if ids[0]:
            start += max(max(a) for a in ids) + 1
    return xp.asarray(rows, dtype="int64").reshape(3, -1)


def ids_image_restarts(segments):
    rows, start = [[], [], []], 0
    for kind, size in segments:
        ids = [list(range(size))] * 3 if kind == "text" else _grid(*size)
        offset = start if kind == "text" else 0      # an image is its own little grid
        for axis in range(3):
            rows[axis] += [offset + i for i in ids[axis]]
        if ids[0]:
            start += max(max(a) for a in ids) + 1
    return xp.asarray(rows, dtype="int64").reshape(3, -1)


def ids_as_float(segments):
    rows, start = [[], [], []], 0
    for kind, size in segments:
        ids = [list(range(size))] * 3 if kind == "text" else _grid(*size)
        for axis in range(3):
            rows[axis] += [start + i for i in ids[axis]]
        if ids[0]:
            start += max(max(a) for a in ids) + 1
    return xp.asarray(rows, dtype="float64").reshape(3, -1)


# ---------------------------------------------------------------------------
# proportional_inv_freq
# ---------------------------------------------------------------------------

def proportional_as_neox(head_dim, base, partial_rotary_factor):
    n = int(partial_rotary_factor * head_dim // 2)
    i = xp.arange(head_dim // 2, dtype="float64")
    rotary_dim = max(2 * n, 1)
    return xp.where(i < n, base ** (-2 * i / rotary_dim), 0.0)   # chapter 11's partial rotary, zero-padded


def proportional_rounded_up(head_dim, base, partial_rotary_factor):
    n = math.ceil(partial_rotary_factor * head_dim / 2)
    i = xp.arange(head_dim // 2, dtype="float64")
    return xp.where(i < n, base ** (-2 * i / head_dim), 0.0)


def proportional_only_turning(head_dim, base, partial_rotary_factor):
    n = int(partial_rotary_factor * head_dim // 2)
    return base ** (-2 * xp.arange(n, dtype="float64") / head_dim)   # the zeros left out


# ---------------------------------------------------------------------------
# layer_inv_freq
# ---------------------------------------------------------------------------

def _read(config, layer_type, head_dim, keep_partial=True):
    params = dict(config["rope_parameters"][layer_type])
    theta = params.pop("rope_theta")
    partial = params.pop("partial_rotary_factor", 1.0)
    return rope_inv_freq(head_dim, theta, params, partial_rotary_factor=partial if keep_partial else 1.0,
                         max_position_embeddings=config.get("max_position_embeddings"))[0]


def layer_with_head_dim(config, layer):
    return _read(config, config["layer_types"][layer], config["head_dim"])


def layer_without_partial(config, layer):
    layer_type = config["layer_types"][layer]
    d = config["global_head_dim"] if layer_type == "full_attention" and config.get("global_head_dim") else \
        config["head_dim"]
    return _read(config, layer_type, d, keep_partial=False)


def layer_counted_from_one(config, layer):
    layer_type = config["layer_types"][layer - 1]             # "layer 1" is the first layer
    d = config["global_head_dim"] if layer_type == "full_attention" and config.get("global_head_dim") else \
        config["head_dim"]
    return _read(config, layer_type, d)


# ---------------------------------------------------------------------------
# sink_attention
# ---------------------------------------------------------------------------

def _scores(q, k):
    T = q.shape[-2]
    s = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return xp.where(xp.triu(xp.ones((T, T), dtype=bool), 1), -xp.inf, s)


def _with_sink(s, sinks, v):
    sink = xp.broadcast_to(sinks.reshape(-1, 1, 1).astype(s.dtype), s.shape[:-1] + (1,))
    z = xp.concatenate([s, sink], axis=-1)
    p = xp.exp(z - z.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return p


def sink_plain_softmax(q, k, v, sinks):
    s = _scores(q, k)
    p = xp.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)                          # the sink "is handled by the model"
    return (p @ v).astype(q.dtype)


def sink_scaled_like_scores(q, k, v, sinks):
    s = q @ xp.swapaxes(k, -1, -2)
    T = q.shape[-2]
    s = xp.where(xp.triu(xp.ones((T, T), dtype=bool), 1), -xp.inf, s)
    sink = xp.broadcast_to(sinks.reshape(-1, 1, 1).astype(s.dtype), s.shape[:-1] + (1,))
    z = xp.concatenate([s, sink], axis=-1) / math.sqrt(q.shape[-1])   # one scale for every logit
    p = xp.exp(z - z.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return (p[..., :-1] @ v).astype(q.dtype)


def sink_as_bos(q, k, v, sinks):
    p = _with_sink(_scores(q, k), sinks, v)
    y = p[..., :-1] @ v
    return (y + p[..., -1:] * v[..., :1, :]).astype(q.dtype)    # the sink "is" the first token


def sink_sees_the_future(q, k, v, sinks):
    s = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    p = _with_sink(s, sinks, v)
    return (p[..., :-1] @ v).astype(q.dtype)


# ---------------------------------------------------------------------------
# sink_logit_grad
# ---------------------------------------------------------------------------

def _y_and_p_sink(q, k, v, sinks):
    p = _with_sink(_scores(q, k), sinks, v)
    return p[..., :-1] @ v, p[..., -1]


def grad_plus(q, k, v, sinks, gy):
    y, p_sink = _y_and_p_sink(q, k, v, sinks)
    return (p_sink * (gy * y).sum(-1)).sum(axis=(0, 2))       # "the sink adds weight"


def grad_without_p_sink(q, k, v, sinks, gy):
    y, _ = _y_and_p_sink(q, k, v, sinks)
    return -(gy * y).sum(axis=(0, 2, 3))


def grad_one_for_all_heads(q, k, v, sinks, gy):
    y, p_sink = _y_and_p_sink(q, k, v, sinks)
    total = -(p_sink * (gy * y).sum(-1)).sum()
    return xp.full(sinks.shape, total)
