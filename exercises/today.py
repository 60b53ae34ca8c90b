# Generated from solutions/today.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
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
    # TODO: Exercise 13.1
    raise NotImplementedError("Exercise 13.1")


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
    # TODO: Exercise 13.2
    raise NotImplementedError("Exercise 13.2")


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
    # TODO: Exercise 13.3
    raise NotImplementedError("Exercise 13.3")


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
    # TODO: Exercise 13.4
    raise NotImplementedError("Exercise 13.4")


def sink_logit_grad(q, k, v, sinks, gy):
    r"""The gradient of a loss with respect to the sink logits, given ``gy`` = dL/dy of ``sink_attention``.

    Args:
        q, k, v: float arrays ``(B, H, T, d_head)``.
        sinks: float array ``(H,)``.
        gy: float array ``(B, H, T, d_head)``, the gradient of the loss with respect to the output ``y``.

    Returns:
        float64 array ``(H,)``: dL/d ``sinks[h]`` for every head.
    """
    # TODO: Exercise 13.5
    raise NotImplementedError("Exercise 13.5")


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
    # TODO: Exercise 13.6
    raise NotImplementedError("Exercise 13.6")
