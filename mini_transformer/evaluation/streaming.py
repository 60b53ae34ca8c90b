r"""Streaming: run a model over a stream far longer than anything it trained on, in constant memory.

``stream_loss`` feeds a token stream one token at a time through a KV-cache
policy (full, sliding window, or sinks plus window; text or slot positions,
see ``kv_cache.py``) and scores each next token. ``recompute=True`` is the
expensive baseline: at every step, run the model afresh on the last ``window``
tokens, so every window starts at position 0 with nothing evicted mid-way.
``keep_indices=f`` runs the cache with the policy ``f(n_tokens, window, n_sink)``
in place of the library's (see ``kv_cache.keep_indices``).
"""
from dataclasses import dataclass

from ..engine import backend
from ..engine import functional as F
from ..engine.autograd import no_grad
from ..engine.backend import xp


@dataclass
class StreamResult:
    losses: object          # (N - 1,) host float64: loss of predicting token t + 1 from tokens 0..t
    mean_loss: float        # their mean
    cache_bytes: object     # (N,) host int64: bytes held by the cache after each step (0 for recompute)
    cache_tokens: object    # (N,) host int64: tokens held after each step


def stream_loss(model, tokens, window=None, n_sink=0, positions="text", recompute=False, keep_indices=None):
    r"""Per-token loss over ``tokens`` (ids ``(N,)`` or ``(B, N)``), one token per step.

    With ``window`` set, memory stays constant however long the stream: the
    cache never holds more than ``n_sink + window`` tokens. ``keep_indices``
    replaces the cache's policy by a function ``(n_tokens, window, n_sink) ->
    indices of the tokens to keep``.
    """
    ids = backend.asarray(tokens)
    if ids.ndim == 1:
        ids = ids[None, :]
    B, N = ids.shape
    if N < 2:
        raise ValueError(f"stream_loss needs at least 2 tokens to score one, got a stream of {N}.")
    if recompute and window is None:
        raise ValueError("recompute=True needs a window: it reruns the model on the last `window` tokens.")
    if recompute and keep_indices is not None:
        raise ValueError("recompute=True keeps no cache, so a keep_indices policy has nothing to act on; "
                         "pass one or the other.")
    losses = xp.zeros((B, N - 1), dtype="float64")
    cache_bytes = backend.hostnp.zeros(N, dtype="int64")
    cache_tokens = backend.hostnp.zeros(N, dtype="int64")
    was_training = model.training
    try:   # the caller's mode comes back even when the cache refuses its settings or a step raises
        model.eval()
        cache = None if recompute else model.new_cache(window=window, n_sink=n_sink, positions=positions)
        if cache is not None:
            cache.keep_indices = keep_indices
        with no_grad():
            for t in range(N):
                if recompute:
                    start = max(0, t + 1 - window)
                    logits = model(ids[:, start:t + 1]).data[:, -1]                # (B, vocab)
                    cache_tokens[t] = t + 1 - start
                else:
                    logits = model(ids[:, t:t + 1], cache=cache).data[:, -1]      # (B, vocab)
                    cache_bytes[t], cache_tokens[t] = cache.nbytes(), len(cache)
                if t + 1 < N:
                    losses[:, t] = F.token_nll(logits, ids[:, t + 1])
    finally:
        model.train(was_training)
    per_token = backend.to_numpy(losses.mean(axis=0))
    return StreamResult(per_token, float(per_token.mean()), cache_bytes, cache_tokens)
