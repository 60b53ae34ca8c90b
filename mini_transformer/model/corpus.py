r"""Real text for next-token prediction: the Python standard library's own source, or a repetitive text.

``TextCorpus`` splits source files into train and validation *by file* and serves
random windows ``x, y`` of shape ``(B, T)``, ``y[b, t] = x[b, t + 1]``, every
position scored. ``repetitive_corpus`` builds one from a few sentences repeated
at random, the text the sources train on to show attention sinks.

Data is built on the host with NumPy and moved once onto the active backend
with ``asarray``, so the same seed gives the same batch on NumPy, CuPy and the
strict stand-in.
"""
import os
import sysconfig
from pathlib import Path

from ..engine.backend import asarray, hostnp as np
from ..engine.validate import check_int
from .tokenizer import encode

# Folders left out so the corpus is plain, hand-written library code: third-party
# packages, test suites, bundled apps, and generated tables (encodings, pydoc_data).
EXCLUDED_DIRS = frozenset({
    "site-packages", "dist-packages", "__pycache__", "test", "tests", "idlelib", "lib2to3",
    "turtledemo", "ensurepip", "encodings", "pydoc_data", "lib-dynload",
})
SPLITS = ("train", "val")


def _excluded(dirname):
    return dirname in EXCLUDED_DIRS or dirname.startswith("config-")


def list_source_files(root):
    """Relative paths (POSIX form, sorted) of the ``.py`` files under ``root``, minus excluded folders."""
    root = Path(root)
    found = []
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not _excluded(d)]  # prune: never walk site-packages
        for name in filenames:
            if name.endswith(".py") and not name.startswith("_sysconfigdata"):
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(found)


def _host_generator(rng):
    """The host NumPy generator behind ``rng`` (a ``backend.Generator``)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if hasattr(rng, "host"):
        return rng.host
    raise TypeError(f"rng must be a generator from backend.rng(seed), got {type(rng).__name__}.")


class TextCorpus:
    r"""Source files cut into a train and a validation split, each one host uint8 array.

    Files are taken in sorted order until the next one would pass ``max_bytes``.
    Of those, every ``k``-th file (``k = round(1 / val_fraction)``; indices
    ``k-1, 2k-1, ...``) goes to validation, the rest to training. Splitting by
    file, not by byte offset, keeps one module from sitting on both sides.
    """

    def __init__(self, root, max_bytes=4_000_000, val_fraction=0.1):
        root = Path(root)
        max_bytes = check_int("max_bytes", max_bytes, minimum=1)
        if not 0 < val_fraction <= 0.5:
            raise ValueError(f"val_fraction must lie in (0, 0.5], got {val_fraction!r}.")
        if not root.is_dir():
            raise FileNotFoundError(
                f"The corpus folder {str(root)!r} does not exist. Pass root= a folder of .py files, "
                "or run a Python whose standard library source is installed.")
        files = list_source_files(root)
        chosen, total = [], 0
        for rel in files:
            size = (root / rel).stat().st_size
            if total + size > max_bytes:
                break
            chosen.append(rel)
            total += size
        every = max(2, round(1 / val_fraction))
        if len(chosen) < every:
            raise FileNotFoundError(
                f"Found {len(files)} usable .py files in {str(root)!r}, and {len(chosen)} fit in "
                f"max_bytes={max_bytes}, but a {val_fraction} validation split needs at least {every}. "
                "Point root= at a folder with more Python source, or raise max_bytes.")
        self.root = root
        self.val_files = chosen[every - 1::every]
        self.train_files = [f for i, f in enumerate(chosen) if i % every != every - 1]
        self.train = self._read(self.train_files)  # (N_train,) uint8
        self.val = self._read(self.val_files)  # (N_val,) uint8

    @classmethod
    def from_arrays(cls, train, val, name="text"):
        """A corpus whose splits are the given byte arrays (``repetitive_corpus`` builds one this way)."""
        corpus = cls.__new__(cls)
        corpus.root, corpus.train_files, corpus.val_files = name, [], []
        corpus.train = np.asarray(train, dtype=np.uint8)
        corpus.val = np.asarray(val, dtype=np.uint8)
        return corpus

    def _read(self, rel_paths):
        blob = b"".join((self.root / rel).read_bytes() for rel in rel_paths)
        return np.frombuffer(blob, dtype=np.uint8)

    def split(self, name):
        """The host uint8 array of split ``name`` ('train' or 'val')."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}.")
        return self.train if name == "train" else self.val

    def get_batch(self, split, batch_size, T, rng):
        r"""``batch_size`` random windows of ``split``: ``x, y`` of shape ``(B, T)``, int64, on the backend.

        ``y[b, t] = x[b, t + 1]`` and ``y[b, T - 1]`` is the byte after the window:
        every position is scored. ``rng`` is a ``backend.rng(seed)``.
        """
        data = self.split(split)
        batch_size = check_int("batch_size", batch_size, minimum=1)
        T = check_int("T", T, minimum=1)
        if T > len(data) - 1:
            raise ValueError(f"T={T} is too long for the {split!r} split, which holds {len(data)} "
                             f"tokens, so T can be at most {len(data) - 1}; use a shorter T or a "
                             "larger max_bytes.")
        starts = _host_generator(rng).integers(0, len(data) - T, size=batch_size)  # (B,)
        idx = starts[:, None] + np.arange(T)  # (B, T)
        x = data[idx].astype(np.int64)
        y = data[idx + 1].astype(np.int64)
        return asarray(x), asarray(y)

    def __repr__(self):
        if not self.train_files:
            return f"TextCorpus({self.root!r}: {len(self.train)} train bytes, {len(self.val)} val bytes)"
        return (f"TextCorpus({str(self.root)!r}: {len(self.train_files)} train files, "
                f"{len(self.train)} bytes; {len(self.val_files)} val files, {len(self.val)} bytes)")


