r"""Every refusal of ``transformer.py`` and ``kv_cache.py``, word for word.

Bad input gets a sentence naming the argument, the value and the limit. Each case below is a call and the
whole sentence it must raise, written out from the value passed: a test that matched only a key word would let
a sentence lose its value, its limit or its advice unnoticed.
"""
import numpy as np
import pytest

from mini_transformer.model import TinyEncoder, document_mask
from mini_transformer.model.kv_cache import KVCache
from mini_transformer.positional.sinusoidal import SinusoidalPositionalEncoding

from random_models import model_for, tiny

SCHEME_NAMES = ("['alibi', 'decoupled_rope', 'fire', 'learned', 'mrope', 'none', 'relative_2d', 'rope', 'shaw', "
                "'sinusoidal', 't5', 'temperature', 'transformer_xl']")


def padded():
    """Two left-padded rows of 3 and 5 tokens: ids and attention_mask ``(2, 5)``."""
    ids = np.array([[0, 0, 4, 5, 6], [1, 2, 3, 4, 5]])
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    return ids, mask


def cached(model, n=3, **policy):
    cache = model.new_cache(**policy)
    model(np.zeros((2, n), dtype=np.int64), cache=cache)
    return cache


class SharedOnly(SinusoidalPositionalEncoding):
    """A subclass that does not declare ``per_row_positions`` again, so it takes shared positions only."""


def config_cases():
    yield "vocab", lambda: tiny(vocab_size=0), "GPTConfig.vocab_size must be at least 1, got 0."
    yield "d_model", lambda: tiny(d_model=0), "GPTConfig.d_model must be at least 1, got 0."
    yield "n_layers", lambda: tiny(n_layers=0), "GPTConfig.n_layers must be at least 1, got 0."
    yield "n_heads", lambda: tiny(n_heads=0), "GPTConfig.n_heads must be at least 1, got 0."
    yield "max_len", lambda: tiny(max_len=0), "GPTConfig.max_len must be at least 1, got 0."
    yield "divisible", lambda: tiny(d_model=30, n_heads=4), "GPTConfig: d_model=30 is not divisible by n_heads=4."
    yield "scheme", lambda: tiny("alibi9"), ("GPTConfig.positional='alibi9' is not a known scheme; choose one of "
                                             + SCHEME_NAMES + ".")
    yield "extra", lambda: tiny(extra=[1]), "GPTConfig.extra must be a dict of scheme settings, got [1]."
    yield "norm", lambda: tiny(norm="batch"), "GPTConfig.norm must be 'layer' or 'rms', got 'batch'."
    yield "dropout", lambda: tiny(dropout=1.0), "GPTConfig.dropout must lie in [0, 1), got 1.0."
    yield "dropout below", lambda: tiny(dropout=-0.5), "GPTConfig.dropout must lie in [0, 1), got -0.5."


def cache_cases():
    yield "window", lambda: KVCache(2, window=0), "KVCache window must be at least 1 token, got window=0."
    yield "n_sink", lambda: KVCache(2, window=4, n_sink=-1), "KVCache n_sink must be at least 0, got n_sink=-1."
    yield "sink alone", lambda: KVCache(2, n_sink=4), ("KVCache n_sink=4 only means something with a window; pass "
                                                       "window=W too.")
    yield "positions", lambda: KVCache(2, window=4, positions="page"), (
        "KVCache positions must be one of ('text', 'slot'), got positions='page'.")
    model = model_for("learned", max_len=12)
    yield "slot without window", lambda: model.new_cache(positions="slot"), (
        "positions='slot' needs a window; a full cache's slots are its text positions.")
    yield "slot too long", lambda: model.new_cache(window=8, n_sink=4, positions="slot"), (
        "n_sink + window = 4 + 8 = 12 cache slots plus the query need 13 positions, but the model was trained on "
        "max_len=12; make n_sink + window at most 11.")


