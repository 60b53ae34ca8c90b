"""Chapters 9 and 10's additions to the library: the cache policy hook, the repetitive corpus, passkeys in
text, the passkey grid on another task, the sink experiment's sigmoid attention and eviction policy, and the
long-context experiment's pieces.

Expected values come from the definitions worked by hand (a policy's indices, a sigmoid written out as
1 / (1 + e^-z), a key spliced into a known window), never from the code under test.
"""
import functools
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import data
from mini_transformer.evaluation import measures as evaluate
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.gradcheck import gradcheck
from mini_transformer.engine.kernels import FAST, REFERENCE
from mini_transformer.model.kv_cache import KVCache, keep_indices
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.evaluation.streaming import stream_loss


def random_model(positional="rope", n_layers=2, max_len=32, kernels="reference"):
    model = TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=2, max_len=max_len,
                              positional=positional, kernels=kernels)).to_dtype("float64")
    draw = np.random.default_rng(1)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model.eval()


def stream(n, seed=0, rows=2):
    return np.random.default_rng(seed).integers(0, 16, (rows, n))


# ---------------------------------------------------------------------------
# The cache policy: kv_cache.keep_indices and the keep_indices= hook
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
    model = random_model()
    x = stream(40)
    for policy in (dict(window=8, n_sink=4, positions="slot"), dict(window=8), dict(window=6, n_sink=2)):
        plain = stream_loss(model, x, **policy).losses
        hooked = stream_loss(model, x, keep_indices=keep_indices, **policy).losses
        np.testing.assert_array_equal(plain, hooked)


def test_a_custom_policy_runs_inside_the_model():
    """Drop token 0 once, right after it is read: no later token ever sees it, so step t equals a full forward
    pass over tokens 1..t placed at their own text positions (offset 1), in every layer."""
    model = random_model()
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
    model = random_model()
    with pytest.raises(ValueError, match=words):
        stream_loss(model, stream(6), keep_indices=bad)


def test_recompute_with_a_policy_is_refused():
    with pytest.raises(ValueError, match="recompute=True keeps no cache"):
        stream_loss(random_model(), stream(6), window=4, recompute=True, keep_indices=keep_indices)


# ---------------------------------------------------------------------------
# Data: the repetitive corpus and passkeys in text
# ---------------------------------------------------------------------------

def test_repetitive_corpus_is_made_of_its_lines_and_reproducible():
    c = data.repetitive_corpus(5_000, seed=3)
    again = data.repetitive_corpus(5_000, seed=3)
    assert np.array_equal(c.train, again.train) and np.array_equal(c.val, again.val)
    assert len(c.train) == 4_500 and len(c.val) == 500
    text = bytes(np.concatenate([c.train, c.val])).decode()
    lines = text.split("\n")[:-1]                    # the last line may be cut at n_bytes
    assert lines and set(lines) <= set(data.REPETITIVE_LINES)
    x, y = c.get_batch("train", 4, 16, backend.rng(0))
    assert np.array_equal(backend.to_numpy(x)[:, 1:], backend.to_numpy(y)[:, :-1])


@pytest.mark.parametrize("depth", [0.0, 0.4, 1.0])
def test_text_passkey_hides_the_key_in_one_unbroken_window(depth):
    text = np.frombuffer(b"".join(f"line {i}: some text here\n".encode() for i in range(200)), dtype=np.uint8)
    n, length = 3, 40
    b = data.text_passkey_task(5, length, depth, seed=2, n_digits=n, text=text)
    x, y = backend.to_numpy(b.x), backend.to_numpy(b.y)
    H = length - n
    p = b.key_pos - 1                                # KEY_START
    assert p == int(math.floor(depth * (H - n - 2) + 0.5))
    assert (x[:, p] == data.KEY_START).all() and (x[:, p + n + 1] == data.KEY_END).all() and (x[:, H] == data.QUERY).all()
    key = x[:, p + 1:p + 1 + n]
    assert ((key >= ord("0")) & (key <= ord("9"))).all()
    assert np.array_equal(y[:, H:], key)             # the answer is the key
    assert np.array_equal(x[:, H + 1:], key[:, :n - 1])
    filler = np.concatenate([x[:, :p], x[:, p + n + 2:H]], axis=1)   # the text around the key block
    for row in filler:                               # one contiguous window of the text
        start = np.flatnonzero(np.all(np.lib.stride_tricks.sliding_window_view(text, len(row)) == row, axis=1))
        assert len(start) >= 1
    ignored = np.flatnonzero(y[0] == data.IGNORE).tolist()
    assert ignored == list(range(max(0, p - 1), p + n + 1)) + [H - 1]  # the key block's targets and QUERY


def test_text_passkey_refuses_missing_text_and_wrong_vocab():
    with pytest.raises(ValueError, match="needs text="):
        data.text_passkey_task(2, 30, 0.5)
    with pytest.raises(ValueError, match="vocab_size must be 256"):
        data.text_passkey_task(2, 30, 0.5, vocab_size=32, text=np.zeros(100, dtype=np.uint8))


