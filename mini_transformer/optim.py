r"""Optimisers, gradient clipping and the learning-rate schedule.

``AdamW`` keeps every parameter in one flat buffer (each parameter's ``.data``
becomes a view into it), so one update over all parameters is a handful of
array operations however many tensors the model has. Tiny models are bound by
the number of operations, not their size, so this matters.
"""
import math

from .backend import xp


def _flat_grads(params, dtype):
    """All gradients as one flat array (zeros for a parameter that got none)."""
    return xp.concatenate([(p.grad if p.grad is not None else xp.zeros(p.shape, dtype=dtype)).reshape(-1)
                           for p in params]).astype(dtype, copy=False)


class _FlatOptimizer:
    def __init__(self, params, lr):
        self.params = list(params)
        if not self.params:
            raise ValueError("The optimiser was given no parameters.")
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}.")
        self.lr = lr
        dtype = self.params[0].dtype
        if any(p.dtype != dtype for p in self.params):
            raise TypeError(f"All parameters must share one dtype, got {sorted({str(p.dtype) for p in self.params})}.")
        self.flat = xp.concatenate([p.data.reshape(-1) for p in self.params])
        offset = 0
        for p in self.params:  # from now on each parameter is a window onto the flat buffer
            p.data = self.flat[offset:offset + p.size].reshape(p.shape)
            offset += p.size

    def zero_grad(self):
        for p in self.params:
            p.grad = None


class SGD(_FlatOptimizer):
    r"""v \leftarrow \mu v + g;  \theta \leftarrow \theta - \eta v  (plain SGD when \mu = 0)."""

    def __init__(self, params, lr=0.1, momentum=0.0):
        super().__init__(params, lr)
        self.momentum = momentum
        self.velocity = xp.zeros_like(self.flat)

    def step(self):
        g = _flat_grads(self.params, self.flat.dtype)
        if self.momentum:
            self.velocity *= self.momentum
            self.velocity += g
            g = self.velocity
        self.flat -= self.lr * g


class AdamW(_FlatOptimizer):
    r"""Adam with decoupled weight decay (Loshchilov and Hutter).

    At step t, with gradient g:

    .. math::
        m \leftarrow \beta_1 m + (1-\beta_1) g, \quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\\
        \hat m = m / (1-\beta_1^t), \quad \hat v = v / (1-\beta_2^t),\\
        \theta \leftarrow \theta - \eta\,(\hat m / (\sqrt{\hat v} + \epsilon) + \lambda \theta).

    Weight decay \lambda applies to matrices (ndim >= 2) only; biases, norm gains and
    other vectors are not decayed.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr)
        self.beta1, self.beta2 = betas
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}.")
        self.eps, self.weight_decay = eps, weight_decay
        self.m = xp.zeros_like(self.flat)
        self.v = xp.zeros_like(self.flat)
        self.decayed = []    # [start, stop) stretches of the flat buffer holding matrices, neighbours merged
        offset = 0
        for p in self.params:
            if p.ndim >= 2:
                if self.decayed and self.decayed[-1][1] == offset:
                    self.decayed[-1][1] += p.size
                else:
                    self.decayed.append([offset, offset + p.size])
            offset += p.size
        self.t = 0

    def step(self):
        g = _flat_grads(self.params, self.flat.dtype)   # a fresh array: the step may overwrite it
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
        from .backend import to_numpy
        return {"m": to_numpy(self.m), "v": to_numpy(self.v), "t": self.t}

    def load_state_dict(self, state):
        from .backend import asarray
        if tuple(state["m"].shape) != self.m.shape:
            raise ValueError(f"AdamW.load_state_dict: moments have shape {tuple(state['m'].shape)}, "
                             f"the optimiser has {self.m.shape}.")
        self.m[...] = asarray(state["m"], dtype=self.m.dtype)
        self.v[...] = asarray(state["v"], dtype=self.v.dtype)
        self.t = int(state["t"])


def clip_grad_norm(params, max_norm):
    r"""Scale all gradients by \min(1, c / \lVert g \rVert_2), the norm taken over all of them at once.

    Returns the norm before clipping. Gradients are replaced, not modified in
    place, since two tensors may share one gradient array: when clipping, each
    becomes a window onto one new scaled copy of them all.
    """
    with_grad = [p for p in params if p.grad is not None]
    if not with_grad:
        return 0.0
    flat = xp.concatenate([p.grad.reshape(-1) for p in with_grad])   # every gradient in one new vector
    total = math.sqrt(float(flat @ flat))                             # one dot product, not one sum per tensor
    if total > max_norm:
        flat *= max_norm / (total + 1e-6)                             # one product for all of them
        offset = 0
        for p in with_grad:
            p.grad = flat[offset:offset + p.grad.size].reshape(p.grad.shape).astype(p.grad.dtype, copy=False)
            offset += p.grad.size
    return total


def cosine_lr(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    r"""Linear warmup to ``max_lr`` over ``warmup_steps``, then a cosine decay to ``min_lr`` at ``total_steps``."""
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))
