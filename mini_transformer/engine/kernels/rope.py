r"""Fast RoPE: the same numbers as ``positional/rope.py``'s ``apply_rotary``, as matrix products in x's memory order.

The reference computes x \odot \cos + \mathrm{rot}(x) \odot \sin with ``rot`` built
by slicing and concatenating halves: one short loop per head and position.
Here ``rot`` is a matrix, \mathrm{rot}(x) = x R with R the signed permutation
of ``quarter_turn_matrix``, so the op is two products with the tables and one
small matrix product over rows of r channels. The work happens in x's memory
order, so a (B, H, T, d) view of a (B, T, H, d) array, as attention hands q and
k over, is neither copied nor transposed, and the output and the gradient keep
that layout; the tables are tiled over the heads once per call so each product
is one long loop.

The map is a rotation, so the backward is its transpose: R^\top = -R, so
gx = gy \odot \cos + (gy \odot \sin) R^\top on the rotated channels, gx = gy on the rest.
"""
import functools

from .. import backend
from ..autograd import op, raw
from ..backend import xp
from ..validate import check_rotary_width
from .layout import contiguous, memory_order


def _c_order_product(a, b):
    """``a * b`` (b broadcast) into a fresh C-order array, whatever a's layout."""
    out = xp.empty(xp.broadcast_shapes(a.shape, b.shape), dtype=xp.result_type(a.dtype, b.dtype))
    return xp.multiply(a, b, out=out)


def quarter_turn_matrix(r, interleaved=False, dtype="float32"):
    r"""The r x r matrix R with \mathrm{rot}(x) = x R: a signed permutation, one +1 and one -1 per pair.

    rotate-half pairs channel i with i + r/2: (x R)_i = -x_{i+r/2}, (x R)_{i+r/2} = x_i.
    Interleaved pairs 2i with 2i+1: (x R)_{2i} = -x_{2i+1}, (x R)_{2i+1} = x_{2i}.
    Either way R^\top = -R = R^{-1}, a quarter turn in every pair's plane.
    """
    R = xp.zeros((r, r), dtype=dtype)
    first = xp.arange(0, r, 2) if interleaved else xp.arange(r // 2)      # the first channel of each pair
    second = first + 1 if interleaved else first + r // 2                  # its partner
    R[second, first] = -1.0
    R[first, second] = 1.0
    return R


def _tiled(table, shape, p):
    """A table that broadcasts against ``shape`` = (..., T, r), in the axes order p, copied out over every
    axis from its first real one on: a (T, r) table becomes (T, H, r) for a (B, T, H, r) layout, so a
    product with it is one long loop instead of one loop of r channels per head."""
    t = table.reshape((1,) * (len(shape) - table.ndim) + table.shape).transpose(p)
    full = tuple(shape[i] for i in p)
    k = next((i for i in range(t.ndim) if t.shape[i] > 1), t.ndim - 1)    # the table's first real axis
    if t.shape[k:] == full[k:]:
        return t                                                            # nothing to repeat
    out = xp.empty(full[k:], dtype=table.dtype)
    out[...] = t[(0,) * k]                                                  # repeated by broadcasting
    return out


@functools.lru_cache(maxsize=32)
def _quarter_turn(r, interleaved, dtype, backend_name):
    """``quarter_turn_matrix``, built once per size, pairing, dtype and backend (never written to)."""
    return quarter_turn_matrix(r, interleaved, dtype)


def apply_rotary(x, cos, sin, interleaved=False):
    r"""``positional.rope.apply_rotary`` as matrix products in x's memory order (see the module docstring)."""
    cos, sin = raw(cos), raw(sin)
    a = x.data
    d, r = a.shape[-1], check_rotary_width(a, cos)
    p, back = memory_order(a)                        # work in x's memory order, copy only if it has none
    m = contiguous(a.transpose(p))                    # (..., d) C order, x's axes in order p
    shape_r = a.shape[:-1] + (r,)
    cos_m, sin_m = _tiled(cos, shape_r, p), _tiled(sin, shape_r, p)
    R = _quarter_turn(r, interleaved, str(a.dtype), backend.get_backend())

    def turn(b, w, M):
        r"""(b_{[:r]} \odot w) M (or b_{[:r]} M when w is None) as rows of r channels; b C-contiguous."""
        rows = b.reshape(-1, d)[:, :r]
        if w is not None:
            rows = _c_order_product(b[..., :r], w).reshape(-1, r)
        return (rows @ M).reshape(b.shape[:-1] + (r,))

    y = xp.empty(m.shape, dtype=a.dtype)             # C order in x's memory order
    xp.multiply(m[..., :r], cos_m, out=y[..., :r])
    turned = turn(m, None, R)                         # rot(x) = x R
    turned *= sin_m
    y[..., :r] += turned
    if r < d:
        y[..., r:] = m[..., r:]                       # the rest pass through

    def backward(gy):
        g = contiguous(gy.transpose(p))               # the gradient in x's memory order: one copy, if any
        gx = xp.empty(m.shape, dtype=gy.dtype)        # C order, so gx has x's layout
        xp.multiply(g[..., :r], cos_m, out=gx[..., :r])
        gx[..., :r] += turn(g, sin_m, -R)             # (g sin) R^T, and R^T = -R
        if r < d:
            gx[..., r:] = g[..., r:]
        return (gx.transpose(back),)
    return op(y.transpose(back), (x,), backward)
