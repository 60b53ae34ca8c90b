r"""``TinyGPT`` (decoder-only, causal) and ``TinyEncoder`` (bidirectional): one code path, any scheme.

A pre-norm Transformer block: x + Attention(Norm(x)), then x + MLP(Norm(x)).
Position enters only through ``self.positional``, the scheme named by
``GPTConfig.positional``, at the three places its protocol defines, through four hooks.
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
    attention_sinks: bool = False   # a learned sink logit per head in every softmax (GPT-OSS), initialised at 0

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
        if not isinstance(self.attention_sinks, bool):
            raise ValueError(f"GPTConfig.attention_sinks must be True or False, got {self.attention_sinks!r}.")

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
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, rng, layer, out_std=out_std,
                                       sinks=cfg.attention_sinks)
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

    def _stack(self, idx, offset, q_pos, k_pos, mask, cache):
        """The input hook, every block and the head, under the model's kernel set: logits ``(B, T, vocab_size)``."""
        with kernels.using(self.kernels):
            x = self.positional.embed(self.tok(idx), offset)                # (B, T, d_model)
            for block in self.blocks:
                x = block(x, self.positional, q_pos, k_pos, mask, cache)
            return self.head(self.norm_f(x))                                # (B, T, vocab_size)

    def _run(self, idx, q_pos, k_pos, offset, cache=None):
        """Logits ``(B, T, vocab_size)`` for ids ``(B, T)`` whose queries sit at ``q_pos`` and keys at ``k_pos``."""
        self.positional.check_positions(offset + idx.shape[1] - 1)
        mask = (k_pos[None, :] <= q_pos[:, None]) if self.causal else None  # (T, T_k)
        return self._stack(idx, offset, q_pos, k_pos, mask, cache)

    def _run_batch(self, idx, q_pos, k_pos, mask, cache=None):
        """``_run`` for a padded or packed batch: ``mask`` ``(B, 1, T, T_k)`` from ``batch_mask``, and positions
        ``(B, T)`` per row or ``(T,)`` shared; the input hook gets the per-row array, or the shared offset."""
        self.positional.check_positions(int(q_pos.max()))
        offset = q_pos if q_pos.ndim >= 2 else int(q_pos[0])
        return self._stack(idx, offset, q_pos, k_pos, mask, cache)

    def loss(self, idx, targets, ignore_index=-1):
        """Mean next-token (or per-token) cross-entropy; targets equal to ``ignore_index`` are not counted."""
        with kernels.using(self.kernels):
            return kernels.active().cross_entropy(self(idx), backend.asarray(targets), ignore_index=ignore_index)


def batch_mask(attention_mask, B, T, n_cached=0, causal=True, cached_keys=None):
    r"""Which keys each query may see in a padded or packed batch: ``(B, 1, T, n_cached + T)`` booleans.

    ``attention_mask`` is the Hugging Face convention: ``(B, T_k)`` with 1 for a
    real token and 0 for padding (T_k = n_cached + T, the cached tokens first),
    or a ``(B, T, T_k)`` (or ``(B, 1, T, T_k)``) matrix, 1 where query i may
    see key j: a packed row's block-diagonal document mask,
    ``document_mask(document_ids)``. ``cached_keys`` ``(B, n_cached)`` marks the
    real cached keys when the mask does not cover them. A causal model also
    masks later keys, by index. A query that may see no key at all (a padding
    query) is let see every key: its output is finite and nothing reads it.
    Returns the mask and the ``(B, T_k)`` real keys (or None).
    """
    T_k = n_cached + T
    allowed = xp.ones((B, T, T_k), dtype=bool)
    if causal:
        allowed &= (xp.arange(T_k)[None, :] <= n_cached + xp.arange(T)[:, None])[None]
    key_real = None if cached_keys is None else xp.concatenate([cached_keys, xp.ones((B, T), dtype=bool)], axis=1)
    if attention_mask is not None:
        m = backend.asarray(attention_mask)
        if m.ndim == 2 and m.shape == (B, T_k):
            key_real = m != 0
        elif m.ndim in (3, 4) and m.shape in ((B, T, T_k), (B, 1, T, T_k)):
            allowed &= m.reshape(B, T, T_k) != 0
        else:
            raise ValueError(f"attention_mask has shape {tuple(m.shape)}; for {B} rows of {T} new tokens after "
                             f"{n_cached} cached ones it must be ({B}, {T_k}) (1 for a real token, 0 for padding, "
                             f"cached tokens included) or ({B}, {T}, {T_k}) (1 where a query may see a key).")
    if key_real is not None:
        allowed &= key_real[:, None, :]
    allowed |= ~allowed.any(axis=-1, keepdims=True)                      # padding queries: finite, unread
    return allowed[:, None], key_real


