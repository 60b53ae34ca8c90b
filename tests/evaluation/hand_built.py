"""A model built by hand whose loss at each position is known exactly, for the evaluation and streaming tests.

``HalvingModel`` reads ids and positions the way ``TinyGPT`` does (an offset, or
a ``KVCache`` that decides them) and puts probability 2^{-(p + 1 + shift)} on
the token after the current one, (x + 1) mod V, at position p. On a text that
counts up, 0, 1, 2, ..., V - 1, 0, 1, ..., that token is always the next one,
so the next-token loss at position p is exactly (p + 1 + shift) ln 2: every
position has its own loss, and a mean over any slice of positions is ln 2
times a mean of whole numbers, worked out in one line.
"""
import math
import time

import numpy as np

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import Tensor
from mini_transformer.model.kv_cache import KVCache
from mini_transformer.model import GPTConfig
from mini_transformer.engine.nn import Module

LN2 = math.log(2.0)


def counting_text(n, V):
    """0, 1, ..., V - 1, 0, 1, ...: n tokens where each is the one before plus 1, mod V."""
    return np.arange(n) % V


def training_flags(module):
    """The training flag of ``module`` and of every module inside it, as a set: ``{True}`` or ``{False}`` when
    the whole tree is in one mode."""
    return {module.training}.union(*(training_flags(child) for _, child in module.children()))


class HalvingModel(Module):
    """Next-token probability 2^{-(p + 1 + shift)} for (x + 1) mod V at position p; refuses positions >= limit.

    Every call is recorded in ``calls`` as (ids, whether a cache was passed), and
    the training flag it ran under in ``modes``. With
    ``delay = (prefill, step)`` a cached call sleeps that many seconds: ``prefill``
    for several tokens, ``step`` for one, so timings have known lower bounds.
    """

    causal = True

    def __init__(self, V, shift=0, limit=None, delay=None):
        self.cfg = GPTConfig(vocab_size=V, max_len=limit or 64)
        self.V, self.shift, self.limit, self.delay = V, shift, limit, delay
        self.calls, self.modes = [], []

    def new_cache(self, window=None, n_sink=0, positions="text"):
        return KVCache(1, window=window, n_sink=n_sink, positions=positions)

    def forward(self, idx, offset=None, cache=None):
        ids = backend.to_numpy(idx.data if isinstance(idx, Tensor) else idx)
        B, T = ids.shape
        self.calls.append((ids.copy(), cache is not None))
        self.modes.append(self.training)
        if self.delay is not None and cache is not None:
            time.sleep(self.delay[0] if T > 1 else self.delay[1])
        if cache is not None:
            pos = backend.to_numpy(cache.query_and_key_positions(T)[0])          # (T,) where the cache puts them
            cache.advance(T)
        else:
            pos = np.arange(T) + (offset or 0)
        if self.limit is not None and pos.max() >= self.limit:
            raise ValueError(f"HalvingModel encodes positions 0..{self.limit - 1}, but position {pos.max()} was "
                             f"asked for (max_len={self.limit}).")
        p = 2.0 ** -(pos + 1.0 + self.shift)                                    # (T,) probability of the right token
        logits = np.empty((B, T, self.V))
        logits[...] = np.log((1 - p) / (self.V - 1))[None, :, None]            # the rest, shared evenly
        logits[np.arange(B)[:, None], np.arange(T)[None, :], (ids + 1) % self.V] = np.log(p)[None, :]
        return Tensor(backend.asarray(logits))
