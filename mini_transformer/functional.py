r"""Fused ops: a whole formula in one forward and one hand-derived backward.

A fused op builds one node in the graph instead of a dozen, which is where a
tiny model spends its time, and it lets the backward use the algebra that
makes it cheap (softmax's gradient needs only the output). Each docstring
derives the backward that sits under the forward.

``import mini_transformer.functional as F`` also gives the plain ops
(``F.relu``, ``F.gelu``, ``F.concat``, ``F.stack``, ``F.where``, ...).
"""
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
    safe_t = xp.where(valid, t, 0) if valid is not None else t
    if t.size and (int(safe_t.min()) < 0 or int(safe_t.max()) >= V):
        raise ValueError(f"cross_entropy: targets must lie in [0, {V}) (or equal ignore_index="
                         f"{ignore_index}); got values from {int(safe_t.min())} to {int(safe_t.max())}.")
    n = int(valid.sum()) if valid is not None else t.size
    if n == 0:
        raise ValueError(f"cross_entropy: every target equals ignore_index={ignore_index}, so there is "
                         "nothing to average.")
    shifted = a - a.max(axis=1, keepdims=True)
    lse = xp.log(xp.exp(shifted).sum(axis=1))    # (N,)
    rows = xp.arange(a.shape[0])
    nll = lse - shifted[rows, safe_t]            # (N,)
    if valid is not None:
        nll = nll * valid
    loss = nll.sum() / n

    def backward(gy):
        p = xp.exp(shifted - lse[:, None])
        p[rows, safe_t] -= 1
        if valid is not None:
            p *= valid[:, None]
        return ((p * (gy / n)).reshape(logits.shape),)
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


