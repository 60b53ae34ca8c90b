r"""``TinyGPT`` (decoder-only, causal) and ``TinyEncoder`` (bidirectional): one code path, any scheme.

A pre-norm Transformer block: x + Attention(Norm(x)), then x + MLP(Norm(x)).
Position enters only through ``self.positional``, the scheme named by
``GPTConfig.positional``, at the three places its protocol defines.
"""
from dataclasses import asdict, dataclass, field
from typing import Optional

from ..engine import backend, kernels
from .attention import MultiHeadAttention
from ..engine.autograd import Tensor, no_grad
from ..engine.backend import xp
from .kv_cache import KVCache
from ..engine.nn import MLP, Dropout, Embedding, LayerNorm, Linear, Module, RMSNorm
from ..positional import SCHEMES, make_scheme


@dataclass
class GPTConfig:
    vocab_size: int = 64            # tokens are ids in [0, vocab_size)
    d_model: int = 64               # width of the residual stream
    n_layers: int = 2               # number of Transformer blocks
    n_heads: int = 4                # attention heads; d_head = d_model // n_heads
    max_len: int = 64               # training length; a learned table has exactly this many positions
    positional: str = "rope"        # the positional scheme, a key of mini_transformer.positional.SCHEMES
    rope_base: float = 10000.0      # RoPE's base: theta_i = rope_base ** (-2i / d_head)
    rope_scaling: Optional[dict] = None  # context extension, as the rope_scaling block of a config.json
    sinusoidal_base: float = 10000.0     # the sinusoidal table's base
    dropout: float = 0.0            # dropout on attention and MLP outputs while training
    norm: str = "layer"             # "layer" (LayerNorm) or "rms" (RMSNorm)
    seed: int = 0                   # seeds the weight initialisation
    extra: dict = field(default_factory=dict)  # scheme-specific settings: the keys of the scheme's `settings`
    kernels: str = "reference"      # "reference" (the textbook ops) or "fast" (kernels/, same numbers, faster)

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPTConfig.{name} must be at least 1, got {getattr(self, name)}.")
        if self.d_model % self.n_heads:
            raise ValueError(f"GPTConfig: d_model={self.d_model} is not divisible by n_heads={self.n_heads}.")
        if self.positional not in SCHEMES:
            raise ValueError(f"GPTConfig.positional={self.positional!r} is not a known scheme; choose one of "
                             f"{sorted(SCHEMES)}.")
        if not isinstance(self.extra, dict):
            raise ValueError(f"GPTConfig.extra must be a dict of scheme settings, got {self.extra!r}.")
        SCHEMES[self.positional].check_config(self, self.positional)
        kernels.select(self.kernels)    # refuses an unknown name now, not at the first forward pass
        if self.norm not in ("layer", "rms"):
            raise ValueError(f"GPTConfig.norm must be 'layer' or 'rms', got {self.norm!r}.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must lie in [0, 1), got {self.dropout}.")

    @property
    def d_head(self):
        return self.d_model // self.n_heads

    def to_dict(self):
        return asdict(self)


def _norm(cfg):
    return LayerNorm(cfg.d_model) if cfg.norm == "layer" else RMSNorm(cfg.d_model)


class Block(Module):
    """One pre-norm Transformer block."""

    def __init__(self, cfg, rng, layer):
        out_std = 0.02 / (2 * cfg.n_layers) ** 0.5   # GPT-2: residual writes shrink with depth
        self.norm1 = _norm(cfg)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, rng, layer, out_std=out_std)
        self.norm2 = _norm(cfg)
        self.mlp = MLP(cfg.d_model, rng, dropout=cfg.dropout, out_std=out_std)
        self.drop = Dropout(cfg.dropout, rng)

    def forward(self, x, scheme, q_pos, k_pos, mask, cache):
        x = x + self.drop(self.attn(self.norm1(x), scheme, q_pos, k_pos, mask, cache))
        return x + self.mlp(self.norm2(x))


class Transformer(Module):
    r"""What ``TinyGPT`` and ``TinyEncoder`` share: embeddings, the scheme, the blocks, the head.

    ``causal`` decides the one difference: a causal model masks future keys
    (and T5's buckets and ALiBi's distance take their one-directional form).

    ``self.kernels`` is the kernel set ``cfg.kernels`` names; every forward pass
    and loss runs inside ``kernels.using(self.kernels)``, so each layer and the
    scheme find it with ``kernels.active()``.
    """

    causal = True

    def __init__(self, cfg):
        self.cfg = cfg
        self.kernels = kernels.select(cfg.kernels)   # the one place the kernel setting is read
        rng = backend.rng(cfg.seed)
        self.tok = Embedding(cfg.vocab_size, cfg.d_model, rng)
        self.positional = make_scheme(cfg, rng, causal=self.causal)
        self.blocks = [Block(cfg, rng, layer) for layer in range(cfg.n_layers)]
        self.norm_f = _norm(cfg)
        self.head = Linear(cfg.d_model, cfg.vocab_size, rng, bias=False)

    def _run(self, idx, q_pos, k_pos, offset, cache=None):
        """Logits ``(B, T, vocab_size)`` for ids ``(B, T)`` whose queries sit at ``q_pos`` and keys at ``k_pos``."""
        self.positional.check_positions(offset + idx.shape[1] - 1)
        mask = (k_pos[None, :] <= q_pos[:, None]) if self.causal else None  # (T, T_k)
        with kernels.using(self.kernels):
            x = self.positional.embed(self.tok(idx), offset)                # (B, T, d_model)
            for block in self.blocks:
                x = block(x, self.positional, q_pos, k_pos, mask, cache)
            return self.head(self.norm_f(x))                                # (B, T, vocab_size)

    def loss(self, idx, targets, ignore_index=-1):
        """Mean next-token (or per-token) cross-entropy; targets equal to ``ignore_index`` are not counted."""
        with kernels.using(self.kernels):
            return kernels.active().cross_entropy(self(idx), backend.asarray(targets), ignore_index=ignore_index)


