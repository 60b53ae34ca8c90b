r"""Fast attention: the same numbers as ``functional.scaled_dot_product_attention``, laid out for NumPy's speed.

The reference composes scores, bias, mask, softmax and ``P V`` from the
autograd's elementary ops: five nodes and a few ``(B, H, T_q, T_k)`` temporaries.
This kernel is one node with a hand-derived backward, and three choices that
change no arithmetic:

* The scores are stored *key-major*: memory order (T_k, B, H, T_q), and ``p`` is
  a transposed view of that buffer. Softmax reduces over the keys; with the key
  axis outermost each max, sum and subtraction runs over whole rows of B H T_q
  numbers, instead of over B H T_q short rows of T_k numbers, where NumPy spends
  more time starting rows than computing. The products read and write the
  transposed views directly: BLAS takes either order.
* Both passes cut the batch into blocks of rows that the cores take in turn
  (``threads.parallel_rows``), and each block runs every step, scores, softmax
  and P V, back to back while its rows are still in cache (FlashAttention works
  tile by tile for the same reason). P is kept whole for the backward; gS exists
  one block at a time.
* y and the gradients are laid out in memory like the inputs they belong to
  (``layout.empty_like_layout``), so attention's (B, T, H, d_head) views go back
  to (B, T, d_model) without a copy.

Backward: gV = P^\top gy; gP = gy V^\top; gS = P \odot (gP - D) with
D_i = \sum_j gP_{ij} P_{ij} = gy_i \cdot y_i (the row sum needs only the
``(T_q, d_v)`` output, not the ``(T_q, T_k)`` product); gQ = s\, gS K;
gK = s\, gS^\top Q; g\text{bias} = gS summed to the bias's shape.

**Sinks** (``sinks``, one learned logit s_h per head, GPT-OSS): the softmax runs
over z_i = (S_{i1}, \dots, S_{iT_k}, s_h), its max taken over the scores and the
sink together; \tilde P_i = \mathrm{softmax}(z_i) and P_i is \tilde P_i without its last
entry p_{\text{sink}, i} = e^{s_h} / (e^{s_h} + \sum_j e^{S_{ij}}), so y = P V. The loss
reaches \tilde P only through P: g\tilde P_i = (gP_i, 0). Softmax's backward,
gz_{ij} = \tilde P_{ij} (g\tilde P_{ij} - \sum_{j'} g\tilde P_{ij'} \tilde P_{ij'}), then gives

.. math::
    gS = P \odot (gP - D), \quad D_i = \sum_{j \le T_k} gP_{ij} P_{ij} = gy_i \cdot y_i, \qquad
    g s_h = \sum_{b, i} p_{\text{sink}, bhi} (0 - D_{bhi}) = -\sum_{b, i} p_{\text{sink}, bhi}\, gy_{bhi} \cdot y_{bhi}:

gS is the formula above unchanged (D already omits the sink, whose value is 0), and
the sink's gradient needs only p_sink, ``(B, H, T_q)``, kept from the forward.
"""
from ..autograd import op, as_tensor, sum_to
from ..backend import xp
from ..functional import check_attention_shapes, check_bias_shape, check_sinks_shape
from ..validate import check_mask
from .layout import contiguous, empty_like_layout, sum_of_products
from .threads import parallel_rows


def _key_major(a, ndim):
    """An array that broadcasts against the scores (..., T_q, T_k), with its axes in the key-major order
    (T_k, ..., T_q) of attention's score buffer (size-1 axes added in front as broadcasting does)."""
    a = a.reshape((1,) * (ndim - a.ndim) + a.shape)
    return a.transpose((ndim - 1,) + tuple(range(ndim - 2)) + (ndim - 2,))


def _batch_block(a, i, j):
    """Rows ``i:j`` of the batch axis (axis 1) of a key-major array; all of it when it is broadcast there."""
    return a[:, i:j] if a.shape[1] != 1 else a


def sink_rows(sinks, q):
    """Each query's sink logit ``(..., H, T_q)`` in q's dtype: head h's s_h in every row of head h (a broadcast view)."""
    check_sinks_shape(sinks, q)
    return xp.broadcast_to(sinks.data.astype(q.dtype).reshape(q.shape[-3], 1), q.shape[:-1])


