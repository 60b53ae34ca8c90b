"""The KV cache: what each policy keeps, where it puts the positions, that a window as long as the stream is full
attention, and the keep_indices= hook that runs another policy inside the model.

Expected values come from the definitions worked by hand (a policy's indices, the positions of the kept tokens)
or from the model's own full forward pass over the tokens a cache is meant to hold, never from the cache itself.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.evaluation.streaming import stream_loss
from mini_transformer.model.kv_cache import KVCache, keep_indices

from random_models import model_for


def stream(n, seed=0, rows=2):
    return np.random.default_rng(seed).integers(0, 16, (rows, n))


# ---------------------------------------------------------------------------
# What each policy keeps, and where positions sit
# ---------------------------------------------------------------------------

def test_sinks_plus_window_with_slots_keeps_the_right_tokens_and_places_the_next_query():
    model = model_for("rope")
    cache = model.new_cache(window=8, n_sink=4, positions="slot")
    x = stream(20)
    for t in range(20):
        model(x[:, t:t + 1], cache=cache)
    assert backend.to_numpy(cache.pos).tolist() == [0, 1, 2, 3] + list(range(12, 20))
    q_pos, k_pos = cache.query_and_key_positions(1)
    assert backend.to_numpy(k_pos).tolist() == list(range(13))     # slots 0..11, then the query's
    assert backend.to_numpy(q_pos).tolist() == [12]
    assert cache.seen == 20                                 # the text position still counts on


def test_text_positions_keep_the_place_in_the_stream():
    model = model_for("rope")
    cache = model.new_cache(window=8, n_sink=4, positions="text")
    x = stream(20)
    for t in range(20):
        model(x[:, t:t + 1], cache=cache)
    q_pos, k_pos = cache.query_and_key_positions(1)
    assert backend.to_numpy(k_pos).tolist() == [0, 1, 2, 3] + list(range(12, 21))
    assert backend.to_numpy(q_pos).tolist() == [20]


def test_sliding_window_keeps_only_the_most_recent():
    cache = KVCache(2, window=5)
    cache.advance(3)
    cache.advance(4)
    assert backend.to_numpy(cache.pos).tolist() == [2, 3, 4, 5, 6]


def test_slot_positions_never_leave_the_trained_range():
    model = model_for("rope", max_len=13)
    cache = model.new_cache(window=8, n_sink=4, positions="slot")
    seen = []
    x = stream(50)
    for t in range(50):
        seen.append(int(backend.to_numpy(cache.query_and_key_positions(1)[0])[0]))
        model(x[:, t:t + 1], cache=cache)
    assert max(seen) == 12 < 13


SCHEMES = ["none", "sinusoidal", "learned", "rope"]


POLICIES = [dict(), dict(window=24), dict(window=20, n_sink=4), dict(window=24, positions="slot"),
            dict(window=20, n_sink=4, positions="slot")]


@pytest.mark.parametrize("policy", POLICIES, ids=[str(p) for p in POLICIES])
@pytest.mark.parametrize("positional", SCHEMES)
def test_a_window_as_long_as_the_stream_gives_exactly_full_attention(positional, policy):
    model = model_for(positional)
    x = stream(24)
    full = model(x).numpy()
    cache = model.new_cache(**policy)
    steps = [model(x[:, :3], cache=cache).numpy()] + [model(x[:, t:t + 1], cache=cache).numpy() for t in range(3, 24)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12


@pytest.mark.parametrize("policy", [dict(window=3, positions="slot"), dict(window=3, n_sink=2, positions="slot")])
def test_a_slot_cache_after_eviction_is_a_fresh_forward_over_the_kept_tokens(policy):
    # one layer: a cached key and value depend on their token alone, and slot positions number the kept tokens
    # 0, 1, ..., so each step's logits are those of a forward pass over the kept tokens followed by the new one
    model = model_for("rope", max_len=16, n_layers=1)
    x = stream(12, seed=4)
    cache = model.new_cache(**policy)
    sinks, window = policy.get("n_sink", 0), policy["window"]
    for t in range(12):
        step = model(x[:, t:t + 1], cache=cache).numpy()[:, -1]
        kept = list(range(min(t, sinks))) + list(range(max(sinks, t - window), t))   # before this step's eviction
        fresh = model(x[:, kept + [t]]).numpy()[:, -1]
        assert np.abs(step - fresh).max() <= 1e-12, (t, kept)


def test_generation_through_a_sink_cache_runs_past_the_trained_length():
    model = model_for("rope", max_len=16)
    out = backend.to_numpy(model.generate(stream(4), 60, greedy=True, window=8, n_sink=4, positions="slot"))
    assert out.shape == (2, 64)


def test_bad_cache_settings_are_refused_clearly():
    model = model_for("learned", max_len=12)
    with pytest.raises(ValueError, match=r"n_sink \+ window = 4 \+ 8 = 12 .*max_len=12"):
        model.new_cache(window=8, n_sink=4, positions="slot")
    with pytest.raises(ValueError, match="window=0"):
        model.new_cache(window=0)
    with pytest.raises(ValueError, match="n_sink=4 only means something with a window"):
        model.new_cache(n_sink=4)
    with pytest.raises(ValueError, match="positions='page'"):
        model.new_cache(window=4, positions="page")
    cache = model.new_cache()
    model(stream(3), cache=cache)
    with pytest.raises(ValueError, match="offset=0 disagrees with the cache"):
        model(stream(1), offset=0, cache=cache)


# ---------------------------------------------------------------------------
# The policy as a function: kv_cache.keep_indices and the keep_indices= hook
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n, window, n_sink, expected", [
    (10, 4, 2, [0, 1, 6, 7, 8, 9]),          # the worked example
    (6, 4, 2, [0, 1, 2, 3, 4, 5]),           # exactly full: nothing evicted
    (7, 4, 2, [0, 1, 3, 4, 5, 6]),           # one past full: token 2 goes
    (3, 4, 2, [0, 1, 2]),                    # before full: every token once
    (9, 3, 0, [6, 7, 8]),                    # a plain window
    (5, None, 0, [0, 1, 2, 3, 4]),           # the full cache
    (0, 4, 2, []),
])
def test_keep_indices_by_hand(n, window, n_sink, expected):
    assert backend.to_numpy(keep_indices(n, window, n_sink)).tolist() == expected


def test_the_library_policy_passed_as_a_hook_changes_nothing():
    model = model_for("rope")
    x = stream(40)
    for policy in (dict(window=8, n_sink=4, positions="slot"), dict(window=8), dict(window=6, n_sink=2)):
        plain = stream_loss(model, x, **policy).losses
        hooked = stream_loss(model, x, keep_indices=keep_indices, **policy).losses
        np.testing.assert_array_equal(plain, hooked)


def test_a_custom_policy_runs_inside_the_model():
    """Drop token 0 once, right after it is read: no later token ever sees it, so step t equals a full forward
    pass over tokens 1..t placed at their own text positions (offset 1), in every layer."""
    model = model_for("rope")
    x = stream(12, rows=1)
    dropped = []

    def drop_first_once(n, window, n_sink):
        if not dropped:
            dropped.append(True)
            return np.arange(1, n)
        return np.arange(n)

    cache = KVCache(model.cfg.n_layers, keep_indices=drop_first_once)
    for t in range(12):
        step = model(x[:, t:t + 1], cache=cache).numpy()[:, -1]
        if t >= 1:
            full = model(x[:, 1:t + 1], offset=1).numpy()[:, -1]
            assert np.abs(step - full).max() < 1e-12
    assert backend.to_numpy(cache.pos).tolist() == list(range(1, 12))


@pytest.mark.parametrize("bad, words", [
    (lambda n, w, s: np.arange(n) + 1, r"indices from 1 to \d+, but the cache holds \d+ tokens"),
    (lambda n, w, s: np.zeros(n, dtype=np.int64), "an index twice"),
    (lambda n, w, s: np.arange(n, dtype=np.float64), "integer indices"),
])
def test_a_bad_policy_is_refused_with_a_sentence(bad, words):
    model = model_for("rope")
    with pytest.raises(ValueError, match=words):
        stream_loss(model, stream(6), keep_indices=bad)
