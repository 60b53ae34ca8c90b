"""The tiny Transformer: cached decoding, gradients, learning, checkpoints, generation, bad input."""
import os

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import data
from mini_transformer.model.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.model.train import TrainConfig, evaluate_loss, train

BASIC = ["none", "sinusoidal", "learned", "rope"]


def tiny(positional="rope", **kw):
    cfg = dict(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=16, positional=positional)
    cfg.update(kw)
    return GPTConfig(**cfg)


def ids(B, T, vocab=16, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, (B, T))


def o1_weights(model, seed=1, std=0.5):
    """O(1) random weights, so differences in the output are not drowned by a tiny init."""
    draw = np.random.default_rng(seed)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, std, p.shape))
    return model


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("positional", BASIC)
def test_cached_decoding_equals_full_forward(positional):
    model = o1_weights(TinyGPT(tiny(positional)).to_dtype("float64"))
    x = ids(2, 12)
    full = model(x).numpy()
    cache = model.new_cache()
    steps = [model(x[:, :5], cache=cache).numpy()]
    for t in range(5, 12):
        steps.append(model(x[:, t:t + 1], cache=cache).numpy())
    assert np.abs(full - np.concatenate(steps, axis=1)).max() <= 1e-6
    assert cache.seen == 12


@pytest.mark.parametrize("positional", BASIC)
def test_whole_model_gradcheck(positional):
    # std 0.3: large enough that layer norm's spread is O(1), small enough that the curvature
    # (and so the central difference's O(h^2) error) stays far below the 1e-6 bar
    model = o1_weights(TinyGPT(tiny(positional, d_model=8, vocab_size=6, max_len=6)).to_dtype("float64"), std=0.3)
    x, y = ids(2, 5, vocab=6), ids(2, 5, vocab=6, seed=1)
    assert_gradcheck(lambda *ps: model.loss(x, y), model.parameters(), tol=1e-6, max_elements=6)


def test_model_runs_under_the_strict_backend():
    with backend.using("strict"):
        model = TinyGPT(tiny("rope"))
        loss = model.loss(backend.asarray(ids(2, 8)), backend.asarray(ids(2, 8, seed=1)))
        loss.backward()
        assert all(p.grad is not None for p in model.parameters())
        out = model.generate(backend.asarray(ids(1, 3)), 4, greedy=True)
        assert out.shape == (1, 7)


def test_encoder_has_no_mask_so_the_first_token_sees_the_last():
    enc = o1_weights(TinyEncoder(tiny("none")).to_dtype("float64"))
    a, b = ids(1, 6), ids(1, 6)
    b[0, -1] = (a[0, -1] + 1) % 16
    assert np.abs(enc(a).numpy()[0, 0] - enc(b).numpy()[0, 0]).max() > 1e-6
    dec = o1_weights(TinyGPT(tiny("none")).to_dtype("float64"))
    assert np.abs(dec(a).numpy()[0, 0] - dec(b).numpy()[0, 0]).max() == 0.0  # causal: the future is invisible


# ---------------------------------------------------------------------------
# Learning
# ---------------------------------------------------------------------------

def copy_batches(n=8, vocab=16, batch=32):
    def get_batch(rng):
        b = data.copy_task(batch, n, vocab_size=vocab, seed=int(rng.host.integers(2 ** 31)))
        return b.x, b.y
    return get_batch


@pytest.mark.slow
def test_rope_model_learns_the_copy_task():
    cfg = GPTConfig(vocab_size=16, d_model=64, n_layers=2, n_heads=4, max_len=32, positional="rope")
    model = TinyGPT(cfg)
    train(model, copy_batches(n=12), TrainConfig(steps=200, lr=3e-3, warmup=20, progress=False))
    test = data.copy_task(256, 12, vocab_size=16, seed=10_000)
    pred = model(test.x).numpy().argmax(-1)
    y = backend.to_numpy(test.y)
    scored = y != data.IGNORE
    accuracy = (pred[scored] == y[scored]).mean()
    assert accuracy >= 0.99, f"copy-task token accuracy {accuracy:.3f} is below 0.99"


