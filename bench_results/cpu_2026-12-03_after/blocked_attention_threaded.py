r"""A trial, not in the library: the blocked attention with its tiles run for blocks of batch rows on every core
(``threads.parallel_rows``), as the whole-matrix kernel runs. Measured against the library's one-thread loop with
``ab.py`` (README.md): slower, so not kept. It gave the library's numbers (the blocked cases of
``tests/engine/test_kernels.py`` passed with two threads and small blocks while it stood in the library).
Everything but the threading is the library's ``kernels/blocked_attention.py``, imported from it.
"""
from mini_transformer.engine import kernels
from mini_transformer.engine.autograd import op, as_tensor
from mini_transformer.engine.backend import xp
from mini_transformer.engine.functional import check_attention_shapes, check_bias_shape
from mini_transformer.engine.kernels import attention as whole
from mini_transformer.engine.kernels.blocked_attention import _keys, _padded, _rows, _tiles
from mini_transformer.engine.kernels.layout import contiguous, empty_like_layout, sum_of_products
from mini_transformer.engine.kernels.threads import parallel_rows

blocked = kernels.blocked_attention


def attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    """The library's entry, with this file's kernel from ``BLOCKED_FROM`` keys on."""
    if k.shape[-2] >= blocked.BLOCKED_FROM and not return_weights:
        return scaled_dot_product_attention(q, k, v, bias, mask, scale)
    return whole.scaled_dot_product_attention(q, k, v, bias, mask, scale, return_weights)


