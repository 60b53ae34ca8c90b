"""The tiny Transformer: cached decoding, gradients, generation, bad input (its training is in test_train.py, its
checkpoints in test_checkpoint.py)."""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT

from random_models import ids, tiny

BASIC = ["none", "sinusoidal", "learned", "rope"]


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


def test_a_block_is_pre_norm_with_two_residual_additions():
    # h = x + Attn(Norm1(x)); y = h + MLP(Norm2(h)): composed here from the block's own parts
    from mini_transformer.engine.autograd import Tensor
    model = o1_weights(TinyGPT(tiny("rope")).to_dtype("float64"))
    block, pos = model.blocks[0], np.arange(5)
    x = Tensor(np.random.default_rng(3).normal(size=(2, 5, 16)))
    mask = pos[None, :] <= pos[:, None]
    h = x.numpy() + block.attn(block.norm1(x), model.positional, pos, pos, mask, None).numpy()
    expected = h + block.mlp(block.norm2(Tensor(h))).numpy()
    assert np.abs(block(x, model.positional, pos, pos, mask, None).numpy() - expected).max() <= 1e-12


@pytest.mark.parametrize("norm, expected", [("layer", 0.0), ("rms", 1.0)])
def test_the_norm_setting_picks_the_norm(norm, expected):
    # a constant vector: LayerNorm removes its mean (0, its bias starts at 0); RMSNorm only rescales it to
    # x / rms(x) = 1 (its gain starts at 1); every norm of the model is the one asked for
    model = TinyGPT(tiny("rope", norm=norm)).to_dtype("float64")
    from mini_transformer.engine.autograd import Tensor
    x = Tensor(np.full((1, 1, 16), 3.0))
    for f in [model.norm_f] + [n for b in model.blocks for n in (b.norm1, b.norm2)]:
        assert np.abs(f(x).numpy() - expected).max() <= 1e-6


def test_residual_writes_start_at_gpt2s_scale():
    # GPT-2: the attention output and MLP output projections start at std 0.02 / sqrt(2 n_layers); with
    # 3 layers 0.02 / sqrt(6) = 0.008165, the other weights at 0.02; 4096 and 16384 draws estimate each std
    # to about 1 %
    model = TinyGPT(tiny("rope", d_model=64, n_layers=3))
    for block in model.blocks:
        assert abs(float(np.std(backend.to_numpy(block.attn.W_o.weight.data))) / (0.02 / 6 ** 0.5) - 1) < 0.05
        assert abs(float(np.std(backend.to_numpy(block.mlp.proj.weight.data))) / (0.02 / 6 ** 0.5) - 1) < 0.05
        assert abs(float(np.std(backend.to_numpy(block.mlp.fc.weight.data))) / 0.02 - 1) < 0.05


@pytest.mark.parametrize("positional", ["learned", "t5"])
def test_the_seed_alone_decides_every_weight(positional):
    # the scheme's own table included: two models of one seed are equal, another seed differs
    a, b, c = (TinyGPT(tiny(positional, seed=s)) for s in (3, 3, 4))
    assert all(np.array_equal(p.data, q.data) for p, q in zip(a.parameters(), b.parameters()))
    assert all(not np.array_equal(p.data, q.data) for p, q in zip(a.positional.parameters(), c.positional.parameters()))
    assert a.head.bias is None                                        # the head is x W, no bias


def test_the_scheme_takes_the_models_direction():
    # T5's buckets: one-directional in the decoder, both directions in the encoder
    assert TinyGPT(tiny("t5")).positional.settings.bidirectional is False
    assert TinyEncoder(tiny("t5")).positional.settings.bidirectional is True


def test_dropout_is_the_configs_everywhere_and_seeded():
    cfg = tiny("rope", dropout=0.3)
    a, b = TinyGPT(cfg), TinyGPT(cfg)
    assert all(block.drop.p == 0.3 and block.mlp.dropout.p == 0.3 for block in a.blocks)
    x = ids(2, 8)
    assert np.array_equal(a(x).numpy(), b(x).numpy())                # training: the same masks from one seed
    a.eval()
    assert not np.array_equal(a(x).numpy(), b(x).numpy())            # b still drops, a does not


@pytest.mark.parametrize("ignore_index", [-1, 7])
def test_the_loss_leaves_out_the_ignored_targets(ignore_index):
    # the mean of -log softmax(logits)[target] over the targets not equal to ignore_index, written out here
    model = o1_weights(TinyGPT(tiny("rope")).to_dtype("float64"))
    x, y = ids(2, 5), ids(2, 5, seed=1)
    y[0, 1], y[1, 3] = ignore_index, ignore_index
    logits = model(x).numpy()
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    kept = y != ignore_index
    expected = -logp[kept, y[kept]].mean()
    got = model.loss(x, y, ignore_index=ignore_index) if ignore_index != -1 else model.loss(x, y)
    assert abs(float(got.numpy()) - expected) <= 1e-12


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


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_a_relative_encoder_is_the_same_at_any_offset(positional):
    # bidirectional scores that depend on distances only: every position moved by 5 changes nothing
    enc = o1_weights(TinyEncoder(tiny(positional)).to_dtype("float64"))
    x = ids(2, 6)
    assert np.abs(enc(x, offset=5).numpy() - enc(x).numpy()).max() <= 1e-10


def test_an_absolute_encoder_reads_its_offset():
    # sinusoidal: the default offset is 0, and tokens placed at 5..10 differ from tokens at 0..5
    enc = o1_weights(TinyEncoder(tiny("sinusoidal")).to_dtype("float64"))
    x = ids(2, 6)
    assert np.abs(enc(x, offset=0).numpy() - enc(x).numpy()).max() == 0.0
    assert np.abs(enc(x, offset=5).numpy() - enc(x).numpy()).max() > 1e-3


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


