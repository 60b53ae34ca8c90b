r"""Fused ops: a whole formula in one forward and one hand-derived backward.

A fused op builds one node in the graph instead of a dozen, which is where a
tiny model spends its time, and it lets the backward use the algebra that
makes it cheap (softmax's gradient needs only the output). Each docstring
derives the backward that sits under the forward.

``import mini_transformer.functional as F`` also gives the plain ops
(``F.relu``, ``F.gelu``, ``F.concat``, ``F.stack``, ``F.where``, ...).
"""
import functools

from . import backend
from .autograd import (Tensor, _op, _raw, as_tensor, concat, contiguous, gelu, is_grad_enabled,  # noqa: F401
                       masked_fill, pad, relu, split, stack, sum_to, where)
from .backend import xp


def softmax(x, axis=-1):
    r"""y_i = e^{x_i} / \sum_j e^{x_j}.

    Backward: \partial y_i/\partial x_j = y_i(\delta_{ij} - y_j), so
    gx = y \odot (gy - \sum_j gy_j y_j).
    """
    y = _softmax(x.data, axis)

    def backward(gy):
        return (y * (gy - (gy * y).sum(axis=axis, keepdims=True)),)
    return _op(y, (x,), backward)


def _softmax(a, axis):
    e = xp.exp(a - a.max(axis=axis, keepdims=True))  # subtracting the max changes nothing but overflow
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    r"""y_i = x_i - \ln \sum_j e^{x_j}.

    Backward: \partial y_i/\partial x_j = \delta_{ij} - \mathrm{softmax}(x)_j, so
    gx = gy - \mathrm{softmax}(x) \sum_i gy_i.
    """
    a = x.data
    shifted = a - a.max(axis=axis, keepdims=True)
    y = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(gy):
        return (gy - xp.exp(y) * gy.sum(axis=axis, keepdims=True),)
    return _op(y, (x,), backward)


def cross_entropy(logits, targets, ignore_index=None):
    r"""Mean of -\ln \mathrm{softmax}(logits)_{target} over the targets that are not ``ignore_index``.

    ``logits`` is ``(..., V)``, ``targets`` an integer array of shape ``(...)``.
    Backward: for each counted row, gx = (\mathrm{softmax}(logits) - \mathrm{onehot}(target)) / n.
    """
    V = logits.shape[-1]
    t = _raw(targets)
    if t.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: targets have shape {t.shape}, expected {logits.shape[:-1]} "
                         f"(the logits' shape {logits.shape} without its last axis).")
    if t.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: targets must be integers, got dtype {t.dtype}.")
    a = logits.data.reshape(-1, V)               # (N, V)
    t = t.reshape(-1)                            # (N,)
    valid = t != ignore_index if ignore_index is not None else None
    n = int(valid.sum()) if valid is not None else t.size
    if valid is not None and n == t.size:
        valid = None                             # nothing ignored: no mask to apply
    safe_t = xp.where(valid, t, 0) if valid is not None else t
    if t.size and (int(safe_t.min()) < 0 or int(safe_t.max()) >= V):
        raise ValueError(f"cross_entropy: targets must lie in [0, {V}) (or equal ignore_index="
                         f"{ignore_index}); got values from {int(safe_t.min())} to {int(safe_t.max())}.")
    if n == 0:
        raise ValueError(f"cross_entropy: every target equals ignore_index={ignore_index}, so there is "
                         "nothing to average.")
    rows = xp.arange(a.shape[0])
    shifted = a - a[rows, a.argmax(axis=1)][:, None]   # the row max (argmax then pick: twice as fast as max)
    e = xp.exp(shifted)                          # (N, V) kept: the backward's softmax is e / \sum e
    total = e.sum(axis=1)                        # (N,)
    nll = xp.log(total) - shifted[rows, safe_t]  # (N,)
    if valid is not None:
        nll = nll * valid
    loss = nll.sum() / n

    def backward(gy):
        w = (gy / n) / total                     # (N,) each row's softmax scale times gy / n
        if valid is not None:
            w = w * valid
        g = e * w[:, None]                       # softmax(logits) gy / n on the counted rows
        g[rows, safe_t] -= (gy / n) * valid if valid is not None else gy / n
        return (g.reshape(logits.shape),)
    return _op(loss.astype(a.dtype), (logits,), backward)


