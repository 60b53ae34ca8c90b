"""The training loop: a model learns, a run is deterministic and resumes exactly, a NaN loss stops it with the last
checkpoint whole; and ``python -m mini_transformer.model.train`` trains, saves, resumes from its checkpoint, and
refuses bad input in a sentence."""
import os

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyGPT, tasks
from mini_transformer.model.checkpoint import read_checkpoint
from mini_transformer.model.corpus import stdlib_corpus
from mini_transformer.model.train import TrainConfig, evaluate_loss, main, train

from random_models import tiny

SMALL = ["--d-model", "16", "--layers", "1", "--heads", "2", "--max-len", "8", "--batch", "2",
         "--corpus-bytes", "300000", "--no-progress"]


def test_train_then_resume_to_a_later_step(tmp_path, capsys):
    path = str(tmp_path / "run.npz")
    first = main(["--positional", "alibi", "--steps", "2", "--out", path] + SMALL)
    meta = read_checkpoint(path)[0]
    assert meta["step"] == 2 and meta["config"]["positional"] == "alibi" and len(first.losses) == 2
    second = main(["--resume", path, "--steps", "3"] + SMALL)
    assert read_checkpoint(path)[0]["step"] == 3 and len(second.losses) == 1     # only the step that was left
    assert "saved" in capsys.readouterr().out


def test_a_missing_checkpoint_is_one_sentence(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--resume", str(tmp_path / "nowhere.npz")] + SMALL)
    assert "No checkpoint at" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Learning, determinism, resuming, a NaN loss
# ---------------------------------------------------------------------------

def copy_batches(n=8, vocab=16, batch=32):
    def get_batch(rng):
        b = tasks.copy_task(batch, n, vocab_size=vocab, seed=int(rng.host.integers(2 ** 31)))
        return b.x, b.y
    return get_batch


@pytest.mark.slow
def test_rope_model_learns_the_copy_task():
    cfg = GPTConfig(vocab_size=16, d_model=64, n_layers=2, n_heads=4, max_len=32, positional="rope")
    model = TinyGPT(cfg)
    train(model, copy_batches(n=12), TrainConfig(steps=200, lr=3e-3, warmup=20, progress=False))
    test = tasks.copy_task(256, 12, vocab_size=16, seed=10_000)
    pred = model(test.x).numpy().argmax(-1)
    y = backend.to_numpy(test.y)
    scored = y != tasks.IGNORE
    accuracy = (pred[scored] == y[scored]).mean()
    assert accuracy >= 0.99, f"copy-task token accuracy {accuracy:.3f} is below 0.99"


@pytest.mark.slow
def test_rope_model_learns_standard_library_text():
    corpus = stdlib_corpus(max_bytes=1_000_000)
    cfg = GPTConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=4, max_len=64, positional="rope")
    model = TinyGPT(cfg)

    def batches(split):
        return lambda rng: corpus.get_batch(split, 16, 64, rng)
    before = evaluate_loss(model, batches("val"), 4)
    result = train(model, batches("train"), TrainConfig(steps=300, lr=3e-3, warmup=20, min_lr=3e-4, progress=False),
                   eval_batch=batches("val"))
    after = result.eval_losses[-1][1]
    # ln 256 = 5.55 nats per byte for a uniform guess; the tiny model gets well under half of it
    assert before > 5.0
    assert after < 2.6, f"validation loss {after:.3f} nats/byte after 300 steps"


def test_training_is_deterministic_and_resumes_exactly(tmp_path, monkeypatch):
    cfg = tiny("rope")
    settings = dict(steps=8, lr=1e-2, warmup=2, progress=False)
    straight = train(TinyGPT(cfg), copy_batches(n=4, batch=4), TrainConfig(**settings))
    again = train(TinyGPT(cfg), copy_batches(n=4, batch=4), TrainConfig(**settings))
    assert again.losses == straight.losses

    # A run that dies right after its step-6 checkpoint ...
    from mini_transformer.model import train as train_module
    path = str(tmp_path / "ck.npz")
    original = train_module.save_checkpoint

    class Killed(Exception):
        pass

    def save_then_die(p, model, opt, step, state):
        original(p, model, opt, step, state)
        if step == 6:
            raise Killed
    monkeypatch.setattr(train_module, "save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        train(TinyGPT(cfg), copy_batches(n=4, batch=4),
              TrainConfig(**settings, checkpoint_path=path, checkpoint_every=3))
    monkeypatch.setattr(train_module, "save_checkpoint", original)
    assert read_checkpoint(path)[0]["step"] == 6

    # ... resumed into a freshly built model, finishes with exactly the losses of the straight run.
    resumed = train(TinyGPT(cfg), copy_batches(n=4, batch=4), TrainConfig(**settings), resume_from=path)
    assert resumed.losses == straight.losses[6:]


def test_train_refuses_a_model_without_a_kernel_set_in_a_sentence():
    from mini_transformer.engine.nn import Linear
    with pytest.raises(TypeError, match=r"train needs a model that carries its kernel set as model.kernels, as "
                                        r"TinyGPT and TinyEncoder do .*; a Linear has none"):
        train(Linear(4, 4, backend.rng(0)), copy_batches(n=4, batch=4), TrainConfig(steps=1, progress=False))


def test_nan_loss_stops_with_the_step_and_keeps_the_last_checkpoint(tmp_path):
    path = str(tmp_path / "ck.npz")
    model = TinyGPT(tiny("rope"))
    train(model, copy_batches(n=4, batch=4), TrainConfig(steps=2, progress=False, checkpoint_path=path))
    before = open(path, "rb").read()
    calls = {"n": 0}

    def poisoned(rng):
        calls["n"] += 1
        x, y = copy_batches(n=4, batch=4)(rng)
        if calls["n"] == 3:
            model.tok.weight.data[...] = float("nan")
        return x, y
    with pytest.raises(FloatingPointError, match=r"became nan at step 2.*ck.npz.*unchanged"):
        train(model, poisoned, TrainConfig(steps=5, progress=False, checkpoint_path=path, checkpoint_every=1))
    # the file holds the last good state (after steps 0 and 1), finite, and nothing half-written lies beside it
    meta, params, _ = read_checkpoint(path)
    assert meta["step"] == 2 and open(path, "rb").read() != before
    assert all(np.isfinite(v).all() for v in params.values())
    assert [f for f in os.listdir(tmp_path) if f != "ck.npz"] == []
