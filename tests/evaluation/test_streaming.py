"""Streaming: stream_loss runs in constant memory, equals the full forward loss, gives each query the position its
cache policy promises, refuses what it cannot run, and hands the model back in its own mode. What each policy
keeps, and where, is tested with the cache, in tests/model/test_kv_cache.py."""
import numpy as np
import pytest

from mini_transformer.model.kv_cache import keep_indices
from mini_transformer.evaluation.streaming import stream_loss

from hand_built import LN2, HalvingModel, counting_text, training_flags
from random_models import model_for


def stream(n, seed=0):
    return np.random.default_rng(seed).integers(0, 16, (2, n))


@pytest.mark.parametrize("policy", [dict(window=8), dict(window=8, n_sink=4), dict(window=8, n_sink=4, positions="slot")])
def test_memory_stays_constant_over_a_stream_twenty_times_the_window(policy):
    model = model_for("rope", max_len=16)
    result = stream_loss(model, stream(160, seed=3), **policy)
    held = policy["window"] + policy.get("n_sink", 0)
    assert result.cache_tokens[held - 1:].tolist() == [held] * (160 - held + 1)
    assert len(set(result.cache_bytes[held - 1:].tolist())) == 1
    assert np.isfinite(result.losses).all() and result.losses.shape == (159,)


def test_stream_loss_with_a_full_cache_equals_the_full_forward_loss():
    model = model_for("rope")
    x = stream(24)
    logits = model(x).numpy()
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp[:, :-1], x[:, 1:, None], axis=-1)[..., 0].mean(axis=0)
    got = stream_loss(model, x)
    assert np.abs(got.losses - expected).max() <= 1e-12
    recomputed = stream_loss(model, x, window=24, recompute=True)
    assert np.abs(recomputed.losses - expected).max() <= 1e-12


# HalvingModel's loss at position p is (p + 1) ln 2, so the losses of a stream spell out the position each step's
# query was given. Ten tokens, step t = 0..9 predicts token t + 1 (nine losses); the cache holds n_sink + window.
STEPS = [
    ("full cache, text positions", dict(),
     [1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
    ("window 4, text positions: evicting keeps the place in the text", dict(window=4),
     [1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]),
    ("window 4, slots: the query sits after the 4 kept, at slot 4", dict(window=4, positions="slot"),
     [1, 2, 3, 4, 5, 5, 5, 5, 5], [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]),
    ("2 sinks + window 4, slots: at slot 6 at most", dict(window=4, n_sink=2, positions="slot"),
     [1, 2, 3, 4, 5, 6, 7, 7, 7], [1, 2, 3, 4, 5, 6, 6, 6, 6, 6]),
    ("window 1, slots: one token kept, the query at slot 1", dict(window=1, positions="slot"),
     [1, 2, 2, 2, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
    ("recompute over the last 4 tokens: the query is at 3 at most", dict(window=4, recompute=True),
     [1, 2, 3, 4, 4, 4, 4, 4, 4], [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]),
]


@pytest.mark.parametrize("policy, losses, held", [s[1:] for s in STEPS], ids=[s[0] for s in STEPS])
def test_stream_loss_gives_each_query_the_position_its_policy_promises(policy, losses, held):
    text = np.stack([counting_text(10, 16), counting_text(10, 16)])     # (2, 10): batch rows are averaged
    result = stream_loss(HalvingModel(16), text, **policy)
    np.testing.assert_allclose(result.losses, np.array(losses) * LN2, rtol=1e-13)
    assert result.mean_loss == pytest.approx(np.mean(losses) * LN2, rel=1e-13)
    assert result.cache_tokens.tolist() == held


# ---------------------------------------------------------------------------
# What stream_loss refuses
# ---------------------------------------------------------------------------

def test_a_stream_of_one_token_is_refused():
    model = model_for("learned", max_len=12)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        stream_loss(model, np.array([1]))


def test_recompute_with_a_policy_is_refused():
    with pytest.raises(ValueError, match="recompute=True keeps no cache"):
        stream_loss(model_for("rope"), stream(6), window=4, recompute=True, keep_indices=keep_indices)


# ---------------------------------------------------------------------------
# The model's mode: eval for the measurement, the caller's own afterwards
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("policy", [dict(), dict(window=4), dict(window=4, recompute=True)],
                         ids=["full cache", "window", "recompute"])
@pytest.mark.parametrize("training", [True, False], ids=["in training mode", "in eval mode"])
def test_stream_loss_runs_in_eval_mode_and_hands_the_model_back_in_its_own(training, policy):
    model = HalvingModel(16).train(training)
    stream_loss(model, counting_text(10, 16), **policy)
    assert len(model.modes) >= 9 and not any(model.modes)          # every step ran in eval mode
    assert model.training is training
    gpt = model_for("rope").train(training)
    stream_loss(gpt, stream(6), **policy)
    assert training_flags(gpt) == {training}                                # every block, layer and scheme too


@pytest.mark.parametrize("make, policy", [
    (lambda: HalvingModel(16, limit=4), dict()),                   # a step raises: position 4 is refused
    (lambda: model_for("learned", max_len=4), dict()),
    (lambda: HalvingModel(16), dict(window=0)),                    # the cache refuses its settings
    (lambda: model_for("rope"), dict(window=4, n_sink=-1)),
], ids=["a refused step", "a refused step in TinyGPT", "a refused cache", "a refused cache in TinyGPT"])
@pytest.mark.parametrize("training", [True, False], ids=["in training mode", "in eval mode"])
def test_stream_loss_hands_the_model_back_in_its_own_mode_when_it_raises(make, policy, training):
    model = make().train(training)
    with pytest.raises(ValueError):
        stream_loss(model, counting_text(10, 16), **policy)
    assert training_flags(model) == {training}