def forward_cases():
    model = model_for("rope")
    ids, mask = padded()
    yield "ids shape", lambda: model(np.arange(5)), "TinyGPT takes token ids of shape (B, T), got shape (5,)."
    yield "offset", lambda: model(ids[:, :1], cache=cached(model), offset=2), (
        "offset=2 disagrees with the cache, which has seen 3 tokens, so the next one is at text position 3; leave "
        "offset out when you pass a cache.")
    yield "offset, batch", lambda: model(ids[:, :1], cache=cached(model), offset=1, attention_mask=np.ones((2, 4))), (
        "offset=1 disagrees with the cache, which has seen 3 tokens; leave offset out when you pass a cache.")
    yield "window, batch", lambda: model(ids, cache=model.new_cache(window=3), attention_mask=mask), (
        "attention_mask/position_ids with a cache: a padded batch (per-row positions) needs the full cache with "
        "text positions, but this cache has window=3, positions='text' and keep_indices=None; use "
        "model.new_cache().")
    yield "slot, batch", lambda: model(ids, cache=model.new_cache(window=3, positions="slot"), position_ids=mask), (
        "attention_mask/position_ids with a cache: a padded batch (per-row positions) needs the full cache with "
        "text positions, but this cache has window=3, positions='slot' and keep_indices=None; use "
        "model.new_cache().")
    yield "slot, no window, batch", lambda: model(ids, cache=KVCache(2, positions="slot"), attention_mask=mask), (
        "attention_mask/position_ids with a cache: a padded batch (per-row positions) needs the full cache with "
        "text positions, but this cache has window=None, positions='slot' and keep_indices=None; use "
        "model.new_cache().")
    hooked = KVCache(2, keep_indices=lambda n, w, s: np.arange(n))
    yield "hook, batch", lambda: model(ids, cache=hooked, attention_mask=mask), (
        "attention_mask/position_ids with a cache: a padded batch (per-row positions) needs the full cache with "
        "text positions, but this cache has window=None, positions='text' and keep_indices=custom; use "
        "model.new_cache().")
    yield "position_ids shape", lambda: model(ids, position_ids=mask[:, 1:]), (
        "position_ids must be integers of shape (B, T) = (2, 5) like the ids, got shape (2, 4) and dtype int64.")
    yield "position_ids dtype", lambda: model(ids, position_ids=mask.astype(np.float64)), (
        "position_ids must be integers of shape (B, T) = (2, 5) like the ids, got shape (2, 5) and dtype float64.")
    yield "negative position", lambda: model(ids, position_ids=mask - 2), "position_ids must be at least 0, got -2."
    yield "mask shape", lambda: model(ids, attention_mask=mask[:, 1:]), (
        "attention_mask has shape (2, 4); for 2 rows of 5 new tokens after 0 cached ones it must be (2, 5) (1 for "
        "a real token, 0 for padding, cached tokens included) or (2, 5, 5) (1 where a query may see a key).")
    yield "mask shape, cached", lambda: model(ids[:, :2], cache=cached(model), attention_mask=mask[:, 1:]), (
        "attention_mask has shape (2, 4); for 2 rows of 2 new tokens after 3 cached ones it must be (2, 5) (1 for "
        "a real token, 0 for padding, cached tokens included) or (2, 2, 5) (1 where a query may see a key).")
    yield "encoder ids shape", lambda: TinyEncoder(tiny())(np.arange(5)), (
        "TinyEncoder takes token ids of shape (B, T), got shape (5,).")
    yield "matrix mask shape", lambda: model(ids, attention_mask=np.ones((2, 5, 4))), (
        "attention_mask has shape (2, 5, 4); for 2 rows of 5 new tokens after 0 cached ones it must be (2, 5) (1 "
        "for a real token, 0 for padding, cached tokens included) or (2, 5, 5) (1 where a query may see a key).")
    yield "document ids", lambda: document_mask(np.arange(5)), (
        "document_mask takes document ids of shape (B, T), got shape (5,).")


