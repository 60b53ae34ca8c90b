r"""``GPTConfig(attention_sinks=True)``: one trainable sink logit per head and layer (GPT-OSS), in the model.

A sink starts at 0 and is a parameter like any other: it gets a gradient, trains, is saved. The KV cache changes
nothing about it (the sink is per head, not per key), so cached decoding gives the numbers of one full pass, and the
two kernel sets give the same logits and gradients. Expected values come from the model's own full pass or from
the reference kernel set, never from the path under test.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.nn import Parameter
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.attention import MultiHeadAttention
from mini_transformer.model.checkpoint import load_checkpoint, save_checkpoint
from mini_transformer.model.train import TrainConfig, train

from random_models import ids, model_for, tiny


def test_each_layer_has_one_sink_per_head_at_zero_and_the_default_model_has_none():
    model = TinyGPT(tiny(attention_sinks=True, n_heads=4))
    names = {name: p for name, p in model.named_parameters() if name.endswith("sinks")}
    assert sorted(names) == ["blocks.0.attn.sinks", "blocks.1.attn.sinks"]
    for p in names.values():
        assert isinstance(p, Parameter) and p.shape == (4,) and backend.to_numpy(p.data).tolist() == [0.0] * 4
    plain = TinyGPT(tiny())
    assert model.num_parameters() - plain.num_parameters() == 2 * 4
    assert all(b.attn.sinks is None for b in plain.blocks)


def test_an_attention_layer_built_without_the_option_has_no_sinks():
    layer = MultiHeadAttention(16, 2, backend.rng(0), layer=0)
    assert layer.sinks is None and all(not name.endswith("sinks") for name, _ in layer.named_parameters())


def test_attention_sinks_that_is_not_a_bool_is_refused_in_a_sentence():
    with pytest.raises(ValueError, match=r"GPTConfig.attention_sinks must be True or False, got 'yes'\."):
        tiny(attention_sinks="yes")


def test_a_sink_at_zero_gives_every_row_of_n_keys_one_share_in_n_plus_one_to_the_sink():
    # every weight equal (zero queries and keys): each of the n keys a query sees gets 1 / (n + 1)
    model = TinyGPT(tiny(attention_sinks=True)).to_dtype("float64")
    attn = model.blocks[0].attn
    attn.W_qkv.weight.data[...] = 0.0
    attn.record_attention = True
    model(ids(1, 5))
    rows = backend.to_numpy(attn.last_attention)[0, 0]                      # (T, T)
    np.testing.assert_allclose(rows.sum(axis=-1), [1 - 1 / (n + 1) for n in range(1, 6)], rtol=1e-14)


@pytest.mark.parametrize("kernels", ["reference", "fast"])
def test_the_sinks_get_a_gradient_and_one_step_of_training_moves_them(kernels):
    model = TinyGPT(tiny(attention_sinks=True, kernels=kernels))
    loss = model.loss(ids(2, 8), ids(2, 8, seed=1))
    loss.backward()
    for block in model.blocks:
        assert np.abs(backend.to_numpy(block.attn.sinks.grad)).min() > 0
    train(model, lambda rng: (ids(2, 8), ids(2, 8, seed=1)), TrainConfig(steps=2, warmup=1, progress=False))
    assert all(np.abs(backend.to_numpy(b.attn.sinks.data)).min() > 0 for b in model.blocks)


@pytest.mark.parametrize("positional", ["rope", "alibi", "shaw", "none"])
@pytest.mark.parametrize("kernels", ["reference", "fast"])
def test_cached_decoding_with_sinks_gives_the_numbers_of_one_full_pass(positional, kernels):
    model = model_for(positional, attention_sinks=True, kernels=kernels)       # sinks drawn from N(0, 0.5^2) too
    assert np.abs(backend.to_numpy(model.blocks[0].attn.sinks.data)).min() > 0
    x = np.random.default_rng(3).integers(0, 16, (2, 20))
    full = model(x).numpy()
    cache = model.new_cache()
    steps = [model(x[:, :3], cache=cache).numpy()] + [model(x[:, t:t + 1], cache=cache).numpy() for t in range(3, 20)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12


@pytest.mark.parametrize("positional", ["rope", "alibi", "shaw"])
def test_both_kernel_sets_give_the_same_logits_and_gradients_with_sinks(positional):
    runs = []
    for name in ("reference", "fast"):
        model = model_for(positional, attention_sinks=True, kernels=name)
        model.loss(ids(2, 12, seed=4), ids(2, 12, seed=5)).backward()
        runs.append([backend.to_numpy(p.grad) for p in model.parameters()] + [model(ids(2, 12, seed=4)).numpy()])
    for n, (a, b) in enumerate(zip(*runs)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"parameter {n}")


def test_a_checkpoint_keeps_the_sinks(tmp_path):
    model = model_for("rope", attention_sinks=True)
    save_checkpoint(str(tmp_path / "m.npz"), model)
    fresh = TinyGPT(GPTConfig(**model.cfg.to_dict())).to_dtype("float64")
    load_checkpoint(str(tmp_path / "m.npz"), fresh)
    for a, b in zip(model.blocks, fresh.blocks):
        assert backend.to_numpy(a.attn.sinks.data).tolist() == backend.to_numpy(b.attn.sinks.data).tolist()
    assert np.abs(fresh(ids(1, 6)).numpy() - model(ids(1, 6)).numpy()).max() == 0.0
