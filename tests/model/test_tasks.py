"""The position-sensitive tasks (passkeys in filler symbols and in real text among them): each target is the
copy, the reversal, the sort, the token k back, the queried value or the key, and bad arguments are sentences.

Each test checks the property that defines the task, computed here from the inputs,
never read back from the code under test.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from model_helpers import backend_name, host  # noqa: F401  (backend_name is a fixture)
from mini_transformer.model import tasks
from mini_transformer.model.tasks import IGNORE


TASK_CALLS = {  # small instances of every task, called by name
    "copy": lambda seed: tasks.copy_task(8, 6, seed=seed),
    "reverse": lambda seed: tasks.reverse_task(8, 6, seed=seed),
    "sort": lambda seed: tasks.sort_task(8, 6, seed=seed),
    "lookback": lambda seed: tasks.lookback_task(8, 20, 3, seed=seed),
    "associative_recall": lambda seed: tasks.associative_recall_task(8, 5, seed=seed),
    "passkey": lambda seed: tasks.passkey_task(8, 30, 0.4, seed=seed),
}


def task_batch(name, seed=0):
    batch = TASK_CALLS[name](seed)
    return host(batch.x), host(batch.y), batch


def test_every_task_is_listed():
    assert set(tasks.TASKS) == set(TASK_CALLS)


@pytest.mark.parametrize("name", sorted(TASK_CALLS))
def test_task_contract(name, backend_name):
    x, y, batch = task_batch(name)
    assert x.shape == y.shape and x.ndim == 2 and x.dtype == y.dtype == np.int64
    assert x.min() >= 0 and x.max() < batch.vocab_size <= 64
    scored = y != IGNORE
    assert scored.any() and y[scored].min() >= tasks.FIRST_SYMBOL and y[scored].max() < batch.vocab_size
    # next-token alignment: where the next input is visible, the target is that input
    inside = scored[:, :-1]
    assert np.array_equal(y[:, :-1][inside], x[:, 1:][inside])


@pytest.mark.parametrize("name", sorted(TASK_CALLS))
def test_task_is_deterministic_by_seed(name, backend_name):
    x0, y0, _ = task_batch(name, seed=3)
    x1, y1, _ = task_batch(name, seed=3)
    x2, _, _ = task_batch(name, seed=4)
    assert np.array_equal(x0, x1) and np.array_equal(y0, y1)
    assert not np.array_equal(x0, x2)


@pytest.mark.parametrize("name, answer", [
    ("copy", lambda a: a),
    ("reverse", lambda a: a[:, ::-1]),
    ("sort", lambda a: np.sort(a, axis=1)),
])
def test_input_then_answer_tasks(name, answer, backend_name):
    x, y, _ = task_batch(name)
    n = x.shape[1] // 2
    assert np.all(x[:, n] == tasks.SEP)
    assert np.array_equal(y[:, n:], answer(x[:, :n]))
    assert np.all(y[:, :n] == IGNORE)


@pytest.mark.parametrize("k", [1, 3, 7, 20])
def test_lookback_target_is_k_back(k, backend_name):
    T = 20
    batch = tasks.lookback_task(4, T, k, seed=1)
    x, y = host(batch.x), host(batch.y)
    for t in range(T):
        if t >= k - 1:  # y[t] stands for position t + 1, whose token is k back: x[t + 1 - k]
            assert np.array_equal(y[:, t], x[:, t + 1 - k])
        else:
            assert np.all(y[:, t] == IGNORE)


def test_associative_recall_target_is_the_queried_value(backend_name):
    x, y, _ = task_batch("associative_recall")
    n = (x.shape[1] - 2) // 2
    keys, values = x[:, 0:2 * n:2], x[:, 1:2 * n:2]
    assert np.all(x[:, -2] == tasks.QUERY)
    for b in range(x.shape[0]):
        assert len(set(keys[b])) == n  # distinct keys, so the answer is unique
        (i,) = np.flatnonzero(keys[b] == x[b, -1])
        assert y[b, -1] == values[b, i]
    assert np.all(y[:, :-1] == IGNORE)


@pytest.mark.parametrize("length, depth, n_digits", [
    (30, 0.0, 5), (30, 1.0, 5), (30, 0.5, 5), (12, 0.3, 5), (64, 0.75, 3),
])
def test_passkey_key_sits_at_key_pos_and_is_the_answer(length, depth, n_digits, backend_name):
    batch = tasks.passkey_task(6, length, depth, seed=2, n_digits=n_digits)
    x, y, p = host(batch.x), host(batch.y), batch.key_pos
    H = length - n_digits
    key = x[:, p:p + n_digits]
    digit = (x >= tasks.DIGIT_0) & (x < tasks.DIGIT_0 + 10)
    assert np.all(digit[:, p:p + n_digits])
    assert np.all(digit[:, :H].sum(axis=1) == n_digits)  # only the key holds digits
    assert np.all(x[:, p - 1] == tasks.KEY_START) and np.all(x[:, p + n_digits] == tasks.KEY_END)
    assert np.all((x == tasks.KEY_START).sum(axis=1) == 1)
    assert np.all(x[:, H] == tasks.QUERY)
    assert np.array_equal(y[:, H:], key)
    assert np.all(y[:, :H] == IGNORE)
    # depth is relative to the room the key block has before the query
    assert p - 1 == round(depth * (H - n_digits - 2))


def test_passkey_depth_edges():
    n, length = 4, 40
    start = tasks.passkey_task(1, length, 0.0, n_digits=n)
    end = tasks.passkey_task(1, length, 1.0, n_digits=n)
    assert start.key_pos == 1  # KEY_START is the very first token
    assert end.key_pos + n == length - n - 1  # KEY_END sits right before QUERY
    x = host(end.x)
    assert x[0, length - n - 1] == tasks.KEY_END and x[0, length - n] == tasks.QUERY


@pytest.mark.parametrize("task, zero", [
    (tasks.passkey_task, tasks.DIGIT_0),
    (lambda *args, **kw: tasks.text_passkey_task(*args, **kw, text=np.frombuffer(b"filler text. " * 40, np.uint8)),
     tasks.DIGIT_BYTE_0),
], ids=["passkey_task", "text_passkey_task"])
def test_a_passkey_digit_is_any_of_0_to_9_and_nothing_else(task, zero):
    # 64 keys of 5 digits: that one of the ten digits is missing from 320 uniform draws has chance 10 * 0.9^320,
    # below 1e-13, so with every digit drawn each one shows, and a draw from 0..8 leaves out the 9
    n = 5
    batch = task(64, 30, 0.5, seed=0, n_digits=n)
    x, y = backend.to_numpy(batch.x), backend.to_numpy(batch.y)
    key = x[:, batch.key_pos:batch.key_pos + n] - zero
    assert sorted(set(key.ravel().tolist())) == list(range(10))
    assert np.array_equal(y[:, -n:] - zero, key)                   # the answer spells the same digits


@pytest.mark.parametrize("kwargs, words", [
    (dict(length=30, depth=-0.1), ["depth", "-0.1", "[0, 1]"]),
    (dict(length=30, depth=1.5), ["depth", "1.5"]),
    (dict(length=30, depth=float("nan")), ["depth", "nan"]),
    (dict(length=11, depth=0.5), ["length=11", "at least 12"]),
    (dict(length=30, depth=0.5, vocab_size=15), ["vocab_size", "16", "15"]),
])
def test_passkey_bad_arguments(kwargs, words):
    with pytest.raises(ValueError) as err:
        tasks.passkey_task(2, **kwargs)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("depth", [0.0, 0.4, 1.0])
def test_text_passkey_hides_the_key_in_one_unbroken_window(depth):
    text = np.frombuffer(b"".join(f"line {i}: some text here\n".encode() for i in range(200)), dtype=np.uint8)
    n, length = 3, 40
    b = tasks.text_passkey_task(5, length, depth, seed=2, n_digits=n, text=text)
    x, y = backend.to_numpy(b.x), backend.to_numpy(b.y)
    H = length - n
    p = b.key_pos - 1                                # KEY_START
    assert p == int(math.floor(depth * (H - n - 2) + 0.5))
    assert (x[:, p] == tasks.KEY_START).all() and (x[:, p + n + 1] == tasks.KEY_END).all() and (x[:, H] == tasks.QUERY).all()
    key = x[:, p + 1:p + 1 + n]
    assert ((key >= ord("0")) & (key <= ord("9"))).all()
    assert np.array_equal(y[:, H:], key)             # the answer is the key
    assert np.array_equal(x[:, H + 1:], key[:, :n - 1])
    filler = np.concatenate([x[:, :p], x[:, p + n + 2:H]], axis=1)   # the text around the key block
    for row in filler:                               # one contiguous window of the text
        start = np.flatnonzero(np.all(np.lib.stride_tricks.sliding_window_view(text, len(row)) == row, axis=1))
        assert len(start) >= 1
    ignored = np.flatnonzero(y[0] == tasks.IGNORE).tolist()
    assert ignored == list(range(max(0, p - 1), p + n + 1)) + [H - 1]  # the key block's targets and QUERY


def test_text_passkey_refuses_missing_text_and_wrong_vocab():
    with pytest.raises(ValueError, match="needs text="):
        tasks.text_passkey_task(2, 30, 0.5)
    with pytest.raises(ValueError, match="vocab_size must be 256"):
        tasks.text_passkey_task(2, 30, 0.5, vocab_size=32, text=np.zeros(100, dtype=np.uint8))


@pytest.mark.parametrize("call, words", [
    (lambda: tasks.copy_task(2, 4, vocab_size=6), ["copy_task", "vocab_size", "7", "6"]),
    (lambda: tasks.reverse_task(0, 4), ["batch_size", "0"]),
    (lambda: tasks.sort_task(2, 0), ["n", "0"]),
    (lambda: tasks.lookback_task(2, 8, 9), ["k=9", "T=8"]),
    (lambda: tasks.associative_recall_task(2, 12, vocab_size=16), ["vocab_size", "17", "16"]),
])
def test_task_bad_arguments(call, words):
    with pytest.raises(ValueError) as err:
        call()
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("name, call", [
    ("copy", lambda v: tasks.copy_task(2, 8, vocab_size=v)),
    ("reverse", lambda v: tasks.reverse_task(2, 8, vocab_size=v)),
    ("sort", lambda v: tasks.sort_task(2, 8, vocab_size=v)),
    ("lookback", lambda v: tasks.lookback_task(2, 16, 4, vocab_size=v)),
    ("associative_recall", lambda v: tasks.associative_recall_task(2, 8, vocab_size=v)),
    ("passkey", lambda v: tasks.passkey_task(2, 64, 0.5, vocab_size=v)),
])
def test_every_task_runs_in_the_bench_vocab_of_64(name, call):
    batch = call(64)
    assert batch.vocab_size == 64 and host(batch.x).max() < 64
