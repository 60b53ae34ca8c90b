r"""NoPE: no positional information. Without a causal mask attention is then
permutation-equivariant; with one, the mask itself leaks order."""
from .base import PositionalScheme


class NoPositionalEncoding(PositionalScheme):
    """All three hooks are the defaults: nothing is added, nothing rotated."""

    per_row_positions = True   # it ignores them
