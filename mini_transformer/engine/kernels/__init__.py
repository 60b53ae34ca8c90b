r"""The two sets of kernels, and the one switch between them.

Every op a chapter talks about has a **reference form**: the equation in code,
in ``functional.py``, ``autograd.py`` and ``optim.py`` (RoPE's in
``positional/rope.py``, beside its frequencies), short, one thread, no
memory-order tricks. Some also have a **fast kernel** here, one file each,
with the same signature and the same numbers (``tests/engine/test_kernels.py`` checks
values and gradients to 1e-10 in float64). Each file's docstring says what it
does differently and why.

==========================  ===========================================  ==========================
op                          reference                                    fast kernel
==========================  ===========================================  ==========================
attention                   ``functional.scaled_dot_product_attention``  ``kernels/attention.py``; from
                                                                         T_k = 256 on, in blocks of keys,
                                                                         ``kernels/blocked_attention.py``
RoPE                        ``positional/rope.py``, ``apply_rotary``     ``kernels/rope.py``
GELU                        ``autograd.gelu``                            ``kernels/gelu.py``
layer norm, RMS norm        ``functional.layer_norm``, ``rms_norm``      ``kernels/norms.py``
cross-entropy               ``functional.cross_entropy``                 ``kernels/cross_entropy.py``
q, k, v projection          ``functional.qkv_projection``                ``kernels/projection.py``
embedding lookup            ``functional.embedding``                     ``kernels/embedding.py``
AdamW, gradient clipping    ``optim.AdamW``, ``optim.clip_grad_norm``    ``kernels/adamw.py``
linear layer                ``functional.linear``                        ``kernels/linear.py``
==========================  ===========================================  ==========================

**The switch** is ``GPTConfig.kernels``: ``"reference"`` (the default, what a
chapter runs) or ``"fast"`` (what the bench and the experiments run). The
model reads it once, ``kernels.select(cfg.kernels)``, keeps the set as
``model.kernels`` and runs every forward pass inside ``kernels.using(model.kernels)``.
A layer or scheme asks ``kernels.active()`` for the set in force when it runs
an op; a backward closure is made in the forward, so it keeps the kernels that
ran. Outside any ``using`` block, a layer called on its own (as a chapter
does) runs ``REFERENCE``. ``kernels.tune()`` (``tuning.py``) is the separate,
explicit call that sets threads and the allocator for speed.
"""
import contextlib
import contextvars
from dataclasses import dataclass

from .. import autograd, functional, optim
from . import adamw, attention, blocked_attention, cross_entropy, embedding, gelu, linear, norms, projection, rope
from .tuning import tune  # noqa: F401

NAMES = ("reference", "fast")


@dataclass(frozen=True)
class Kernels:
    """One implementation of each op that has a fast kernel; a model calls them through this."""
    name: str
    attention: object
    apply_rotary: object    # None in REFERENCE: the RoPE schemes then run their own, in positional/rope.py
    gelu: object
    layer_norm: object
    rms_norm: object
    cross_entropy: object
    qkv_projection: object
    embedding: object
    AdamW: object
    clip_grad_norm: object
    linear: object


REFERENCE = Kernels("reference", functional.scaled_dot_product_attention, None, autograd.gelu,
                    functional.layer_norm, functional.rms_norm, functional.cross_entropy, functional.qkv_projection,
                    functional.embedding, optim.AdamW, optim.clip_grad_norm, functional.linear)

FAST = Kernels("fast", blocked_attention.attention, rope.apply_rotary, gelu.gelu,
               norms.layer_norm, norms.rms_norm, cross_entropy.cross_entropy, projection.qkv_projection,
               embedding.embedding, adamw.AdamW, adamw.clip_grad_norm, linear.linear)


def select(name):
    """The kernel set called ``name``: ``"reference"`` or ``"fast"``."""
    if name == "reference":
        return REFERENCE
    if name == "fast":
        return FAST
    raise ValueError(f"kernels={name!r} is not a kernel set; choose 'reference' (the textbook code the chapters "
                     f"show) or 'fast' (kernels/, the same numbers, faster).")


_active = contextvars.ContextVar("kernels", default=REFERENCE)


def active():
    """The kernel set in force: the one the innermost ``using`` block chose, ``REFERENCE`` outside any."""
    return _active.get()


@contextlib.contextmanager
def using(kernel_set):
    """Run the block with ``kernel_set`` (a ``Kernels``) in force; the previous set returns as it ends, raise or not."""
    if not isinstance(kernel_set, Kernels):
        raise TypeError(f"kernels.using needs a kernel set (kernels.REFERENCE, kernels.FAST or kernels.select(name)), "
                        f"got {kernel_set!r}.")
    token = _active.set(kernel_set)
    try:
        yield kernel_set
    finally:
        _active.reset(token)
