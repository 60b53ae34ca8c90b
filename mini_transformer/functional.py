r"""Fused ops: a whole formula in one forward and one hand-derived backward.

A fused op builds one node in the graph instead of a dozen, which is where a
tiny model spends its time, and it lets the backward use the algebra that
makes it cheap (softmax's gradient needs only the output). Each docstring
derives the backward that sits under the forward.

``import mini_transformer.functional as F`` also gives the plain ops
(``F.relu``, ``F.gelu``, ``F.concat``, ``F.stack``, ``F.where``, ...).
"""
from . import backend
from .autograd import (Tensor, _op, _raw, as_tensor, concat, gelu, is_grad_enabled,  # noqa: F401
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


def layer_norm(x, weight, bias, eps=1e-5):
    r"""y = w \odot \hat x + b,  \hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}, over the last axis (size N).

    Backward, with g = gy \odot w and r = 1/\sqrt{\sigma^2+\epsilon}:
    gx = r (g - \mathrm{mean}(g) - \hat x\, \mathrm{mean}(g \odot \hat x)),
    gw = \sum gy \odot \hat x,  gb = \sum gy (over every axis but the last).
    """
    a = x.data
    mu = a.mean(axis=-1, keepdims=True)
    xc = a - mu
    r = 1.0 / xp.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * r
    weight, bias = as_tensor(weight), as_tensor(bias)

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        lead = tuple(range(gy.ndim - 1))
        return gx, (gy * xhat).sum(axis=lead), gy.sum(axis=lead)
    return _op(xhat * weight.data + bias.data, (x, weight, bias), backward)


def rms_norm(x, weight, eps=1e-6):
    r"""y = w \odot \hat x,  \hat x = x / \sqrt{\mathrm{mean}(x^2) + \epsilon}, over the last axis.

    Backward, with g = gy \odot w and r = 1/\sqrt{\mathrm{mean}(x^2)+\epsilon}:
    gx = r (g - \hat x\, \mathrm{mean}(g \odot \hat x)),  gw = \sum gy \odot \hat x.
    """
    a = x.data
    r = 1.0 / xp.sqrt((a * a).mean(axis=-1, keepdims=True) + eps)
    xhat = a * r
    weight = as_tensor(weight)

    def backward(gy):
        g = gy * weight.data
        gx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        return gx, (gy * xhat).sum(axis=tuple(range(gy.ndim - 1)))
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


def scaled_dot_product_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r"""Attention in one node: y = P V,  P = \mathrm{softmax}(S),  S = s\, Q K^\top + \text{bias}, masked.

    Shapes: q ``(B, H, T_q, d_head)``, k ``(B, H, T_k, d_head)``, v ``(B, H, T_k, d_v)``;
    ``bias`` (a Tensor or array) broadcasts to ``(B, H, T_q, T_k)``; ``mask`` is a boolean
    array broadcasting to the same shape, True where a query may look. ``s`` defaults to
    1/\sqrt{d_head}.

    Backward: gV = P^\top gy; gP = gy V^\top; gS = P \odot (gP - \sum_j gP_j P_j);
    gQ = s\, gS K; gK = s\, gS^\top Q; g\text{bias} = gS summed to the bias's shape.
    """
    d_head = q.shape[-1]
    if k.shape[-1] != d_head or q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "the (B, H, T, d_head) layout (k and v need the same T; q and k the same d_head).")
    s = (1.0 / d_head ** 0.5) if scale is None else scale
    qd, kd, vd = q.data, k.data, v.data
    scores = (qd @ xp.swapaxes(kd, -1, -2)) * s        # (B, H, T_q, T_k)
    if bias is not None:
        bias = as_tensor(bias)
        scores = scores + bias.data
    if mask is not None:
        scores = xp.where(mask, scores, xp.asarray(-xp.inf, dtype=scores.dtype))
    p = _softmax(scores, -1)                            # (B, H, T_q, T_k)
    y = p @ vd                                          # (B, H, T_q, d_v)

    def backward(gy):
        gv = xp.swapaxes(p, -1, -2) @ gy
        gp = gy @ xp.swapaxes(vd, -1, -2)
        gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))
        gq = (gs @ kd) * s
        gk = (xp.swapaxes(gs, -1, -2) @ qd) * s
        gb = sum_to(gs, bias.shape) if bias is not None and bias.requires_grad else None
        return gq, gk, gv, gb
    parents = (q, k, v, bias) if bias is not None else (q, k, v)
    out = _op(y, parents, backward)
    return (out, p) if return_weights else out


def rotate_half_array(a):
    r"""[x_1, x_2] \mapsto [-x_2, x_1] on the last axis (rotate-half pairing i with i + d/2)."""
    h = a.shape[-1] // 2
    return xp.concatenate([-a[..., h:], a[..., :h]], axis=-1)


def apply_rotary(x, cos, sin):
    r"""RoPE as one op: y = x \odot \cos + \mathrm{rotate\_half}(x) \odot \sin (rotate-half pairing).

    ``x`` is ``(..., T, d)``; ``cos`` and ``sin`` (arrays) broadcast against it.
    The map is a rotation R, so the backward is its transpose, the rotation by
    the opposite angle: gx = gy \odot \cos + \mathrm{rotate\_half}^\top(gy \odot \sin),
    with \mathrm{rotate\_half}^\top([a, b]) = [b, -a].
    """
    cos, sin = _raw(cos), _raw(sin)
    a = x.data
    y = a * cos + rotate_half_array(a) * sin

    def backward(gy):
        gs = gy * sin
        h = gs.shape[-1] // 2
        return (gy * cos + xp.concatenate([gs[..., h:], -gs[..., :h]], axis=-1),)
    return _op(y, (x,), backward)
