r"""FIRE (Li et al., 2023): the score bias is a small learned function of a log-normalised distance.

.. math:: S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_{head}}} + f_\theta\!\left(
          \frac{\psi(i - j)}{\psi(\max(L, i))}\right)_h, \qquad \psi(x) = \log(c x + 1) \quad (j \le i)

f_\theta maps one number to H, one per head: a hidden layer of ``fire_width``
ReLU units (32 in the paper's code), f(x) = W_2^\top \mathrm{relu}(W_1 x + b_1). The
paper's code also gives the output layer a bias; that adds one constant per head
to every score of a row, which the softmax cancels, so it is left out here. Three things make it run past its training
length with no table:

* the **log** \psi spends the input range on near keys, where the bias matters
  most; c > 0 is learned (it starts at 0.1, read as |c|);
* the **normalisation** by \psi(i), the query's own position, maps every key of
  every query into [0, 1]: a longer sequence asks f for inputs it was trained
  on, more finely spaced ("progressive interpolation");
* the **threshold** L: a query before L divides by \psi(L) instead, so within
  the training length the bias depends on the distance i - j alone, as T5's and
  ALiBi's do. L = |L_m| L_0, with the multiplier L_m learned (it starts at 1)
  and L_0 the setting ``fire_L`` (default: the model's ``max_len``).

Causal only (a key after the query has no i - j >= 0 to normalise); each layer
has its own f_\theta, c and L_m. The paper's code adds 10^{-6} to the
denominator, so a query at 0 with L = 0 divides 0 by 10^{-6}, not by 0; so does
this one.

With suitable weights f contains the fixed forms: f(x) = -m x is a linear bias
in the normalised distance (ALiBi's slope m/\psi(L) as c \to 0, where \psi(d)/\psi(L)
\to d/L), and two ReLUs of a steep ramp make a step, so a sum of steps between
consecutive distances reproduces T5's bucket table exactly within L
(``tests/positional/test_fire.py`` shows both).

``GPTConfig.extra`` keys read by the ``"fire"`` scheme:

* ``fire_width`` (int, default 32): hidden units of f_\theta;
* ``fire_L`` (float, default the model's ``max_len``): L_0, the threshold before its learned multiplier.
"""
from dataclasses import dataclass

from ..engine.autograd import Tensor, relu
from ..engine.backend import asarray, xp
from ..engine.backend import rng as make_rng
from ..engine.nn import Module, Parameter, init_normal
from ..engine.validate import check_int
from .base import PositionalScheme, key_minus_query, setting

EPS = 1e-6      # the paper's code: keeps psi(max(L, i)) away from 0
INIT_C = 0.1    # the paper's code's starting c


class FireMLP(Module):
    r"""One layer's f_\theta: R \to R^H (one hidden ReLU layer), with its own c and threshold multiplier L_m."""

    def __init__(self, n_heads, width, L0, rng, std=0.02):
        self.W1 = Parameter(init_normal(rng, (1, width), 1.0))              # (1, width): x in [0, 1], O(1) slopes
        self.b1 = Parameter(xp.zeros(width, dtype="float32"))
        # (width, H), no output bias: it would add one constant per head to every score of a row, which the
        # softmax cancels, so it could never learn (its gradient is exactly 0)
        self.W2 = Parameter(init_normal(rng, (width, n_heads), std))       # starts near no bias at all
        self.c = Parameter(asarray([INIT_C], dtype="float32"))              # (1,) read as |c|
        self.L_multiplier = Parameter(asarray([1.0], dtype="float32"))      # (1,) L = |L_m| L0
        self.L0 = L0

    def normalised_distance(self, q_pos, k_pos, dtype):
        r"""\psi(i - j) / (\psi(\max(L, i)) + 10^{-6}), a Tensor ``([B,] T_q, T_k)`` in [0, 1] (0 for future keys)."""
        distance = xp.maximum(-key_minus_query(q_pos, k_pos), 0).astype(dtype)   # ([B,] T_q, T_k) i - j
        i = Tensor(q_pos.astype(dtype)[..., :, None])                           # ([B,] T_q, 1)
        c = _abs(self.c)
        L = _abs(self.L_multiplier) * self.L0
        top = L + relu(i - L)                                                   # max(L, i)
        return (c * Tensor(distance) + 1).log() / ((c * top + 1).log() + EPS)

    def forward(self, x):
        r"""f_\theta(x) for x ``(..., 1)``: ``(..., H)``."""
        return relu(x @ self.W1 + self.b1) @ self.W2


def _abs(x):
    """|x| as a Tensor: d|x|/dx = sign(x)."""
    return x * Tensor(xp.sign(x.data))


@dataclass(frozen=True)
class FIRESettings:
    """The ``GPTConfig.extra`` keys of the ``"fire"`` scheme (None: the model decides)."""
    fire_width: int = setting(32, "hidden ReLU units of the learned function f")
    fire_L: float = setting(None, "L_0, the threshold before its learned multiplier; default: the model's max_len")


class FIRE(PositionalScheme):
    """Adds f(psi(i - j) / psi(max(L, i))) to the scores of every head, one learned f per layer."""

    Settings = FIRESettings
    per_row_positions = True
    causal_only = True

    def __init__(self, n_heads, n_layers, width=32, L0=64.0, rng=None):
        check_int("FIRE: fire_width", width, minimum=1)
        if isinstance(L0, bool) or not isinstance(L0, (int, float)) or not L0 >= 0:
            raise ValueError(f"FIRE: fire_L={L0!r} must be a number >= 0 (the threshold L_0 in positions).")
        rng = rng or make_rng(0)
        self.n_heads, self.settings = n_heads, FIRESettings(width, float(L0))
        self.layers = [FireMLP(n_heads, width, float(L0), rng) for _ in range(n_layers)]

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        if not causal:
            raise ValueError("positional='fire' is causal only: its distance i - j and its normaliser psi(max(L, i)) "
                             "read keys at or before the query, so it cannot serve TinyEncoder; use TinyGPT, or a "
                             "bidirectional scheme such as 't5' or 'alibi'.")
        s = cls.read_settings(cfg)
        return cls(cfg.n_heads, cfg.n_layers, s.fire_width, cfg.max_len if s.fire_L is None else s.fire_L, rng)

    def score_bias(self, q, k, q_pos, k_pos, layer):
        f = self.layers[layer]
        x = f.normalised_distance(q_pos, k_pos, q.dtype)                       # ([B,] T_q, T_k)
        y = f(x.reshape(*x.shape, 1))                                           # ([B,] T_q, T_k, H)
        if y.ndim == 4:
            return y.transpose(0, 3, 1, 2)                                      # (B, H, T_q, T_k)
        return y.transpose(2, 0, 1).reshape(1, self.n_heads, *x.shape)          # (1, H, T_q, T_k)
