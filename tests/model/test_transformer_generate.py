r"""``TinyGPT.generate``: what each step feeds the model, where it stops, how it samples, what it leaves behind.

The properties, in float64 with O(1) random weights:

* with the cache (the default) the prompt is read once and every later step feeds one token; without it every
  step feeds the whole sequence; either way exactly ``max_new_tokens - 1`` steps follow the prompt, so a
  generation that ends at the trained length never asks for a position past it;
* each step's logits are the full forward pass's over the final sequence (so the cache changes nothing);
* sampling draws from :math:`\mathrm{softmax}(\ell / \tau)`: the frequencies over many rows match it, a tiny
  :math:`\tau` is greedy, ``top_k = vocab_size`` is no restriction;
* a model in training mode is left in training mode.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import TinyGPT

from random_models import model_for


def recording(model):
    """Wrap ``model.forward`` to record the length of every input and its logits; returns the record."""
    calls = []
    forward = model.forward

    def spy(idx, *args, **kw):
        out = forward(idx, *args, **kw)
        calls.append((np.asarray(backend.to_numpy(idx)).shape[1], out.numpy().copy()))
        return out

    model.forward = spy
    return calls


def prompt(B=2, T=3, seed=0):
    return np.random.default_rng(seed).integers(0, 16, (B, T))


def left_padded():
    """Rows of 1, 4 and 2 real tokens, left-padded to 4."""
    ids = np.array([[0, 0, 0, 7], [3, 1, 4, 1], [0, 0, 5, 9]])
    return ids, (ids > 0).astype(np.int64)


@pytest.mark.parametrize("use_cache", [True, False])
def test_each_step_feeds_one_token_with_the_cache_and_the_whole_sequence_without(use_cache):
    model = model_for("rope")
    calls = recording(model)
    model.generate(prompt(), 5, greedy=True, use_cache=use_cache)
    assert [n for n, _ in calls] == ([3, 1, 1, 1, 1] if use_cache else [3, 4, 5, 6, 7])


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_left_padded_batch_feeds_one_token_per_step_with_the_cache(use_cache):
    model = model_for("rope")
    calls = recording(model)
    ids, mask = left_padded()
    model.generate(ids, 4, greedy=True, attention_mask=mask, use_cache=use_cache)
    assert [n for n, _ in calls] == ([4, 1, 1, 1] if use_cache else [4, 5, 6, 7])


def test_the_default_is_the_cache():
    model = model_for("rope")
    calls = recording(model)
    model.generate(prompt(), 3, greedy=True)
    assert [n for n, _ in calls] == [3, 1, 1]


DYNAMIC = dict(max_len=8, rope_scaling={"rope_type": "dynamic", "factor": 2.0})


@pytest.mark.parametrize("positional, kw", [("learned", {}), ("sinusoidal", {}), ("rope", {}), ("rope", DYNAMIC)],
                         ids=["learned", "sinusoidal", "rope", "dynamic NTK"])
def test_every_step_gives_the_full_forwards_logits(positional, kw):
    # dynamic NTK trained at 8 and run to 15: its scale depends on the length, so each step must use the scale
    # of the final 15 tokens, as the full forward over them does
    model = model_for(positional, **kw)
    calls = recording(model)
    out = backend.to_numpy(model.generate(prompt(), 12, greedy=True))
    full = model(out).numpy()                                            # the spy records this call last
    steps = [logits[:, -1] for _, logits in calls[:-1]]
    for s, logits in enumerate(steps):
        assert np.abs(logits - full[:, 2 + s]).max() <= 1e-9
        assert (out[:, 3 + s] == logits.argmax(-1)).all()


@pytest.mark.parametrize("masked", [False, True], ids=["plain", "left-padded"])
def test_generation_may_end_exactly_at_the_trained_length(masked):
    # learned positions 0..15: a prompt of 4 and 12 new tokens fill them; a step after the last token would
    # ask for position 16 and be refused
    model = model_for("learned", max_len=16)
    if masked:
        ids, mask = left_padded()
        out = model.generate(ids, 12, greedy=True, attention_mask=mask)
    else:
        out = model.generate(prompt(T=4), 12, greedy=True)
    assert backend.to_numpy(out).shape[1] == 16


def test_zero_new_tokens_returns_the_prompt():
    model = model_for("rope")
    calls = recording(model)
    out = backend.to_numpy(model.generate(prompt(), 0, greedy=True))
    assert out.tolist() == prompt().tolist() and len(calls) == 1


def test_a_one_token_prompt_beside_longer_ones_continues_as_it_would_alone():
    model = model_for("sinusoidal")
    ids, mask = left_padded()
    out = backend.to_numpy(model.generate(ids, 5, greedy=True, attention_mask=mask))
    alone = backend.to_numpy(model.generate(ids[:1, 3:], 5, greedy=True))[0]
    assert out[0, 3:].tolist() == alone.tolist()


def test_generate_runs_the_slot_cache_it_is_asked_for():
    # learned positions 0..15 and 30 tokens: only slot positions (never past n_sink + window = 12) can serve it;
    # the tokens are those of stepping a slot cache by hand
    model = model_for("learned", max_len=16)
    x = prompt(T=4)
    out = backend.to_numpy(model.generate(x, 26, greedy=True, window=8, n_sink=4, positions="slot"))
    cache = model.new_cache(window=8, n_sink=4, positions="slot")
    ids = x
    logits = model(ids, cache=cache).numpy()
    for _ in range(26):
        ids = np.concatenate([ids, logits[:, -1].argmax(-1)[:, None]], axis=1)
        logits = model(ids[:, -1:], cache=cache).numpy()
    assert out.tolist() == ids.tolist()


def test_the_sampling_defaults_are_temperature_one_and_seed_zero():
    model = model_for("rope")
    a = backend.to_numpy(model.generate(prompt(B=8), 4))
    assert a.tolist() == backend.to_numpy(model.generate(prompt(B=8), 4, temperature=1.0, seed=0)).tolist()


def test_greedy_ignores_a_zero_temperature():
    model = model_for("rope")
    a = backend.to_numpy(model.generate(prompt(), 4, greedy=True, temperature=0))
    assert a.tolist() == backend.to_numpy(model.generate(prompt(), 4, greedy=True)).tolist()


def test_a_tiny_temperature_is_greedy():
    # logits / 1e-3: the top token outweighs the next by e^(gap / 1e-3), so every row draws its argmax
    model = model_for("rope")
    x = prompt(B=64)
    sampled = backend.to_numpy(model.generate(x, 1, temperature=1e-3, seed=3))
    assert sampled.tolist() == backend.to_numpy(model.generate(x, 1, greedy=True)).tolist()


def test_top_k_equal_to_the_vocabulary_restricts_nothing():
    model = model_for("rope")
    a = backend.to_numpy(model.generate(prompt(B=8), 4, top_k=16, seed=5))
    assert a.tolist() == backend.to_numpy(model.generate(prompt(B=8), 4, seed=5)).tolist()


def test_sampled_frequencies_match_the_softmax_at_the_temperature():
    # 4000 rows of one prompt draw once each at temperature 3; each id's frequency lies within 5 standard errors
    # sqrt(p (1 - p) / N) of p = softmax(logits / 3), the definition written out here. At 3 every id, the first
    # and the last included, has p > 0.02, so an id the sampler can never draw is seen.
    model = model_for("rope")
    x = np.repeat(prompt(B=1), 4000, axis=0)
    logits = model(x[:1]).numpy()[0, -1] / 3.0
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert p.min() > 0.02
    drawn = backend.to_numpy(model.generate(x, 1, temperature=3.0, seed=11))[:, -1]
    freq = np.bincount(drawn, minlength=16) / len(drawn)
    assert (np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / len(drawn))).all(), (freq, p)


@pytest.mark.parametrize("training", [True, False])
def test_generate_leaves_the_mode_it_found(training):
    model = model_for("rope")
    model.train(training)
    model.generate(prompt(), 2, greedy=True)
    assert model.training is training
