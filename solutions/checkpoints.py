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
    # BEGIN SOLUTION Exercise 11.1
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if isinstance(n_kv, bool) or not isinstance(n_kv, numbers.Integral) or n_kv < 1 or n_heads % n_kv:
        raise ValueError(f"port_qk_weights: n_kv_heads={n_kv_heads!r} must be a positive integer that divides "
                         f"n_heads={n_heads}.")
    r = d_head if rotary_dim is None else rotary_dim
    d_q, d_kv = n_heads * d_head, n_kv * d_head               # the query block, the key (and value) block
    if W_qkv.shape[-1] != d_q + 2 * d_kv:
        raise ValueError(f"port_qk_weights: the last axis has {W_qkv.shape[-1]} columns; (n_heads + 2 n_kv_heads) "
                         f"* d_head = {d_q + 2 * d_kv} expected (queries {d_q}, keys {d_kv}, values {d_kv}).")
    if r % 2 or not 0 < r <= d_head:
        raise ValueError(f"port_qk_weights: rotary_dim={r} must be even and in (0, d_head={d_head}].")
    within = xp.concatenate([xp.arange(0, r, 2), xp.arange(1, r, 2), xp.arange(r, d_head)])  # (d_head,) P

    def heads(n, start):                                             # P inside each of n heads from column start
        return xp.concatenate([start + h * d_head + within for h in range(n)])

    order = xp.concatenate([heads(n_heads, 0), heads(n_kv, d_q),                   # q by n_heads, k by n_kv
                            xp.arange(d_q + d_kv, d_q + 2 * d_kv)])                     # v kept
    return W_qkv[..., order]
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 11.2
    from mini_transformer.engine.autograd import no_grad
    from mini_transformer.model import GPTConfig, TinyGPT

    g = xp.random.default_rng(0)
    # several heads (a port across heads mixes them), d_head 8 (for 4 channels P is its own inverse),
    # and a partial-rotary model (whose last channels must stay)
    for n_heads, d_head, factor in [(4, 8, 1.0), (2, 16, 0.5)]:
        d_model = n_heads * d_head
        cfg = dict(vocab_size=16, d_model=d_model, n_layers=2, n_heads=n_heads, max_len=16, positional="rope")
        trained = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True, "partial_rotary_factor": factor}))
        # every weight random and large, biases included: a fresh model's biases are all zero
        state = {name: g.normal(0.0, 0.5, size=value.shape) for name, value in trained.state_dict().items()}
        trained.to_dtype("float64").load_state_dict(state)
        r = int(d_head * factor)
        ported = {name: port_qk_weights(value, n_heads, d_head, r) if ".W_qkv." in name else value
                  for name, value in state.items()}
        served = TinyGPT(GPTConfig(**cfg, extra={"partial_rotary_factor": factor})).to_dtype("float64")
        served.load_state_dict(ported)
        ids = g.integers(0, 16, (2, 12))
        with no_grad():
            want, got = trained(ids).data, served(ids).data
        assert want.shape == got.shape
        assert xp.allclose(got, want, rtol=1e-9, atol=1e-9), "the ported model computes something else"
        assert all(xp.array_equal(state[n], v) for n, v in trained.state_dict().items())  # the port kept its input

    # grouped-query attention: 4 query heads share 2 key-value heads of 8 channels; the checkpoint
    # has (4 + 2 * 2) * 8 = 64 columns, widened to 3 * 32 by repeating each key-value head twice
    n_heads, n_kv_heads, d_head = 4, 2, 8
    d_q, d_kv = n_heads * d_head, n_kv_heads * d_head
    repeat = xp.concatenate([start + (h // (n_heads // n_kv_heads)) * d_head + xp.arange(d_head)
                             for start in (d_q, d_q + d_kv) for h in range(n_heads)])
    widen = xp.concatenate([xp.arange(d_q), repeat])                # (3 d_q,) the column each MHA column reads
    cfg = dict(vocab_size=16, d_model=d_q, n_layers=2, n_heads=n_heads, max_len=16, positional="rope")
    trained = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True})).to_dtype("float64")
    grouped = {name: g.normal(0.0, 0.5, size=value.shape[:-1] + (d_q + 2 * d_kv,) if ".W_qkv." in name
                              else value.shape) for name, value in trained.state_dict().items()}
    trained.load_state_dict({n: v[..., widen] if ".W_qkv." in n else v for n, v in grouped.items()})
    served = TinyGPT(GPTConfig(**cfg)).to_dtype("float64")
    served.load_state_dict({n: port_qk_weights(v, n_heads, d_head, None, n_kv_heads)[..., widen]
                            if ".W_qkv." in n else v for n, v in grouped.items()})
    ids = g.integers(0, 16, (2, 12))
    with no_grad():
        want, got = trained(ids).data, served(ids).data
    assert xp.allclose(got, want, rtol=1e-9, atol=1e-9), "the ported grouped-query model computes something else"
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 11.3
    if config.get("qk_rope_head_dim"):
        r = int(config["qk_rope_head_dim"])
    else:
        d_head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        r = int(d_head * config.get("partial_rotary_factor", 1.0))
    base = float(config.get("rope_theta", 10000.0))
    two_i = xp.arange(0, r, 2, dtype="float64")                     # (r/2,) the values 2i
    return base ** (-two_i / r)
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 11.4
    scaling = config.get("rope_scaling") or {}
    L = (scaling.get("original_max_position_embeddings") or config.get("original_max_position_embeddings")
         or config["max_position_embeddings"])
    wavelengths = 2 * math.pi / rope_frequencies(config)           # (r/2,) increasing with i
    return int(xp.sum(wavelengths < L))                             # the pairs before the first long one
    # END SOLUTION