def stdlib_corpus(max_bytes=4_000_000, val_fraction=0.1, root=None):
    """The Python standard library's own source as a ``TextCorpus`` (``root`` overrides the folder)."""
    if root is None:
        root = sysconfig.get_paths()["stdlib"]
    return TextCorpus(root, max_bytes=max_bytes, val_fraction=val_fraction)


# A handful of sentences; ``repetitive_corpus`` strings them together at random.
REPETITIVE_LINES = (
    "the cat sat on the mat.", "the dog sat on the log.", "a bird sang in the tree.",
    "the sun rose over the hill.", "we read the book again.", "she said it twice.",
    "rain fell on the roof.", "the ship left the port.",
)


def repetitive_corpus(n_bytes=400_000, seed=0, val_fraction=0.1, lines=REPETITIVE_LINES):
    r"""Text that repeats itself: a ``TextCorpus`` of lines drawn at random from a few sentences.

    The sources train on "a repetitive corpus" to show attention sinks. Here each
    line is one of ``lines`` (eight short sentences by default), chosen uniformly
    with ``seed``, each followed by a newline, until ``n_bytes``. Almost every byte
    is fixed by the few bytes before it, so most heads have little to look up.
    The first ``1 - val_fraction`` of the bytes are the train split, the rest val.
    """
    n_bytes = check_int("n_bytes", n_bytes, minimum=64)
    if not 0 < val_fraction <= 0.5:
        raise ValueError(f"val_fraction must lie in (0, 0.5], got {val_fraction!r}.")
    encoded = [encode(line + "\n") for line in lines]
    shortest = min(len(e) for e in encoded)
    picks = np.random.default_rng(seed).integers(0, len(encoded), size=n_bytes // shortest + 1)
    text = np.concatenate([encoded[i] for i in picks])[:n_bytes].astype(np.uint8)
    cut = int(round(n_bytes * (1 - val_fraction)))
    return TextCorpus.from_arrays(text[:cut], text[cut:], name=f"repetitive, {len(lines)} lines, seed {seed}")
