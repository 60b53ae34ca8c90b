r"""Learned absolute positions (GPT-2, BERT): a table of ``T_max`` vectors, one per position.

It knows nothing about positions it never saw in training, and it cannot
express a position past ``T_max`` at all: asking for one is an error.
"""
from ..engine.autograd import Tensor
from ..engine.backend import rng as make_rng, xp
from ..engine.nn import Parameter, init_normal
from .base import PositionalScheme


class LearnedPositionalEmbedding(PositionalScheme):
    """A ``(T_max, d_model)`` table; ``rows(T, offset)`` gives the ``(1, T, d_model)`` rows of those positions."""

    config_fields = {"max_len": "T_max"}

    def __init__(self, T_max, d_model, rng=None, std=0.02):
        self.T_max = self.max_positions = T_max
        self.weight = Parameter(init_normal(rng or make_rng(0), (T_max, d_model), std))

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.max_len, cfg.d_model, rng)

    def rows(self, T, offset=0):
        if offset < 0 or offset + T > self.T_max:
            raise ValueError(f"LearnedPositionalEmbedding has T_max={self.T_max} positions, but positions "
                             f"{offset}..{offset + T - 1} were asked for (position {offset + T - 1} is at or "
                             f"past T_max={self.T_max}).")
        return self.weight[None, offset:offset + T]   # (1, T, d_model)

    def embed(self, x, offset):
        return x + self.rows(x.shape[1], offset)

    @classmethod
    def from_functions(cls, position_rows, weight):
        r"""A learned table read by a function you wrote, so a model trains on your code.

        ``position_rows(weight, T, offset)`` returns the ``(1, T, d_model)`` rows of the
        positions ``offset .. offset + T - 1`` (chapter 3's exercise). The scheme calls it
        with its table, a ``Parameter``, so the function must slice it
        (``weight[None, offset:offset + T]``): a slice keeps the path back to the table, and
        the gradient of each row lands where the row came from.

        ``weight`` is the starting table ``(T_max, d_model)``, copied. Pass a copy of a
        model's own table (``TinyGPT(cfg).positional.weight.data``) and both models start
        alike. The model refuses positions past ``T_max`` before it calls the function.
        """
        return _FunctionLearned(position_rows, weight)


class _FunctionLearned(LearnedPositionalEmbedding):
    """``LearnedPositionalEmbedding.from_functions``: the rows come from the function it was given."""

    made_from = "position_rows"

    def __init__(self, position_rows, weight):
        self.position_rows = position_rows
        self.weight = Parameter(xp.array(weight, copy=True))   # (T_max, d_model)
        self.T_max = self.max_positions = self.weight.shape[0]

    def rows(self, T, offset=0):
        out = self.position_rows(self.weight, T, offset)
        if not isinstance(out, Tensor):
            raise ValueError("LearnedPositionalEmbedding.from_functions: the function returned a plain "
                             f"{type(out).__name__} when it was given the model's table, a Parameter, so no "
                             "gradient could reach the table; slice the table instead, "
                             "weight[None, offset:offset + T].")
        if tuple(out.shape) != (1, T, self.weight.shape[1]):
            raise ValueError(f"LearnedPositionalEmbedding.from_functions: the function was asked for T={T} rows "
                             f"from offset={offset} and returned shape {tuple(out.shape)}; it must return "
                             f"(1, T, d_model) = (1, {T}, {self.weight.shape[1]}).")
        return out
