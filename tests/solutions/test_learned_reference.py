r"""The references of chapter 3 (``solutions/learned.py``) against numbers worked by hand, never against themselves:
``position_rows`` on a table whose row t holds 4t .. 4t + 3, the small model's causal attention by hand, and
``cached_decode`` against the full forward pass of the small model.
"""
import numpy as np
import pytest

from mini_transformer.engine.backend import asarray, to_numpy
from solutions import learned


def test_position_rows_by_hand(each_backend):
    w = asarray(np.arange(40.0).reshape(10, 4))  # row t holds 4t .. 4t + 3
    rows = to_numpy(learned.position_rows(w, 3, 5))
    assert rows.shape == (1, 3, 4) and rows.tolist() == [[[20, 21, 22, 23], [24, 25, 26, 27], [28, 29, 30, 31]]]
    assert to_numpy(learned.position_rows(w, 1, 9)).tolist() == [[[36, 37, 38, 39]]]
    for T, offset in [(1, 10), (2, 9), (11, 0), (1, -1)]:
        with pytest.raises(ValueError, match=r"T_max=10 rows"):
            learned.position_rows(w, T, offset)


def test_the_small_model_attends_causally_and_reads_its_rows():
    """The first position sees only itself; changing a later token or a later row leaves it alone."""
    params = {k: to_numpy(v) for k, v in learned.table_lm_params(seed=1).items()}
    ids = np.array([[3, 1, 4, 1, 5]])
    full = to_numpy(learned.table_lm_step(params, ids)[0])
    x0 = params["tok"][3] + params["table"][0]  # one key: softmax weight 1 on itself
    by_hand = (x0 + x0 @ params["W_v"] @ params["W_o"]) @ params["head"]
    np.testing.assert_allclose(full[0, 0], by_hand, atol=1e-12)
    later = dict(params, table=params["table"].copy())
    later["table"][3:] += 1.0
    np.testing.assert_allclose(to_numpy(learned.table_lm_step(later, ids)[0])[0, :3], full[0, :3], atol=1e-12)


@pytest.mark.parametrize("B, T, prefill", [(1, 6, 1), (2, 8, 3), (3, 10, 10)])
def test_cached_decode_equals_the_full_forward_pass(B, T, prefill):
    params = learned.table_lm_params(seed=B)
    ids = asarray(np.random.default_rng(T).integers(0, 16, size=(B, T)))
    full = to_numpy(learned.table_lm_step(params, ids)[0])
    np.testing.assert_allclose(to_numpy(learned.cached_decode(params, ids, prefill)), full, atol=1e-12)
