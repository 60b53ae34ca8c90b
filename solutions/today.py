r"""Positions in today's models: the functions of chapter 13's exercises.

Four mechanisms that the open models of 2025 and 2026 ship, each a small step from what the book
built before: multimodal RoPE's three position ids (Qwen2-VL), proportional RoPE's frequencies
(Gemma 4), the RoPE of one layer of a model whose layers differ (Gemma 3 and 4, GPT-OSS), and
attention with a learned sink logit per head (GPT-OSS). The layout is the book's: queries, keys
and values are ``(B, H, T, d_head)``.
"""
import math

from mini_transformer.engine.backend import xp
from mini_transformer.positional.rope_scaling import rope_inv_freq


def mrope_position_ids(segments):
    r"""The ``(3, T)`` position ids (time, height, width) of a text-and-image sequence, by Qwen2-VL's rule.

    ``segments`` is a list of ``("text", n)`` (``n`` tokens) and ``("image", (t, h, w))`` (the grid
    after patch merging: ``t * h * w`` tokens in raster order, time first, then rows, then columns).
    A text token carries the same id on all three rows. The image token at grid cell ``(a, b, c)``
    carries ``(start + a, start + b, start + c)``. Every segment starts one past the largest id of
    any token before it (the first at 0). Worked example: ``[("text", 2), ("image", (1, 2, 3))]``
    gives time ``[0, 1, 2, 2, 2, 2, 2, 2]``, height ``[0, 1, 2, 2, 2, 3, 3, 3]`` and width
    ``[0, 1, 2, 3, 4, 2, 3, 4]``, and a text token after it would start at 5.

    Args:
        segments: a list of ``("text", n)`` and ``("image", (t, h, w))`` tuples.

    Returns:
        int64 array ``(3, T)``, ``T`` the total number of tokens.
    """
    # BEGIN SOLUTION Exercise 13.1
    rows, start = [[], [], []], 0
    for kind, size in segments:
        if kind == "text":
            ids = [list(range(size))] * 3                                  # equal on all three axes
        else:
            t, h, w = size
            ids = [[a for a in range(t) for _ in range(h * w)],            # time: one per frame
                   [b for _ in range(t) for b in range(h) for _ in range(w)],  # height: the row
                   [c for _ in range(t * h) for c in range(w)]]            # width: the column
        for axis in range(3):
            rows[axis] += [start + i for i in ids[axis]]
        if ids[0]:                                                         # one past the largest id so far
            start += max(max(axis_ids) for axis_ids in ids) + 1
    return xp.asarray(rows, dtype="int64").reshape(3, -1)
    # END SOLUTION


