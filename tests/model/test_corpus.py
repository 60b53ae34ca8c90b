"""The standard-library and repetitive corpora: sorted plain files split by file, windows shifted by one,
refusals as sentences.

Each test checks the property that defines the thing (a shift by one, a split by
file), computed here from the inputs, never read back from the code under test.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from model_helpers import backend_name, host  # noqa: F401  (backend_name is a fixture)
from mini_transformer.model.corpus import (REPETITIVE_LINES, TextCorpus, list_source_files, repetitive_corpus,
                                           stdlib_corpus)
from mini_transformer.model.tokenizer import decode


@pytest.fixture(scope="module")
def stdlib():
    return stdlib_corpus(max_bytes=400_000)


def make_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_stdlib_file_list_is_deterministic_sorted_and_plain(stdlib):
    again = stdlib_corpus(max_bytes=400_000)
    assert again.train_files == stdlib.train_files and again.val_files == stdlib.val_files
    chosen = sorted(stdlib.train_files + stdlib.val_files)
    assert chosen == list_source_files(stdlib.root)[:len(chosen)]  # a sorted prefix
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
    make_tree(tmp_path, {"test/t.py": "skip\n", "site-packages/p.py": "skip\n", "notes.txt": "skip\n",
                         # the build's generated tables, as a POSIX standard library ships them
                         "config-3.11-x86_64-linux-gnu/makesetup.py": "skip\n",
                         "_sysconfigdata__linux_x86_64-linux-gnu.py": "skip\n"})
    assert list_source_files(tmp_path) == [f"m{i}.py" for i in range(10)]
    corpus = stdlib_corpus(root=tmp_path, val_fraction=0.2)  # every 5th file
    assert corpus.val_files == ["m4.py", "m9.py"]
    assert corpus.train_files == [f"m{i}.py" for i in (0, 1, 2, 3, 5, 6, 7, 8)]
    assert decode(corpus.val) == "x = 4\nx = 9\n"
    # 8 train files and 2 val files of 6 bytes each ("x = 4\n")
    assert repr(corpus) == f"TextCorpus({str(tmp_path)!r}: 8 train files, 48 bytes; 2 val files, 12 bytes)"


@pytest.mark.parametrize("max_bytes, chosen", [
    (29, "ab"), (30, "abc"), (39, "abc"), (40, "abcd"), (50, "abcde"),
])
def test_files_are_taken_while_they_fit_in_max_bytes(tmp_path, max_bytes, chosen):
    # five files of 10 bytes: a file joins while the running total stays <= max_bytes
    make_tree(tmp_path, {f"{name}.py": "x = 12345\n" for name in "abcde"})
    corpus = TextCorpus(tmp_path, max_bytes=max_bytes, val_fraction=0.5)  # every 2nd file to val
    assert corpus.val_files == [f"{name}.py" for name in chosen[1::2]]
    assert corpus.train_files == [f"{name}.py" for name in chosen[0::2]]
    assert len(corpus.train) + len(corpus.val) == 10 * len(chosen)


def test_defaults_are_four_million_bytes_and_a_tenth_to_val(tmp_path):
    # ten files of 400_000 bytes fill 4_000_000 exactly; the eleventh, one byte, no longer fits
    make_tree(tmp_path, {f"f{i:02d}.py": "#" * 399_999 + "\n" for i in range(10)})
    make_tree(tmp_path, {"f10.py": "\n"})
    for corpus in (TextCorpus(tmp_path), stdlib_corpus(root=tmp_path)):
        assert corpus.val_files == ["f09.py"]
        assert corpus.train_files == [f"f{i:02d}.py" for i in range(9)]
        assert (len(corpus.train), len(corpus.val)) == (3_600_000, 400_000)


def test_the_smallest_corpus_two_empty_files(tmp_path):
    # max_bytes=1 is allowed, and two files are enough for a half split; empty files fit in any budget
    make_tree(tmp_path, {"a.py": "", "b.py": ""})
    corpus = TextCorpus(tmp_path, max_bytes=1, val_fraction=0.5)
    assert (corpus.train_files, corpus.val_files) == (["a.py"], ["b.py"])
    assert corpus.train.dtype == corpus.val.dtype == np.uint8 and len(corpus.train) == len(corpus.val) == 0


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
    nowhere = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError) as err:
        stdlib_corpus(root=nowhere)
    assert str(err.value) == (f"The corpus folder {str(nowhere)!r} does not exist. Pass root= a folder of .py "
                              "files, or run a Python whose standard library source is installed.")
    make_tree(tmp_path, {"readme.txt": "no python here\n", "one.py": "x = 1\n"})
    with pytest.raises(FileNotFoundError) as err:
        stdlib_corpus(root=tmp_path)  # the defaults: max_bytes=4_000_000, val_fraction=0.1, so every 10th file
    assert str(err.value) == (f"Found 1 usable .py files in {str(tmp_path)!r}, and 1 fit in max_bytes=4000000, "
                              "but a 0.1 validation split needs at least 10. Point root= at a folder with more "
                              "Python source, or raise max_bytes.")


@pytest.mark.parametrize("kwargs, message", [
    ({"max_bytes": 0}, "max_bytes must be an integer >= 1, got 0."),
    ({"val_fraction": 0}, "val_fraction must lie in (0, 0.5], got 0."),
    ({"val_fraction": 0.6}, "val_fraction must lie in (0, 0.5], got 0.6."),
    ({"val_fraction": -0.1}, "val_fraction must lie in (0, 0.5], got -0.1."),
])
def test_corpus_bad_arguments(tmp_path, kwargs, message):
    make_tree(tmp_path, {f"m{i}.py": "x = 1\n" for i in range(4)})
    with pytest.raises(ValueError) as err:
        TextCorpus(tmp_path, **kwargs)
    assert str(err.value) == message


def tiny():
    """A corpus of 6 train bytes and 3 val bytes, small enough to list every window by hand."""
    return TextCorpus.from_arrays(list(b"hello!"), list(b"abc"))


@pytest.mark.parametrize("split, batch_size, T, error, message", [
    ("test", 2, 3, ValueError, "split must be one of ('train', 'val'), got 'test'."),
    ("train", 0, 3, ValueError, "batch_size must be an integer >= 1, got 0."),
    ("train", 2, 0, ValueError, "T must be an integer >= 1, got 0."),
    ("train", 2, 6, ValueError, "T=6 is too long for the 'train' split, which holds 6 tokens, so T can be at "
                                "most 5; use a shorter T or a larger max_bytes."),
    ("val", 2, 3, ValueError, "T=3 is too long for the 'val' split, which holds 3 tokens, so T can be at "
                              "most 2; use a shorter T or a larger max_bytes."),
])
def test_get_batch_bad_arguments(split, batch_size, T, error, message):
    with pytest.raises(error) as err:
        tiny().get_batch(split, batch_size, T, backend.rng(0))
    assert str(err.value) == message


def test_get_batch_refuses_a_seed_for_a_generator():
    with pytest.raises(TypeError) as err:
        tiny().get_batch("train", 2, 3, 42)
    assert str(err.value) == "rng must be a generator from backend.rng(seed), got int."


@pytest.mark.parametrize("split, batch_size, T, windows", [
    # "hello!" with T=4: a window x and the byte after it need 5 bytes, so x starts at 0 or 1, never 2
    ("train", 64, 4, {("hell", "ello"), ("ello", "llo!")}),
    ("train", 1, 5, {("hello", "ello!")}),                      # T = 6 - 1, the longest: one window
    ("train", 64, 1, {("h", "e"), ("e", "l"), ("l", "l"), ("l", "o"), ("o", "!")}),
    ("val", 3, 2, {("ab", "bc")}),                              # the val split, not the train one
])
def test_get_batch_draws_every_window_and_only_those(backend_name, split, batch_size, T, windows):
    x, y = tiny().get_batch(split, batch_size, T, backend.rng(0))
    x, y = host(x), host(y)
    assert x.shape == y.shape == (batch_size, T)
    seen = {(bytes(row_x.astype(np.uint8)).decode(), bytes(row_y.astype(np.uint8)).decode())
            for row_x, row_y in zip(x, y)}
    assert seen == windows  # with 64 draws of 2 or 5 starts, each start comes up (seed 0)


def test_get_batch_takes_a_host_generator_too():
    x, _ = tiny().get_batch("train", 1, 5, np.random.default_rng(0))
    assert bytes(host(x)[0].astype(np.uint8)) == b"hello"


def test_from_arrays_keeps_bytes_and_names_the_text():
    corpus = tiny()
    assert corpus.root == "text" and corpus.train_files == corpus.val_files == []
    assert corpus.train.dtype == corpus.val.dtype == np.uint8  # a list of ints would otherwise be int64
    assert bytes(corpus.split("train")) == b"hello!" and bytes(corpus.split("val")) == b"abc"
    assert repr(corpus) == "TextCorpus('text': 6 train bytes, 3 val bytes)"


def test_repetitive_corpus_is_made_of_its_lines_and_reproducible():
    c = repetitive_corpus(5_000, seed=3)
    again = repetitive_corpus(5_000, seed=3)
    assert np.array_equal(c.train, again.train) and np.array_equal(c.val, again.val)
    assert len(c.train) == 4_500 and len(c.val) == 500
    text = bytes(np.concatenate([c.train, c.val])).decode()
    lines = text.split("\n")[:-1]                    # the last line may be cut at n_bytes
    assert set(lines) == set(REPETITIVE_LINES)        # about 230 lines drawn from 8: each comes up (seed 3)
    assert c.root == "repetitive, 8 lines, seed 3"
    x, y = c.get_batch("train", 4, 16, backend.rng(0))
    assert np.array_equal(backend.to_numpy(x)[:, 1:], backend.to_numpy(y)[:, :-1])


def test_repetitive_corpus_defaults():
    c = repetitive_corpus()  # 400_000 bytes, seed 0, a tenth to val
    assert (len(c.train), len(c.val)) == (360_000, 40_000)
    assert c.root == "repetitive, 8 lines, seed 0"
    same = repetitive_corpus(400_000, seed=0, val_fraction=0.1)
    assert np.array_equal(c.train, same.train) and np.array_equal(c.val, same.val)


@pytest.mark.parametrize("val_fraction, train, val", [
    (0.25, b"ab\n" * 16, b"ab\n" * 5 + b"a"),                  # 64 * 0.75 = 48 bytes to train
    (0.5, b"ab\n" * 10 + b"ab", b"\n" + b"ab\n" * 10 + b"a"),   # the largest val_fraction: 32 and 32
])
def test_repetitive_corpus_of_one_line_by_hand(val_fraction, train, val):
    # "ab\n" over and over, cut at 64 bytes: 21 whole lines and an "a"
    c = repetitive_corpus(64, val_fraction=val_fraction, lines=("ab",))
    assert bytes(c.train) == train and bytes(c.val) == val
    assert c.train.dtype == c.val.dtype == np.uint8
    assert c.root == "repetitive, 1 lines, seed 0"


@pytest.mark.parametrize("kwargs, message", [
    ({"n_bytes": 63}, "n_bytes must be an integer >= 64, got 63."),
    ({"val_fraction": 0}, "val_fraction must lie in (0, 0.5], got 0."),
    ({"val_fraction": 0.6}, "val_fraction must lie in (0, 0.5], got 0.6."),
])
def test_repetitive_corpus_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as err:
        repetitive_corpus(**kwargs)
    assert str(err.value) == message
