r"""Checks of ``solutions/today.py`` (chapter 13): M-RoPE ids, proportional RoPE, one layer's RoPE, sink attention."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.drill_target import Drill
from exercises.grading.targets import Case, Misconception, Target, normal, show
from mini_transformer.positional.rope_scaling import rope_inv_freq


# ---------------------------------------------------------------------------
# 13.1 mrope_position_ids
# ---------------------------------------------------------------------------

def _mrope(segments, next_start="largest", order="raster", offset=True):
    r"""Qwen2-VL's ids with the slips a reader makes as switches: ``next_start`` ``"largest"`` (right),
    ``"tokens"`` (start += the segment's token count), ``"last"`` (one past the last token's width id);
    ``order="columns"`` walks an image column by column; ``offset=False`` starts every image at 0."""
    rows, start = [[], [], []], 0
    for kind, size in segments:
        if kind == "text":
            ids = [list(range(size))] * 3
        else:
            t, h, w = size
            cells = [(a, b, c) for a in range(t) for b in range(h) for c in range(w)]
            if order == "columns":
                cells = [(a, b, c) for a in range(t) for c in range(w) for b in range(h)]
            ids = [[cell[axis] for cell in cells] for axis in range(3)]
        base = start if (offset or kind == "text") else 0
        for axis in range(3):
            rows[axis] += [base + i for i in ids[axis]]
        if ids[0]:
            if next_start == "tokens":
                start += len(ids[0])
            elif next_start == "last":
                start += ids[2][-1] + 1
            else:
                start += max(max(a) for a in ids) + 1
    return np.asarray(rows, dtype=np.int64).reshape(3, -1)


SEGMENTS = [
    ("text alone: 5 tokens", [("text", 5)]),
    ("the docstring's example: text, then an image of grid 1 x 2 x 3", [("text", 2), ("image", (1, 2, 3))]),
    ("text, a tall image (1 x 4 x 2), text", [("text", 3), ("image", (1, 4, 2)), ("text", 2)]),
    ("text, a wide image (1 x 2 x 5), text", [("text", 1), ("image", (1, 2, 5)), ("text", 3)]),
    ("two frames (2 x 2 x 2) between text", [("text", 2), ("image", (2, 2, 2)), ("text", 1)]),
    ("an image first, then text", [("image", (1, 3, 3)), ("text", 2)]),
    ("two images in a row", [("text", 1), ("image", (1, 2, 2)), ("image", (1, 3, 1)), ("text", 1)]),
    ("an empty text segment between two images", [("image", (1, 2, 2)), ("text", 0), ("image", (1, 1, 2))]),
]


def _segment_cases():
    return [Case(label, ([tuple(s) for s in segs],), show=f"segments = {segs!r}") for label, segs in SEGMENTS]


MROPE_POSITION_IDS = Target("mrope_position_ids", "int_array", _segment_cases, [
    Misconception("tokens_counted", "the next segment starts one past the token count, not the largest id",
                  "An image of grid t x h x w holds t h w tokens but uses only max(t, h, w) ids per axis: the text "
                  "after it continues one past the largest id so far (start + max(t, h, w)), not start + t h w.",
                  lambda segs: _mrope(segs, next_start="tokens")),
    Misconception("last_width", "the next segment starts one past the last token's width id",
                  "The last token of an image is its bottom-right cell, whose width id is start + w - 1; a tall "
                  "image (h > w) reaches start + h - 1 on the height axis. Continue one past the largest id on ANY "
                  "axis.", lambda segs: _mrope(segs, next_start="last")),
    Misconception("columns_first", "the image walked column by column",
                  "The grid's tokens come in raster order: frame, then row (height), then column (width), so the "
                  "width id changes fastest.", lambda segs: _mrope(segs, order="columns")),
    Misconception("image_from_zero", "every image's ids start at 0",
                  "An image's ids are offset like text's: cell (a, b, c) carries start + a, start + b, start + c, "
                  "start being one past the largest id before it.", lambda segs: _mrope(segs, offset=False)),
])


# ---------------------------------------------------------------------------
# 13.2 proportional_inv_freq
# ---------------------------------------------------------------------------

def _proportional(d, base, p, width="full", keep="first", rounding=math.floor):
    r"""p-RoPE with slips: ``width="rotary"`` takes the exponent over p d (NeoX partial rotary, padded with
    zeros); ``keep="last"`` zeroes the fast pairs instead of the slow ones; ``rounding`` counts the pairs."""
    n = int(rounding(p * d / 2))
    i = np.arange(d // 2, dtype=np.float64)
    over = d if width == "full" else max(2 * n, 1)
    theta = base ** (-2 * i / over)
    turning = i < n if keep == "first" else i >= d // 2 - n
    return np.where(turning, theta, 0.0)


PROPORTIONAL_CASES = [
    ("Gemma 4's global layers: head 512, p 0.25, base 1e6", 512, 1e6, 0.25),
    ("head 16, p 0.5, base 10000", 16, 10000.0, 0.5),
    ("head 12, p 0.25: 1.5 pairs round down to 1", 12, 10000.0, 0.25),
    ("p 1: every pair turns, as in full RoPE", 8, 10000.0, 1.0),
    ("p 0: no pair turns", 8, 10000.0, 0.0),
    ("head 64, p 0.4, base 500000", 64, 500000.0, 0.4),
]


def _proportional_cases():
    return [Case(label, (d, base, p), show=f"head_dim = {d}, base = {base:g}, partial_rotary_factor = {p}")
            for label, d, base, p in PROPORTIONAL_CASES]


PROPORTIONAL_INV_FREQ = Target("proportional_inv_freq", "array", _proportional_cases, [
    Misconception("neox_exponent", "NeoX partial rotary's exponent: base^(-2i / (p d))",
                  "Proportional RoPE keeps the first pairs' frequencies of FULL RoPE: theta_i = base^(-2i/d) with "
                  "d = head_dim. Dividing by the rotary width p d is NeoX partial rotary (chapter 11), which turns "
                  "its last kept pair as slowly as full RoPE's last pair.",
                  lambda d, base, p: _proportional(d, base, p, width="rotary")),
    Misconception("slow_pairs_kept", "the fast pairs zeroed and the slow ones kept",
                  "p-RoPE drops the SLOWEST pairs (Barbero et al.: they carry meaning, not position): pairs 0 .. n-1 "
                  "turn, the pairs from n on have frequency 0.", lambda d, base, p: _proportional(d, base, p,
                                                                                             keep="last")),
    Misconception("rounded_up", "the turning pairs rounded up",
                  "n = int(p * d // 2) rounds down: a head of 12 channels at p = 0.25 turns 1 pair, not 2.",
                  lambda d, base, p: _proportional(d, base, p, rounding=math.ceil)),
    Misconception("factor_ignored", "every pair turns: partial_rotary_factor ignored",
                  "Only n = int(p * d // 2) pairs turn; the others are 0 (a frequency of 0 leaves the pair as it "
                  "is at every position).", lambda d, base, p: _proportional(d, base, 1.0)),
])


# ---------------------------------------------------------------------------
# 13.3 layer_inv_freq
# ---------------------------------------------------------------------------

GEMMA4 = {"head_dim": 256, "global_head_dim": 512, "max_position_embeddings": 131072,
          "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7,
          "rope_parameters": {
              "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
              "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}}
GEMMA3 = {"head_dim": 256, "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5 + ["sliding_attention"],
          "rope_parameters": {
              "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
              "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}
GPT_OSS = {"head_dim": 64, "max_position_embeddings": 131072,
           "layer_types": ["sliding_attention", "full_attention"] * 12,
           "rope_parameters": {t: {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                   "truncate": False, "original_max_position_embeddings": 4096, "rope_theta": 150000.0}
                               for t in ("sliding_attention", "full_attention")}}
SMALL = {"head_dim": 16, "global_head_dim": 32,
         "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
         "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 50000.0,
                                                "partial_rotary_factor": 0.5},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}}

LAYER_CASES = [
    ("Gemma 4 E2B, layer 0 (sliding)", GEMMA4, 0), ("Gemma 4 E2B, layer 4 (full, heads of 512, p-RoPE 0.25)", GEMMA4, 4),
    ("Gemma 3 (v5 form), layer 5 (full, linear factor 8)", GEMMA3, 5), ("Gemma 3 (v5 form), layer 30 (sliding)",
                                                                         GEMMA3, 30),
    ("GPT-OSS 20B, layer 1 (full, YaRN)", GPT_OSS, 1),
    ("a small model, layer 0 (full, heads of 32, NeoX partial 0.5 in a default type)", SMALL, 0),
    ("a small model, layer 2 (sliding)", SMALL, 2),
]


def _layer_cases():
    return [Case(label, (dict(config), layer), show=f"config = {config!r}, layer = {layer}")
            for label, config, layer in LAYER_CASES]


def _layer(config, layer, index=None, global_width=True, partial=True, one_type=None):
    r"""The layer's frequencies with slips: ``index(layer, n)`` picks the layer type's entry; ``global_width``
    False ignores global_head_dim; ``partial`` False drops partial_rotary_factor; ``one_type`` reads every
    layer with that type's parameters."""
    types = config["layer_types"]
    layer_type = types[index(layer, len(types)) if index else layer]
    p = dict(config["rope_parameters"][one_type or layer_type])
    theta, factor = p.pop("rope_theta"), p.pop("partial_rotary_factor", 1.0)
    d = config["head_dim"]
    if global_width and layer_type == "full_attention" and config.get("global_head_dim"):
        d = config["global_head_dim"]
    return rope_inv_freq(d, theta, p, partial_rotary_factor=factor if partial else 1.0,
                         max_position_embeddings=config.get("max_position_embeddings"))[0]


