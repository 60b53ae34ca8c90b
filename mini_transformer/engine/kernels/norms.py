r"""Fast layer norm and RMS norm: the same numbers as ``functional.layer_norm`` and ``functional.rms_norm``.

The reference writes each mean as ``.mean(axis=-1)``, a reduction over a short
last axis, which is one of NumPy's slower loops, and forms each product before
summing it. Here a row mean is a matrix-vector product with 1/N (BLAS does
the same sums several times faster), a row sum of products is one ``einsum``
pass with no temporary (``layout.sum_of_products``), and the centred input is
scaled in place.
"""
from ..autograd import op, as_tensor
from ..backend import xp
from .layout import sum_of_products


def _row_dot(a, w):
    r"""\sum_j a_{..., j} w_j for every row, kept as a trailing axis of size 1: one matrix-vector product.

    A reduction over a short last axis is one of NumPy's slower loops; BLAS does the same sums
    several times faster, and a mean is the dot with w = 1/N.
    """
    n = a.shape[-1]
    return (a.reshape(-1, n) @ w).reshape(a.shape[:-1] + (1,))


def _row_sum_of_products(a, b):
    r"""\sum_j a_{..., j} b_{..., j} for every row, kept as a trailing axis of size 1 (``layout.sum_of_products``)."""
    return sum_of_products(a, b, axis=-1)[..., None]


def _column_sum(a):
    """Sum over every axis but the last, as one vector-matrix product."""
    rows = a.reshape(-1, a.shape[-1])
    return xp.ones(rows.shape[0], dtype=a.dtype) @ rows


def layer_norm(x, weight, bias, eps=1e-5):
    r"""``functional.layer_norm`` with row sums as BLAS products and no temporaries (see the module docstring)."""
    a = x.data
    N = a.shape[-1]
    mean_w = xp.full(N, 1.0 / N, dtype=a.dtype)         # row means as products with 1/N
    xhat = a - _row_dot(a, mean_w)                       # centred, then scaled in place
    r = 1.0 / xp.sqrt(_row_sum_of_products(xhat, xhat) * (1.0 / N) + eps)
    xhat *= r
    weight, bias = as_tensor(weight), as_tensor(bias)

    def backward(gy):
        g = gy * weight.data
        m2 = _row_sum_of_products(g, xhat) * (1.0 / N)  # mean(g * xhat)
        g -= _row_dot(g, mean_w)
        g -= xhat * m2
        g *= r
        gw = sum_of_products(gy.reshape(-1, N), xhat.reshape(-1, N), axis=0)   # \sum_rows gy * xhat
        return g, gw, _column_sum(gy)
    y = xhat * weight.data
    y += bias.data
    return op(y, (x, weight, bias), backward)


def rms_norm(x, weight, eps=1e-6):
    r"""``functional.rms_norm`` with row sums of products by ``einsum`` (see the module docstring)."""
    a = x.data
    N = a.shape[-1]
    r = 1.0 / xp.sqrt(_row_sum_of_products(a, a) * (1.0 / N) + eps)
    xhat = a * r
    weight = as_tensor(weight)

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - xhat * (_row_sum_of_products(g, xhat) * (1.0 / N)))
        return gx, sum_of_products(gy.reshape(-1, N), xhat.reshape(-1, N), axis=0)
    return op(xhat * weight.data, (x, weight), backward)
