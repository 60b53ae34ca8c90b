r"""Attention in blocks of keys: ``functional.scaled_dot_product_attention``'s numbers in T x block memory.

``kernels/attention.py`` keeps the whole ``(B, H, T_q, T_k)`` matrix P for its
backward, so its memory grows as T^2. This kernel never holds more than one
``(B, H, T_q, block)`` tile of scores (FlashAttention's scheme, on one thread):

Forward, the online softmax. For each block of keys J, with scores
S_J = s\, Q K_J^\top + \text{bias}_J (masked entries -\infty), keep per query row
a running max m, a running sum \ell and a running output o:

.. math::
    m' = \max(m, \max_{j \in J} S_{ij}), \quad
    \ell' = e^{m - m'} \ell + \sum_{j \in J} e^{S_{ij} - m'}, \quad
    o' = e^{m - m'} o + \sum_{j \in J} e^{S_{ij} - m'} v_j,

and y = o / \ell at the end. Subtracting the running max keeps every exponent
at or below 0, so scores past e^x's overflow (709 in float64, 88 in float32)
stay finite. A row whose keys so far are all masked has m = -\infty; the
exponents then use 0 in its place, so that row contributes nothing yet instead
of -\infty - (-\infty) = NaN. A row masked on every key ends with \ell = 0 and
y = 0/0 = NaN, as the reference's softmax of a row of -\infty gives.

Saved for the backward: the row statistics m and 1/\ell, ``(B, H, T_q)`` each
(together the row's log-sum-exp m + \log \ell; kept as two numbers so that
float32 does not round m + \log\ell at the scores' magnitude).

Backward, tile by tile: recompute P_J = e^{S_J - m} / \ell from q, k and the
bias and mask tiles, then gV_J = P_J^\top gy; gP_J = gy V_J^\top;
gS_J = P_J \odot (gP_J - D) with D_i = gy_i \cdot y_i; gQ \mathrel{+}= s\, gS_J K_J;
gK_J = s\, gS_J^\top Q; g\text{bias} gets gS_J summed to the bias's shape.

Under a mask, a tile runs only the queries that may see at least one of its
keys (``_tiles``): under a causal mask the queries before a block of keys see
none of it, so about half the tiles' rows are skipped. A skipped row's every
score would be -\infty: its running max, sum and output would come out of the
update unchanged (times e^0 = 1, plus 0), and its share of every gradient would
be 0, so skipping it changes no number. A tile whose rows may all see all of its
keys skips the mask.

With ``sinks`` (one logit s_h per head, ``kernels/attention.py`` derives its
gradient) the sink is a key that every query sees before the first tile, with
score s_h and value 0: the running state starts at m = s_h, \ell = e^{s_h - m} = 1,
o = 0 instead of m = -\infty, \ell = 0, o = 0, and the tiles run unchanged. A
row masked on every key then ends with y = 0 / 1 = 0, all its weight on the
sink. Its share p_{\text{sink}} = e^{s_h - m} / \ell is kept for g s_h.

``return_weights=True`` needs P whole, which blocks cannot give: that call goes
to ``kernels/attention.py``. ``attention`` below is the entry of the fast set:
this kernel from ``BLOCKED_FROM`` keys on, the whole-matrix kernel below it.
"""
from ..autograd import op, as_tensor
from ..backend import xp
from ..functional import check_attention_shapes, check_bias_shape
from ..validate import check_mask
from . import attention as whole
from .layout import contiguous, empty_like_layout, sum_of_products

BLOCK = 128           # keys per tile (see ``attention`` for how it and BLOCKED_FROM were chosen)
BLOCKED_FROM = 256    # the fast set runs this kernel when T_k is at least this


def attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, sinks=None):
    r"""The fast set's attention: in blocks of keys (this file) from ``BLOCKED_FROM`` keys on, else whole.

    The rule: while P is small the whole-matrix kernel, which spreads its rows over the kernel threads, is the
    faster one; from ``BLOCKED_FROM`` (256) keys on the blocks of ``BLOCK`` (128) keys win, since each tile runs
    only the queries that see one of its keys and the scores held are T x block instead of T^2.
    ``return_weights=True`` always takes the whole kernel, the only one that has P whole. The paired trials
    that chose both constants, and the command that ran them, are in ``bench_results/cpu_2026-12-03_after/``.
    """
    if k.shape[-2] >= BLOCKED_FROM and not return_weights:
        return scaled_dot_product_attention(q, k, v, bias, mask, scale, sinks=sinks)
    return whole.scaled_dot_product_attention(q, k, v, bias, mask, scale, return_weights, sinks=sinks)


def _padded(a, ndim):
    """``a`` with size-1 axes in front, as broadcasting against ``ndim`` axes adds them."""
    return a.reshape((1,) * (ndim - a.ndim) + tuple(a.shape))


def _keys(a, j0, j1):
    """Keys ``j0:j1`` of an array that broadcasts against the scores; all of it when broadcast over the keys."""
    return a[..., j0:j1] if a.shape[-1] != 1 else a


def _rows(a, i0, i1):
    """Query rows ``i0:i1`` of an array that broadcasts against the scores; all of it when broadcast over them."""
    return a[..., i0:i1, :] if a.shape[-2] != 1 else a