def _batch(a, b0, b1):
    """Batch rows ``b0:b1`` (axis 0) of an array that broadcasts against the scores; all of it when broadcast there."""
    return a[b0:b1] if a.shape[0] != 1 else a


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r"""``functional.scaled_dot_product_attention`` over blocks of ``BLOCK`` keys (see the module docstring)."""
    if return_weights:
        return whole.scaled_dot_product_attention(q, k, v, bias, mask, scale, return_weights=True)
    check_attention_shapes(q, k, v)
    s = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    nd, T_q, T_k, dt = qd.ndim, qd.shape[-2], kd.shape[-2], qd.dtype
    rows = qd.shape[:-1]                                 # (B, H, T_q)
    block = max(1, int(blocked.BLOCK))
    bias = as_tensor(bias) if bias is not None else None
    if bias is not None:
        check_bias_shape(bias.shape, rows + (T_k,))
    bias_d = _padded(bias.data, nd) if bias is not None else None
    mask_d = _padded(mask, nd) if mask is not None else None
    qs = qd * s                                          # s Q: one scaling per query, not per score
    kT = contiguous(xp.swapaxes(kd, -1, -2))             # (B, H, d_head, T_k)
    vc = contiguous(vd)                                  # (B, H, T_k, d_v)
    tiles = _tiles(mask_d, T_q, T_k, block)
    work = qd.size // qd.shape[-1] * T_k                 # B H T_q T_k: the scores, for the threads' threshold

    def scores(b0, b1, j0, j1, i0, i1, full):
        """S_J = s Q K_J^T + bias_J, -inf where masked: one (b1 - b0, H, i1 - i0, j1 - j0) tile."""
        st = xp.matmul(qs[b0:b1, ..., i0:i1, :], kT[b0:b1, ..., j0:j1])
        if bias_d is not None:
            st += _rows(_keys(_batch(bias_d, b0, b1), j0, j1), i0, i1)
        if not full:
            xp.copyto(st, -xp.inf, where=~_rows(_keys(_batch(mask_d, b0, b1), j0, j1), i0, i1))   # no second tile
        return st

    m = xp.full(rows, -xp.inf, dtype=dt)                 # running max
    m_safe = xp.zeros(rows, dtype=dt)                    # m, with 0 where every key so far is masked
    l = xp.zeros(rows, dtype=dt)                         # running sum of e^{S - m}
    o = xp.zeros(rows + vd.shape[-1:], dtype=dt)         # running sum of e^{S - m} v

    def forward_rows(b0, b1):
        """Every tile, for the batch rows b0:b1 (their statistics are theirs alone: the cores take blocks)."""
        for j0, j1, i0, i1, full in tiles:
            st = scores(b0, b1, j0, j1, i0, i1, full)
            m_i = m[b0:b1, ..., i0:i1]
            m_new = xp.maximum(m_i, st.max(axis=-1))
            m_new_safe = xp.where(m_new == -xp.inf, 0.0, m_new).astype(dt)
            alpha = xp.exp(m_i - m_new_safe)             # rescales what came before to the new max (0 at first)
            st -= m_new_safe[..., None]
            p = xp.exp(st, out=st)
            l_i = l[b0:b1, ..., i0:i1]                   # views: updated in place
            l_i *= alpha
            l_i += p.sum(axis=-1)
            o_i = o[b0:b1, ..., i0:i1, :]
            o_i *= alpha[..., None]
            o_i += xp.matmul(p, vc[b0:b1, ..., j0:j1, :])
            m[b0:b1, ..., i0:i1], m_safe[b0:b1, ..., i0:i1] = m_new, m_new_safe
            del st, p                                    # the next tile is made before the old one is dropped
    parallel_rows(forward_rows, rows[0], work)
    inv_l = 1.0 / l                                      # inf for a row masked on every key: y = 0 * inf = NaN
    y = empty_like_layout(qd, rows + vd.shape[-1:])      # laid out like q
    xp.multiply(o, inv_l[..., None], out=y)
    del o

    def backward(gy):
        vT = contiguous(xp.swapaxes(vd, -1, -2))         # (B, H, d_v, T_k)
        D = sum_of_products(gy, y, axis=-1)              # (B, H, T_q)  D_i = gy_i . y_i
        gq = xp.zeros(qd.shape, dtype=dt)
        gk, gv = empty_like_layout(kd), empty_like_layout(vd)
        bias_grad = bias is not None and bias.requires_grad
        if bias_grad:
            gb = xp.zeros(bias_d.shape, dtype=dt)
            summed = tuple(i for i in range(nd) if bias_d.shape[i] == 1 and (rows + (T_k,))[i] != 1)
        if len(tiles) < len(range(0, T_k, block)):
            gk[...], gv[...] = 0, 0                      # keys that no query sees get no gradient

        def backward_rows(b0, b1):
            for j0, j1, i0, i1, full in tiles:
                st = scores(b0, b1, j0, j1, i0, i1, full)
                st -= m_safe[b0:b1, ..., i0:i1, None]
                p = xp.exp(st, out=st)
                p *= inv_l[b0:b1, ..., i0:i1, None]      # P_J, recomputed, for the queries that see J
                g = gy[b0:b1, ..., i0:i1, :]
                xp.matmul(xp.swapaxes(p, -1, -2), g, out=gv[b0:b1, ..., j0:j1, :])
                gs = xp.matmul(g, vT[b0:b1, ..., j0:j1])   # gP_J
                gs -= D[b0:b1, ..., i0:i1, None]
                gs *= p                                  # gS_J = P_J (gP_J - D)
                gq[b0:b1, ..., i0:i1, :] += xp.matmul(gs, kT[b0:b1, ..., j0:j1].swapaxes(-1, -2))
                xp.matmul(xp.swapaxes(gs, -1, -2), qd[b0:b1, ..., i0:i1, :], out=gk[b0:b1, ..., j0:j1, :])
                if bias_grad:
                    part = gs.sum(axis=summed, keepdims=True) if summed else gs
                    target = _batch(gb, b0, b1)
                    target = target if bias_d.shape[-2] == 1 else target[..., i0:i1, :]
                    if bias_d.shape[-1] == 1:
                        target += part
                    else:
                        target[..., j0:j1] = part
                del st, p, gs
        if bias_grad and bias_d.shape[0] == 1 and rows[0] > 1:
            backward_rows(0, rows[0])                    # one bias gradient summed over the batch: one thread
        else:
            parallel_rows(backward_rows, rows[0], work)
        gq *= s
        gk *= s
        return gq, gk, gv, (gb.reshape(bias.shape) if bias_grad else None)
    parents = (q, k, v, bias) if bias is not None else (q, k, v)
    return op(y, parents, backward)
