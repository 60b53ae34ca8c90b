r"""Fast AdamW and gradient clipping: every parameter in one flat buffer.

The reference (``optim.AdamW``) updates one parameter at a time: a dozen
array operations per parameter, and a small model has dozens of parameters,
so the step costs more in calls than in arithmetic. Here every parameter's
``.data`` becomes a window onto one flat buffer, so the whole update is a
handful of operations over one long vector, written in place with one scratch
array; weight decay runs over the stretches of the buffer that hold matrices.
Clipping takes the norm of all gradients as one dot product.

The windows are the catch: anything that gives a parameter a new array
(``model.to_dtype``, assigning ``p.data``) cuts it from the buffer. ``step``
notices and gathers the parameters into a new buffer, moments kept (cast to
the new dtype), so training keeps working.

The state it saves is the reference's, one ``m`` and ``v`` per parameter
(``optim.moments_state``): the flat moments are cut into per-parameter views
on the way out and joined into one buffer again on the way in.
"""
import math

from .. import optim
from ..backend import xp


class AdamW(optim.AdamW):
    r"""``optim.AdamW`` (same arguments, same numbers) over one flat buffer of all parameters."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr, betas, eps, weight_decay)   # the checks and settings of the reference
        self.m = self.v = None
        self._gather()
        self.decayed = []    # [start, stop) stretches of the flat buffer holding matrices, neighbours merged
        offset = 0
        for p in self.params:
            if p.ndim >= 2:
                if self.decayed and self.decayed[-1][1] == offset:
                    self.decayed[-1][1] += p.size
                else:
                    self.decayed.append([offset, offset + p.size])
            offset += p.size

    def _gather(self):
        """Copy every parameter into one flat buffer and make each parameter's data a window onto it."""
        dtype = self.params[0].dtype
        if any(p.dtype != dtype for p in self.params):
            raise TypeError(f"All parameters must share one dtype, got {sorted({str(p.dtype) for p in self.params})}.")
        self.flat = xp.concatenate([p.data.reshape(-1) for p in self.params])
        self.m = xp.zeros_like(self.flat) if self.m is None else self.m.astype(dtype)
        self.v = xp.zeros_like(self.flat) if self.v is None else self.v.astype(dtype)
        self._windows, offset = [], 0
        for p in self.params:
            p.data = self.flat[offset:offset + p.size].reshape(p.shape)
            self._windows.append(p.data)
            offset += p.size

    def step(self):
        if any(p.data is not w for p, w in zip(self.params, self._windows)):
            if any(p.shape != w.shape for p, w in zip(self.params, self._windows)):
                raise ValueError("A parameter changed shape after the optimiser was built; build a new optimiser "
                                 "for the changed model.")
            self._gather()          # a parameter got a new array (a dtype change): gather them again
        g = xp.concatenate([(p.grad if p.grad is not None else xp.zeros(p.shape, dtype=self.flat.dtype)).reshape(-1)
                            for p in self.params]).astype(self.flat.dtype, copy=False)   # fresh: overwritten below
        self.t += 1
        tmp = xp.empty_like(g)                          # one scratch array, every product written in place
        self.m *= self.beta1
        self.m += xp.multiply(g, 1 - self.beta1, out=tmp)
        self.v *= self.beta2
        g *= g
        g *= 1 - self.beta2
        self.v += g
        step_size = self.lr / (1 - self.beta1 ** self.t)
        denom = xp.sqrt(self.v, out=tmp)                # sqrt(v_hat) + eps = sqrt(v) / sqrt(1 - beta2^t) + eps
        denom *= 1.0 / math.sqrt(1 - self.beta2 ** self.t)
        denom += self.eps
        if self.weight_decay:
            for start, stop in self.decayed:            # theta <- theta - lr lambda theta, matrices only
                self.flat[start:stop] *= 1.0 - self.lr * self.weight_decay
        update = xp.divide(self.m, denom, out=tmp)
        update *= step_size
        self.flat -= update

    def state_dict(self):
        """``optim.AdamW``'s format: the flat moments cut into one array per parameter, and the step."""
        return optim.moments_state(self.t, self._per_parameter(self.m), self._per_parameter(self.v), self.params)

    def load_state_dict(self, state):
        for name in ("m", "v"):
            parts = optim.moments_from(state, name, self.params)      # one array per parameter, checked
            setattr(self, name, xp.concatenate([a.reshape(-1) for a in parts]))
        self.t = int(state["t"])

    def _per_parameter(self, flat):
        """Views of ``flat``, one per parameter, each in its parameter's shape."""
        out, offset = [], 0
        for p in self.params:
            out.append(flat[offset:offset + p.size].reshape(p.shape))
            offset += p.size
        return out


def clip_grad_norm(params, max_norm):
    r"""``optim.clip_grad_norm`` with one dot product over all gradients and one scaled vector.

    When clipping, each gradient becomes a window onto one new scaled copy of
    them all (never scaled in place: two tensors may share one gradient array).
    """
    with_grad = [p for p in params if p.grad is not None]
    if not with_grad:
        return 0.0
    flat = xp.concatenate([p.grad.reshape(-1) for p in with_grad])   # every gradient in one new vector
    total = math.sqrt(float(flat @ flat))
    if total > max_norm:
        flat *= max_norm / (total + 1e-6)
        offset = 0
        for p in with_grad:
            p.grad = flat[offset:offset + p.grad.size].reshape(p.grad.shape).astype(p.grad.dtype, copy=False)
            offset += p.grad.size
    return total