LAYER_INV_FREQ = Target("layer_inv_freq", "array", _layer_cases, [
    Misconception("global_width_ignored", "global_head_dim ignored: every layer read with head_dim",
                  "Gemma 4's full_attention layers have heads of global_head_dim = 512 channels, not head_dim = 256: "
                  "both the number of pairs and the exponent 2i/d change.",
                  lambda c, layer: _layer(c, layer, global_width=False)),
    Misconception("partial_dropped", "partial_rotary_factor dropped",
                  "A layer type's partial_rotary_factor travels as its own argument, "
                  "rope_inv_freq(..., partial_rotary_factor=p): left out, proportional RoPE turns every pair.",
                  lambda c, layer: _layer(c, layer, partial=False)),
    Misconception("first_type_for_all", "one layer type's parameters for every layer",
                  "Each layer reads the rope_parameters of its own type, layer_types[layer]: the sliding and full "
                  "layers of Gemma 3 and 4 have different bases.",
                  lambda c, layer: _layer(c, layer, one_type="sliding_attention")),
    Misconception("counted_from_one", "layers counted from 1: layer_types[layer - 1]",
                  "Layer indices start at 0, as the list's: layer 5 of Gemma 3 is layer_types[5], its first global "
                  "layer.", lambda c, layer: _layer(c, layer, index=lambda i, n: (i - 1) % n)),
])


