r"""Fused ops in their reference form: each formula as one node, its backward derived in the docstring.

A fused op builds one node in the graph instead of a dozen and lets the
backward use the algebra that makes it short (softmax's gradient needs only
its output). Each op here is the textbook equation written plainly: no
threads, no memory-order tricks, no in-place buffers. Attention is composed
from the autograd's elementary ops, so its backward is theirs.

Faster kernels with the same signatures and the same numbers live in
``mini_transformer/engine/kernels/``; a model picks one set or the other with
``GPTConfig.kernels`` (``"reference"``, the default, runs the code in this file).

``import mini_transformer.engine.functional as F`` also gives the plain ops
(``F.relu``, ``F.gelu``, ``F.concat``, ``F.stack``, ``F.where``, ...).
"""
from .autograd import (Tensor, op, raw, as_tensor, concat, gelu, is_grad_enabled,  # noqa: F401
                       masked_fill, pad, relu, split, stack, sum_to, where)
from . import backend
from .backend import xp
from .validate import check_mask


def softmax(x, axis=-1):
    r"""y_i = e^{x_i} / \sum_j e^{x_j}.

    Backward: \partial y_i/\partial x_j = y_i(\delta_{ij} - y_j), so
    gx = y \odot (gy - \sum_j gy_j y_j).
    """
    y = _softmax(x.data, axis)

    def backward(gy):
        return (y * (gy - (gy * y).sum(axis=axis, keepdims=True)),)
    return op(y, (x,), backward)


def _softmax(a, axis):
    e = xp.exp(a - a.max(axis=axis, keepdims=True))  # subtracting the max changes nothing but overflow
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    r"""y_i = x_i - \ln \sum_j e^{x_j}.

    Backward: \partial y_i/\partial x_j = \delta_{ij} - \mathrm{softmax}(x)_j, so
    gx = gy - \mathrm{softmax}(x) \sum_i gy_i.
    """
    y = _log_softmax(x.data, axis)

    def backward(gy):
        return (gy - xp.exp(y) * gy.sum(axis=axis, keepdims=True),)
    return op(y, (x,), backward)


def _log_softmax(a, axis):
    """``log_softmax`` on a plain array: the one place the engine's ops compute it (``cross_entropy``, ``token_nll``)."""
    shifted = a - a.max(axis=axis, keepdims=True)        # subtracting the max changes nothing but overflow
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def cross_entropy(logits, targets, ignore_index=None):
    r"""Mean of -\ln \mathrm{softmax}(logits)_{target} over the targets that are not ``ignore_index``.

    ``logits`` is ``(..., V)``, ``targets`` an integer array of shape ``(...)``.
    Backward: for each counted row, gx = (\mathrm{softmax}(logits) - \mathrm{onehot}(target)) / n.
    """
    a, safe_t, w = cross_entropy_rows(logits, targets, ignore_index)
    rows = xp.arange(a.shape[0])
    log_p = _log_softmax(a, axis=1)                      # (N, V)
    loss = -(log_p[rows, safe_t] * w).sum()

    def backward(gy):
        g = xp.exp(log_p)                                # (N, V) softmax
        g[rows, safe_t] -= 1.0                           # minus the one-hot target
        return ((g * (w * gy)[:, None]).reshape(logits.shape),)
    return op(loss.astype(a.dtype), (logits,), backward)


def cross_entropy_rows(logits, targets, ignore_index):
    r"""A cross-entropy's checked inputs: the logits as rows ``(N, V)``, the targets ``(N,)`` with ignored ones
    replaced by 0 (a safe index), and each row's weight in the mean ``(N,)``: 1/n, or 0 where ignored."""
    V = logits.shape[-1]
    t = raw(targets)
    if t.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: targets have shape {t.shape}, expected {logits.shape[:-1]} "
                         f"(the logits' shape {logits.shape} without its last axis).")
    if t.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: targets must be integers, got dtype {t.dtype}.")
    a = logits.data.reshape(-1, V)                       # (N, V)
    t = t.reshape(-1)                                    # (N,)
    counted = (t != ignore_index) if ignore_index is not None else xp.ones(t.shape, dtype=bool)
    n = int(counted.sum())
    safe_t = xp.where(counted, t, 0)
    if t.size and (int(safe_t.min()) < 0 or int(safe_t.max()) >= V):
        raise ValueError(f"cross_entropy: targets must lie in [0, {V}) (or equal ignore_index="
                         f"{ignore_index}); got values from {int(safe_t.min())} to {int(safe_t.max())}.")
    if n == 0:
        raise ValueError(f"cross_entropy: every target equals ignore_index={ignore_index}, so there is "
                         "nothing to average.")
    return a, safe_t, counted.astype(a.dtype) / n


