r"""What every experiment shares: the command line, the text model, training, and writing results.

Results are written atomically (temporary file, then rename) as ``NAME.json``
plus ``NAME.png`` in ``results/`` beside this file, so a crash never leaves a
half-written result that a chapter would show.
"""
import argparse
import json
import os
import platform
import time

from mini_transformer.engine import backend, kernels
from mini_transformer.engine.files import atomic_write
from mini_transformer.engine.kernels import tuning
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.corpus import stdlib_corpus
from mini_transformer.model.train import TrainConfig, train

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

_CORPUS = None


def load_result(name, folder=RESULTS):
    """The committed result of experiment ``name`` (``results/NAME.json``), as the dict its run saved."""
    path = os.path.join(folder, f"{name}.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no committed result {path}; run python -m experiments.{name}")
    with open(path) as f:
        return json.load(f)


def corpus():
    """The standard-library text corpus, loaded once per process (1 MB: fast, and plenty for these models)."""
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = stdlib_corpus(max_bytes=1_000_000)
    return _CORPUS


def parse_args(description, argv=None, parts=False):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="a small run (under a minute) that only checks directions")
    ap.add_argument("--seed", type=int, default=0, help="seed for weights and batches")
    ap.add_argument("--out", default=RESULTS, help="folder for NAME.json and NAME.png (full mode only)")
    ap.add_argument("--no-progress", action="store_true", help="hide progress bars")
    if parts:
        ap.add_argument("--parts", default=None,
                        help="folder that keeps each finished seed (NAME_seedN.json), so a stopped run resumes there")
    return ap.parse_args(argv)


def main(name, doc, run, report, plot, argv=None, parts=False):
    """What every experiment's command does: parse the options, run, print the report, save the full results.

    ``parts``: the experiment's ``run`` takes ``parts=FOLDER`` (``seed_part``), and the command offers ``--parts``.
    """
    args = parse_args(doc.split("\n")[0], argv, parts=parts)
    kept = {"parts": args.parts} if parts else {}
    res = run(args.quick, args.seed, progress=not args.no_progress, **kept)
    report(res)
    if not args.quick:
        save(name, res, plot(res), args.out)
    return res


def command_line(name, main):
    """``python -m experiments.NAME``: the process tuned for speed (``kernels.tune``), then ``main``."""
    tuning.relaunch_with_blas_spin(f"experiments.{name}")
    kernels.tune()
    main()


def seed_part(parts, name, seed, size, make):
    """One seed's values and the seconds they took: ``make()``'s, or those an earlier call saved in ``parts``.

    ``parts`` None keeps nothing. Otherwise the values are kept in ``parts/NAME_seedN.json`` (atomically) as
    soon as they are made, and a later call with the same ``size`` (a dict of the run's sizes) reads them
    instead of training again: a stopped run resumes at the seed it was on.
    """
    size = json.loads(json.dumps(size))
    path = None if parts is None else os.path.join(parts, f"{name}_seed{seed}.json")
    if path is not None and os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        if saved["size"] == size and saved["seed"] == seed:
            return saved["values"], saved["seconds"]
    with Timer() as timer:
        values = json.loads(json.dumps(make(), default=float))   # as a saved part reads back: lists, floats
    if path is not None:
        os.makedirs(parts, exist_ok=True)
        text = json.dumps({"seed": seed, "size": size, "seconds": round(timer.seconds, 1), "values": values})
        atomic_write(path, lambda f: f.write(text.encode()))
    return values, round(timer.seconds, 1)


def text_model(positional, train_len, seed=0, d_model=64, n_layers=2, n_heads=4, kernels="fast", **kw):
    """A byte-level TinyGPT for the standard-library text (the fast kernels: the same numbers, sooner)."""
    cfg = GPTConfig(vocab_size=256, d_model=d_model, n_layers=n_layers, n_heads=n_heads, max_len=train_len,
                    positional=positional, seed=seed, kernels=kernels, **kw)
    return TinyGPT(cfg)


def text_batches(T, batch_size=16, split="train"):
    c = corpus()
    return lambda rng: c.get_batch(split, batch_size, T, rng)


def train_text(model, T, steps, seed=0, lr=3e-3, batch_size=16, progress=False):
    """Train on standard-library text at length T; returns the TrainResult."""
    cfg = TrainConfig(steps=steps, lr=lr, warmup=max(1, steps // 10), min_lr=lr / 10, seed=seed, progress=progress)
    return train(model, text_batches(T, batch_size), cfg)


def environment(seconds, **sizes):
    """What the results table states: seeds, sizes, run time and the machine."""
    return {"seconds": round(seconds, 1), "backend": backend.get_backend(), "python": platform.python_version(),
            "machine": platform.machine(), "cores": os.cpu_count(), **sizes}


def save(name, payload, fig=None, out=RESULTS):
    """Write ``NAME.json`` (and ``NAME.png``) atomically into ``out``."""
    os.makedirs(out, exist_ok=True)
    text = json.dumps(payload, indent=2, sort_keys=True, default=float)
    atomic_write(os.path.join(out, f"{name}.json"), lambda f: f.write(text.encode()))
    if fig is not None:
        atomic_write(os.path.join(out, f"{name}.png"), lambda f: fig.savefig(f, format="png", dpi=110,
                                                                            bbox_inches="tight"))


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
