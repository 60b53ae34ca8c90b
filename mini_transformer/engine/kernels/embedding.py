r"""Fast embedding lookup: the same numbers as ``functional.embedding``, with a sorted gradient.

The reference's backward adds each looked-up row's gradient into the table
with ``add.at``, which visits the elements one by one. Here the ids are
sorted, so each id's rows sit next to each other; ``add.reduceat`` sums every
run of equal ids in one pass, and each distinct row of the table is written
once. (CuPy has no ``reduceat``; on a GPU this is the reference's scatter-add.)
"""
from .. import backend
from ..autograd import op
from ..backend import xp


def embedding(weight, ids):
    r"""``functional.embedding``: row ``ids[...]`` of ``weight``; the backward adds the rows per id after sorting."""
    def backward(gy):
        gw = xp.zeros(weight.shape, dtype=gy.dtype)
        if backend.get_backend() == "numpy":
            _sorted_scatter_add(gw, ids, gy)
        else:
            backend.scatter_add(gw, ids, gy)
        return (gw,)
    return op(weight.data[ids], (weight,), backward)


def _sorted_scatter_add(target, ids, rows):
    """``target[ids] += rows`` for integer ids into the first axis, repeated ids adding up."""
    if ids.size == 0:
        return
    ids = ids.reshape(-1)                                     # (n,)
    rows = rows.reshape((ids.size,) + target.shape[1:])       # (n, d)
    order = xp.argsort(ids, kind="stable")
    ids = ids[order]                                          # sorted, equal ids side by side
    starts = xp.flatnonzero(xp.concatenate((xp.ones(1, dtype=bool), ids[1:] != ids[:-1])))   # each run's first row
    target[ids[starts]] += xp.add.reduceat(rows[order], starts, axis=0)
