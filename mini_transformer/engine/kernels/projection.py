r"""Fast q, k, v projection: the same numbers as ``functional.qkv_projection``, as three products.

The reference computes [q | k | v] = x W_{qkv} + b in one product and cuts
the result in three. Cutting is cheap going forward, but each of the three
pieces sends its gradient back as a (B, T, 3 d_model) array of zeros with one
block filled, and the three are added. Here each of q, k and v is its own
product with one column block of W_{qkv}: together they cost what the one
product costs, and no gradient is scattered into a wide array.
"""
from .linear import linear


def qkv_projection(x, weight, bias=None):
    r"""``functional.qkv_projection``: [x W_q + b_q, x W_k + b_k, x W_v + b_v], the column blocks of ``weight``."""
    D = weight.shape[1] // 3
    return [linear(x, weight[:, i * D:(i + 1) * D], bias[i * D:(i + 1) * D] if bias is not None else None)
            for i in range(3)]
