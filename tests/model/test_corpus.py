"""The standard-library and repetitive corpora: sorted plain files split by file, windows shifted by one,
refusals as sentences.

Each test checks the property that defines the thing (a shift by one, a split by
file), computed here from the inputs, never read back from the code under test.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from model_helpers import backend_name, host  # noqa: F401  (backend_name is a fixture)
from mini_transformer.model.corpus import REPETITIVE_LINES, list_source_files, repetitive_corpus, stdlib_corpus
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
    make_tree(tmp_path, {"test/t.py": "skip\n", "site-packages/p.py": "skip\n", "notes.txt": "skip\n"})
    corpus = stdlib_corpus(root=tmp_path, val_fraction=0.2)  # every 5th file
    assert corpus.val_files == ["m4.py", "m9.py"]
    assert corpus.train_files == [f"m{i}.py" for i in (0, 1, 2, 3, 5, 6, 7, 8)]
    assert decode(corpus.val) == "x = 4\nx = 9\n"


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
        stdlib_corpus(root=tmp_path / "nowhere")
    make_tree(tmp_path, {"readme.txt": "no python here\n"})
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        stdlib_corpus(root=tmp_path)


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
    c = repetitive_corpus(5_000, seed=3)
    again = repetitive_corpus(5_000, seed=3)
    assert np.array_equal(c.train, again.train) and np.array_equal(c.val, again.val)
    assert len(c.train) == 4_500 and len(c.val) == 500
    text = bytes(np.concatenate([c.train, c.val])).decode()
    lines = text.split("\n")[:-1]                    # the last line may be cut at n_bytes
    assert lines and set(lines) <= set(REPETITIVE_LINES)
    x, y = c.get_batch("train", 4, 16, backend.rng(0))
    assert np.array_equal(backend.to_numpy(x)[:, 1:], backend.to_numpy(y)[:, :-1])