def _tiles(mask, T_q, T_k, block):
    """``(j0, j1, i0, i1, full)`` for each block of keys ``j0:j1``: the queries ``i0:i1`` from the first to the last
    that may see one of its keys (in any batch and head), and whether every one of them may see all of them.
    A block no query may see is left out; without a mask every tile is every query, with no mask to apply."""
    tiles = []
    for j0 in range(0, T_k, block):
        j1 = min(j0 + block, T_k)
        if mask is None:
            tiles.append((j0, j1, 0, T_q, True))
            continue
        m = _keys(mask, j0, j1)                          # (..., T_q or 1, j1 - j0 or 1)
        seen = m.any(axis=-1).reshape(-1, m.shape[-2]).any(axis=0)   # (T_q or 1,): sees one of these keys
        if not bool(seen.any()):
            continue                                     # no query sees this block: nothing to add
        if seen.shape[0] == 1:
            i0, i1 = 0, T_q
        else:
            live = xp.flatnonzero(seen)
            i0, i1 = int(live[0]), int(live[-1]) + 1
        tiles.append((j0, j1, i0, i1, bool(_rows(m, i0, i1).all())))
    return tiles


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, sinks=None):
    r"""``functional.scaled_dot_product_attention`` over blocks of ``BLOCK`` keys (see the module docstring)."""
    if return_weights:
        return whole.scaled_dot_product_attention(q, k, v, bias, mask, scale, return_weights=True, sinks=sinks)
    check_attention_shapes(q, k, v)
    check_mask("scaled_dot_product_attention", mask)
    sinks = as_tensor(sinks) if sinks is not None else None
    sink = whole.sink_rows(sinks, q) if sinks is not None else None    # (B, H, T_q)
    s = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    nd, T_q, T_k, dt = qd.ndim, qd.shape[-2], kd.shape[-2], qd.dtype
    rows = qd.shape[:-1]                                 # (B, H, T_q)
    block = max(1, int(BLOCK))
    bias = as_tensor(bias) if bias is not None else None
    if bias is not None:
        check_bias_shape(bias.shape, rows + (T_k,))
    bias_d = _padded(bias.data, nd) if bias is not None else None
    mask_d = _padded(mask, nd) if mask is not None else None
    qs = qd * s                                          # s Q: one scaling per query, not per score
    kT = contiguous(xp.swapaxes(kd, -1, -2))             # (B, H, d_head, T_k)
    vc = contiguous(vd)                                  # (B, H, T_k, d_v)
    tiles = _tiles(mask_d, T_q, T_k, block)

    def scores(j0, j1, i0, i1, full):
        """S_J = s Q K_J^T + bias_J, -inf where masked: one (B, H, i1 - i0, j1 - j0) tile, queries i0:i1."""
        st = xp.matmul(qs[..., i0:i1, :], kT[..., j0:j1])
        if bias_d is not None:
            st += _rows(_keys(bias_d, j0, j1), i0, i1)
        if not full:
            xp.copyto(st, -xp.inf, where=~_rows(_keys(mask_d, j0, j1), i0, i1))   # in place: no second tile
        return st

    m = xp.full(rows, -xp.inf, dtype=dt)                 # running max
    if sink is not None:
        m[...] = sink                                    # the sink is the key seen first, with value 0
    m_safe = xp.where(m == -xp.inf, 0.0, m).astype(dt)   # m, with 0 where every key so far is masked
    l = xp.exp(m - m_safe)                               # running sum of e^{S - m}: the sink's 1 (0 without)
    o = xp.zeros(rows + vd.shape[-1:], dtype=dt)         # running sum of e^{S - m} v
    for j0, j1, i0, i1, full in tiles:
        st = scores(j0, j1, i0, i1, full)
        m_i = m[..., i0:i1]
        m_new = xp.maximum(m_i, st.max(axis=-1))
        m_new_safe = xp.where(m_new == -xp.inf, 0.0, m_new).astype(dt)
        alpha = xp.exp(m_i - m_new_safe)                 # rescales what came before to the new max (0 at first)
        st -= m_new_safe[..., None]
        p = xp.exp(st, out=st)
        l[..., i0:i1] = alpha * l[..., i0:i1] + p.sum(axis=-1)
        o_i = o[..., i0:i1, :]                           # a view: updated in place
        o_i *= alpha[..., None]
        o_i += xp.matmul(p, vc[..., j0:j1, :])
        m[..., i0:i1], m_safe[..., i0:i1] = m_new, m_new_safe
        del st, p                                        # the next tile is made before the old one is dropped
    inv_l = 1.0 / l                                      # inf for a row masked on every key: y = 0 * inf = NaN
    p_sink = xp.exp(sink - m_safe) * inv_l if sink is not None else None   # (B, H, T_q) the sink's share
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
        for j0, j1, i0, i1, full in tiles:
            st = scores(j0, j1, i0, i1, full)
            st -= m_safe[..., i0:i1, None]
            p = xp.exp(st, out=st)
            p *= inv_l[..., i0:i1, None]                 # P_J, recomputed, for the queries that see J
            g = gy[..., i0:i1, :]
            xp.matmul(xp.swapaxes(p, -1, -2), g, out=gv[..., j0:j1, :])
            gs = xp.matmul(g, vT[..., j0:j1])           # gP_J
            gs -= D[..., i0:i1, None]
            gs *= p                                      # gS_J = P_J (gP_J - D)
            gq[..., i0:i1, :] += xp.matmul(gs, kT[..., j0:j1].swapaxes(-1, -2))
            xp.matmul(xp.swapaxes(gs, -1, -2), qd[..., i0:i1, :], out=gk[..., j0:j1, :])
            if bias_grad:
                part = gs.sum(axis=summed, keepdims=True) if summed else gs
                target = gb if bias_d.shape[-2] == 1 else gb[..., i0:i1, :]
                if bias_d.shape[-1] == 1:
                    target += part
                else:
                    target[..., j0:j1] = part
            del st, p, gs
        gq *= s
        gk *= s
        gb = gb.reshape(bias.shape) if bias_grad else None
        g_sinks = whole.sink_gradient(p_sink, D, sinks) if sinks is not None and sinks.requires_grad else None
        return (gq, gk, gv) + ((gb,) if bias is not None else ()) + ((g_sinks,) if sinks is not None else ())
    parents = (q, k, v) + ((bias,) if bias is not None else ()) + ((sinks,) if sinks is not None else ())
    return op(y, parents, backward)