def document_mask(document_ids):
    r"""The block-diagonal mask ``(B, T, T)`` of a packed batch: True where query i and key j are in one document.

    ``document_ids`` ``(B, T)`` names each token's document in its row; a document is a
    run of equal ids, so an id that comes back after another document starts a new
    one (as chapter 10's ``packed_position_ids`` reads them). Pass the result as
    ``attention_mask`` (the model adds the causal mask), with each document's
    ``position_ids`` restarting at 0.
    """
    d = backend.asarray(document_ids)
    if d.ndim != 2:
        raise ValueError(f"document_mask takes document ids of shape (B, T), got shape {tuple(d.shape)}.")
    run = xp.cumsum(xp.concatenate([xp.zeros((d.shape[0], 1), dtype="int64"),
                                    (d[:, 1:] != d[:, :-1]).astype("int64")], axis=1), axis=1)  # (B, T) run number
    return run[:, :, None] == run[:, None, :]                          # booleans, as attention's masks are


def left_padded_positions(attention_mask):
    r"""Hugging Face's ``position_ids`` of a left-padded batch: (\sum_{s \le t} m_{b,s}) - 1 on real tokens, 0 on padding."""
    m = backend.asarray(attention_mask).astype("int64")
    return xp.where(m != 0, xp.cumsum(m, axis=1) - 1, 0)


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

    def forward(self, idx, offset=None, cache=None, attention_mask=None, position_ids=None):
        r"""Logits ``(B, T, vocab_size)``.

        A padded or packed batch, in the Hugging Face convention: ``attention_mask``
        ``(B, T)`` with 1 for real tokens and 0 for padding (with a cache: ``(B,
        T_cached + T)``, every token in view), or ``(B, T, T)`` with 1 where query
        i may see key j (a packed row: ``document_mask(document_ids)``);
        ``position_ids`` ``(B, T)`` each token's position in its own row
        (``left_padded_positions(attention_mask)``, or restarting at 0 at each packed
        document), or, for the ``"mrope"`` scheme, ``(3, B, T)`` time, height and
        width ids (``positional.mrope_position_ids``). Without ``position_ids`` the positions are shared, ``offset ..
        offset+T-1``, as in Hugging Face's forward. Padding keys get no attention;
        a padding query's output is finite and meaningless.
        """
        idx = _ids(idx, self)
        if attention_mask is not None or position_ids is not None or (
                cache is not None and (cache.row_pos is not None or cache.key_mask is not None)):
            return self._forward_batch(idx, offset, cache, attention_mask, position_ids)
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

    def _forward_batch(self, idx, offset, cache, attention_mask, position_ids):
        """``forward`` for a padded or packed batch: per-row positions and a ``(B, 1, T, T_k)`` mask."""
        B, T = idx.shape
        scheme, n_cached = self.positional, 0
        if cache is not None:
            why = cache.supports_rows()
            if why:
                raise ValueError(f"attention_mask/position_ids with a cache: {why}; use model.new_cache().")
            if offset is not None and offset != cache.seen:
                raise ValueError(f"offset={offset} disagrees with the cache, which has seen {cache.seen} tokens; "
                                 "leave offset out when you pass a cache.")
            n_cached = len(cache)
        if position_ids is not None:
            q_pos = backend.asarray(position_ids)
            axes = type(scheme).position_axes        # M-RoPE also takes (3, B, T): time, height, width
            if q_pos.shape not in ((B, T), (axes, B, T)) or q_pos.dtype.kind not in "iu":
                also = f" or ({axes}, {B}, {T}), one row per axis," if axes > 1 else ""
                raise ValueError(f"position_ids must be integers of shape (B, T) = ({B}, {T}){also} like the ids, "
                                 f"got shape {tuple(q_pos.shape)} and dtype {q_pos.dtype}.")
            q_pos = q_pos.astype("int64")
            if q_pos.size and int(q_pos.min()) < 0:
                raise ValueError(f"position_ids must be at least 0, got {int(q_pos.min())}.")
        elif cache is not None and cache.row_pos is not None and cache.row_pos.ndim == 3:
            # M-RoPE ids: text continues one past the largest id of the row, equal on all three axes
            q_pos = xp.broadcast_to(cache.row_pos.max(axis=(0, 2))[:, None] + 1 + xp.arange(T)[None, :], (3, B, T))
        elif cache is not None and cache.row_pos is not None:
            q_pos = cache.row_pos[:, -1:] + 1 + xp.arange(T)[None, :]        # (B, T) each row continues
        else:
            start = cache.seen if cache is not None else (0 if offset is None else offset)
            q_pos = xp.arange(start, start + T)                              # (T,) shared, as without a mask
        if q_pos.ndim >= 2:
            if not type(scheme).takes_row_positions():
                raise ValueError(f"position_ids: the {self.cfg.positional!r} scheme ({type(scheme).__name__}) "
                                 "does not declare per-row positions (per_row_positions), so it cannot take "
                                 "position_ids of shape (B, T); leave position_ids out (shared positions) or use a "
                                 "scheme that takes them.")
            if n_cached:
                cached = cache.row_pos if cache.row_pos is not None else xp.broadcast_to(cache.pos, (B, n_cached))
                if cached.ndim != q_pos.ndim:                                # one side M-RoPE ids: the other is text,
                    cached, q_pos = (xp.broadcast_to(a, (3,) + a.shape[-2:]) for a in (cached, q_pos))  # equal ids
                k_pos = xp.concatenate([cached, q_pos], axis=-1)             # ([3,] B, T_k)
            else:
                k_pos = q_pos
        else:
            k_pos = xp.concatenate([cache.pos, q_pos]) if n_cached else q_pos  # (T_k,)
        mask, key_real = batch_mask(attention_mask, B, T, n_cached, self.causal,
                                    None if cache is None else cache.key_mask)
        logits = self._run_batch(idx, q_pos, k_pos, mask, cache)
        if cache is not None:
            cache.key_mask = key_real
            cache.advance(T, k_pos if q_pos.ndim >= 2 else None)        # every key's row position, cached first
        return logits

    def generate(self, prompt, max_new_tokens, temperature=1.0, top_k=None, greedy=False, seed=0,
                 use_cache=True, window=None, n_sink=0, positions="text", attention_mask=None):
        r"""Continue ``prompt`` (ids ``(B, T)``) by ``max_new_tokens`` tokens through the KV cache.

        ``greedy`` takes the most likely token; otherwise sample from
        \mathrm{softmax}(logits / temperature), restricted to the ``top_k`` most likely
        when given. ``use_cache=False`` recomputes the whole sequence each step
        (the slow reference the cached path must match). ``window``, ``n_sink``
        and ``positions`` choose the cache policy (see ``new_cache``): with a
        window, generation runs in constant memory for as long as you like.

        ``attention_mask`` ``(B, T)`` serves a **left-padded** batch of prompts of
        different lengths (0 for padding, then 1s): each row gets
        ``left_padded_positions`` and every step extends the mask by one real
        token, so each row continues exactly as its prompt would alone. It needs
        the full cache with text positions and a scheme that takes per-row
        positions.
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
        mask = pos = None
        if attention_mask is not None:
            mask, pos = self._left_padded(ids, attention_mask, window, n_sink, positions)
        cache = self.new_cache(window, n_sink, positions) if use_cache else None
        with no_grad(), self.positional.planned_length(ids.shape[1] + max_new_tokens):
            logits = self(ids, cache=cache) if mask is None else self(ids, cache=cache, attention_mask=mask,
                                                                      position_ids=pos)
            for step in range(max_new_tokens):
                last = logits.data[:, -1, :].astype("float64")              # (B, vocab)
                if greedy:
                    nxt = last.argmax(axis=-1)
                else:
                    nxt = _sample(last / temperature, top_k, rng)
                ids = xp.concatenate([ids, nxt[:, None].astype(ids.dtype)], axis=1)
                if step + 1 < max_new_tokens and mask is not None:
                    mask = xp.concatenate([mask, xp.ones((mask.shape[0], 1), dtype=mask.dtype)], axis=1)
                    pos = xp.concatenate([pos, pos[:, -1:] + 1], axis=1)     # each row's next position
                    logits = (self(ids[:, -1:], cache=cache, attention_mask=mask, position_ids=pos[:, -1:])
                              if use_cache else self(ids, attention_mask=mask, position_ids=pos))
                elif step + 1 < max_new_tokens:
                    logits = self(ids[:, -1:], cache=cache) if use_cache else self(ids)
        self.train(was_training)
        return ids


    def _left_padded(self, ids, attention_mask, window, n_sink, positions):
        """The checked mask ``(B, T)`` of a left-padded prompt batch and its position ids."""
        raw = backend.asarray(attention_mask)
        if bool(xp.any((raw != 0) & (raw != 1))):  # checked before the cast, which would turn 0.5 into padding
            raise ValueError("generate: attention_mask holds values other than 0 and 1; it needs 1 for a real token "
                             "and 0 for padding.")
        mask = raw.astype("int64")
        if mask.shape != ids.shape:
            raise ValueError(f"generate: attention_mask has shape {tuple(mask.shape)}, but the prompts have shape "
                             f"{tuple(ids.shape)}; it needs one 0/1 entry per prompt token.")
        if bool(xp.any((mask != 0) & (mask != 1))) or bool(xp.any(mask[:, 1:] < mask[:, :-1])):
            raise ValueError("generate: attention_mask must be left padding, each row 0s then 1s (padding first); "
                             "a row with padding after a real token cannot be continued in its last column.")
        if bool(xp.any(mask[:, -1] == 0)):
            raise ValueError("generate: every prompt needs at least one real token, but a row of attention_mask is "
                             "all padding.")
        if window is not None or n_sink or positions != "text":
            raise ValueError(f"generate: a left-padded batch (attention_mask) needs the full cache with text "
                             f"positions, but window={window}, n_sink={n_sink}, positions={positions!r} were asked "
                             "for; generate the rows one at a time for a windowed cache.")
        if not type(self.positional).takes_row_positions():
            raise ValueError(f"generate: attention_mask: the {self.cfg.positional!r} scheme does not take per-row "
                             "positions (per_row_positions), so a left-padded batch cannot be served; generate the "
                             "prompts one at a time.")
        return mask, left_padded_positions(mask)


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
