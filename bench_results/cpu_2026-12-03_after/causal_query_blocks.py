r"""A trial, not in the library: below ``BLOCKED_FROM`` keys, the whole-matrix attention run once per block of
queries, each over only the keys its queries may see (under a causal mask the first half of the queries sees the
first half of the keys), glued back with the autograd's ``getitem`` and ``concat``. Measured with ``ab.py``.
"""
from mini_transformer.engine import autograd, kernels
from mini_transformer.engine.backend import xp

QUERY_BLOCKS = 2
library = kernels.FAST.attention


def attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    T_q, T_k = q.shape[-2], k.shape[-2]
    if return_weights or mask is None or T_k >= kernels.blocked_attention.BLOCKED_FROM or T_q < 2 * QUERY_BLOCKS:
        return library(q, k, v, bias=bias, mask=mask, scale=scale, return_weights=return_weights)
    scale = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    pieces = []
    for b in range(QUERY_BLOCKS):
        i0, i1 = T_q * b // QUERY_BLOCKS, T_q * (b + 1) // QUERY_BLOCKS
        m = mask[..., i0:i1, :] if mask.shape[-2] != 1 else mask
        seen = xp.flatnonzero(m.reshape(-1, m.shape[-1]).any(axis=0))
        if seen.size == 0:
            k0, k1 = 0, T_k
        else:
            k0, k1 = int(seen[0]), int(seen[-1]) + 1
        rows = (Ellipsis, slice(i0, i1), slice(None))
        keys = (Ellipsis, slice(k0, k1), slice(None))
        bi = None
        if bias is not None:
            bi = bias[..., i0:i1, :] if bias.shape[-2] != 1 else bias
            bi = bi[..., k0:k1] if bias.shape[-1] != 1 else bi
        pieces.append(library(q[rows], k[keys], v[keys], bias=bi, mask=m[..., k0:k1], scale=scale))
    return autograd.concat(pieces, axis=-2)
