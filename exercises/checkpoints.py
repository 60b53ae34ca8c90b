# Generated from solutions/checkpoints.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""Positions in real checkpoints: the functions of chapter 11's exercises.

This library's attention computes its queries, keys and values with one fused weight,
``q, k, v = x @ W_qkv + b``: ``W_qkv`` is ``(d_model, 3 d_model)`` and its three column blocks
are, in order, the queries, the keys and the values. Inside a block, column
``h * d_head + j`` is channel ``j`` of head ``h``. A checkpoint with grouped-query attention
has fewer key-value heads than query heads, so its key and value blocks are narrower:
``(d_model, (n_heads + 2 n_kv_heads) d_head)``. RoPE turns the first ``rotary_dim`` channels
of every query and key head (all of them unless the model uses partial rotary), in pairs:
``(2i, 2i + 1)`` in the interleaved convention, ``(i, i + rotary_dim/2)`` in the rotate-half one.

A published model's positional settings come from its ``config.json``, read here as a dict
with the keys Hugging Face configs use (``hidden_size``, ``num_attention_heads``,
``head_dim``, ``partial_rotary_factor``, ``qk_rope_head_dim``, ``rope_theta``,
``max_position_embeddings``, ``original_max_position_embeddings``, ``rope_scaling``).
"""
import math
import numbers

from mini_transformer.engine.backend import xp


def port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
    r"""Port a fused query-key-value weight from the interleaved RoPE convention to the rotate-half one.

    The last axis of ``W_qkv`` holds three column blocks, in order: the queries, ``n_heads``
    heads of ``d_head`` channels; the keys and the values, ``n_kv_heads`` heads of ``d_head``
    channels each. ``n_kv_heads < n_heads`` is grouped-query attention (Llama 2 70B, Llama 3,
    Mistral): each key-value head serves ``n_heads / n_kv_heads`` query heads, and the key
    block has ``n_kv_heads * d_head`` columns, not ``n_heads * d_head``.

    A model trained with interleaved RoPE keeps in channel ``2i`` and ``2i + 1`` of a head what
    rotate-half code expects in channels ``i`` and ``i + r/2`` (``r = rotary_dim``). The port
    reorders, inside every head of the query block and inside every head of the key block, the
    first ``r`` channels so that new channel ``c`` of the head holds its old channel ``P[c]``,

    .. math:: P = (0, 2, 4, \dots, r - 2,\; 1, 3, \dots, r - 1).

    The channels from ``r`` on, and the whole value block, stay where they are: values are
    never rotated. Then ``RoPE_half(q[P]) == RoPE_interleaved(q)[P]`` for every query and key,
    so every score, and the model's output, is unchanged.

    The permutation acts on the last axis, so the same call ports the bias.

    Args:
        W_qkv: array ``(..., (n_heads + 2 n_kv_heads) d_head)``: the fused weight
            ``(d_model, (n_heads + 2 n_kv_heads) d_head)`` or its bias; ``(d_model, 3 d_model)``
            when every query head has its own key-value head.
        n_heads: the number of query heads.
        d_head: the channels of one head (query, key and value heads alike).
        rotary_dim: the channels of a head that RoPE turns (even, at most ``d_head``); ``None``
            means all of them.
        n_kv_heads: the number of key-value heads, a positive integer that divides ``n_heads``;
            ``None`` means ``n_heads`` (multi-head attention).

    Returns:
        a new array of the same shape and dtype; ``W_qkv`` itself is left unchanged.

    Raises:
        ValueError: when ``n_kv_heads`` does not divide ``n_heads``, when the last axis is not
            ``(n_heads + 2 n_kv_heads) d_head`` long, or when ``rotary_dim`` is odd or out of
            ``(0, d_head]``.
    """
    # TODO: Exercise 11.1
    raise NotImplementedError("Exercise 11.1")


def test_port(port_qk_weights):
    r"""A test that fails on a wrong port: a ported model must compute exactly what it computed.

    You receive a ``port_qk_weights`` (the signature of Exercise 11.1) and raise
    ``AssertionError`` (a plain ``assert``) when it is not a correct port. Build a ``TinyGPT`` with
    ``extra={"rope_interleaved": True}``, give it weights, port every ``W_qkv`` weight and bias
    of its state dict into a rotate-half ``TinyGPT`` of the same config, and compare the two
    models' logits on the same input. Choose the models so that every mistake shows: the
    grader runs your test on the reference port, where it must pass, and on mutants (a port
    across all heads at once, the permutation's inverse, values permuted too, one block
    forgotten, partial rotary ignored, the bias forgotten, the keys of a grouped-query layer
    permuted by the query head count, ...), each of which it must fail.

    This library's attention has one key-value head per query head. A grouped-query layer is
    the same layer with each key-value head's columns repeated for the query heads it serves
    (query head ``h`` reads key-value head ``h // (n_heads // n_kv_heads)``), so a grouped-query
    checkpoint runs in a ``TinyGPT`` once its key and value blocks are widened that way.

    Args:
        port_qk_weights: a function ``(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None)
            -> ported``, as in Exercise 11.1.
    """
    # TODO: Exercise 11.2
    raise NotImplementedError("Exercise 11.2")


def rope_frequencies(config):
    r"""The RoPE frequencies :math:`\theta_i` a published model was pretrained with, from its config.

    .. math:: \theta_i = \mathrm{rope\_theta}^{-2i/r}, \qquad i = 0, \dots, r/2 - 1,

    where ``r`` is the rotary width, read the way configs write it:

    * ``qk_rope_head_dim`` when present (decoupled RoPE, as in DeepSeek's MLA);
    * otherwise ``head_dim`` (when present, else ``hidden_size // num_attention_heads``), times
      ``partial_rotary_factor`` (default 1.0), rounded down to an integer.

    ``rope_theta`` defaults to 10000.0. Any ``rope_scaling`` block is left out: these are the
    frequencies of pretraining.

    Args:
        config: a dict with the keys of the model's ``config.json``.

    Returns:
        float64 array ``(r/2,)``.
    """
    # TODO: Exercise 11.3
    raise NotImplementedError("Exercise 11.3")


def critical_pair(config):
    r"""The first pair whose wavelength reaches the training length (the survey's :math:`r_{crit}`).

    .. math:: r_{crit} = \min\{\, i : 2\pi / \theta_i \ge L \,\},

    with :math:`\theta_i` from ``rope_frequencies(config)`` and ``L`` the length the model was
    trained at: ``rope_scaling["original_max_position_embeddings"]`` when the config has it,
    else a top-level ``original_max_position_embeddings``, else ``max_position_embeddings``
    (a config with a scaling block states the length it serves, not the one it trained at).
    Pairs from ``r_crit`` on never completed a turn in training. When every pair did, the
    answer is the number of pairs.

    Args:
        config: a dict with the keys of the model's ``config.json``.

    Returns:
        int: a pair index (count dimensions as ``2 * r_crit``).
    """
    # TODO: Exercise 11.4
    raise NotImplementedError("Exercise 11.4")
