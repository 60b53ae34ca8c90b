"""The RoPE scaling family inside the model: caches, the attention factor, checkpoints, the search."""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model.checkpoint import load_checkpoint, save_checkpoint
from mini_transformer.model import GPTConfig, TinyGPT


def rope_model(rope_scaling=None, n_layers=2, max_len=8, **extra):
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=2, max_len=max_len, positional="rope",
                    rope_scaling=rope_scaling, extra=extra)
    model = TinyGPT(cfg).to_dtype("float64")
    draw = np.random.default_rng(1)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model


def decode(model, x, prefill, planned=None):
    cache = model.new_cache()
    steps = [model(x[:, :prefill], cache=cache).numpy()]
    for t in range(prefill, x.shape[1]):
        steps.append(model(x[:, t:t + 1], cache=cache).numpy())
    return np.concatenate(steps, axis=1)


def test_dynamic_ntk_naive_cache_goes_stale_and_a_planned_length_matches_the_full_forward():
    # trained length 8, run to 24: dynamic NTK's scale s(l) = max(1, 2 l / 8 - 1) grows every step past 8
    model = rope_model({"rope_type": "dynamic", "factor": 2.0})
    x = np.random.default_rng(0).integers(0, 16, (2, 24))
    full = model(x).numpy()                       # one pass over all 24 tokens: one scale, s(24) = 5
    naive_model = rope_model({"rope_type": "dynamic", "factor": 2.0})
    naive_model.positional.rerotate_keys = False  # the naive cache: keys turned once, with the scale of their day
    naive = decode(naive_model, x, prefill=4)
    assert np.abs(naive[:, :8] - full[:, :8]).max() > 1e-3     # even early logits differ: s(24) != 1
    assert np.abs(naive - full).max() > 1e-2
    with model.positional.planned_length(24):     # what generate() does: fix the final length up front
        planned = decode(model, x, prefill=4)
    assert np.abs(planned - full).max() <= 1e-10


def test_generate_plans_the_length_so_dynamic_ntk_matches_the_uncached_reference():
    model = rope_model({"rope_type": "dynamic", "factor": 2.0})
    prompt = np.random.default_rng(2).integers(0, 16, (2, 3))
    cached = backend.to_numpy(model.generate(prompt, 20, greedy=True))
    out_len = cached.shape[1]
    with model.positional.planned_length(out_len):
        logits = model(cached[:, :-1]).numpy()
    assert np.array_equal(logits.argmax(-1)[:, 2:], cached[:, 3:])  # every greedy pick is the full forward's


@pytest.mark.parametrize("rope_scaling", [
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "ntk", "factor": 4.0},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8},
    {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8},
    {"rope_type": "longrope", "factor": 4.0, "original_max_position_embeddings": 8,
     "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 2.0, 4.0, 4.0]},
], ids=lambda d: d["rope_type"])
def test_every_scaled_rope_decodes_exactly_with_a_cache(rope_scaling):
    model = rope_model(rope_scaling)
    x = np.random.default_rng(0).integers(0, 16, (2, 20))
    with model.positional.planned_length(20):
        assert np.abs(decode(model, x, prefill=5) - model(x).numpy()).max() <= 1e-10


def test_yarn_attention_factor_scales_queries_and_keys_as_the_reference_does():
    # YaRN: attention factor 0.1 ln s + 1 on cos and sin, so |RoPE(x)| = factor * |x| and logits grow by factor^2
    model = rope_model({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8})
    x = backend.rng(0).normal(size=(1, 2, 5, 8), dtype="float64")
    from mini_transformer import Tensor
    y = model.positional.rotate(Tensor(x), backend.xp.arange(5), 0).numpy()
    factor = 0.1 * math.log(4.0) + 1
    ratio = np.linalg.norm(y, axis=-1) / np.linalg.norm(backend.to_numpy(x), axis=-1)
    assert np.allclose(ratio, factor, atol=1e-12)


def test_a_checkpoint_is_bound_to_its_rope_configuration(tmp_path):
    path = str(tmp_path / "rope.npz")
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}
    save_checkpoint(path, rope_model(yarn))
    load_checkpoint(path, rope_model(yarn))  # the same configuration loads
    with pytest.raises(ValueError, match=r"rope_type='yarn'.*rope_type='linear'"):
        load_checkpoint(path, rope_model({"rope_type": "linear", "factor": 4.0}))
    with pytest.raises(ValueError, match=r"target_max_position_embeddings=32.*=16"):
        load_checkpoint(path, rope_model({**yarn, "factor": 2.0}))
    with pytest.raises(ValueError, match=r"pairing='rotate-half \(i, i \+ d/2\)'.*interleaved"):
        load_checkpoint(path, rope_model(yarn, rope_interleaved=True))
    with pytest.raises(ValueError, match=r"partial_rotary_factor=1.0.*partial_rotary_factor=0.5.*rotary_dim"):
        load_checkpoint(path, rope_model(yarn, partial_rotary_factor=0.5))


