r"""A trial, not in the library: the q, k, v projection as one product whose three pieces share one gradient buffer.

Measured against the fast set's three products with ``ab.py`` (figures in README.md): slower. A likely
reason, not measured op by op: q, k and v are then strided views of one (rows, 3 d_model) array, and the fast
RoPE and attention, which work in their input's memory order, find none they can use and copy. It gives the
reference's values and gradients exactly (a float64 (2, 3, 4) input, all three pieces used and k unused;
checked by hand, not by the suite).

The reference computes [q | k | v] = x W_{qkv} + b in one product and cuts
the result in three with ``split``. Cutting is cheap going forward, but each
of the three pieces sends its gradient back as a (rows, 3 d_model) array of
zeros with one block filled, and the three are added: three allocations and
two additions of the widest array in the layer.

Here the pieces share one gradient buffer. Each piece's backward writes its
block of it, and the first piece to run hands the buffer to the product's node
(the others hand over nothing). The autograd runs a node's backward only after
every node that used it, so by the time the product's backward reads the
buffer all three blocks are in; a piece that got no gradient leaves its block
at zero. The product's backward is then one gx = g W^\top and one
gW = x^\top g for all three, the layer's largest matrix products in one call
each.
"""
from mini_transformer.engine.autograd import op
from mini_transformer.engine.backend import xp
from mini_transformer.engine.kernels.linear import linear


def qkv_projection(x, weight, bias=None):
    r"""``functional.qkv_projection``: [q | k | v] = x W_{qkv} + b, cut into three ``(..., d_model)`` views."""
    y = linear(x, weight, bias)                         # (..., 3 d_model), one node
    D = y.shape[-1] // 3
    y2 = y.data.reshape(-1, 3 * D)                      # (rows, 3 d_model), a view
    shared = {"buffer": None}                           # the gradient of y, filled block by block

    def piece(i):
        def backward(g):
            first = shared["buffer"] is None
            if first:
                shared["buffer"] = xp.zeros(y2.shape, dtype=g.dtype)
            shared["buffer"][:, i * D:(i + 1) * D] = g.reshape(-1, D)
            return (shared["buffer"].reshape(y.shape) if first else None,)
        return op(y2[:, i * D:(i + 1) * D].reshape(y.shape[:-1] + (D,)), (y,), backward)
    return [piece(i) for i in range(3)]