def token_nll(logits, targets):
    r"""-\ln \mathrm{softmax}(z)_{y} per position, in float64, on plain arrays (evaluation, no graph).

    ``logits`` is an array ``(..., V)``, ``targets`` integers ``(...)``; the result has the
    targets' shape. \ln \mathrm{softmax}(z)_v = z_v - m - \ln \sum_u e^{z_u - m} with m = \max_u z_u.
    """
    log_p = _log_softmax(logits.astype("float64"), axis=-1)             # (..., V)
    return -xp.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]


def layer_norm(x, weight, bias, eps=1e-5):
    r"""y = w \odot \hat x + b,  \hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}, over the last axis.

    Backward, with g = gy \odot w and r = 1/\sqrt{\sigma^2+\epsilon}:
    gx = r (g - \mathrm{mean}(g) - \hat x\, \mathrm{mean}(g \odot \hat x)),
    gw = \sum gy \odot \hat x,  gb = \sum gy (over every axis but the last).
    """
    a = x.data
    weight, bias = as_tensor(weight), as_tensor(bias)
    xc = a - a.mean(axis=-1, keepdims=True)              # (..., N) centred: x - mu
    r = 1.0 / xp.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)   # (..., 1) one over the standard deviation
    xhat = xc * r                                        # (..., N)

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        return gx, sum_to(gy * xhat, weight.shape), sum_to(gy, bias.shape)
    return op(xhat * weight.data + bias.data, (x, weight, bias), backward)


def rms_norm(x, weight, eps=1e-6):
    r"""y = w \odot \hat x,  \hat x = x / \sqrt{\mathrm{mean}(x^2) + \epsilon}, over the last axis.

    Backward, with g = gy \odot w and r = 1/\sqrt{\mathrm{mean}(x^2)+\epsilon}:
    gx = r (g - \hat x\, \mathrm{mean}(g \odot \hat x)),  gw = \sum gy \odot \hat x.
    """
    a = x.data
    weight = as_tensor(weight)
    r = 1.0 / xp.sqrt((a * a).mean(axis=-1, keepdims=True) + eps)   # (..., 1)
    xhat = a * r

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        return gx, sum_to(gy * xhat, weight.shape)
    return op(xhat * weight.data, (x, weight), backward)


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
    return op(x.data * scale, (x,), backward)


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, sinks=None):
    r"""y = P V,  P = \mathrm{softmax}(S),  S = s\, Q K^\top + \text{bias},  masked where ``mask`` is False.

    Shapes: q ``(B, H, T_q, d_head)``, k ``(B, H, T_k, d_head)``, v ``(B, H, T_k, d_v)``
    (any number of batch axes, at least one); ``bias`` (a Tensor or array)
    broadcasts to ``(B, H, T_q, T_k)``; ``mask`` is a boolean array broadcasting
    to the same shape, True where a query may look (any other dtype is refused:
    ``validate.check_mask``). s defaults to 1/\sqrt{d_head}.
    Composed from elementary ops, so its backward is theirs. With
    ``return_weights`` it also returns P, a ``(B, H, T_q, T_k)`` array.

    ``sinks``, a Tensor ``(H,)`` (H = q.shape[-3]), gives each head a learned sink
    logit s_h (GPT-OSS): a column that joins every row's softmax and takes no value,

    .. math:: P_{ij} = \frac{e^{S_{ij}}}{e^{s_h} + \sum_{j'} e^{S_{ij'}}},

    so a row's weights sum to 1 - p_{\text{sink}}, and a row masked on every key
    puts all its weight on the sink: y = 0 there, not NaN.
    """
    check_attention_shapes(q, k, v)
    p = attention_weights(q, k, bias, mask, scale, sinks)  # (B, H, T_q, T_k)
    y = p @ v                                           # (B, H, T_q, d_v)
    return (y, p.data) if return_weights else y


def attention_weights(q, k, bias=None, mask=None, scale=None, sinks=None):
    r"""P = \mathrm{softmax}(s\, Q K^\top + \text{bias}), masked where ``mask`` is False: ``(B, H, T_q, T_k)``.

    With ``sinks`` ``(H,)``, the softmax runs over T_k + 1 columns, the last one
    head h's logit s_h in every row, and that column is dropped afterwards.
    """
    check_attention_shapes(q, k)
    check_mask("scaled_dot_product_attention", mask)
    if sinks is not None:
        check_sinks_shape(sinks, q)
    s = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    scores = (q @ k.transpose(_swap_last(k.ndim))) * s  # (B, H, T_q, T_k)
    if bias is not None:
        check_bias_shape(bias.shape, scores.shape)
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is None:
        return softmax(scores, axis=-1)                 # each row sums to 1
    H = q.shape[-3]
    column = (as_tensor(sinks).astype(scores.dtype).reshape(H, 1, 1)  # (H, 1, 1) in the scores' dtype
              + xp.zeros(scores.shape[:-1] + (1,), dtype=scores.dtype))  # (B, H, T_q, 1) one per row
    p = softmax(concat([scores, column], axis=-1), axis=-1)  # (B, H, T_q, T_k + 1) the max taken over both
    return p[..., :-1]                                  # the sink takes no value: rows sum to 1 - p_sink