def sink_gradient(p_sink, D, sinks):
    r"""g s_h = -\sum_{b, i} p_{\text{sink}, bhi} D_{bhi} (the module docstring), summed to ``(H,)`` in the sinks' dtype."""
    H = sinks.shape[0]
    return -(p_sink * D).sum(axis=-1).reshape(-1, H).sum(axis=0).astype(sinks.dtype)


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, sinks=None):
    r"""``functional.scaled_dot_product_attention`` as one node (see the module docstring)."""
    check_attention_shapes(q, k, v)
    check_mask("scaled_dot_product_attention", mask)
    sinks = as_tensor(sinks) if sinks is not None else None
    sink = sink_rows(sinks, q) if sinks is not None else None          # (B, H, T_q)
    p_sink = xp.empty(q.shape[:-1], dtype=q.dtype) if sinks is not None else None   # (B, H, T_q) kept
    d_head = q.shape[-1]
    s = (1.0 / d_head ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    nd, T_q, T_k = qd.ndim, qd.shape[-2], kd.shape[-2]
    buf = xp.empty((T_k,) + qd.shape[:-2] + (T_q,), dtype=qd.dtype)  # (T_k, B, H, T_q) scores, then P
    to_scores = tuple(range(1, nd - 1)) + (nd - 1, 0)
    p = buf.transpose(to_scores)                        # (B, H, T_q, T_k) a view of buf
    pT = xp.swapaxes(p, -1, -2)                         # (B, H, T_k, T_q) another view
    bias = as_tensor(bias) if bias is not None else None
    if bias is not None:
        check_bias_shape(bias.shape, p.shape)
    bias_km = _key_major(bias.data, nd) if bias is not None else None
    additive = _key_major(xp.where(mask, 0.0, -xp.inf).astype(qd.dtype), nd) if mask is not None else None
    qT = xp.swapaxes(qd, -1, -2)                        # (B, H, d_head, T_q)
    qT = xp.multiply(qT, s, out=xp.empty(qT.shape, dtype=qd.dtype))  # s Q^T in C order; scaling q is cheaper
    y = empty_like_layout(qd, qd.shape[:-1] + vd.shape[-1:])        # (B, H, T_q, d_v), laid out like q

    def forward_rows(i, j):
        block = buf[:, i:j]                             # (T_k, j - i, H, T_q) a block of batch rows
        xp.matmul(kd[i:j], qT[i:j], out=pT[i:j])        # S^T = K (s Q)^T, written key-major
        if bias_km is not None:
            block += _batch_block(bias_km, i, j)
        if additive is not None:
            block += _batch_block(additive, i, j)
        top = block.max(axis=0)                         # (j - i, H, T_q) each query's max over its keys
        if sink is not None:
            top = xp.maximum(top, sink[i:j])            # over the keys and the sink together, as GPT-OSS takes it
        block -= top                                    # softmax over the keys, in place
        xp.exp(block, out=block)
        total = block.sum(axis=0)
        if sink is not None:
            e_sink = xp.exp(sink[i:j] - top)            # the sink's column, never stored in buf: it takes no value
            total += e_sink
            p_sink[i:j] = e_sink / total
        block *= 1.0 / total                            # one division per query, then products
        xp.matmul(p[i:j], vd[i:j], out=y[i:j])
    parallel_rows(forward_rows, p.shape[0], p.size)

    def backward(gy):
        gyT = contiguous(xp.swapaxes(gy, -1, -2))       # (B, H, d_v, T_q)
        gq, gk, gv = empty_like_layout(qd), empty_like_layout(kd), empty_like_layout(vd)   # each like its input
        D = contiguous(sum_of_products(gy, y, axis=-1))   # (B, H, T_q)  D_i = gy_i . y_i, in C order
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
        parallel_rows(backward_rows, p.shape[0], p.size)
        gq *= s
        gk *= s
        gb = sum_to(gs_all.transpose(to_scores), bias.shape) if bias_grad else None
        g_sinks = sink_gradient(p_sink, D, sinks) if sinks is not None and sinks.requires_grad else None
        return (gq, gk, gv) + ((gb,) if bias is not None else ()) + ((g_sinks,) if sinks is not None else ())
    parents = (q, k, v) + ((bias,) if bias is not None else ()) + ((sinks,) if sinks is not None else ())
    out = op(y, parents, backward)
    return (out, p) if return_weights else out
