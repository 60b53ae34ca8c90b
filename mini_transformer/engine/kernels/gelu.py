r"""Fast GELU: the same numbers as ``autograd.gelu``, computed in place, block by block, on every core.

The reference builds s = (1 + \tanh u)/2 and y = x s with a fresh array at
every step. The MLP's hidden activations are among the model's largest arrays,
so here each step writes into one of two buffers (s, kept for the backward,
and y), and the rows are cut into blocks that ``threads.parallel_rows`` spreads
over the cores. The backward uses 1 - \tanh^2 u = 4 s (1 - s), so it needs only
x and s: dy/dx = s\,[1 + (1 - s)\, x\, 2u'].
"""
from ..autograd import GELU_C, op
from ..backend import xp
from .threads import parallel_rows


def gelu(x):
    r"""``autograd.gelu`` in place over blocks of rows (see the module docstring)."""
    a = x.data.reshape(-1, x.shape[-1]) if x.ndim > 1 else x.data.reshape(1, -1)   # (rows, d)
    s, y = xp.empty_like(a), xp.empty_like(a)   # s = (1 + tanh u)/2, kept for the backward

    def forward_rows(i, j):
        ai, si, yi = a[i:j], s[i:j], y[i:j]
        xp.multiply(ai, ai, out=si)          # in place, block by block: one of the model's largest arrays
        si *= GELU_C * 0.044715
        si += GELU_C
        si *= ai                             # u
        xp.tanh(si, out=si)
        si *= 0.5
        si += 0.5                            # s
        xp.multiply(si, ai, out=yi)
    parallel_rows(forward_rows, a.shape[0], a.size)

    def backward(gy):
        g = gy.reshape(a.shape)
        gx = xp.empty_like(a)

        def backward_rows(i, j):
            ai, si, d = a[i:j], s[i:j], gx[i:j]
            xp.multiply(ai, ai, out=d)
            d *= 6 * GELU_C * 0.044715
            d += 2 * GELU_C
            d *= ai                          # x 2u'
            d *= 1 - si                      # (1 - s) x 2u'
            d += 1
            d *= si                          # dy/dx
            d *= g[i:j]
        parallel_rows(backward_rows, a.shape[0], a.size)
        return (gx.reshape(x.shape),)
    return op(y.reshape(x.shape), (x,), backward)
