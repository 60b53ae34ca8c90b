r"""What the model and its KV cache do when the caller leaves something out: the fallback branches.

``TinyGPT.forward`` with a cache fills in what is not given:

* a padded batch (the cache holds ``row_pos``) continued **without** ``position_ids``: each row continues from
  its own last position, ``row_pos[:, -1] + 1``; without ``attention_mask`` either, the cache's ``key_mask``
  keeps the padding keys masked;
* a batch prefilled with ``attention_mask`` alone (no ``row_pos``): shared positions from ``cache.seen``, the
  padding still masked through ``key_mask``;
* a cache of shared positions continued **with** ``position_ids``: the cached keys keep their shared positions,
  held per row from then on, so every later step sees them (and the other way round: a prefill with
  ``position_ids`` continued without them);
* a plain cache: the text position ``seen`` or, with ``positions="slot"``, the slot ``len(cache)``, for the
  queries and for the input hook alike; keys evicted by a window, with or without sinks.

Each is tested by its defining property, in float64 with O(1) random weights: the cached steps give the logits
of a forward pass without a cache whose positions are written out by hand (a row alone at 0..n-1, the kept tokens
at their text positions or slots). Positions the cache records are checked against hand-counted lists.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import batch_mask, document_mask, left_padded_positions
from mini_transformer.model.kv_cache import KVCache
from mini_transformer.positional import SCHEMES

from random_models import model_for

TOL = 1e-9
ROW_SCHEMES = ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "shaw"]
LENGTHS = [2, 5, 3]                       # three prompts, left-padded to 5
STEPS = 4                                 # tokens decoded after the prompt


def draws(seed=0):
    """The prompts (lengths ``LENGTHS``) and ``STEPS`` more tokens per row, seeded."""
    draw = np.random.default_rng(seed)
    rows = [draw.integers(1, 16, n) for n in LENGTHS]
    return rows, draw.integers(1, 16, (len(rows), STEPS))


def left_pad(rows):
    """ids and attention_mask ``(B, T)``: each row's padding (id 0) first, then its tokens."""
    T = max(len(r) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, T - len(r):], mask[b, T - len(r):] = r, 1
    return ids, mask


def alone_last(model, tokens):
    """Logits of the last token of ``tokens`` run alone, at positions 0..n-1: ``(vocab,)``."""
    return model(np.asarray(tokens)[None]).numpy()[0, -1]


def positions(cache):
    return backend.to_numpy(cache.pos).tolist()


# ---------------------------------------------------------------------------
# A padded batch continued without position_ids
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("with_mask", [False, True], ids=["no mask", "mask"])
@pytest.mark.parametrize("positional", ROW_SCHEMES)
def test_a_padded_batch_continued_without_position_ids_advances_each_row_by_one(positional, with_mask):
    # each row decodes exactly as it would alone: token t of a row of n prompt tokens sits at position n + t
    model = model_for(positional)
    rows, more = draws()
    ids, mask = left_pad(rows)
    cache = model.new_cache()
    model(ids, cache=cache, attention_mask=mask, position_ids=left_padded_positions(mask))
    assert backend.to_numpy(cache.row_pos[:, -1]).tolist() == [1, 4, 2]         # n - 1 per row
    for t in range(STEPS):
        kw = {}
        if with_mask:                                                            # every token in view: 1s after the prompt
            kw["attention_mask"] = np.concatenate([mask, np.ones((3, t + 1), dtype=np.int64)], axis=1)
        step = model(more[:, t:t + 1], cache=cache, **kw).numpy()[:, -1]
        assert backend.to_numpy(cache.row_pos[:, -1]).tolist() == [n + t for n in LENGTHS]
        for b, r in enumerate(rows):
            expected = alone_last(model, np.concatenate([r, more[b, :t + 1]]))
            assert np.abs(step[b] - expected).max() <= TOL, (positional, t, b)
    assert cache.seen == 5 + STEPS and len(cache) == 5 + STEPS


def test_the_row_positions_of_a_padded_batch_are_counted_by_hand():
    # rows [2, 5, 3] left-padded to 5, then two tokens continued without position_ids
    model = model_for("rope")
    rows, more = draws()
    ids, mask = left_pad(rows)
    cache = model.new_cache()
    model(ids, cache=cache, attention_mask=mask, position_ids=left_padded_positions(mask))
    model(more[:, :1], cache=cache)
    model(more[:, 1:3], cache=cache)                                 # two at once: n, n + 1
    assert backend.to_numpy(cache.row_pos).tolist() == [[0, 0, 0, 0, 1, 2, 3, 4],
                                                        [0, 1, 2, 3, 4, 5, 6, 7],
                                                        [0, 0, 0, 1, 2, 3, 4, 5]]
    assert backend.to_numpy(cache.key_mask).tolist() == [[False] * 3 + [True] * 5,
                                                         [True] * 8,
                                                         [False] * 2 + [True] * 6]
    assert positions(cache) == list(range(8)) and cache.seen == 8   # the text positions count every column