# ---------------------------------------------------------------------------
# 13.4 sink_attention and 13.5 sink_logit_grad
# ---------------------------------------------------------------------------

def _sink(q, k, v, sinks, scale_sink=1.0, causal=True, take_value=False, exp_sink=True, heads=None):
    r"""Sink attention with slips: ``scale_sink`` multiplies the sink logit (1/sqrt(d) like a score);
    ``causal`` False sees the future; ``take_value`` gives the sink's weight to the first token's value;
    ``exp_sink`` False adds the logit itself to the denominator; ``heads`` reorders the sinks."""
    T, d = q.shape[-2], q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)
    if causal:
        s = np.where(np.triu(np.ones((T, T), bool), 1), -np.inf, s)
    sinks = np.asarray(sinks, np.float64)[heads if heads is not None else slice(None)] * scale_sink
    m = np.maximum(s.max(-1, keepdims=True), sinks.reshape(-1, 1, 1) if exp_sink else -np.inf)
    e = np.exp(s - m)
    extra = np.exp(sinks.reshape(-1, 1, 1) - m) if exp_sink else sinks.reshape(-1, 1, 1) * np.exp(-m)
    Z = e.sum(-1, keepdims=True) + extra
    y = (e / Z) @ v
    if take_value:
        y = y + (extra / Z) * v[..., :1, :]
    return y.astype(q.dtype)


