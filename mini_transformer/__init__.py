r"""A tiny Transformer on a tiny NumPy autograd engine, built to study positional encodings.

The library, on four floors, each importing only the floors below it: ``engine`` (arrays, autograd,
layers, optimiser, fast kernels), ``positional`` (every scheme and its scaling), ``model`` (attention,
the Transformer, cache, data, training) and ``evaluation`` (measures, statistics, benches). It imports
nothing of the rest of the repository (``exercises``, ``solutions``, ``experiments``, ``book``);
``tests/test_layout.py`` keeps both rules.
"""
from .engine.autograd import Tensor, no_grad  # noqa: F401
