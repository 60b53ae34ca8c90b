r"""Array helpers the fast kernels share: memory order, and sums of products without a temporary."""
from .. import backend
from ..backend import xp


def contiguous(a):
    r"""``a`` in C order. NumPy's stacked matmul can fall off BLAS onto a much slower loop when its *second*
    operand is a transposed view, so a fast kernel passes every transpose that feeds a product on the right
    through here first (one copy, and none when ``a`` is C-contiguous already)."""
    return a if a.flags.c_contiguous else xp.ascontiguousarray(a)


def memory_order(a):
    """Axes p such that ``a.transpose(p)`` is C-contiguous with the last axis still last (the identity when
    ``a`` has no such order), and the inverse permutation, which turns the transposed array back."""
    p = tuple(sorted(range(a.ndim - 1), key=lambda i: -a.strides[i])) + (a.ndim - 1,)
    if not a.transpose(p).flags.c_contiguous:
        p = tuple(range(a.ndim))
    return p, tuple(sorted(range(a.ndim), key=p.__getitem__))


def empty_like_layout(a, shape=None):
    """An uninitialised array of ``shape`` (a's own by default) whose memory order is a's (``memory_order``).

    A (B, H, T, d_head) result laid out as (B, T, H, d_head), like the q, k and v
    attention was given, turns back into (B, T, d_model) with no copy.
    """
    shape = a.shape if shape is None else shape
    p, back = memory_order(a)
    return xp.empty(tuple(shape[i] for i in p), dtype=a.dtype).transpose(back)


def sum_of_products(a, b, axis=-1):
    r"""\sum a \odot b over the last axis (``axis=-1``: one number per row) or, for two 2-D arrays,
    over the rows (``axis=0``: one number per column).

    On the CPU ``einsum`` multiplies and adds in one pass with no ``a * b``
    temporary. CuPy plans an ``einsum`` on the host at every call, which costs
    more than the kernel it saves, so on a GPU it is the product and then the sum.
    """
    if axis not in (-1, 0):
        raise ValueError(f"sum_of_products: axis must be -1 (rows) or 0 (columns), got {axis}.")
    if backend.get_backend() == "cupy":
        return (a * b).sum(axis=axis)
    return xp.einsum("...j,...j->..." if axis == -1 else "ij,ij->j", a, b)
