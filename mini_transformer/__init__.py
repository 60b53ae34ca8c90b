r"""A tiny Transformer on a tiny NumPy autograd engine, built to study positional encodings."""
from .engine.autograd import Tensor, no_grad  # noqa: F401