@pytest.mark.slow
def test_rope_model_learns_standard_library_text():
    corpus = data.stdlib_corpus(max_bytes=1_000_000)
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


# ---------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------

def test_checkpoint_round_trip_and_positional_mismatch(tmp_path):
    path = str(tmp_path / "model.npz")
    model = TinyGPT(tiny("rope", rope_base=500.0))
    save_checkpoint(path, model)
    twin = TinyGPT(tiny("rope", rope_base=500.0, seed=3))
    load_checkpoint(path, twin)
    x = ids(1, 5)
    assert np.array_equal(model(x).numpy(), twin(x).numpy())
    meta, _, _ = read_checkpoint(path)
    assert meta["config"]["rope_base"] == 500.0 and meta["positional"]["d_head"] == 8
    with pytest.raises(ValueError, match=r"rope_base=500.0.*rope_base=10000.0"):
        load_checkpoint(path, TinyGPT(tiny("rope")))
    with pytest.raises(ValueError, match=r"positional='rope'.*positional='learned'"):
        load_checkpoint(path, TinyGPT(tiny("learned", rope_base=500.0)))


def test_interrupted_save_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    path = str(tmp_path / "model.npz")
    model = TinyGPT(tiny("rope"))
    save_checkpoint(path, model)
    before = open(path, "rb").read()
    from mini_transformer.model import checkpoint

    def crash(f, **arrays):
        f.write(b"half a file")
        raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint.np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["model.npz"]


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("positional", BASIC)
def test_greedy_generation_with_and_without_cache_agree(positional):
    model = o1_weights(TinyGPT(tiny(positional)).to_dtype("float64"))
    prompt = ids(2, 3)
    a = backend.to_numpy(model.generate(prompt, 8, greedy=True))
    b = backend.to_numpy(model.generate(prompt, 8, greedy=True, use_cache=False))
    assert np.array_equal(a, b) and a.shape == (2, 11) and np.array_equal(a[:, :3], prompt)


def test_sampling_is_seeded_and_top_k_one_is_greedy():
    model = o1_weights(TinyGPT(tiny("rope")))
    prompt = ids(2, 3)
    s1 = backend.to_numpy(model.generate(prompt, 6, temperature=1.0, seed=4))
    s2 = backend.to_numpy(model.generate(prompt, 6, temperature=1.0, seed=4))
    assert np.array_equal(s1, s2)
    top1 = backend.to_numpy(model.generate(prompt, 6, top_k=1, seed=9))
    assert np.array_equal(top1, backend.to_numpy(model.generate(prompt, 6, greedy=True)))


def test_top_k_only_samples_among_the_k_most_likely():
    model = o1_weights(TinyGPT(tiny("rope")))
    prompt = ids(64, 3)
    logits = model(prompt).numpy()[:, -1]
    allowed = np.argsort(logits, axis=-1)[:, -3:]
    out = backend.to_numpy(model.generate(prompt, 1, top_k=3, temperature=2.0, seed=1))[:, -1]
    assert all(out[i] in allowed[i] for i in range(64))


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_bad_input_gives_clear_errors():
    model = TinyGPT(tiny("learned", max_len=8))
    with pytest.raises(IndexError, match=r"id 16 is out of range; ids must lie in \[0, 16\)"):
        model(np.array([[1, 16]]))
    with pytest.raises(ValueError, match=r"position 8 was asked for.*max_len=8"):
        model(ids(1, 9))
    cache = model.new_cache()
    model(ids(1, 8), cache=cache)
    with pytest.raises(ValueError, match="position 8"):
        model(ids(1, 1), cache=cache)
    with pytest.raises(ValueError, match=r"'alibi9'.*choose one of"):
        GPTConfig(positional="alibi9")
    with pytest.raises(ValueError, match="d_model=30 is not divisible by n_heads=4"):
        GPTConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match=r"shape \(B, T\), got shape \(5,\)"):
        model(np.arange(5))


def test_saved_files_get_ordinary_permissions(tmp_path):
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), TinyGPT(tiny("rope")))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