def proportional_inv_freq(head_dim, base, partial_rotary_factor):
    r"""Proportional RoPE's frequencies (Gemma 4's ``rope_type: "proportional"``), one per pair of the head.

    .. math:: \theta_i = \begin{cases} \text{base}^{-2i/d} & i < n \\ 0 & n \le i < d/2 \end{cases},
              \qquad n = \lfloor p\, d / 2 \rfloor,

    with ``d = head_dim`` the FULL head width and ``p = partial_rotary_factor``: the first ``n`` pairs
    turn as they would in full RoPE, the other pairs never turn. ``n`` rounds down, as Hugging Face
    computes it (``int(p * d // 2)``).

    Args:
        head_dim: the channels of one head, even.
        base: the RoPE base (``rope_theta``).
        partial_rotary_factor: the share of the pairs that turn, in ``[0, 1]``.

    Returns:
        float64 array ``(head_dim // 2,)``.
    """
    # BEGIN SOLUTION Exercise 13.2
    n = int(partial_rotary_factor * head_dim // 2)                         # the pairs that turn
    i = xp.arange(head_dim // 2, dtype="float64")                          # (d/2,) every pair of the head
    theta = base ** (-2 * i / head_dim)                                    # over the full width d
    return xp.where(i < n, theta, 0.0)
    # END SOLUTION


def layer_inv_freq(config, layer):
    r"""The RoPE frequencies of layer ``layer`` of a model, from its transformers 5 ``config.json``.

    The config (a dict) has ``layer_types``, one name a layer (``"sliding_attention"``,
    ``"full_attention"``), and ``rope_parameters`` keyed by those names; each value holds that
    layer type's ``rope_theta``, ``rope_type`` and whatever its type needs (``factor``,
    ``partial_rotary_factor``, ...). The head width is ``head_dim``, except on the
    ``full_attention`` layers of a config that gives ``global_head_dim`` (Gemma 4). Compute the
    frequencies with the library's ``rope_inv_freq(head_dim, rope_theta, rope_scaling,
    partial_rotary_factor=..., max_position_embeddings=...)``: ``rope_scaling`` is the layer type's
    dict without ``rope_theta`` and ``partial_rotary_factor``, which are arguments of their own
    (``partial_rotary_factor`` defaults to 1.0).

    Args:
        config: a dict with ``layer_types``, ``rope_parameters``, ``head_dim`` and optionally
            ``global_head_dim`` and ``max_position_embeddings``.
        layer: the layer's index, from 0.

    Returns:
        float64 array, the layer's ``inv_freq`` as ``rope_inv_freq`` returns it.
    """
    # BEGIN SOLUTION Exercise 13.3
    layer_type = config["layer_types"][layer]
    params = dict(config["rope_parameters"][layer_type])                   # a copy: the config stays as it was
    theta = params.pop("rope_theta")
    partial = params.pop("partial_rotary_factor", 1.0)
    head_dim = config["head_dim"]
    if layer_type == "full_attention" and config.get("global_head_dim"):
        head_dim = config["global_head_dim"]                                # Gemma 4's wider global heads
    inv_freq, _ = rope_inv_freq(head_dim, theta, params, partial_rotary_factor=partial,
                                max_position_embeddings=config.get("max_position_embeddings"))
    return inv_freq
    # END SOLUTION


def sink_attention(q, k, v, sinks):
    r"""Causal attention with a learned sink logit per head (GPT-OSS).

    Head ``h``'s sink logit ``sinks[h]`` joins every row's softmax as one more column, and has no
    value. With scores :math:`s_{ij} = q_i \cdot k_j / \sqrt{d_{head}}` for keys ``j <= i``,

    .. math:: p_{ij} = \frac{e^{s_{ij}}}{e^{\text{sinks}_h} + \sum_{j' \le i} e^{s_{ij'}}}, \qquad
              y_i = \sum_{j \le i} p_{ij} v_j,

    so row ``i`` puts :math:`1 - p_{sink}` on the tokens, :math:`p_{sink} = e^{\text{sinks}_h} / (\ldots)`
    the same denominator.

    Args:
        q, k, v: float arrays ``(B, H, T, d_head)``.
        sinks: float array ``(H,)``, one logit a head.

    Returns:
        ``y``, an array ``(B, H, T, d_head)`` of the dtype of ``q``.
    """
    # BEGIN SOLUTION Exercise 13.4
    T, d_head = q.shape[-2], q.shape[-1]
    scores = q @ xp.swapaxes(k, -1, -2) / math.sqrt(d_head)               # (B, H, T, T)
    future = xp.triu(xp.ones((T, T), dtype=bool), k=1)                    # key j after query i
    scores = xp.where(future, -xp.inf, scores)
    sink = xp.broadcast_to(sinks.reshape(-1, 1, 1).astype(scores.dtype), scores.shape[:-1] + (1,))
    logits = xp.concatenate([scores, sink], axis=-1)                      # (B, H, T, T + 1): the sink last
    logits = logits - logits.max(axis=-1, keepdims=True)                  # for exp's range; p is unchanged
    p = xp.exp(logits)
    p = p / p.sum(axis=-1, keepdims=True)
    return (p[..., :-1] @ v).astype(q.dtype)                              # the sink column has no value
    # END SOLUTION


def sink_logit_grad(q, k, v, sinks, gy):
    r"""The gradient of a loss with respect to the sink logits, given ``gy`` = dL/dy of ``sink_attention``.

    Args:
        q, k, v: float arrays ``(B, H, T, d_head)``.
        sinks: float array ``(H,)``.
        gy: float array ``(B, H, T, d_head)``, the gradient of the loss with respect to the output ``y``.

    Returns:
        float64 array ``(H,)``: dL/d ``sinks[h]`` for every head.
    """
    # BEGIN SOLUTION Exercise 13.5
    y = sink_attention(q, k, v, sinks)                                    # (B, H, T, d_head)
    kept = sink_attention(q, k, xp.ones_like(v), sinks)[..., 0]           # (B, H, T): 1 - p_sink of each row
    p_sink = 1.0 - kept
    # dy_i / d sinks_h = -p_sink,i y_i: the sink takes weight from every token in proportion
    return -(p_sink * (gy * y).sum(axis=-1)).sum(axis=(0, 2)).astype("float64")
    # END SOLUTION


def test_sink_attention(sink_attention):
    r"""A test that fails on a wrong ``sink_attention``: the sink must take weight and give no value.

    You receive a ``sink_attention`` (the signature of Exercise 13.4) and raise ``AssertionError``
    (a plain ``assert``) when it is wrong. The grader runs your test on the reference, where it must
    pass, and on mutants (the sink ignored, its sign turned, its logit divided by
    :math:`\sqrt{d_{head}}` like a score, the heads' sinks swapped, the sink's weight given to the
    first token's value, ...), each of which it must fail.

    Args:
        sink_attention: a function ``(q, k, v, sinks) -> y``, as in Exercise 13.4.
    """
    # BEGIN SOLUTION Exercise 13.6
    g = xp.random.default_rng(0)
    # one query, one key, whose score is 0: the row's weights are 1 / (1 + e^s) on the token
    q = xp.zeros((1, 2, 1, 4))
    v = g.normal(size=(1, 2, 1, 4))
    sinks = xp.array([math.log(2.0), math.log(3.0)])                      # two heads, two different sinks
    y = sink_attention(q, q, v, sinks)
    assert xp.allclose(y[0, 0], v[0, 0] / 3) and xp.allclose(y[0, 1], v[0, 1] / 4), "p_sink = e^s / (1 + e^s)"
    # a sink at -inf is plain causal attention, computed here by hand
    B, H, T, d = 2, 2, 5, 4
    q, k, v = (g.normal(size=(B, H, T, d)) for _ in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    s = xp.where(xp.triu(xp.ones((T, T), dtype=bool), 1), -xp.inf, s)
    p = xp.exp(s - s.max(-1, keepdims=True))
    plain = (p / p.sum(-1, keepdims=True)) @ v
    assert xp.allclose(sink_attention(q, k, v, xp.full(H, -xp.inf)), plain), "without a sink: plain attention"
    # every row's weights sum to 1 - p_sink < 1: with values of ones, y is that sum
    rows = sink_attention(q, k, xp.ones_like(v), xp.array([0.5, -1.0]))[..., 0]
    assert ((rows > 0) & (rows < 1)).all(), "the sink must take some weight from every row"
    # causal: a later key changes no earlier row
    k2 = k.copy()
    k2[..., -1, :] += 1.0
    assert xp.allclose(sink_attention(q, k, v, sinks)[..., :-1, :], sink_attention(q, k2, v, sinks)[..., :-1, :])
    # END SOLUTION