# ---------------------------------------------------------------------------
# A batch prefilled with attention_mask alone: shared positions, padding masked by the cache
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("positional", ["rope", "sinusoidal", "alibi"])
def test_a_mask_only_prefill_continues_at_shared_positions_with_the_padding_still_masked(positional):
    # no position_ids anywhere: every row's token t sits at column t (shared), and the cache remembers which
    # cached keys were padding; each step equals the uncached forward of the whole batch under the full mask
    model = model_for(positional)
    rows, more = draws(seed=1)
    ids, mask = left_pad(rows)
    full_ids = np.concatenate([ids, more], axis=1)
    full_mask = np.concatenate([mask, np.ones_like(more)], axis=1)
    full = model(full_ids, attention_mask=full_mask).numpy()
    cache = model.new_cache()
    steps = [model(ids, cache=cache, attention_mask=mask).numpy()]
    assert cache.row_pos is None
    for t in range(STEPS):
        steps.append(model(more[:, t:t + 1], cache=cache).numpy())            # neither mask nor positions
    real = full_mask.astype(bool)
    assert np.abs(np.concatenate(steps, axis=1) - full)[real].max() <= TOL
    assert positions(cache) == list(range(5 + STEPS)) and cache.row_pos is None
    # row 1 has no padding, so its shared positions are its own: it equals the row alone
    assert np.abs(np.concatenate(steps, axis=1)[1] - model(full_ids[1:]).numpy()[0]).max() <= TOL


def test_control_a_mask_only_prefill_differs_from_an_unmasked_one():
    # positive control for the test above: had the cache forgotten the padding, the steps would read it
    model = model_for("rope")
    rows, more = draws(seed=1)
    ids, mask = left_pad(rows)
    masked, plain = model.new_cache(), model.new_cache()
    model(ids, cache=masked, attention_mask=mask)
    model(ids, cache=plain)
    gap = np.abs(model(more[:, :1], cache=masked).numpy() - model(more[:, :1], cache=plain).numpy())
    assert gap[0].max() > 1e-3 and gap[1].max() <= TOL           # row 1 has no padding: identical


# ---------------------------------------------------------------------------
# A cache of shared positions continued with per-row position_ids
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("positional", ["rope", "learned", "t5"])
def test_shared_cached_positions_meet_per_row_position_ids(positional):
    # five tokens cached at 0..4, then one token per row at position 5 or 9: the same as the uncached forward
    # with those positions written out, [0, 1, 2, 3, 4, p]
    model = model_for(positional)
    x = np.random.default_rng(2).integers(0, 16, (2, 6))
    cache = model.new_cache()
    model(x[:, :5], cache=cache)
    step = model(x[:, 5:], cache=cache, position_ids=np.array([[5], [9]])).numpy()[:, -1]
    for b, p in enumerate([5, 9]):
        pos = np.array([[0, 1, 2, 3, 4, p]])
        expected = model(x[b:b + 1], position_ids=pos).numpy()[0, -1]
        assert np.abs(step[b] - expected).max() <= TOL
    # from the first per-row step on, the cache holds every cached token's row position, the shared ones first
    assert backend.to_numpy(cache.row_pos).tolist() == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 9]]
    assert cache.seen == 6


PREFILL, DECODE = 4, 4                    # tokens prefilled, then decoded one at a time


@pytest.mark.parametrize("prefill_ids", [False, True], ids=["ids on decode only", "ids on prefill only"])
@pytest.mark.parametrize("positional", sorted(SCHEMES))
def test_position_ids_given_on_one_side_of_the_cache_decode_like_one_full_pass(positional, prefill_ids):
    # position_ids on the prefill or on the decode steps only, always continuing the count 0, 1, 2, ...: every
    # step equals one full pass with positions 0 .. 7 written out. (Found in use: the per-row positions of the
    # decode steps were kept without the shared ones before them, so the second step's score bias covered two
    # keys of six and ALiBi, T5, Shaw, XL, 2-D and decoupled RoPE crashed; input schemes and RoPE never read
    # the cached keys' positions and passed.)
    model = model_for(positional)
    x = np.random.default_rng(8).integers(0, 16, (2, PREFILL + DECODE))
    pos = np.broadcast_to(np.arange(PREFILL + DECODE), x.shape).copy()
    full = model(x, position_ids=pos).numpy()
    cache = model.new_cache()
    steps = [model(x[:, :PREFILL], cache=cache, **({"position_ids": pos[:, :PREFILL]} if prefill_ids else {}))]
    for t in range(PREFILL, PREFILL + DECODE):
        steps.append(model(x[:, t:t + 1], cache=cache, **({} if prefill_ids else {"position_ids": pos[:, t:t + 1]})))
    gap = np.abs(np.concatenate([s.numpy() for s in steps], axis=1) - full).max()
    assert gap <= 1e-10, (positional, gap)
    assert backend.to_numpy(cache.row_pos).tolist() == [list(range(8))] * 2
    assert positions(cache) == list(range(8)) and cache.seen == 8


