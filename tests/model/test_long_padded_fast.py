r"""A left-padded batch long enough for the blocked attention kernel, on the fast kernels.

Every other padded-batch test runs at T <= 12, where the fast set's attention is the whole-matrix kernel.
From ``BLOCKED_FROM`` = 256 keys on it runs in tiles of ``BLOCK`` = 128 keys, and a row padded past the first
tile meets a tile in which every one of its scores is -\infty while another row of the batch sees it. Here a
300-token batch, row 1 padded with 160 tokens, must give on ``GPTConfig(kernels="fast")``:

* finite logits everywhere (padding queries too: the model lets them see every key);
* the reference kernels' logits, in float64, to ``TOL`` (the two differ only in the order of additions);
* at each row's real tokens, the logits of that row run alone, unpadded.

A rescaling of the online softmax by the raw running max (e^{-\infty - (-\infty)} = NaN) made every one of
these fail.
"""
import numpy as np
import pytest

from random_models import model_for

from mini_transformer.engine.kernels import blocked_attention
from mini_transformer.model import left_padded_positions

T, PAD = 300, 160          # row 1: 160 padding tokens, then 140 real ones
TOL = 1e-10                # float64, O(1) logits: the kernel sets agreed to 2.2e-15 (measured 2026-12-06)


def batch():
    """ids ``(2, T)`` and attention_mask ``(2, T)``: row 0 all real, row 1 left-padded with ``PAD`` zeros."""
    ids = np.random.default_rng(3).integers(1, 16, (2, T))
    mask = np.ones((2, T), dtype=np.int64)
    ids[1, :PAD], mask[1, :PAD] = 0, 0
    return ids, mask


@pytest.mark.parametrize("positional", ["rope", "alibi", "t5"])
def test_a_long_left_padded_batch_on_the_fast_kernels_equals_the_reference_and_each_row_alone(positional, monkeypatch):
    assert T >= blocked_attention.BLOCKED_FROM and PAD > blocked_attention.BLOCK   # blocked, and a tile all padding
    blocked, ran = blocked_attention.scaled_dot_product_attention, []
    monkeypatch.setattr(blocked_attention, "scaled_dot_product_attention",
                        lambda *a, **kw: ran.append(a[0].shape) or blocked(*a, **kw))
    ids, mask = batch()
    kw = dict(attention_mask=mask, position_ids=left_padded_positions(mask))
    fast_model = model_for(positional, max_len=T, kernels="fast")
    fast = fast_model(ids, **kw).numpy()
    assert ran == [(2, 2, T, 8)] * 2                                 # both layers ran the blocked kernel
    ref = model_for(positional, max_len=T, kernels="reference")(ids, **kw).numpy()
    assert fast.shape == (2, T, 16)
    assert np.isfinite(fast).all() and np.isfinite(ref).all()
    np.testing.assert_allclose(fast, ref, rtol=TOL, atol=TOL)
    for b, start in ((0, 0), (1, PAD)):
        alone = fast_model(ids[b:b + 1, start:]).numpy()[0]          # the row unpadded, positions from 0
        np.testing.assert_allclose(fast[b, start:], alone, rtol=TOL, atol=TOL, err_msg=f"row {b}")
