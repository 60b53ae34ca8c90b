r"""Optimisers, gradient clipping and the learning-rate schedule, one parameter at a time.

Each optimiser keeps its state (momentum, moments) per parameter and updates
``p.data`` by the textbook formula. It holds the ``Parameter`` objects
themselves, so changing a model's dtype after building the optimiser
(``model.to_dtype("float64")``) keeps working: the state follows the dtype.

A faster AdamW, which keeps every parameter in one flat buffer, lives in
``kernels/adamw.py``; a model built with ``GPTConfig(kernels="fast")`` trains with it.
It saves and loads the state in this file's per-parameter format, so a
checkpoint of either optimiser resumes in the other.
"""
import math

from .backend import asarray, hostnp, to_numpy, xp


class Optimizer:
    """What every optimiser shares: its parameters, its learning rate, per-parameter state."""

    def __init__(self, params, lr):
        self.params = list(params)
        if not self.params:
            raise ValueError("The optimiser was given no parameters.")
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}.")
        self.lr = lr

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def _state(self, buffers, i, p):
        """Parameter i's entry of ``buffers``, zeros at first, cast to the parameter's dtype if that changed."""
        b = buffers[i]
        if b is None:
            b = buffers[i] = xp.zeros(p.shape, dtype=p.dtype)
        elif b.shape != p.shape:
            raise ValueError(f"Parameter {i} of the optimiser has shape {p.shape} now, but its optimiser state has "
                             f"shape {b.shape}; build a new optimiser after changing the model's parameters.")
        elif b.dtype != p.dtype:
            b = buffers[i] = b.astype(p.dtype)
        return b


class SGD(Optimizer):
    r"""v \leftarrow \mu v + g;  \theta \leftarrow \theta - \eta v  (plain SGD when \mu = 0)."""

    def __init__(self, params, lr=0.1, momentum=0.0):
        super().__init__(params, lr)
        self.momentum = momentum
        self.velocity = [None] * len(self.params)

    def step(self):
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = p.grad
            if self.momentum:
                g = self.velocity[i] = self.momentum * self._state(self.velocity, i, p) + g
            p.data = p.data - self.lr * g


class AdamW(Optimizer):
    r"""Adam with decoupled weight decay (Loshchilov and Hutter).

    At step t, with gradient g:

    .. math::
        m \leftarrow \beta_1 m + (1-\beta_1) g, \quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\\
        \hat m = m / (1-\beta_1^t), \quad \hat v = v / (1-\beta_2^t),\\
        \theta \leftarrow \theta - \eta\,(\hat m / (\sqrt{\hat v} + \epsilon) + \lambda \theta).

    Weight decay \lambda applies to matrices (ndim >= 2) only; biases, norm gains and
    other vectors are not decayed. A parameter without a gradient this step
    counts as a zero gradient: its moments still decay.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr)
        self.beta1, self.beta2 = betas
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}.")
        self.eps, self.weight_decay = eps, weight_decay
        self.m = [None] * len(self.params)
        self.v = [None] * len(self.params)
        self.t = 0

    def step(self):
        self.t += 1
        for i, p in enumerate(self.params):
            g = p.grad if p.grad is not None else xp.zeros(p.shape, dtype=p.dtype)
            m = self.m[i] = self.beta1 * self._state(self.m, i, p) + (1 - self.beta1) * g
            v = self.v[i] = self.beta2 * self._state(self.v, i, p) + (1 - self.beta2) * g * g
            m_hat = m / (1 - self.beta1 ** self.t)
            v_hat = v / (1 - self.beta2 ** self.t)
            decay = self.weight_decay * p.data if p.ndim >= 2 else 0.0
            p.data = (p.data - self.lr * (m_hat / (xp.sqrt(v_hat) + self.eps) + decay)).astype(p.dtype, copy=False)

    def state_dict(self):
        r"""The step ``t`` and each parameter's two moments as host arrays: ``"m.0"``, ``"v.0"``, ``"m.1"``, ...

        Parameter i's moments are ``"m.i"`` and ``"v.i"``, in its shape (zeros before its first step).
        The fast AdamW reads and writes this format too, so either loads the other's checkpoint.
        """
        return moments_state(self.t, self.m, self.v, self.params)

    def load_state_dict(self, state):
        self.m, self.v = (moments_from(state, name, self.params) for name in ("m", "v"))
        self.t = int(state["t"])


def moments_state(t, m, v, params):
    """``AdamW.state_dict()`` from the step and two lists of per-parameter moments (None: no step yet)."""
    state = {"t": t}
    for i, p in enumerate(params):
        for name, moments in (("m", m), ("v", v)):
            b = moments[i]
            state[f"{name}.{i}"] = to_numpy(b).copy() if b is not None else hostnp.zeros(p.shape, dtype=str(p.dtype))
    return state


def moments_from(state, name, params):
    """The moments ``name`` ("m" or "v") of ``AdamW.state_dict()``, one backend array per parameter in its dtype."""
    out = []
    for i, p in enumerate(params):
        key = f"{name}.{i}"
        if key not in state:
            raise ValueError(f"AdamW.load_state_dict: the state has no entry {key!r}, but the optimiser has "
                             f"{len(params)} parameters; the state belongs to another model.")
        if tuple(state[key].shape) != p.shape:
            raise ValueError(f"AdamW.load_state_dict: {key!r} has shape {tuple(state[key].shape)}, but parameter {i} "
                             f"has shape {p.shape}; the state belongs to another model.")
        out.append(asarray(state[key], dtype=p.dtype))
    return out


def clip_grad_norm(params, max_norm):
    r"""Scale all gradients by \min(1, c / \lVert g \rVert_2), the norm taken over all of them at once.

    Returns the norm before clipping. Gradients are replaced, not modified in
    place, since two tensors may share one gradient array.
    """
    with_grad = [p for p in params if p.grad is not None]
    total = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in with_grad))
    if total > max_norm:
        scale = max_norm / (total + 1e-6)
        for p in with_grad:
            p.grad = (p.grad * scale).astype(p.grad.dtype, copy=False)
    return total


def cosine_lr(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    r"""Linear warmup to ``max_lr`` over ``warmup_steps``, then a cosine decay to ``min_lr`` at ``total_steps``."""
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))
