r"""Small helpers the positional tests share: host data onto the backend and back, a scheme built from a
config with O(1) random parameters, and the logits attention would add up."""
import math

import numpy as np

from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig
from mini_transformer.positional import make_scheme

SQRT2 = math.sqrt(2.0)


def A(x, dtype=None):
    """Host data onto the active backend."""
    return backend.asarray(np.asarray(x), dtype=dtype)


def N(x):
    """Host NumPy from a Tensor or a backend array."""
    return backend.to_numpy(x)


def randn(*shape, seed=0):
    return A(np.random.default_rng(seed).normal(size=shape))


def make(name, extra=None, causal=True, d_model=8, n_heads=2, seed=0, **cfg):
    """A float64 scheme built from a config, with O(1) random parameters (a 0.02 init would hide mistakes)."""
    config = GPTConfig(vocab_size=8, d_model=d_model, n_heads=n_heads, n_layers=1, max_len=16, positional=name,
                       extra=dict(extra or {}), **cfg)
    scheme = make_scheme(config, backend.rng(seed), causal=causal).to_dtype("float64")
    draw = np.random.default_rng(seed + 1)
    for p in scheme.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return scheme


def T(a):
    """A float64 Tensor on the active backend from host numbers."""
    return Tensor(backend.asarray(np.asarray(a, dtype=np.float64)))


def P(a):
    """Integer positions on the active backend."""
    return backend.asarray(np.asarray(a, dtype=np.int64))


def set_(param, values):
    param.data[...] = backend.asarray(np.asarray(values, dtype=np.float64))


def logits(scheme, q, k, q_pos, k_pos):
    r"""What attention adds up before the softmax: R q . R k / \sqrt{d_{head}} plus the scheme's score term."""
    q, k = scheme.rotate(q, q_pos, 0), scheme.rotate(k, k_pos, 0)
    s = N(q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])          # (B, H, T_q, T_k)
    bias = scheme.score_bias(q, k, q_pos, k_pos, 0)
    return s if bias is None else s + N(bias)


def qk(T_q, T_k, d_head=4, H=2, seed=0, same=False):
    """Random queries and keys (B 2, H, T, d_head); with ``same``, one query and one key repeated at every position."""
    draw = np.random.default_rng(seed)
    if same:
        q, k = draw.normal(size=(2, H, 1, d_head)), draw.normal(size=(2, H, 1, d_head))
        return T(np.repeat(q, T_q, axis=2)), T(np.repeat(k, T_k, axis=2))
    return T(draw.normal(size=(2, H, T_q, d_head))), T(draw.normal(size=(2, H, T_k, d_head)))
