r"""The KV cache: keys and values of the tokens already seen, so decoding costs one token's work.

Each layer appends the keys and values of the new tokens; the cache also keeps
the position of every cached token, so a scheme gets the right positions
during decoding. Cached arrays are stored without their graph, so no gradient
flows into them: carried from one training segment to the next with a
``window``, this is Transformer-XL's segment memory.

**What to keep** (the policy):

* full: every token (``window=None``);
* sliding window: the ``window`` most recent tokens;
* sinks plus window: the first ``n_sink`` tokens of the stream, forever, plus the
  ``window`` most recent (StreamingLLM). Heads park attention on the first
  tokens; evicting them is what breaks a plain window.

**Which positions** (``positions``):

* ``"text"``: a token's position is its place in the whole stream, as in a full
  forward pass. Keys are stored rotated, once, at write time.
* ``"slot"``: a token's position is its index in the cache, so the query is
  always at ``len(cache)`` and no position ever leaves ``[0, n_sink + window]``.
  Keys are stored unrotated and rotated for their current slot at every step.

A scheme whose rotation depends on the current length (dynamic NTK:
``rerotate_keys = True``) also gets unrotated keys, re-rotated each step, since
keys rotated with an older scale would go stale.

**A padded batch.** ``TinyGPT.forward`` with ``position_ids`` (a left-padded
batch, or a packed one) gives each row its own positions; the cache then also
keeps them, ``row_pos`` ``(B, T_cached)``, so the next step's keys have their
row's positions. This works with the full cache and text positions (the only
policy ``generate`` uses with an ``attention_mask``); the caller passes the mask
of every token, cached ones included, as Hugging Face does.

The policy is one function, ``keep_indices(n_tokens, window, n_sink)``: which of
the ``n_tokens`` cached tokens stay. A cache built with ``keep_indices=f`` runs
``f`` instead (chapter 10 puts the reader's policy, or a deliberately odd one such
as "drop the first token", inside the model this way).
"""
from ..engine import functional as F
from ..engine.autograd import Tensor
from ..engine.backend import xp

POSITIONS = ("text", "slot")


def keep_indices(n_tokens, window, n_sink):
    r"""The cached tokens a policy keeps, as increasing indices into the ``n_tokens`` held now.

    Full cache (``window=None``): all of them. Otherwise the first ``n_sink`` and the
    ``window`` most recent, :math:`[0, n_{sink}) \cup [n - W, n)`; while
    :math:`n \le n_{sink} + W` the two ranges overlap and every token stays.
    """
    if window is None or n_tokens <= n_sink + window:
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(n_sink), xp.arange(n_tokens - window, n_tokens)])