def generate_cases():
    model = model_for("rope")
    ids, mask = padded()
    yield "max_new_tokens", lambda: model.generate(ids, -1), "max_new_tokens must be at least 0, got -1."
    yield "temperature", lambda: model.generate(ids, 2, temperature=0), (
        "temperature must be positive, got 0; use greedy=True for argmax.")
    yield "top_k 0", lambda: model.generate(ids, 2, top_k=0), "top_k must lie in [1, vocab_size=16], got 0."
    yield "top_k 17", lambda: model.generate(ids, 2, top_k=17), "top_k must lie in [1, vocab_size=16], got 17."
    yield "mask shape", lambda: model.generate(ids, 2, attention_mask=mask[:, 1:]), (
        "generate: attention_mask has shape (2, 4), but the prompts have shape (2, 5); it needs one 0/1 entry per "
        "prompt token.")
    yield "right padding", lambda: model.generate(ids, 2, attention_mask=mask[:, ::-1]), (
        "generate: attention_mask must be left padding, each row 0s then 1s (padding first); a row with padding "
        "after a real token cannot be continued in its last column.")
    yield "not 0/1", lambda: model.generate(ids, 2, attention_mask=2 * mask), (
        "generate: attention_mask holds values other than 0 and 1; it needs 1 for a real token and 0 for padding.")
    yield "fractional", lambda: model.generate(ids, 2, attention_mask=np.where(mask == 1, 1.0, 0.5)), (
        "generate: attention_mask holds values other than 0 and 1; it needs 1 for a real token and 0 for padding.")
    yield "a hole", lambda: model.generate(ids, 2, attention_mask=np.array([[0, 1, 0, 1, 1], [1, 1, 1, 1, 1]])), (
        "generate: attention_mask must be left padding, each row 0s then 1s (padding first); a row with padding "
        "after a real token cannot be continued in its last column.")
    empty = mask.copy()
    empty[0] = 0
    yield "empty row", lambda: model.generate(ids, 2, attention_mask=empty), (
        "generate: every prompt needs at least one real token, but a row of attention_mask is all padding.")
    yield "window", lambda: model.generate(ids, 2, attention_mask=mask, window=4, n_sink=1), (
        "generate: a left-padded batch (attention_mask) needs the full cache with text positions, but window=4, "
        "n_sink=1, positions='text' were asked for; generate the rows one at a time for a windowed cache.")
    yield "window alone", lambda: model.generate(ids, 2, attention_mask=mask, window=4), (
        "generate: a left-padded batch (attention_mask) needs the full cache with text positions, but window=4, "
        "n_sink=0, positions='text' were asked for; generate the rows one at a time for a windowed cache.")
    yield "sinks alone", lambda: model.generate(ids, 2, attention_mask=mask, n_sink=2), (
        "generate: a left-padded batch (attention_mask) needs the full cache with text positions, but window=None, "
        "n_sink=2, positions='text' were asked for; generate the rows one at a time for a windowed cache.")
    yield "slots", lambda: model.generate(ids, 2, attention_mask=mask, positions="slot"), (
        "generate: a left-padded batch (attention_mask) needs the full cache with text positions, but window=None, "
        "n_sink=0, positions='slot' were asked for; generate the rows one at a time for a windowed cache.")


def shared_only_cases():
    model = model_for("sinusoidal")
    model.positional = SharedOnly(16)
    ids, mask = padded()
    yield "rows, forward", lambda: model(ids, position_ids=mask), (
        "position_ids: the 'sinusoidal' scheme (SharedOnly) does not declare per-row positions (per_row_positions), "
        "so it cannot take position_ids of shape (B, T); leave position_ids out (shared positions) or use a scheme "
        "that takes them.")
    yield "rows, generate", lambda: model.generate(ids, 2, attention_mask=mask), (
        "generate: attention_mask: the 'sinusoidal' scheme does not take per-row positions (per_row_positions), so "
        "a left-padded batch cannot be served; generate the prompts one at a time.")


def policy_cases():
    from mini_transformer.evaluation.streaming import stream_loss
    model = model_for("rope")
    x = np.zeros((1, 6), dtype=np.int64)
    yield "out of range", lambda: stream_loss(model, x, keep_indices=lambda n, w, s: np.arange(n) + 1), (
        "keep_indices returned indices from 1 to 1, but the cache holds 1 tokens: indices must lie in [0, 1).")
    yield "twice", lambda: stream_loss(model, x, keep_indices=lambda n, w, s: np.zeros(n, dtype=np.int64)), (
        "keep_indices returned an index twice; each cached token can be kept once.")
    yield "floats", lambda: stream_loss(model, x, keep_indices=lambda n, w, s: np.arange(n, dtype=np.float64)), (
        "keep_indices must return a 1-D array of integer indices, got shape (1,) and dtype float64.")
    yield "2-D", lambda: stream_loss(model, x, keep_indices=lambda n, w, s: np.arange(n)[None]), (
        "keep_indices must return a 1-D array of integer indices, got shape (1, 1) and dtype int64.")


CASES = [c for cases in (config_cases, cache_cases, forward_cases, generate_cases, shared_only_cases,
                                                     policy_cases) for c in cases()]


@pytest.mark.parametrize("call, sentence", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_refusal_is_its_whole_sentence(call, sentence):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == sentence