def _row_dot(a, w):
    r"""\sum_j a_{..., j} w_j for every row, kept as a trailing axis of size 1: one matrix-vector product.

    A reduction over a short last axis is one of NumPy's slower loops; BLAS does the same sums
    several times faster, and a mean is the dot with w = 1/N.
    """
    n = a.shape[-1]
    return (a.reshape(-1, n) @ w).reshape(a.shape[:-1] + (1,))


def _row_sum_of_products(a, b):
    r"""\sum_j a_{..., j} b_{..., j} for every row, kept as a trailing axis of size 1 (``backend.sum_of_products``)."""
    return backend.sum_of_products(a, b, axis=-1)[..., None]


def _column_sum(a):
    """Sum over every axis but the last, as one vector-matrix product."""
    rows = a.reshape(-1, a.shape[-1])
    return xp.ones(rows.shape[0], dtype=a.dtype) @ rows


def token_nll(logits, targets):
    r"""-\ln \mathrm{softmax}(z)_{y} per position, in float64, on plain arrays (evaluation, no graph).

    ``logits`` is an array ``(..., V)``, ``targets`` integers ``(...)``; the result has the
    targets' shape. \ln \mathrm{softmax}(z)_v = z_v - m - \ln \sum_u e^{z_u - m} with m = \max_u z_u.
    """
    z = logits.astype("float64")
    z = z - z.max(axis=-1, keepdims=True)
    lse = xp.log(xp.exp(z).sum(axis=-1, keepdims=True))
    picked = xp.take_along_axis(z, targets[..., None], axis=-1)
    return (lse - picked)[..., 0]


def layer_norm(x, weight, bias, eps=1e-5):
    r"""y = w \odot \hat x + b,  \hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}, over the last axis (size N).

    Backward, with g = gy \odot w and r = 1/\sqrt{\sigma^2+\epsilon}:
    gx = r (g - \mathrm{mean}(g) - \hat x\, \mathrm{mean}(g \odot \hat x)),
    gw = \sum gy \odot \hat x,  gb = \sum gy (over every axis but the last).
    """
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
        gw = backend.sum_of_products(gy.reshape(-1, N), xhat.reshape(-1, N), axis=0)   # \sum_rows gy * xhat
        return g, gw, _column_sum(gy)
    y = xhat * weight.data
    y += bias.data
    return _op(y, (x, weight, bias), backward)


def rms_norm(x, weight, eps=1e-6):
    r"""y = w \odot \hat x,  \hat x = x / \sqrt{\mathrm{mean}(x^2) + \epsilon}, over the last axis.

    Backward, with g = gy \odot w and r = 1/\sqrt{\mathrm{mean}(x^2)+\epsilon}:
    gx = r (g - \hat x\, \mathrm{mean}(g \odot \hat x)),  gw = \sum gy \odot \hat x.
    """
    a = x.data
    N = a.shape[-1]
    r = 1.0 / xp.sqrt(_row_sum_of_products(a, a) * (1.0 / N) + eps)
    xhat = a * r
    weight = as_tensor(weight)

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - xhat * (_row_sum_of_products(g, xhat) * (1.0 / N)))
        return gx, backend.sum_of_products(gy.reshape(-1, N), xhat.reshape(-1, N), axis=0)
    return _op(xhat * weight.data, (x, weight), backward)


def dropout(x, p, rng, training=True):
    r"""Zero each element with probability p and scale the rest by 1/(1-p).   gx = gy \odot mask / (1-p)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), got {p}.")
    if not training or p == 0.0:
        return x
    scale = (rng.random(x.shape, dtype=x.dtype) >= p) / (1.0 - p)
    scale = scale.astype(x.dtype)

    def backward(gy):
        return (gy * scale,)
    return _op(x.data * scale, (x,), backward)


def _key_major(a, ndim):
    """An array that broadcasts against the scores (..., T_q, T_k), with its axes in the key-major order
    (T_k, ..., T_q) of attention's score buffer (size-1 axes added in front as broadcasting does)."""
    a = a.reshape((1,) * (ndim - a.ndim) + a.shape)
    return a.transpose((ndim - 1,) + tuple(range(ndim - 2)) + (ndim - 2,))