def _ids(idx, model):
    idx = idx.data if isinstance(idx, Tensor) else backend.asarray(idx)
    if idx.ndim != 2:
        raise ValueError(f"{type(model).__name__} takes token ids of shape (B, T), got shape {idx.shape}.")
    return idx


class TinyGPT(Transformer):
    r"""Decoder-only Transformer: ``TinyGPT(cfg)(idx)`` maps ids ``(B, T)`` to logits ``(B, T, vocab_size)``.

    Without a cache the tokens of ``idx`` sit at positions ``offset, offset+1, ...``
    (``offset`` defaults to 0). For incremental decoding pass a ``KVCache`` (from
    ``model.new_cache()``): the cache then decides the positions, the next place in
    the text or, with ``positions="slot"``, the next slot.
    """

    def new_cache(self, window=None, n_sink=0, positions="text"):
        r"""An empty ``KVCache``: full by default; a sliding ``window``, optionally with ``n_sink`` sinks.

        With ``positions="slot"`` every position stays below ``n_sink + window + 1``,
        which must fit in the trained length ``max_len``.
        """
        cache = KVCache(self.cfg.n_layers, window=window, n_sink=n_sink, positions=positions)
        if positions == "slot":
            if window is None:
                raise ValueError("positions='slot' needs a window; a full cache's slots are its text positions.")
            if n_sink + window + 1 > self.cfg.max_len:
                raise ValueError(f"n_sink + window = {n_sink} + {window} = {n_sink + window} cache slots plus the "
                                 f"query need {n_sink + window + 1} positions, but the model was trained on "
                                 f"max_len={self.cfg.max_len}; make n_sink + window at most {self.cfg.max_len - 1}.")
        return cache

    def forward(self, idx, offset=None, cache=None):
        idx = _ids(idx, self)
        T = idx.shape[1]
        if cache is not None:
            if offset is not None and offset != cache.seen:
                raise ValueError(f"offset={offset} disagrees with the cache, which has seen {cache.seen} tokens, so "
                                 f"the next one is at text position {cache.seen}; leave offset out when you pass a "
                                 "cache.")
            q_pos, k_pos = cache.query_and_key_positions(T)                # (T,), (T_k,)
            offset = cache.next_position                                   # where the input hook places token 0
        else:
            offset = 0 if offset is None else offset
            q_pos = k_pos = xp.arange(offset, offset + T)                  # (T,)
        logits = self._run(idx, q_pos, k_pos, offset, cache)
        if cache is not None:
            cache.advance(T)
        return logits

    def generate(self, prompt, max_new_tokens, temperature=1.0, top_k=None, greedy=False, seed=0,
                 use_cache=True, window=None, n_sink=0, positions="text"):
        r"""Continue ``prompt`` (ids ``(B, T)``) by ``max_new_tokens`` tokens through the KV cache.

        ``greedy`` takes the most likely token; otherwise sample from
        \mathrm{softmax}(logits / temperature), restricted to the ``top_k`` most likely
        when given. ``use_cache=False`` recomputes the whole sequence each step
        (the slow reference the cached path must match). ``window``, ``n_sink``
        and ``positions`` choose the cache policy (see ``new_cache``): with a
        window, generation runs in constant memory for as long as you like.
        """
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be at least 0, got {max_new_tokens}.")
        if temperature <= 0 and not greedy:
            raise ValueError(f"temperature must be positive, got {temperature}; use greedy=True for argmax.")
        if top_k is not None and not 1 <= top_k <= self.cfg.vocab_size:
            raise ValueError(f"top_k must lie in [1, vocab_size={self.cfg.vocab_size}], got {top_k}.")
        rng = backend.rng(seed)
        ids = backend.asarray(prompt)
        was_training = self.training
        self.eval()
        cache = self.new_cache(window, n_sink, positions) if use_cache else None
        with no_grad(), self.positional.planned_length(ids.shape[1] + max_new_tokens):
            logits = self(ids, cache=cache)
            for step in range(max_new_tokens):
                last = logits.data[:, -1, :].astype("float64")              # (B, vocab)
                if greedy:
                    nxt = last.argmax(axis=-1)
                else:
                    nxt = _sample(last / temperature, top_k, rng)
                ids = xp.concatenate([ids, nxt[:, None].astype(ids.dtype)], axis=1)
                if step + 1 < max_new_tokens:
                    logits = self(ids[:, -1:], cache=cache) if use_cache else self(ids)
        self.train(was_training)
        return ids


def _sample(logits, top_k, rng):
    """One id per row from softmax(logits), optionally only among the top_k."""
    if top_k is not None:
        kth = xp.sort(logits, axis=-1)[:, -top_k][:, None]
        logits = xp.where(logits < kth, -xp.inf, logits)
    p = xp.exp(logits - logits.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    u = rng.random((p.shape[0], 1), dtype="float64")
    return (xp.cumsum(p, axis=-1) < u).sum(axis=-1).clip(0, p.shape[-1] - 1)


class TinyEncoder(Transformer):
    r"""Bidirectional Transformer: every token attends to every token, no mask, no cache.

    Without position it is exactly permutation-equivariant: permute the input
    and the output is permuted the same way.
    """

    causal = False

    def forward(self, idx, offset=0):
        idx = _ids(idx, self)
        pos = xp.arange(offset, offset + idx.shape[1])                     # (T,)
        return self._run(idx, pos, pos, offset)