def _batch_rows(a, i, j, ndim):
    """Rows ``i:j`` of the first (batch) axis of ``a``, which broadcasts against ``ndim`` axes;
    all of ``a`` when it has no batch axis of its own (fewer axes, or size 1 there)."""
    return a[i:j] if a.ndim == ndim and a.shape[0] != 1 else a


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r"""Attention in one node: y = P V,  P = \mathrm{softmax}(S),  S = s\, Q K^\top + \text{bias}, masked.

    Shapes: q ``(B, H, T_q, d_head)``, k ``(B, H, T_k, d_head)``, v ``(B, H, T_k, d_v)``;
    ``bias`` (a Tensor or array) broadcasts to ``(B, H, T_q, T_k)``; ``mask`` is a boolean
    array broadcasting to the same shape, True where a query may look. ``s`` defaults to
    1/\sqrt{d_head}.

    Backward: gV = P^\top gy; gP = gy V^\top; gS = P \odot (gP - D) with
    D_i = \sum_j gP_{ij} P_{ij} = gy_i \cdot y_i (the row sum needs only the
    ``(T_q, d_v)`` output, not the ``(T_q, T_k)`` product); gQ = s\, gS K;
    gK = s\, gS^\top Q; g\text{bias} = gS summed to the bias's shape.

    Both passes cut the batch into blocks of rows that the cores take in turn
    (``backend.parallel_rows``), and each block runs every step, scores, softmax
    and P V, back to back while its rows are still in cache, instead of each step
    streaming the whole (B, H, T_q, T_k) array through memory again (FlashAttention
    works tile by tile for the same reason). P is kept whole for the backward;
    gS exists one block at a time.
    """
    d_head = q.shape[-1]
    if k.shape[-1] != d_head or q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "the (B, H, T, d_head) layout (k and v need the same T; q and k the same d_head).")
    s = (1.0 / d_head ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    p = xp.empty(qd.shape[:-1] + kd.shape[-2:-1], dtype=qd.dtype)    # (B, H, T_q, T_k) scores, then P
    bias = as_tensor(bias) if bias is not None else None
    if bias is not None and xp.broadcast_shapes(p.shape, bias.shape) != p.shape:
        raise ValueError(f"scaled_dot_product_attention: a bias of shape {bias.shape} does not broadcast to "
                         f"the scores' shape {p.shape}.")
    additive = xp.where(mask, 0.0, -xp.inf).astype(p.dtype) if mask is not None else None   # 0 or -inf
    qs = qd * s                                         # (B, H, T_q, d_head) scaling q is the cheaper side
    kT = contiguous(xp.swapaxes(kd, -1, -2))           # (B, H, d_head, T_k)
    vc = contiguous(vd)                                 # (B, H, T_k, d_v)
    y = xp.empty(qd.shape[:-1] + vd.shape[-1:], dtype=qd.dtype)      # (B, H, T_q, d_v)
    nd = p.ndim

    def forward_rows(i, j):
        pt = p[i:j]                                     # a block of batch rows, (j - i, H, T_q, T_k)
        xp.matmul(qs[i:j], kT[i:j], out=pt)
        if bias is not None:
            pt += _batch_rows(bias.data, i, j, nd)
        if additive is not None:
            pt += _batch_rows(additive, i, j, nd)
        pt -= pt.max(axis=-1, keepdims=True)            # softmax in place
        xp.exp(pt, out=pt)
        pt /= pt.sum(axis=-1, keepdims=True)
        xp.matmul(pt, vc[i:j], out=y[i:j])
    backend.parallel_rows(forward_rows, p.shape[0], p.size)

    def backward(gy):
        gy = contiguous(gy)
        vT, kc, qc = contiguous(xp.swapaxes(vd, -1, -2)), contiguous(kd), contiguous(qd)
        gq, gk, gv = xp.empty_like(qc), xp.empty_like(kc), xp.empty_like(vc)
        bias_grad = bias is not None and bias.requires_grad
        gs_all = xp.empty_like(p) if bias_grad else None      # kept whole only when the bias needs it

        def backward_rows(i, j):
            pt, g = p[i:j], gy[i:j]
            xp.matmul(xp.swapaxes(pt, -1, -2), g, out=gv[i:j])
            gs = xp.matmul(g, vT[i:j], out=gs_all[i:j] if bias_grad else None)   # gP, then gS in place
            gs -= (g * y[i:j]).sum(axis=-1, keepdims=True)   # D_i = gy_i . y_i
            gs *= pt
            xp.matmul(gs, kc[i:j], out=gq[i:j])
            xp.matmul(xp.swapaxes(gs, -1, -2), qc[i:j], out=gk[i:j])
        backend.parallel_rows(backward_rows, p.shape[0], p.size)
        gq *= s
        gk *= s
        return gq, gk, gv, (sum_to(gs_all, bias.shape) if bias_grad else None)
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
    """``a * b`` (b broadcast) into a fresh C-order array: the next op's products and reshapes need no copy."""
    out = xp.empty(xp.broadcast_shapes(a.shape, b.shape), dtype=xp.result_type(a.dtype, b.dtype))
    return xp.multiply(a, b, out=out)


def _swap_halves_product(a, w_1, w_2):
    r"""[a_2 \odot w_1, a_1 \odot w_2] for a = [a_1, a_2] split on the last axis, in C order, no concatenation."""
    h = a.shape[-1] // 2
    half = xp.broadcast_shapes(a[..., :h].shape, w_1.shape)
    out = xp.empty(half[:-1] + (2 * h,), dtype=xp.result_type(a.dtype, w_1.dtype))
    xp.multiply(a[..., h:], w_1, out=out[..., :h])
    xp.multiply(a[..., :h], w_2, out=out[..., h:])
    return out


def apply_rotary(x, cos, sin, interleaved=False):
    r"""RoPE as one op: y = x \odot \cos + \mathrm{rot}(x) \odot \sin.

    ``rot`` is the quarter turn of each pair: ``rotate_half`` (pairs i, i + d/2)
    or, with ``interleaved=True``, the original paper's pairs (2i, 2i+1).
    ``x`` is ``(..., T, d)``; ``cos`` and ``sin`` (arrays) broadcast against
    ``(..., T, r)``. When r < d only the first r channels turn and the rest pass
    through unchanged (partial rotary).

    The map is a rotation R, so the backward is its transpose, the rotation by
    the opposite angle. ``rot`` is skew-symmetric (\mathrm{rot}^\top = -\mathrm{rot}), so
    gx = gy \odot \cos - \mathrm{rot}(gy \odot \sin) on the rotated channels, gx = gy on the rest.
    """
    cos, sin = _raw(cos), _raw(sin)
    rot = rotate_interleaved_array if interleaved else rotate_half_array
    a = x.data
    r = cos.shape[-1]
    if r % 2 or r > a.shape[-1]:
        raise ValueError(f"apply_rotary: the tables cover {r} channels, but x has {a.shape[-1]}; the rotary "
                         f"width must be even and at most the head size.")
    a_rot = a[..., :r]                                   # (..., T, r) the channels that turn
    h = r // 2
    if interleaved:
        y = a_rot * cos + rot(a_rot) * sin
    else:  # the same sum, rotate_half written half by half, both terms in C order whatever a's layout
        neg_sin_1 = -sin[..., :h]                        # rot(a) sin = [-a_2 sin_1, a_1 sin_2]
        y = _c_order_product(a_rot, cos)
        y += _swap_halves_product(a_rot, neg_sin_1, sin[..., h:])
    if r < a.shape[-1]:
        y = xp.concatenate([y, a[..., r:]], axis=-1)     # (..., T, d) the rest pass through

    def backward(gy):
        g_rot = gy[..., :r]
        if interleaved:
            gx = g_rot * cos - rot(g_rot * sin)
        else:  # -rotate_half(g sin) = [g_2 sin_2, -g_1 sin_1]
            gx = _c_order_product(g_rot, cos)
            gx += _swap_halves_product(g_rot, sin[..., h:], neg_sin_1)
        return (xp.concatenate([gx, gy[..., r:]], axis=-1) if r < gy.shape[-1] else gx,)
    return _op(y, (x,), backward)


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