def check_sinks_shape(sinks, q):
    """Raise a sentence unless ``sinks`` holds one logit per head of q, shape ``(H,)`` with H = q.shape[-3]."""
    H = q.shape[-3]
    if tuple(sinks.shape) != (H,):
        raise ValueError(f"scaled_dot_product_attention: sinks has shape {tuple(sinks.shape)}, but it needs one "
                         f"logit per head, shape ({H},): H = q.shape[-3] = {H} for q of shape {tuple(q.shape)}.")


def _swap_last(ndim):
    """The axes order that swaps the last two: K^T for a stack of matrices."""
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def check_attention_shapes(q, k, v=None):
    """Raise a sentence unless q, k (and v) fit the ``(..., T, d_head)`` layout with at least one batch axis."""
    v = k if v is None else v
    if k.shape[-1] != q.shape[-1] or q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "the (B, H, T, d_head) layout (k and v need the same T; q and k the same d_head).")
    if q.ndim < 3:
        raise ValueError(f"scaled_dot_product_attention: q has shape {q.shape}; it needs at least one batch axis "
                         "in front of (T, d_head), e.g. (1, T, d_head).")


def check_bias_shape(bias_shape, scores_shape):
    """Raise a sentence unless a score bias broadcasts to the scores' shape without widening it."""
    try:
        fits = xp.broadcast_shapes(scores_shape, bias_shape) == tuple(scores_shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"scaled_dot_product_attention: a bias of shape {tuple(bias_shape)} does not broadcast to "
                         f"the scores' shape {tuple(scores_shape)}.")


def linear(x, weight, bias=None):
    r"""y = x W + b in one node, the rows of every leading axis flattened into one 2-D product.

    Backward: gx = gy W^\top,  gW = x^\top gy,  gb = \sum_{rows} gy.
    """
    d_in, d_out = check_linear_shapes(x, weight)
    x2 = x.data.reshape(-1, d_in)                       # (rows, d_in)
    y = x2 @ weight.data                                # (rows, d_out)
    if bias is not None:
        y = y + bias.data

    def backward(gy):
        gy2 = gy.reshape(-1, d_out)                     # (rows, d_out)
        gx = (gy2 @ weight.data.T).reshape(x.shape) if x.requires_grad else None
        gW = x2.T @ gy2
        return (gx, gW, gy2.sum(axis=0)) if bias is not None else (gx, gW)
    parents = (x, weight, bias) if bias is not None else (x, weight)
    return op(y.reshape(x.shape[:-1] + (d_out,)), parents, backward)


def check_linear_shapes(x, weight):
    """(d_in, d_out) of ``weight``; a sentence unless x's last axis is d_in."""
    d_in, d_out = weight.shape
    if x.shape[-1] != d_in:
        raise ValueError(f"linear: input of shape {x.shape} does not fit a weight of shape {weight.shape}.")
    return d_in, d_out


def qkv_projection(x, weight, bias=None):
    r"""Queries, keys and values from one product: [q \mid k \mid v] = x W_{qkv} + b, cut into three ``(..., d_model)``."""
    return split(linear(x, weight, bias), 3, axis=-1)


def embedding(weight, ids):
    r"""Row ``ids[...]`` of the table ``weight`` for every id: ``(..., d_model)``.

    Backward: each id's row of the table collects the gradients of every place
    that looked it up (a scatter-add; an id used twice gets both).
    """
    return weight[ids]


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
    idx = _check_distance_index("gather_distance", x, raw(index), x.shape[-1])
    R = x.shape[-1]
    rows = xp.arange(idx.shape[0])[:, None]                # (T_q, 1)

    def backward(gy):
        return (_scatter_distance(gy, idx, R),)
    return op(x.data[..., rows, idx], (x,), backward)


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
    idx = _check_distance_index("scatter_distance", x, raw(index), size)
    if x.shape[-1] != idx.shape[1]:
        raise ValueError(f"scatter_distance: x has {x.shape[-1]} keys on its last axis but index has "
                         f"{idx.shape[1]} columns; they must match.")
    rows = xp.arange(idx.shape[0])[:, None]                # (T_q, 1)

    def backward(gy):
        return (gy[..., rows, idx],)
    return op(_scatter_distance(x.data, idx, size), (x,), backward)


def _scatter_distance(a, idx, size):
    """The sum of ``scatter_distance`` on plain arrays: each entry added into the column of its distance."""
    out = xp.zeros(a.shape[:-1] + (size,), dtype=a.dtype)  # (..., T_q, size)
    rows = xp.arange(idx.shape[0])[:, None]                # (T_q, 1)
    backend.scatter_add(out, (Ellipsis, rows, idx), a)     # out[..., i, idx[i, j]] += a[..., i, j], repeats adding up
    return out


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
    return op(y, (x,), backward)