class KVCache:
    r"""Per-layer keys and values ``(B, H, T_cached, d_head)`` plus their positions ``(T_cached,)``."""

    def __init__(self, n_layers, window=None, n_sink=0, positions="text", keep_indices=None):
        if window is not None and window < 1:
            raise ValueError(f"KVCache window must be at least 1 token, got window={window}.")
        if n_sink < 0:
            raise ValueError(f"KVCache n_sink must be at least 0, got n_sink={n_sink}.")
        if n_sink and window is None:
            raise ValueError(f"KVCache n_sink={n_sink} only means something with a window; pass window=W too.")
        if positions not in POSITIONS:
            raise ValueError(f"KVCache positions must be one of {POSITIONS}, got positions={positions!r}.")
        self.n_layers, self.window, self.n_sink, self.positions = n_layers, window, n_sink, positions
        self.keep_indices = keep_indices        # None: this module's keep_indices; else (n, window, n_sink) -> indices
        self.k = [None] * n_layers
        self.v = [None] * n_layers
        self.pos = xp.zeros(0, dtype="int64")   # (T_cached,) place in the text of each cached token
        self.seen = 0                            # tokens seen so far: the next one's place in the text
        self.row_pos = None                      # (B, T_cached) per-row positions of a padded batch, else None
        self.key_mask = None                     # (B, T_cached) True for real (unpadded) cached tokens, else None

    def __len__(self):
        return int(self.pos.shape[0])

    @property
    def next_position(self):
        """Position the next token gets under this cache's policy: its slot, or its place in the text (``seen``)."""
        return len(self) if self.positions == "slot" else self.seen

    def keeps_raw_keys(self, scheme):
        """True when keys are stored unrotated and rotated afresh at each step."""
        return self.positions == "slot" or scheme.rerotate_keys

    def query_and_key_positions(self, T):
        r"""Positions ``(q_pos (T,), k_pos (T_cached + T,))`` for ``T`` new tokens under this cache's policy."""
        if self.positions == "slot":
            k_pos = xp.arange(len(self) + T)                            # slots 0 .. len + T - 1
            return k_pos[len(self):], k_pos
        q_pos = xp.arange(self.seen, self.seen + T)
        return q_pos, xp.concatenate([self.pos, q_pos])

    def update(self, layer, k, v):
        """Store layer ``layer``'s new keys and values; return all of them, cached first."""
        new_k, new_v = k.data, v.data
        if self.k[layer] is not None:
            k = F.concat([Tensor(self.k[layer]), k], axis=2)   # (B, H, T_cached + T, d_head)
            v = F.concat([Tensor(self.v[layer]), v], axis=2)
            new_k = xp.concatenate([self.k[layer], new_k], axis=2)
            new_v = xp.concatenate([self.v[layer], new_v], axis=2)
        self.k[layer], self.v[layer] = new_k, new_v
        return k, v

    def supports_rows(self):
        """None if this cache can hold per-row positions (full cache, text positions), else the sentence why not."""
        if self.window is not None or self.positions != "text" or self.keep_indices is not None:
            return (f"a padded batch (per-row positions) needs the full cache with text positions, but this cache "
                    f"has window={self.window}, positions={self.positions!r} and "
                    f"keep_indices={'custom' if self.keep_indices is not None else None}")
        return None

    def advance(self, T, row_pos=None):
        """After every layer has stored its part: record ``T`` new tokens and evict what the policy drops.

        ``row_pos`` ``(B, T_cached + T)``: the per-row positions of every key this step attended to, cached ones
        first (a padded batch); it becomes the cache's ``row_pos``. Passing all of them, not only the new ones,
        keeps the shared positions of tokens cached before the first per-row step.
        """
        if row_pos is not None:
            self.row_pos = row_pos
        self.pos = xp.concatenate([self.pos, xp.arange(self.seen, self.seen + T)])
        self.seen += T
        n = len(self)
        if self.keep_indices is None:
            keep = keep_indices(n, self.window, self.n_sink)
            if len(keep) == n:
                return                              # everything stays: nothing to copy
        else:
            keep = _checked(self.keep_indices(n, self.window, self.n_sink), n)
        self.pos = self.pos[keep]
        self.k = [None if a is None else a[:, :, keep] for a in self.k]
        self.v = [None if a is None else a[:, :, keep] for a in self.v]

    def nbytes(self):
        """Bytes held by the cached keys and values."""
        return sum(a.nbytes for a in self.k + self.v if a is not None)


def _checked(keep, n):
    """``keep`` as a backend int64 array of distinct indices in [0, n), or a sentence saying what is wrong."""
    keep = xp.asarray(keep)
    if keep.ndim != 1 or (keep.size and keep.dtype.kind not in "iu"):
        raise ValueError(f"keep_indices must return a 1-D array of integer indices, got shape {keep.shape} and "
                         f"dtype {keep.dtype}.")
    keep = keep.astype("int64")
    if keep.size and (int(keep.min()) < 0 or int(keep.max()) >= n):
        raise ValueError(f"keep_indices returned indices from {int(keep.min())} to {int(keep.max())}, but the "
                         f"cache holds {n} tokens: indices must lie in [0, {n}).")
    if len(xp.unique(keep)) != len(keep):
        raise ValueError("keep_indices returned an index twice; each cached token can be kept once.")
    return keep
