"""Data: byte tokenizer, the standard-library and repetitive corpora, and the position-sensitive tasks (passkeys
in filler symbols and in real text among them).

Each test checks the property that defines the thing (a round trip, a shift by
one, a copy, a reversal), computed here from the inputs, never read back from
the code under test.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import data
from mini_transformer.model.data import IGNORE


@pytest.fixture(params=["numpy", "strict"])
def backend_name(request):
    backend.set_backend(request.param)
    yield request.param
    backend.set_backend("numpy")


def host(a):
    """A backend array as host NumPy, after checking it really lives on the active backend."""
    assert backend.is_array(a), f"expected a {backend.get_backend()} array, got {type(a).__name__}"
    return backend.to_numpy(a)


# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "hello", "déjà vu — ∑ θ_i 🙂", "tab\tnew\nline"])
def test_encode_decode_round_trip(text):
    ids = data.encode(text)
    assert list(ids) == list(text.encode("utf-8"))
    assert data.decode(ids) == text


def test_tokens_are_bytes():
    ids = data.encode("ÿ€🙂" * 3)
    assert ids.min() >= 0 and ids.max() < data.BYTE_VOCAB_SIZE == 256
    with pytest.raises(ValueError, match="256"):
        data.decode([104, 256])


def test_decode_replaces_a_cut_character():
    assert data.decode(data.encode("é")[:1]) == "\ufffd"


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stdlib():
    return data.stdlib_corpus(max_bytes=400_000)


def make_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_stdlib_file_list_is_deterministic_sorted_and_plain(stdlib):
    again = data.stdlib_corpus(max_bytes=400_000)
    assert again.train_files == stdlib.train_files and again.val_files == stdlib.val_files
    chosen = sorted(stdlib.train_files + stdlib.val_files)
    assert chosen == data.list_source_files(stdlib.root)[:len(chosen)]  # a sorted prefix
    for rel in chosen:
        assert rel.endswith(".py")
        assert not set(rel.split("/")[:-1]) & {"site-packages", "test", "tests", "idlelib"}
    assert len(stdlib.train) + len(stdlib.val) <= 400_000


def test_stdlib_splits_are_disjoint_non_empty_files(stdlib):
    assert stdlib.train_files and stdlib.val_files
    assert not set(stdlib.train_files) & set(stdlib.val_files)
    for split, files in [(stdlib.train, stdlib.train_files), (stdlib.val, stdlib.val_files)]:
        assert split.dtype == np.uint8
        assert split.tobytes() == b"".join((stdlib.root / f).read_bytes() for f in files)


def test_tmp_tree_split_every_kth_file_and_exclusions(tmp_path):
    make_tree(tmp_path, {f"m{i}.py": f"x = {i}\n" for i in range(10)})
    make_tree(tmp_path, {"test/t.py": "skip\n", "site-packages/p.py": "skip\n", "notes.txt": "skip\n"})
    corpus = data.stdlib_corpus(root=tmp_path, val_fraction=0.2)  # every 5th file
    assert corpus.val_files == ["m4.py", "m9.py"]
    assert corpus.train_files == [f"m{i}.py" for i in (0, 1, 2, 3, 5, 6, 7, 8)]
    assert data.decode(corpus.val) == "x = 4\nx = 9\n"


def test_get_batch_y_is_x_shifted_by_one(stdlib, backend_name):
    x, y = stdlib.get_batch("train", 4, 32, backend.rng(0))
    x, y = host(x), host(y)
    assert x.shape == y.shape == (4, 32) and x.dtype == y.dtype == np.int64
    assert np.array_equal(x[:, 1:], y[:, :-1])
    text = stdlib.train.tobytes()
    for row_x, row_y in zip(x, y):  # each window is a real stretch of the split
        assert bytes(np.append(row_x, row_y[-1]).astype(np.uint8)) in text


def test_get_batch_is_deterministic_by_seed(stdlib, backend_name):
    a = [host(v) for v in stdlib.get_batch("val", 3, 16, backend.rng(7))]
    b = [host(v) for v in stdlib.get_batch("val", 3, 16, backend.rng(7))]
    c = [host(v) for v in stdlib.get_batch("val", 3, 16, backend.rng(8))]
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_missing_or_empty_folder_is_a_sentence(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        data.stdlib_corpus(root=tmp_path / "nowhere")
    make_tree(tmp_path, {"readme.txt": "no python here\n"})
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        data.stdlib_corpus(root=tmp_path)


@pytest.mark.parametrize("split, batch_size, T, words", [
    ("test", 2, 8, ["split", "'test'"]),
    ("train", 0, 8, ["batch_size", "0"]),
    ("val", 2, 10**9, ["T=1000000000", "at most"]),
])
def test_get_batch_bad_arguments(stdlib, split, batch_size, T, words):
    with pytest.raises(ValueError) as err:
        stdlib.get_batch(split, batch_size, T, backend.rng(0))
    for word in words:
        assert word in str(err.value)


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


# ---------------------------------------------------------------------------
# Synthetic tasks
# ---------------------------------------------------------------------------

TASK_CALLS = {  # small instances of every task, called by name
    "copy": lambda seed: data.copy_task(8, 6, seed=seed),
    "reverse": lambda seed: data.reverse_task(8, 6, seed=seed),
    "sort": lambda seed: data.sort_task(8, 6, seed=seed),
    "lookback": lambda seed: data.lookback_task(8, 20, 3, seed=seed),
    "associative_recall": lambda seed: data.associative_recall_task(8, 5, seed=seed),
    "passkey": lambda seed: data.passkey_task(8, 30, 0.4, seed=seed),
}


def task_batch(name, seed=0):
    batch = TASK_CALLS[name](seed)
    return host(batch.x), host(batch.y), batch


def test_every_task_is_listed():
    assert set(data.TASKS) == set(TASK_CALLS)


@pytest.mark.parametrize("name", sorted(TASK_CALLS))
def test_task_contract(name, backend_name):
    x, y, batch = task_batch(name)
    assert x.shape == y.shape and x.ndim == 2 and x.dtype == y.dtype == np.int64
    assert x.min() >= 0 and x.max() < batch.vocab_size <= 64
    scored = y != IGNORE
    assert scored.any() and y[scored].min() >= data.FIRST_SYMBOL and y[scored].max() < batch.vocab_size
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
    assert np.all(x[:, n] == data.SEP)
    assert np.array_equal(y[:, n:], answer(x[:, :n]))
    assert np.all(y[:, :n] == IGNORE)


@pytest.mark.parametrize("k", [1, 3, 7, 20])
def test_lookback_target_is_k_back(k, backend_name):
    T = 20
    batch = data.lookback_task(4, T, k, seed=1)
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
    assert np.all(x[:, -2] == data.QUERY)
    for b in range(x.shape[0]):
        assert len(set(keys[b])) == n  # distinct keys, so the answer is unique
        (i,) = np.flatnonzero(keys[b] == x[b, -1])
        assert y[b, -1] == values[b, i]
    assert np.all(y[:, :-1] == IGNORE)


@pytest.mark.parametrize("length, depth, n_digits", [
    (30, 0.0, 5), (30, 1.0, 5), (30, 0.5, 5), (12, 0.3, 5), (64, 0.75, 3),
])
def test_passkey_key_sits_at_key_pos_and_is_the_answer(length, depth, n_digits, backend_name):
    batch = data.passkey_task(6, length, depth, seed=2, n_digits=n_digits)
    x, y, p = host(batch.x), host(batch.y), batch.key_pos
    H = length - n_digits
    key = x[:, p:p + n_digits]
    digit = (x >= data.DIGIT_0) & (x < data.DIGIT_0 + 10)
    assert np.all(digit[:, p:p + n_digits])
    assert np.all(digit[:, :H].sum(axis=1) == n_digits)  # only the key holds digits
    assert np.all(x[:, p - 1] == data.KEY_START) and np.all(x[:, p + n_digits] == data.KEY_END)
    assert np.all((x == data.KEY_START).sum(axis=1) == 1)
    assert np.all(x[:, H] == data.QUERY)
    assert np.array_equal(y[:, H:], key)
    assert np.all(y[:, :H] == IGNORE)
    # depth is relative to the room the key block has before the query
    assert p - 1 == round(depth * (H - n_digits - 2))


def test_passkey_depth_edges():
    n, length = 4, 40
    start = data.passkey_task(1, length, 0.0, n_digits=n)
    end = data.passkey_task(1, length, 1.0, n_digits=n)
    assert start.key_pos == 1  # KEY_START is the very first token
    assert end.key_pos + n == length - n - 1  # KEY_END sits right before QUERY
    x = host(end.x)
    assert x[0, length - n - 1] == data.KEY_END and x[0, length - n] == data.QUERY


@pytest.mark.parametrize("task, zero", [
    (data.passkey_task, data.DIGIT_0),
    (lambda *args, **kw: data.text_passkey_task(*args, **kw, text=np.frombuffer(b"filler text. " * 40, np.uint8)),
     data.DIGIT_BYTE_0),
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
        data.passkey_task(2, **kwargs)
    for word in words:
        assert word in str(err.value)


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


@pytest.mark.parametrize("call, words", [
    (lambda: data.copy_task(2, 4, vocab_size=6), ["copy_task", "vocab_size", "7", "6"]),
    (lambda: data.reverse_task(0, 4), ["batch_size", "0"]),
    (lambda: data.sort_task(2, 0), ["n", "0"]),
    (lambda: data.lookback_task(2, 8, 9), ["k=9", "T=8"]),
    (lambda: data.associative_recall_task(2, 12, vocab_size=16), ["vocab_size", "17", "16"]),
])
def test_task_bad_arguments(call, words):
    with pytest.raises(ValueError) as err:
        call()
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("name, call", [
    ("copy", lambda v: data.copy_task(2, 8, vocab_size=v)),
    ("reverse", lambda v: data.reverse_task(2, 8, vocab_size=v)),
    ("sort", lambda v: data.sort_task(2, 8, vocab_size=v)),
    ("lookback", lambda v: data.lookback_task(2, 16, 4, vocab_size=v)),
    ("associative_recall", lambda v: data.associative_recall_task(2, 8, vocab_size=v)),
    ("passkey", lambda v: data.passkey_task(2, 64, 0.5, vocab_size=v)),
])
def test_every_task_runs_in_the_bench_vocab_of_64(name, call):
    batch = call(64)
    assert batch.vocab_size == 64 and host(batch.x).max() < 64