class KeyReader:
    """A stand-in model that always reads the key: at the position of answer digit i it says digit i."""

    causal = True
    cfg = GPTConfig(vocab_size=256)

    def new_cache(self):
        return []

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    training = False

    def __call__(self, idx, cache=None):
        cache.append(backend.to_numpy(idx))
        seen = np.concatenate(cache, axis=1)
        logits = np.zeros((seen.shape[0], idx.shape[1], 256))
        for b, row in enumerate(seen):
            start, query = np.flatnonzero(row == data.KEY_START)[0], np.flatnonzero(row == data.QUERY)[0]
            logits[b, -1, row[start + 1 + (len(row) - 1 - query)]] = 1.0
        return Tensor(backend.asarray(logits))


def test_passkey_grid_runs_any_task_with_the_passkey_signature():
    text = data.stdlib_corpus(max_bytes=300_000).val
    task = functools.partial(data.text_passkey_task, text=text)
    grid = evaluate.passkey_grid(KeyReader(), [16, 32], depths=(0.0, 1.0), n_trials=3, n_digits=2, task=task)
    assert (grid.accuracy == 1.0).all()


# ---------------------------------------------------------------------------
# The sink experiment: sigmoid attention and the eviction policy
# ---------------------------------------------------------------------------

def test_sigmoid_attention_by_hand():
    from mini_transformer.evaluation.experiments.attention_sinks import sigmoid_attention
    g = np.random.default_rng(4)
    q, k, v = (g.standard_normal((1, 2, 5, 4)) for _ in range(3))
    mask = np.tril(np.ones((5, 5), dtype=bool))
    y, p = sigmoid_attention(Tensor(q), Tensor(k), Tensor(v), mask=backend.asarray(mask), return_weights=True)
    z = q @ np.swapaxes(k, -1, -2) / 2.0 - math.log(5)          # 1/sqrt(4) and b = -ln T_k
    expected_p = np.where(mask, 1.0 / (1.0 + np.exp(-z)), 0.0)
    np.testing.assert_allclose(backend.to_numpy(p), expected_p, atol=1e-14)
    np.testing.assert_allclose(y.numpy(), expected_p @ v, atol=1e-14)
    assert not np.allclose(expected_p.sum(-1), 1.0)             # rows are not normalised


def test_sigmoid_attention_gradients():
    from mini_transformer.evaluation.experiments.attention_sinks import sigmoid_attention
    g = np.random.default_rng(5)
    q, k, v = (Tensor(g.standard_normal((1, 2, 4, 3)), requires_grad=True) for _ in range(3))
    mask = backend.asarray(np.tril(np.ones((4, 4), dtype=bool)))
    err = gradcheck(lambda q, k, v: (sigmoid_attention(q, k, v, mask=mask) ** 2).sum(), [q, k, v])
    assert err < 1e-6


def test_sigmoid_attention_is_opt_in_and_leaves_the_default_alone():
    from mini_transformer.evaluation.experiments.attention_sinks import sigmoid_attention, use_sigmoid_attention
    x = stream(10)
    before = random_model(kernels="fast")(x).numpy()
    switched = use_sigmoid_attention(random_model(kernels="fast"))
    assert not np.allclose(switched(x).numpy(), before)
    assert switched.kernels.attention is sigmoid_attention and switched.kernels.attention is not FAST.attention
    assert all(getattr(switched.kernels, f) is getattr(FAST, f)   # the optimiser and the rest keep the fast set
               for f in FAST.__dataclass_fields__ if f not in ("name", "attention"))
    np.testing.assert_array_equal(random_model(kernels="fast")(x).numpy(), before)   # a new model: unchanged
    assert REFERENCE.attention.__module__ == "mini_transformer.engine.functional"


def test_drop_token_evicts_exactly_that_token():
    from mini_transformer.evaluation.experiments.attention_sinks import DropToken
    model = random_model()
    for index in (0, 1, 5):
        cache = KVCache(model.cfg.n_layers, keep_indices=DropToken(index))
        x = stream(9)
        for t in range(9):
            model(x[:, t:t + 1], cache=cache)
        assert backend.to_numpy(cache.pos).tolist() == [i for i in range(9) if i != index]


def test_sink_settings_run_end_to_end():
    from mini_transformer.evaluation.experiments import attention_sinks as a
    setting = next(s for s in a.SETTINGS if s["attention"] == "sigmoid")   # repetitive, 4 layers, BOS, sigmoid
    r = a.run_setting(setting, L=16, steps=3, stream_len=24, n_stream_rows=1, W=6, seed=0, progress=False)
    assert len(r["mass_on_position_0"]) == 4 and all(len(h) == 4 for h in r["mass_on_position_0"])
    assert all(0.0 <= m <= 1.0 for h in r["mass_on_position_0"] for m in h)
    assert set(r["eviction"]["late queries"]) == {"kept", "token 0 evicted", "token 1 evicted"}
    assert set(r["stream_loss"]) == set(a.POLICIES)
    assert all(math.isfinite(v) for v in r["stream_loss"].values())


def test_long_context_pieces_run_end_to_end():
    from mini_transformer.evaluation.experiments import long_context as lc
    size = dict(train_len=16, steps=3, multiples=(1, 2), n_trials=2, contexts=(1, 4, 16))
    r = lc.run_scheme("alibi", size, seed=0, progress=False)
    assert r["lengths"] == [16, 32] and len(r["loss_by_position"]) == 32
    assert np.array(r["passkey_accuracy"]).shape == (2, 5)
    assert r["effective_context_length"] in (0, 16, 32)
    assert set(r["loss_given_context"]) == {"1", "4", "16"}