def _batch_block(a, i, j):
    """Rows ``i:j`` of the batch axis (axis 1) of a key-major array; all of it when it is broadcast there."""
    return a[:, i:j] if a.shape[1] != 1 else a


def _memory_order(a):
    """Axes p such that ``a.transpose(p)`` is C-contiguous with the last axis still last (the identity when
    ``a`` has no such order), and the inverse permutation, which turns the transposed array back."""
    p = tuple(sorted(range(a.ndim - 1), key=lambda i: -a.strides[i])) + (a.ndim - 1,)
    if not a.transpose(p).flags.c_contiguous:
        p = tuple(range(a.ndim))
    return p, tuple(sorted(range(a.ndim), key=p.__getitem__))


def _empty_like_layout(a, shape=None):
    """An uninitialised array of ``shape`` (a's own by default) whose memory order is a's (``_memory_order``).

    Attention writes its output and gradients this way: a (B, H, T, d_head) result laid out as
    (B, T, H, d_head), like the q, k and v it was given, turns back into (B, T, d_model) with no copy.
    """
    shape = a.shape if shape is None else shape
    p, back = _memory_order(a)
    return xp.empty(tuple(shape[i] for i in p), dtype=a.dtype).transpose(back)


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r"""Attention in one node: y = P V,  P = \mathrm{softmax}(S),  S = s\, Q K^\top + \text{bias}, masked.

    Shapes: q ``(B, H, T_q, d_head)``, k ``(B, H, T_k, d_head)``, v ``(B, H, T_k, d_v)``
    (any number of batch axes, at least one); ``bias`` (a Tensor or array) broadcasts
    to ``(B, H, T_q, T_k)``; ``mask`` is a boolean array broadcasting to the same
    shape, True where a query may look. ``s`` defaults to 1/\sqrt{d_head}.

    Backward: gV = P^\top gy; gP = gy V^\top; gS = P \odot (gP - D) with
    D_i = \sum_j gP_{ij} P_{ij} = gy_i \cdot y_i (the row sum needs only the
    ``(T_q, d_v)`` output, not the ``(T_q, T_k)`` product); gQ = s\, gS K;
    gK = s\, gS^\top Q; g\text{bias} = gS summed to the bias's shape.

    Three choices make it fast; none changes the arithmetic.

    * The scores are stored *key-major*: memory order (T_k, B, H, T_q), and ``p``
      is a transposed view of that buffer. Softmax reduces over the keys; with
      the key axis outermost, each max, sum and subtraction runs over whole rows
      of B H T_q numbers, instead of over B H T_q short rows of T_k numbers,
      where NumPy spends more time starting rows than computing (a row max over
      (16, 4, 64, 64) scores: 245 us key-last, 30 us key-major). The products
      read and write the transposed views directly: BLAS takes either order.
    * Both passes cut the batch into blocks of rows that the cores take in turn
      (``backend.parallel_rows``), and each block runs every step, scores,
      softmax and P V, back to back while its rows are still in cache
      (FlashAttention works tile by tile for the same reason). P is kept whole
      for the backward; gS exists one block at a time.
    * y and the gradients are laid out in memory like the inputs they belong to
      (``_empty_like_layout``), so attention's (B, T, H, d_head) views go back to
      (B, T, d_model) without a copy.
    """
    d_head = q.shape[-1]
    if k.shape[-1] != d_head or q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "the (B, H, T, d_head) layout (k and v need the same T; q and k the same d_head).")
    if q.ndim < 3:
        raise ValueError(f"scaled_dot_product_attention: q has shape {q.shape}; it needs at least one batch axis "
                         "in front of (T, d_head), e.g. (1, T, d_head).")
    s = (1.0 / d_head ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    nd, T_q, T_k = qd.ndim, qd.shape[-2], kd.shape[-2]
    buf = xp.empty((T_k,) + qd.shape[:-2] + (T_q,), dtype=qd.dtype)  # (T_k, B, H, T_q) scores, then P
    to_scores = tuple(range(1, nd - 1)) + (nd - 1, 0)
    p = buf.transpose(to_scores)                        # (B, H, T_q, T_k) a view of buf
    pT = xp.swapaxes(p, -1, -2)                         # (B, H, T_k, T_q) another view
    bias = as_tensor(bias) if bias is not None else None
    if bias is not None and xp.broadcast_shapes(p.shape, bias.shape) != p.shape:
        raise ValueError(f"scaled_dot_product_attention: a bias of shape {bias.shape} does not broadcast to "
                         f"the scores' shape {p.shape}.")
    bias_km = _key_major(bias.data, nd) if bias is not None else None
    additive = _key_major(xp.where(mask, 0.0, -xp.inf).astype(qd.dtype), nd) if mask is not None else None
    qT = xp.swapaxes(qd, -1, -2)                        # (B, H, d_head, T_q)
    qT = xp.multiply(qT, s, out=xp.empty(qT.shape, dtype=qd.dtype))  # s Q^T in C order; scaling q is cheaper
    y = _empty_like_layout(qd, qd.shape[:-1] + vd.shape[-1:])        # (B, H, T_q, d_v), laid out like q

    def forward_rows(i, j):
        block = buf[:, i:j]                             # (T_k, j - i, H, T_q) a block of batch rows
        xp.matmul(kd[i:j], qT[i:j], out=pT[i:j])        # S^T = K (s Q)^T, written key-major
        if bias_km is not None:
            block += _batch_block(bias_km, i, j)
        if additive is not None:
            block += _batch_block(additive, i, j)
        block -= block.max(axis=0)                      # softmax over the keys, in place
        xp.exp(block, out=block)
        block *= 1.0 / block.sum(axis=0)                # one division per query, then products
        xp.matmul(p[i:j], vd[i:j], out=y[i:j])
    backend.parallel_rows(forward_rows, p.shape[0], p.size)

    def backward(gy):
        gyT = contiguous(xp.swapaxes(gy, -1, -2))       # (B, H, d_v, T_q)
        gq, gk, gv = _empty_like_layout(qd), _empty_like_layout(kd), _empty_like_layout(vd)   # each like its input
        D = contiguous(backend.sum_of_products(gy, y, axis=-1))   # (B, H, T_q)  D_i = gy_i . y_i, in C order
        bias_grad = bias is not None and bias.requires_grad
        gs_all = xp.empty_like(buf) if bias_grad else None    # kept whole only when the bias needs it

        def backward_rows(i, j):
            g = gy[i:j]
            xp.matmul(pT[i:j], g, out=gv[i:j])          # gV = P^T gy
            gs = gs_all[:, i:j] if bias_grad else xp.empty_like(buf[:, i:j])   # (T_k, j - i, H, T_q)
            gsT = gs.transpose(to_scores[:-2] + (0, nd - 1))                    # (j - i, H, T_k, T_q)
            xp.matmul(vd[i:j], gyT[i:j], out=gsT)       # gP^T = V gy^T
            gs -= D[i:j]
            gs *= buf[:, i:j]                           # gS = P (gP - D), key-major
            xp.matmul(xp.swapaxes(gsT, -1, -2), kd[i:j], out=gq[i:j])
            xp.matmul(gsT, qd[i:j], out=gk[i:j])
        backend.parallel_rows(backward_rows, p.shape[0], p.size)
        gq *= s
        gk *= s
        return gq, gk, gv, (sum_to(gs_all.transpose(to_scores), bias.shape) if bias_grad else None)
    parents = (q, k, v, bias) if bias is not None else (q, k, v)
    out = _op(y, parents, backward)
    return (out, p) if return_weights else out


def linear(x, weight, bias=None):
    r"""y = x W + b in one node, the rows of every leading axis flattened into one 2-D product.

    Backward: gx = gy W^\top,  gW = x^\top gy,  gb = \sum_{rows} gy.
    """
    d_in, d_out = weight.shape
    if x.shape[-1] != d_in:
        raise ValueError(f"linear: input of shape {x.shape} does not fit a weight of shape {weight.shape}.")
    x2 = x.data.reshape(-1, d_in)                       # (rows, d_in)
    y = x2 @ weight.data                                # (rows, d_out)
    if bias is not None:
        y += bias.data

    def backward(gy):
        gy2 = gy.reshape(-1, d_out)
        gx = (gy2 @ weight.data.T).reshape(x.shape) if x.requires_grad else None
        return (gx, x2.T @ gy2, _column_sum(gy2)) if bias is not None else (gx, x2.T @ gy2)
    parents = (x, weight, bias) if bias is not None else (x, weight)
    return _op(y.reshape(x.shape[:-1] + (d_out,)), parents, backward)


def rotate_half_array(a):
    r"""[x_1, x_2] \mapsto [-x_2, x_1] on the last axis (rotate-half pairing i with i + d/2)."""
    h = a.shape[-1] // 2
    return xp.concatenate([-a[..., h:], a[..., :h]], axis=-1)


def rotate_interleaved_array(a):
    r"""(x_0, x_1, x_2, x_3, \dots) \mapsto (-x_1, x_0, -x_3, x_2, \dots): the quarter turn of pairs (2i, 2i+1)."""
    pairs = a.reshape(a.shape[:-1] + (a.shape[-1] // 2, 2))           # (..., d/2, 2)
    return xp.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(a.shape)


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
    r"""RoPE as one op: y = x \odot \cos + \mathrm{rot}(x) \odot \sin.

    ``rot`` is the quarter turn of each pair: ``rotate_half`` (pairs i, i + d/2)
    or, with ``interleaved=True``, the original paper's pairs (2i, 2i+1).
    ``x`` is ``(..., T, d)``; ``cos`` and ``sin`` (arrays) broadcast against
    ``(..., T, r)``. When r < d only the first r channels turn and the rest pass
    through unchanged (partial rotary).

    ``rot`` is linear, \mathrm{rot}(x) = x R with R the signed permutation of
    ``quarter_turn_matrix``, so the whole op is two products with the tables and
    one small matrix product over rows of r channels. (Swapping halves with
    slices is the same arithmetic, but it runs one short loop per head and
    position; the matrix product is several times faster.) The work happens in
    x's own memory order, so a (B, H, T, d) view of a (B, T, H, d) array, as
    attention hands q and k over, is neither copied nor transposed, and the
    output (and the gradient) keep that layout.

    The map is a rotation, so the backward is its transpose, the rotation by the
    opposite angle. R^\top = -R, so gx = gy \odot \cos + (gy \odot \sin) R^\top on the
    rotated channels, gx = gy on the rest.
    """
    cos, sin = _raw(cos), _raw(sin)
    a = x.data
    d, r = a.shape[-1], cos.shape[-1]
    if r % 2 or r > d:
        raise ValueError(f"apply_rotary: the tables cover {r} channels, but x has {d}; the rotary "
                         f"width must be even and at most the head size.")
    p, back = _memory_order(a)                        # work in x's memory order, copy only if it has none
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
    return _op(y.transpose(back), (x,), backward)


# ---------------------------------------------------------------------------
# Relative positions: from one score per distance to one score per (query, key)
# ---------------------------------------------------------------------------

def gather_distance(x, index):
    r"""y_{..., i, j} = x_{..., i, \mathrm{index}_{ij}}: pick, for each key j, the column of its distance.

    ``x`` is ``(..., T_q, R)`` (one score per query and relative distance, e.g.
    q \cdot a^K_r for Shaw's R = 2k + 1 clipped distances); ``index`` is an integer
    array ``(T_q, T_k)`` with entries in [0, R). The result is ``(..., T_q, T_k)``.
    This is how a relative score reaches the score matrix without ever building
    a ``(T_q, T_k, d_head)`` tensor.

    Backward: each x_{i,r} fed every y_{i,j} whose index is r, so
    gx_{..., i, r} = \sum_j gy_{..., i, j} [\mathrm{index}_{ij} = r], which is ``scatter_distance``.
    """
    idx = _check_distance_index("gather_distance", x, _raw(index), x.shape[-1])
    R = x.shape[-1]
    rows = xp.arange(idx.shape[0])[:, None]                # (T_q, 1)

    def backward(gy):
        return (_scatter_distance(gy, idx, R),)
    return _op(x.data[..., rows, idx], (x,), backward)


def scatter_distance(x, index, size):
    r"""y_{..., i, r} = \sum_j x_{..., i, j} [\mathrm{index}_{ij} = r]: add up, per query, the entries of each distance.

    ``x`` is ``(..., T_q, T_k)`` (e.g. attention probabilities), ``index`` an integer
    array ``(T_q, T_k)`` with entries in [0, ``size``); the result is
    ``(..., T_q, size)``. With x the probabilities this is how much attention
    each relative distance receives, so Shaw's value term
    \sum_j \alpha_{ij} a^V_{r_{ij}} becomes one ``(T_q, size) @ (size, d_head)`` product.

    It is ``gather_distance``'s transpose, and the backward is that gather:
    gx_{..., i, j} = gy_{..., i, \mathrm{index}_{ij}}.
    """
    idx = _check_distance_index("scatter_distance", x, _raw(index), size)
    if x.shape[-1] != idx.shape[1]:
        raise ValueError(f"scatter_distance: x has {x.shape[-1]} keys on its last axis but index has "
                         f"{idx.shape[1]} columns; they must match.")
    rows = xp.arange(idx.shape[0])[:, None]                # (T_q, 1)

    def backward(gy):
        return (gy[..., rows, idx],)
    return _op(_scatter_distance(x.data, idx, size), (x,), backward)


def _scatter_distance(a, idx, size):
    """The sum of ``scatter_distance`` on plain arrays, as one weighted bincount."""
    lead, (T_q, T_k) = a.shape[:-2], a.shape[-2:]
    n = 1
    for s in lead:
        n *= s
    row = xp.arange(n * T_q).reshape(n, T_q, 1)            # (n, T_q, 1) one row per (batch, head, query)
    flat = (row * size + idx[None]).reshape(-1)            # (n * T_q * T_k,) target cell of every entry
    out = xp.bincount(flat, weights=a.reshape(-1), minlength=n * T_q * size)
    return out.astype(a.dtype).reshape(lead + (T_q, size))


def _check_distance_index(name, x, idx, size):
    if idx.ndim != 2 or idx.dtype.kind not in "iu":
        raise ValueError(f"{name}: index must be a 2-D integer array (T_q, T_k), got shape {idx.shape} "
                         f"and dtype {idx.dtype}.")
    if x.ndim < 2 or x.shape[-2] != idx.shape[0]:
        raise ValueError(f"{name}: x has shape {x.shape}, but index has {idx.shape[0]} query rows; x must "
                         f"be (..., T_q, ...) with T_q={idx.shape[0]}.")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        raise ValueError(f"{name}: index values must lie in [0, {size}), got values from {int(idx.min())} "
                         f"to {int(idx.max())}.")
    return idx


def relative_shift(x):
    r"""Transformer-XL's relative shift: y_{..., i, j} = x_{..., i, j + T_q - 1 - i}.

    ``x`` is ``(..., T_q, L)`` whose column r holds distance d_{hi} - r, with
    d_{hi} the distance from the last query to the first key, and queries and
    keys at consecutive positions. Then column j + T_q - 1 - i of row i is the
    distance from query i to key j, so y is the score of (query i, key j).
    Entries whose column falls outside [0, L) (keys further in the future than
    x covers) hold a zero or a neighbouring row's value: the caller masks them.

    The trick: pad a zero column in front, read the ``(T_q, L+1)`` block as one
    flat row, drop its first T_q entries and cut the next T_q L into rows of L.
    Every row then starts one column further left than the row above. No
    index array is built.

    Backward: each y entry is one x entry (or the pad), all distinct, so gx is
    gy written back through the same flat view: place gy's T_q L entries after
    T_q zeros, reshape to ``(T_q, L+1)``, drop the pad column.
    """
    if x.ndim < 2:
        raise ValueError(f"relative_shift needs x of shape (..., T_q, L), got shape {x.shape}.")
    lead, (T_q, L) = x.shape[:-2], x.shape[-2:]
    padded = xp.concatenate([xp.zeros(lead + (T_q, 1), dtype=x.dtype), x.data], axis=-1)  # (..., T_q, L+1)
    y = padded.reshape(lead + (T_q * (L + 1),))[..., T_q:T_q + T_q * L].reshape(lead + (T_q, L))

    def backward(gy):
        flat = xp.zeros(lead + (T_q * (L + 1),), dtype=gy.dtype)
        flat[..., T_q:T_q + T_q * L] = gy.reshape(lead + (T_q * L,))
        return (flat.reshape(lead + (T_q, L + 1))[..., 1:],)
    return _op(y, (x,), backward)