@pytest.mark.slow
def test_longrope_search_beats_position_interpolation_on_held_out_text():
    from experiments.common import corpus, text_model, train_text
    from mini_transformer.evaluation.longrope_search import longrope_scaling, mean_loss, search, with_rope_scaling
    L = 32
    model = text_model("rope", L, seed=0)
    train_text(model, L, 200, seed=0)
    c, g = corpus(), backend.rng(7)
    scored = [c.get_batch("train", 8, 4 * L, g) for _ in range(2)]
    held_out = [c.get_batch("val", 8, 4 * L, g) for _ in range(3)]
    result = search(model, scored, 4 * L, generations=4, population=8)
    pi = mean_loss(with_rope_scaling(model, {"rope_type": "linear", "factor": 4.0}), held_out)
    found = mean_loss(with_rope_scaling(model, longrope_scaling(result.factors, L, 4.0)), held_out)
    assert result.loss <= min(result.start_losses.values())
    # seen while writing this test (seed 0): PI 2.21, searched 1.98 nats/byte on held-out text at 4L
    assert found < pi - 0.05, f"searched factors {found:.3f} vs position interpolation {pi:.3f}"


@pytest.fixture(scope="module")
def extension_quick():
    from experiments.context_extension import run
    return run(quick=True, seed=0, progress=False)


@pytest.mark.slow
def test_context_extension_quick_directions(extension_quick):
    m = extension_quick["methods"]
    # Seen while writing this test, quick mode, seeds 0 / 1 / 2 (loss in nats/byte, held-out text):
    #   at L:  none 2.164 / 2.547 / 1.882, PI 2.400 / 2.778 / 2.069, ntk 2.177 / 2.557 / 1.874, dynamic = none
    #   at 4L: none 2.074 / 2.493 / 2.002, PI 2.224 / 2.635 / 2.084, searched 2.057 / 2.412 / 1.963
    # PI costs something at the original length, robustly (+0.24, +0.23, +0.19):
    assert m["linear (PI)"]["loss_at_L"] > m["none"]["loss_at_L"] + 0.1
    # NTK leaves the fast pairs alone, so it costs far less at L than PI does:
    assert m["ntk"]["loss_at_L"] - m["none"]["loss_at_L"] < 0.5 * (m["linear (PI)"]["loss_at_L"] - m["none"]["loss_at_L"])
    # dynamic NTK at the trained length is no scaling at all, exactly:
    assert abs(m["dynamic"]["loss_at_L"] - m["none"]["loss_at_L"]) < 1e-9
    # the searched per-pair factors beat one factor for all pairs at 4L, on held-out text:
    assert m["searched"]["loss_at_4L"] < m["linear (PI)"]["loss_at_4L"] - 0.05
    # Not asserted, because it does not reproduce on this model (see the README): zero-shot PI at 4L is
    # *worse* than unscaled RoPE there, since unscaled RoPE does not collapse past L on a model this small.


def test_dynamic_ntk_rotation_by_hand_with_and_without_a_planned_length():
    # a model trained at 4 with factor 2: dynamic NTK's scale at length l is s = 2 l / 4 - 1, its base
    # 10^4 s^(8/6), theta_i = base^(-2i/8), and rotate-half turns (x_i, x_{i+4}) by m theta_i
    from mini_transformer import Tensor
    from mini_transformer.positional.rope import RoPE
    rope = RoPE(8, rope_scaling={"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=4)
    a = np.random.default_rng(2).normal(size=(1, 2, 6, 8))
    turned = np.concatenate([-a[..., 4:], a[..., :4]], axis=-1)        # [-x2, x1]

    def by_hand(s):
        theta = (1e4 * s ** (8 / 6)) ** (-np.arange(4) / 4)
        angle = np.arange(6)[:, None] * np.concatenate([theta, theta])  # (6, 8) the angle of each channel
        return a * np.cos(angle) + turned * np.sin(angle)
    x, pos = Tensor(backend.asarray(a)), backend.xp.arange(6)
    # unplanned, the length is the positions' own, 6: s = 2; planned at 40: s = 19
    np.testing.assert_allclose(rope.rotate(x, pos, 0).numpy(), by_hand(2.0), rtol=0, atol=1e-14)
    with rope.planned_length(40):
        np.testing.assert_allclose(rope.rotate(x, pos, 0).numpy(), by_hand(19.0), rtol=0, atol=1e-14)
    np.testing.assert_allclose(rope.rotate(x, pos, 0).numpy(), by_hand(2.0), rtol=0, atol=1e-14)   # plan undone
