r"""The T5 bucket reference (``solutions/t5.py``, chapter 5) and the library agree on every distance, exact, log-spaced
and capped, for causal and bidirectional buckets (see ``agreement.py``)."""
import numpy as np
import pytest

from mini_transformer import positional as lib
from mini_transformer.engine.backend import asarray
from solutions import t5

from agreement import assert_same


# bidirectional splits the buckets into two equal halves, so an odd count is causal only
BUCKETS = [(bidirectional, num_buckets, max_distance)
           for num_buckets, max_distance in [(32, 128), (16, 64), (8, 20), (64, 256), (18, 128), (20, 160),
                                             (10, 160), (33, 128)]
           for bidirectional in (True, False) if not (bidirectional and num_buckets % 2)]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", BUCKETS,
                         ids=[f"{'bi' if b else 'causal'}-{n}-{m}" for b, n, m in BUCKETS])
def test_relative_position_bucket(each_backend, bidirectional, num_buckets, max_distance):
    # Every distance out to well past max_distance, so each exact, log-spaced and capped bucket is hit,
    # including the distances that sit exactly on a boundary (8 with 18 buckets and max_distance 128).
    rel = asarray(np.arange(-3 * max_distance, 3 * max_distance + 1))
    kw = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    assert_same(t5.relative_position_bucket(rel, **kw), lib.relative_position_bucket(rel, **kw), exact=True)
    grid = asarray(np.arange(12)[None, :] - np.arange(12)[:, None])  # (T_q, T_k): key_pos - query_pos
    assert_same(t5.relative_position_bucket(grid, **kw), lib.relative_position_bucket(grid, **kw), exact=True)