SINK_CASES = [
    ("one query, one key, score 0, sink ln 2: y = v / 3", (1, 1, 1, 4), 0, [math.log(2.0)], True),
    ("2 heads, 5 tokens, sinks 0.5 and -1", (1, 2, 5, 4), 51, [0.5, -1.0], False),
    ("batch of 2, 3 heads, 6 tokens, d_head 8", (2, 3, 6, 8), 52, [1.0, -0.5, 2.0], False),
    ("a large sink, 4: rows keep little weight", (1, 2, 4, 4), 53, [4.0, 3.0], False),
    ("sinks at -30: nearly plain attention", (1, 2, 4, 4), 54, [-30.0, -30.0], False),
    ("float32 inputs", (1, 2, 5, 4), 55, [0.3, 0.7], False),
]


def _sink_inputs(shape, seed, zero_scores, dtype=np.float64):
    q = np.zeros(shape, dtype) if zero_scores else normal(shape, seed, dtype)
    return q, (q.copy() if zero_scores else normal(shape, seed + 100, dtype)), normal(shape, seed + 200, dtype)


def _sink_cases():
    out = []
    for label, shape, seed, sinks, zero in SINK_CASES:
        dtype = np.float32 if "float32" in label else np.float64
        q, k, v = _sink_inputs(shape, seed, zero, dtype)
        s = np.asarray(sinks, dtype)
        out.append(Case(label, (q, k, v, s), show=f"{show('q', q, 'zeros' if zero else f'seed {seed}')}; "
                                                  f"k, v of the same shape; sinks = {sinks}"))
    return out


SINK_ATTENTION = Target("sink_attention", "array", _sink_cases, [
    Misconception("sink_ignored", "the sink column left out: plain attention",
                  "The sink logit joins the softmax's denominator as one more column: e^{sinks[h]} + sum_j e^{s_ij}. "
                  "With it, a row's weights on the tokens sum to less than 1.",
                  lambda q, k, v, s: _sink(q, k, v, np.full(np.shape(s), -np.inf))),
    Misconception("sink_scaled", "the sink logit divided by sqrt(d_head) like the scores",
                  "Only q.k is divided by sqrt(d_head); the sink is a logit already, added as it is.",
                  lambda q, k, v, s: _sink(q, k, v, s, scale_sink=1 / math.sqrt(q.shape[-1]))),
    Misconception("sink_takes_value", "the sink's weight given to the first token's value",
                  "The sink has no value: drop its column before multiplying by v. A BOS token would take a value; "
                  "the learned sink does not, so a row's output shrinks as the sink's weight grows.",
                  lambda q, k, v, s: _sink(q, k, v, s, take_value=True)),
    Misconception("not_causal", "no causal mask",
                  "Query i may attend to keys j <= i only: set the scores of later keys to -inf before the softmax.",
                  lambda q, k, v, s: _sink(q, k, v, s, causal=False)),
    Misconception("logit_not_exponentiated", "the sink logit added to the denominator as it is, not e^{sink}",
                  "The sink is a logit: its column contributes e^{sinks[h]} to the denominator, like every score.",
                  lambda q, k, v, s: _sink(q, k, v, s, exp_sink=False)),
])


def _grad(q, k, v, s, gy, sign=-1.0, factor="p_sink", sum_heads=False):
    y = _sink(q, k, v, s)
    p_sink = 1.0 - _sink(q, k, np.ones_like(v), s)[..., 0]
    w = {"p_sink": p_sink, "none": np.ones_like(p_sink), "kept": 1.0 - p_sink}[factor]
    g = sign * (w * (gy * y).sum(-1)).sum(axis=(0, 2))
    return np.full_like(g, g.sum()) if sum_heads else g