# ---------------------------------------------------------------------------
# Plain caches: text positions and slots, with windows and sinks
# ---------------------------------------------------------------------------

def kept_before(t, window, n_sink):
    """Tokens a cache holds when token t arrives, worked from the policy's definition."""
    return list(range(min(t, n_sink))) + list(range(max(n_sink, t - window), t))


@pytest.mark.parametrize("policy", [dict(window=3), dict(window=3, n_sink=2)], ids=["window", "sinks"])
@pytest.mark.parametrize("positional", ["rope", "sinusoidal", "learned", "alibi", "t5"])
def test_a_text_cache_after_eviction_is_a_forward_over_the_kept_tokens_at_their_text_positions(positional, policy):
    # one layer, so a cached key depends on its own token only: step t equals the uncached forward over the
    # kept tokens and token t, each at its place in the text
    model = model_for(positional, n_layers=1)
    x = np.random.default_rng(3).integers(0, 16, (2, 10))
    cache = model.new_cache(**policy)
    for t in range(10):
        step = model(x[:, t:t + 1], cache=cache).numpy()[:, -1]
        kept = kept_before(t, policy["window"], policy.get("n_sink", 0)) + [t]
        pos = np.broadcast_to(np.array(kept), (2, len(kept))).copy()
        expected = model(x[:, kept], position_ids=pos).numpy()[:, -1]
        assert np.abs(step - expected).max() <= TOL, (t, kept)
    assert positions(cache) == kept_before(10, policy["window"], policy.get("n_sink", 0))


@pytest.mark.parametrize("policy", [dict(window=3), dict(window=3, n_sink=2)], ids=["window", "sinks"])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "alibi"])
def test_a_slot_cache_places_each_token_at_its_slot(positional, policy):
    # slot positions: a new token's position is len(cache). With one layer a cached key and value depend on
    # their own token at the slot it was written to; the scores see the slots the kept keys hold now, 0..len.
    # An input scheme (sinusoidal, learned) so equals a forward with each kept token at its write-time slot; a
    # score scheme (ALiBi) a plain forward over the kept tokens at 0, 1, ..., len.
    model = model_for(positional, n_layers=1, max_len=16)
    window, n_sink = policy["window"], policy.get("n_sink", 0)
    x = np.random.default_rng(4).integers(0, 16, (2, 10))
    cache = model.new_cache(positions="slot", **policy)
    for t in range(10):
        kept = kept_before(t, window, n_sink)
        assert cache.next_position == len(kept)
        step = model(x[:, t:t + 1], cache=cache).numpy()[:, -1]
        if positional == "alibi":
            expected = model(x[:, kept + [t]]).numpy()[:, -1]
        else:
            written = [len(kept_before(j, window, n_sink)) for j in kept] + [len(kept)]
            pos = np.broadcast_to(np.array(written), (2, len(written))).copy()
            expected = model(x[:, kept + [t]], position_ids=pos).numpy()[:, -1]
        assert np.abs(step - expected).max() <= TOL, (t, kept)
    assert cache.seen == 10 and cache.next_position == len(cache) == window + n_sink


def test_an_offset_equal_to_the_cache_is_accepted_and_changes_nothing():
    model = model_for("sinusoidal")
    x = np.random.default_rng(5).integers(0, 16, (2, 6))
    a, b = model.new_cache(), model.new_cache()
    model(x[:, :4], cache=a)
    model(x[:, :4], cache=b, offset=0)
    gap = np.abs(model(x[:, 4:], cache=a).numpy() - model(x[:, 4:], cache=b, offset=4).numpy()).max()
    assert gap == 0.0
    with pytest.raises(ValueError, match="offset=3 disagrees with the cache, which has seen 6 tokens"):
        model(x[:, :1], cache=b, offset=3)


def test_nbytes_counts_every_cached_key_and_value():
    # 2 layers x (keys + values) x B=2 x H=2 x T=3 x d_head=8 float64 numbers: 2 * 2 * 2 * 2 * 3 * 8 * 8 bytes
    model = model_for("rope")
    cache = model.new_cache()
    assert cache.nbytes() == 0
    model(np.zeros((2, 3), dtype=np.int64), cache=cache)
    assert cache.nbytes() == 2 * 2 * 2 * 2 * 3 * 8 * 8


