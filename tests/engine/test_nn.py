"""Layers and state dicts (``engine/nn.py``), on both CPU backends."""
import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend, nn
from mini_transformer.engine.gradcheck import assert_gradcheck

from two_layer import TwoLayer, ops  # noqa: F401  (ops is a fixture)

pytestmark = pytest.mark.usefixtures("each_backend")


def test_named_parameters_follow_attribute_paths():
    names = [n for n, _ in TwoLayer(backend.rng(0)).named_parameters()]
    assert names == ["emb.weight", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                     "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias", "norm.weight"]


def test_layers_gradcheck_in_float64():
    model = TwoLayer(backend.rng(0)).to_dtype("float64")
    # O(1) weights: with the 0.02 init the layer norm divides by a tiny spread, and the
    # central difference's O(h^2) error, not the backward, would dominate
    draw = np.random.default_rng(1)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    ids = backend.asarray(np.array([[0, 4, 2], [1, 1, 3]]))
    params = model.parameters()
    assert_gradcheck(lambda *ps: model(ids), params, tol=1e-6)


def test_state_dict_round_trip_and_errors():
    a, b = TwoLayer(backend.rng(0)), TwoLayer(backend.rng(1))
    b.load_state_dict(a.state_dict())
    for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert np.array_equal(pa.numpy(), pb.numpy())
    state = a.state_dict()
    del state["mlp.fc.bias"]
    with pytest.raises(KeyError, match="'mlp.fc.bias'"):
        b.load_state_dict(state)
    state = a.state_dict()
    state["emb.weight"] = np.zeros((6, 4), dtype="float32")
    with pytest.raises(ValueError, match=r"'emb.weight' has shape \(6, 4\) in the state dict but \(5, 4\)"):
        b.load_state_dict(state)
    state = a.state_dict()
    state["extra"] = np.zeros(1)
    with pytest.raises(KeyError, match="'extra'"):
        b.load_state_dict(state)


def test_embedding_rejects_out_of_range_ids():
    emb = nn.Embedding(5, 4, backend.rng(0))
    with pytest.raises(IndexError, match=r"id 5 is out of range; ids must lie in \[0, 5\)"):
        emb(backend.asarray(np.array([[0, 5]])))
    with pytest.raises(IndexError, match="id -1"):
        emb(backend.asarray(np.array([-1])))


def test_dropout_is_identity_in_eval_and_scales_in_train():
    drop = nn.Dropout(0.5, backend.rng(0))
    x = Tensor(np.ones((100, 100)))
    kept = x.numpy() != 0
    y = drop(x).numpy()
    assert set(np.unique(y)) == {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    drop.eval()
    assert np.array_equal(drop(x).numpy(), kept * 1.0)
    with pytest.raises(ValueError, match="p must lie in"):
        nn.Dropout(1.0, backend.rng(0))


def test_qkv_projection_gives_the_column_blocks_of_one_product_and_their_gradients(ops):
    layer = nn.Linear(4, 6, backend.rng(0)).to_dtype("float64")
    layer.bias.data[...] = backend.asarray(np.arange(6.0))
    x = Tensor(np.random.default_rng(1).normal(size=(2, 3, 4)), dtype="float64")
    full = layer(x).numpy()
    parts = ops.qkv_projection(x, layer.weight, layer.bias)
    np.testing.assert_allclose(np.concatenate([p.numpy() for p in parts], axis=-1), full, rtol=1e-12, atol=1e-15)
    sum(p.sum() for p in parts).backward()
    # every column saw d loss / d y = 1: dW[i, j] = sum of x[..., i] over rows, db[j] = the number of rows (6)
    row_sums = x.numpy().reshape(-1, 4).sum(axis=0)
    np.testing.assert_allclose(backend.to_numpy(layer.weight.grad), np.repeat(row_sums[:, None], 6, axis=1), rtol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(layer.bias.grad), np.full(6, 6.0))
