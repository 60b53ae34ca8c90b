"""The 'temperature' scheme with per-row positions ``(B, T)``: each row's query scale comes from that row's own
position ids (Llama 4 counts m over every token its cache has seen), by hand and inside TinyGPT."""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional import NoPETemperature
from tests.positional.positional_helpers import N, P, T


def test_the_score_term_of_two_rows_at_different_positions_by_hand(each_backend):
    # floor_scale 2, attn_scale 1, d = 4 so 1/sqrt(d) = 1/2: tau(m) = 1 + log(floor((m + 1) / 2) + 1)
    # row 0 at positions (0, 1): tau = 1, 1 + log 2; row 1 at positions (4, 5): tau = 1 + log 3, 1 + log 4
    # every q.k is 2 (q = k = e_0 + e_1 throughout), so the term is (tau - 1) * 2 / 2 = tau - 1 for every key
    scheme = NoPETemperature(floor_scale=2, attn_scale=1.0)
    q = k = T(np.broadcast_to([1.0, 1.0, 0.0, 0.0], (2, 1, 2, 4)))
    got = N(scheme.score_bias(q, k, P([[0, 1], [4, 5]]), P([[0, 1], [4, 5]]), 0))
    assert got.shape == (2, 1, 2, 2)
    expected = [[[0.0, 0.0], [math.log(2)] * 2],
                [[math.log(3)] * 2, [math.log(4)] * 2]]
    np.testing.assert_allclose(got[:, 0], expected, rtol=1e-15, atol=1e-15)


def test_each_row_of_a_batch_gets_the_term_of_its_own_positions():
    # the per-row call, row by row, is the shared-positions call at that row's positions
    draw = np.random.default_rng(3)
    scheme = NoPETemperature(floor_scale=3, attn_scale=0.7)
    q, k = T(draw.normal(size=(3, 2, 4, 8))), T(draw.normal(size=(3, 2, 6, 8)))
    k_pos = np.array([[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12], [0, 1, 0, 1, 2, 3]])   # the last a packed row
    q_pos = k_pos[:, 2:]
    rows = N(scheme.score_bias(q, k, P(q_pos), P(k_pos), 0))
    for b in range(3):
        alone = N(scheme.score_bias(T(N(q)[b:b + 1]), T(N(k)[b:b + 1]), P(q_pos[b]), P(k_pos[b]), 0))
        np.testing.assert_allclose(rows[b:b + 1], alone, rtol=0, atol=1e-15)
    # control: row 1 at row 0's positions (0 .. 5 instead of 7 .. 12) gets another term
    shifted = N(scheme.score_bias(T(N(q)[1:2]), T(N(k)[1:2]), P(q_pos[0]), P(k_pos[0]), 0))
    assert np.abs(rows[1:2] - shifted).max() > 1e-3


def model(seed=1):
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=32, positional="temperature",
                    extra={"floor_scale": 2, "attn_scale": 0.5})
    m = TinyGPT(cfg).to_dtype("float64")
    draw = np.random.default_rng(seed)
    for p in m.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return m


@pytest.mark.parametrize("starts", [(0, 5), (3, 0), (2, 9)])
def test_rows_that_start_at_different_positions_each_equal_the_row_alone_at_its_offset(starts):
    m = model()
    x = np.random.default_rng(4).integers(0, 16, (2, 6))
    pos = np.stack([np.arange(s, s + 6) for s in starts])
    batch = m(x, position_ids=pos).numpy()
    for b, s in enumerate(starts):
        alone = m(x[b:b + 1], offset=s).numpy()
        assert np.abs(batch[b:b + 1] - alone).max() <= 1e-12
    # control: the row that does not start at 0 differs from the same tokens at positions 0 .. 5
    late = int(np.argmax(starts))
    assert np.abs(batch[late:late + 1] - m(x[late:late + 1]).numpy()).max() > 1e-3


def test_cached_decoding_with_per_row_position_ids_equals_one_full_pass():
    # two rows at different positions, prefilled with 3 tokens, then decoded one token a step with their ids
    m = model()
    x = np.random.default_rng(5).integers(0, 16, (2, 7))
    pos = np.stack([np.arange(0, 7), np.arange(4, 11)])
    full = m(x, position_ids=pos).numpy()
    cache = m.new_cache()
    steps = [m(x[:, :3], cache=cache, position_ids=pos[:, :3]).numpy()]
    steps += [m(x[:, t:t + 1], cache=cache, position_ids=pos[:, t:t + 1]).numpy() for t in range(3, 7)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-10