def _grad_cases():
    out = []
    for label, shape, seed, sinks in [("2 heads, 5 tokens", (1, 2, 5, 4), 61, [0.5, -1.0]),
                                      ("batch of 2, 3 heads, 4 tokens", (2, 3, 4, 4), 62, [1.0, 0.0, -2.0]),
                                      ("one query, one key, score 0, sink ln 2", (1, 1, 1, 4), 0, [math.log(2.0)]),
                                      ("a large sink, 3", (1, 2, 6, 8), 63, [3.0, 2.0])]:
        q, k, v = _sink_inputs(shape, seed, seed == 0)
        gy = normal(shape, seed + 300)
        out.append(Case(label, (q, k, v, np.asarray(sinks), gy),
                        show=f"{show('q', q, 'zeros' if seed == 0 else f'seed {seed}')}; k, v, gy of the same shape; "
                             f"sinks = {sinks}"))
    return out


SINK_LOGIT_GRAD = Target("sink_logit_grad", "array", _grad_cases, [
    Misconception("sign", "the sign turned",
                  "Raising the sink takes weight from every token: dy_i/d sink = -p_sink,i y_i, a minus sign.",
                  lambda q, k, v, s, gy: _grad(q, k, v, s, gy, sign=1.0)),
    Misconception("no_p_sink", "the sink's own weight left out: -sum gy . y",
                  "d p_ij / d sink = -p_ij p_sink,i: each row's term carries its p_sink.",
                  lambda q, k, v, s, gy: _grad(q, k, v, s, gy, factor="none")),
    Misconception("kept_weight", "the tokens' weight 1 - p_sink in place of p_sink",
                  "d p_ij / d sink = -p_ij p_sink,i: the factor is the SINK's weight in the row, not the tokens'.",
                  lambda q, k, v, s, gy: _grad(q, k, v, s, gy, factor="kept")),
    Misconception("summed_over_heads", "one gradient for all heads",
                  "Each head has its own sink logit: sum over the batch and the queries, never over the heads.",
                  lambda q, k, v, s, gy: _grad(q, k, v, s, gy, sum_heads=True)),
])

TARGETS = [MROPE_POSITION_IDS, PROPORTIONAL_INV_FREQ, LAYER_INV_FREQ, SINK_ATTENTION, SINK_LOGIT_GRAD]

DRILL = Drill(("mrope_position_ids", "proportional_inv_freq", "sink_attention"), minutes=20)


# ---------------------------------------------------------------------------
# Held-out cases: other segments, widths, configs and sizes, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _held_segments():
    return [Case(f"held-out {i}", (segs,), show="(held out)") for i, segs in enumerate([
        [("text", 4), ("image", (1, 5, 2)), ("text", 1)],
        [("image", (3, 1, 2)), ("text", 2), ("image", (1, 2, 4))],
        [("text", 0), ("image", (2, 3, 1))]])]


def _held_proportional():
    return [Case(f"held-out {i}", args, show="(held out)")
            for i, args in enumerate([(128, 1e6, 0.25), (20, 5000.0, 0.3), (256, 10000.0, 0.75)])]


def _held_layers():
    return [Case(f"held-out {i}", (dict(c), layer), show="(held out)")
            for i, (c, layer) in enumerate([(GEMMA4, 34), (GEMMA3, 11), (GPT_OSS, 0), (SMALL, 1)])]


def _held_sinks():
    out = []
    for i, (shape, seed, sinks) in enumerate([((1, 3, 7, 4), 71, [0.0, 1.5, -0.5]), ((2, 1, 3, 2), 72, [2.0])]):
        q, k, v = _sink_inputs(shape, seed, False)
        out.append(Case(f"held-out {i}", (q, k, v, np.asarray(sinks)), show="(held out)"))
    return out


def _held_grads():
    out = []
    for i, (shape, seed, sinks) in enumerate([((1, 3, 5, 4), 81, [0.2, -0.7, 1.1]), ((2, 2, 3, 2), 82, [1.0, 0.0])]):
        q, k, v = _sink_inputs(shape, seed, False)
        out.append(Case(f"held-out {i}", (q, k, v, np.asarray(sinks), normal(shape, seed + 300)), show="(held out)"))
    return out


HELD_OUT = {"mrope_position_ids": _held_segments, "proportional_inv_freq": _held_proportional,
            "layer_inv_freq": _held_layers, "sink_attention": _held_sinks, "sink_logit_grad": _held_grads}
