r"""The KV cache: keys and values of the tokens already seen, so decoding costs one token's work.

Each layer appends the keys and values of the new tokens; the cache also keeps
the position of every cached token, so a scheme gets the right positions
during decoding (``next_offset`` is where the next token sits). Keys are
stored as the attention used them, already rotated for RoPE: the cache never
rotates them again.

Cached arrays are stored without their graph, so no gradient flows into them:
that is exactly Transformer-XL's segment memory when the cache is carried from
one training segment to the next with a ``window``.
"""
from . import functional as F
from .autograd import Tensor
from .backend import xp


class KVCache:
    r"""Per-layer keys and values ``(B, H, T_cached, d_head)`` plus their positions ``(T_cached,)``.

    ``window``: keep only the most recent ``window`` tokens after each step (None keeps all).
    """

    def __init__(self, n_layers, window=None):
        if window is not None and window < 1:
            raise ValueError(f"KVCache window must be at least 1 token, got {window}.")
        self.n_layers, self.window = n_layers, window
        self.k = [None] * n_layers
        self.v = [None] * n_layers
        self.pos = xp.zeros(0, dtype="int64")

    def __len__(self):
        return int(self.pos.shape[0])

    @property
    def next_offset(self):
        """Absolute position of the next token: one past the last cached one."""
        return int(self.pos[-1]) + 1 if len(self) else 0

    def key_positions(self, q_pos):
        """Positions of every key the new queries will see: the cached ones, then the new ones."""
        return xp.concatenate([self.pos, q_pos])

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

    def advance(self, q_pos):
        """After every layer has stored its part: record the new positions and evict past the window."""
        self.pos = xp.concatenate([self.pos, q_pos])
        if self.window is not None and len(self) > self.window:
            keep = slice(len(self) - self.window, None)
            self.pos = self.pos[keep]
            self.k = [None if a is None else a[:, :, keep] for a in self.k]
            self.v = [None if a is None else a[:, :, keep] for a in self.v]

    def nbytes(self):
        """Bytes held by the cached keys and values."""
        return sum(a.nbytes for a in self.k + self.v if a is not None)