def test_an_empty_cache_holds_nothing():
    cache = KVCache(3)
    assert len(cache) == 0 and cache.seen == 0 and cache.next_position == 0
    assert cache.k == [None] * 3 and cache.v == [None] * 3 and cache.row_pos is None and cache.key_mask is None


# ---------------------------------------------------------------------------
# The batch path without a cache: shared positions from offset, or 0
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [None, 0, 3])
def test_a_mask_without_position_ids_places_the_tokens_where_the_plain_forward_does(offset):
    # an all-ones mask and no position_ids: shared positions offset .. offset + T - 1 (0 .. T - 1 by default),
    # as the plain forward places them; sinusoidal reads them at the input, so a shift would show
    model = model_for("sinusoidal")
    x = np.random.default_rng(6).integers(0, 16, (2, 5))
    kw = {} if offset is None else {"offset": offset}
    plain = model(x, **kw).numpy()
    assert np.abs(model(x, attention_mask=np.ones_like(x), **kw).numpy() - plain).max() <= TOL


def test_an_offset_equal_to_the_cache_is_accepted_in_the_batch_path():
    model = model_for("sinusoidal")
    rows, more = draws()
    ids, mask = left_pad(rows)
    a, b = model.new_cache(), model.new_cache()
    model(ids, cache=a, attention_mask=mask)
    model(ids, cache=b, attention_mask=mask, offset=0)
    step_a = model(more[:, :1], cache=a).numpy()
    step_b = model(more[:, :1], cache=b, offset=5).numpy()
    assert np.abs(step_a - step_b).max() == 0.0


# ---------------------------------------------------------------------------
# The batch helpers, worked by hand
# ---------------------------------------------------------------------------

def test_left_padded_positions_by_hand():
    # real tokens count from 0 in their row; padding sits at 0
    got = backend.to_numpy(left_padded_positions(np.array([[0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])))
    assert got.tolist() == [[0, 0, 0, 1], [0, 1, 2, 3], [0, 0, 0, 0]]


def test_batch_mask_by_hand():
    # one row [pad, a, b], causal: the padding query sees no real key, so it is let see all three (finite,
    # unread); a sees itself; b sees a and itself
    allowed, key_real = batch_mask(np.array([[0, 1, 1]]), 1, 3)
    assert backend.to_numpy(allowed).tolist() == [[[[True, True, True], [False, True, False], [False, True, True]]]]
    assert backend.to_numpy(key_real).tolist() == [[False, True, True]]
    # bidirectional: every real key for every query
    allowed, _ = batch_mask(np.array([[0, 1, 1]]), 1, 3, causal=False)
    assert backend.to_numpy(allowed)[0, 0].tolist() == [[False, True, True]] * 3


def test_batch_mask_reads_the_cached_keys_it_is_given():
    # two cached keys, the first padding, then one new token and no mask: the new query sees key 1 and itself
    allowed, key_real = batch_mask(None, 1, 1, n_cached=2, cached_keys=np.array([[False, True]]))
    assert backend.to_numpy(allowed).tolist() == [[[[False, True, True]]]]
    assert backend.to_numpy(key_real).tolist() == [[False, True, True]]
    allowed, key_real = batch_mask(None, 2, 1, n_cached=2, cached_keys=np.array([[False, True], [True, True]]))
    assert backend.to_numpy(allowed)[:, 0, 0].tolist() == [[False, True, True], [True, True, True]]
    assert key_real.dtype == bool


@pytest.mark.parametrize("shape", [(1, 3, 3), (1, 1, 3, 3)], ids=["(B, T, T)", "(B, 1, T, T)"])
def test_batch_mask_takes_a_matrix_in_either_shape(shape):
    # a matrix mask: query 2 may not see key 0; the causal mask is added by index
    m = np.ones((3, 3), dtype=np.int64)
    m[2, 0] = 0
    allowed, key_real = batch_mask(m.reshape(shape), 1, 3)
    assert backend.to_numpy(allowed).tolist() == [[[[True, False, False], [True, True, False], [False, True, True]]]]
    assert key_real is None


def test_document_mask_is_booleans_as_attention_masks_are():
    got = document_mask(np.array([[3, 3, 5]]))
    assert got.dtype == bool
    assert backend.to_numpy(got).tolist() == [[[True, True, False], [True, True, False], [False, False, True]]]


def test_a_window_of_one_token_keeps_the_last():
    cache = KVCache(2, window=1)
    cache.advance(3)
    cache.advance(1)
    assert positions(cache) == [3] and cache.seen == 4
