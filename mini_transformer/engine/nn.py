r"""Layers: ``Module`` and the handful of building blocks a Transformer needs.

A ``Module`` finds its parameters by looking at its attributes: a
``Parameter``, another ``Module``, or a list of modules. Names follow the
attribute path (``blocks.0.attn.W_qkv.weight``), so a state dict reads like the
model's source.

Layers whose op has a fast kernel call it through ``kernels.active()``: the
set the model runs under (``kernels.using``), or ``kernels.REFERENCE``, the
code in ``functional.py``, for a layer called on its own.
"""
from . import backend, kernels
from . import functional as F
from .autograd import Tensor
from .backend import xp


class Parameter(Tensor):
    """A tensor the optimiser updates: always a float array that requires gradients."""

    __slots__ = ()

    def __init__(self, data):
        super().__init__(data, requires_grad=True)


class Module:
    """Base class: parameters, state dicts, train/eval mode."""

    training = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def children(self):
        """(name, module) for each direct sub-module, in the order they were assigned."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def named_parameters(self, prefix=""):
        """(dotted name, Parameter) for every parameter, each shared one once."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            path, module = stack.pop(0)
            for name, value in vars(module).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield path + name, value
            stack[:0] = [(f"{path}{name}.", child) for name, child in module.children()]

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def train(self, mode=True):
        self.training = mode
        for _, child in self.children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """Host NumPy copies of every parameter, by dotted name."""
        return {name: backend.to_numpy(p.data).copy() for name, p in self.named_parameters()}

    def load_state_dict(self, state):
        """Copy ``state`` into the parameters in place; every key and shape must match."""
        params = dict(self.named_parameters())
        missing = sorted(set(params) - set(state))
        unexpected = sorted(set(state) - set(params))
        if missing:
            raise KeyError(f"load_state_dict: the state dict has no entry for {missing[0]!r}"
                           f" ({len(missing)} missing in all: {missing[:5]}).")
        if unexpected:
            raise KeyError(f"load_state_dict: the state dict has an entry {unexpected[0]!r} that this "
                           f"model does not have ({len(unexpected)} unexpected in all).")
        for name, p in params.items():
            if tuple(state[name].shape) != p.shape:
                raise ValueError(f"load_state_dict: {name!r} has shape {tuple(state[name].shape)} in the "
                                 f"state dict but {p.shape} in the model.")
        for name, p in params.items():
            p.data[...] = backend.asarray(state[name], dtype=p.dtype)  # in place: optimiser views stay valid

    def to_dtype(self, dtype):
        """Convert every parameter to ``dtype`` (float64 for gradient checks); returns self."""
        for p in self.parameters():
            p.data = p.data.astype(dtype)
        return self

    def num_parameters(self):
        return sum(p.size for p in self.parameters())


def init_normal(rng, shape, std):
    """A float32 array of N(0, std^2) draws from a backend Generator."""
    return rng.normal(0.0, std, size=shape)


class Linear(Module):
    r"""y = x W + b, with W of shape ``(d_in, d_out)`` (so the product needs no transpose)."""

    def __init__(self, d_in, d_out, rng, bias=True, std=0.02):
        self.weight = Parameter(init_normal(rng, (d_in, d_out), std))
        self.bias = Parameter(xp.zeros(d_out, dtype="float32")) if bias else None

    def forward(self, x):
        return kernels.active().linear(x, self.weight, self.bias)


class Embedding(Module):
    r"""A lookup table: row ``i`` of ``weight`` is the vector of token ``i``."""

    def __init__(self, num_embeddings, d_model, rng, std=0.02):
        self.num_embeddings = num_embeddings
        self.weight = Parameter(init_normal(rng, (num_embeddings, d_model), std))

    def forward(self, idx):
        idx = idx.data if isinstance(idx, Tensor) else idx
        if idx.dtype.kind not in "iu":
            raise TypeError(f"Embedding: ids must be integers, got dtype {idx.dtype}.")
        if idx.size:
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= self.num_embeddings:
                bad = lo if lo < 0 else hi
                raise IndexError(f"Embedding: id {bad} is out of range; ids must lie in "
                                 f"[0, {self.num_embeddings}).")
        return kernels.active().embedding(self.weight, idx)


class LayerNorm(Module):
    def __init__(self, d_model, eps=1e-5):
        self.eps = eps
        self.weight = Parameter(xp.ones(d_model, dtype="float32"))
        self.bias = Parameter(xp.zeros(d_model, dtype="float32"))

    def forward(self, x):
        return kernels.active().layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    def __init__(self, d_model, eps=1e-6):
        self.eps = eps
        self.weight = Parameter(xp.ones(d_model, dtype="float32"))

    def forward(self, x):
        return kernels.active().rms_norm(x, self.weight, self.eps)


class Dropout(Module):
    def __init__(self, p, rng):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must lie in [0, 1), got {p}.")
        self.p, self.rng = p, rng

    def forward(self, x):
        return F.dropout(x, self.p, self.rng, self.training)


class MLP(Module):
    r"""The Transformer's feed-forward block: Linear(d, 4d), GELU, Linear(4d, d)."""

    def __init__(self, d_model, rng, hidden=None, dropout=0.0, out_std=0.02):
        hidden = hidden or 4 * d_model
        self.fc = Linear(d_model, hidden, rng)
        self.proj = Linear(hidden, d_model, rng, std=out_std)
        self.dropout = Dropout(dropout, rng)

    def forward(self, x):
        return self.dropout(self.proj(kernels.active().gelu(self.fc(x))))
