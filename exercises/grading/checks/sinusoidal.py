r"""Checks of ``solutions/sinusoidal.py`` (drill): the sinusoidal table and its known mistakes."""
import numpy as np

from exercises.grading.checking import Case, Misconception, Target


def _sin_cases():
    return [Case(f"T {T}, d_model {d}" + (f", base {b:g}" if b != 10000.0 else ""), (T, d),
                 {} if b == 10000.0 else {"base": b},
                 show=f"T = {T}, d_model = {d}, base = {b!r}")
            for T, d, b in [(2, 4, 10000.0), (1, 4, 10000.0), (10, 16, 10000.0), (50, 64, 10000.0), (7, 8, 100.0)]]


def _pe(T, d, base=10000.0, omega_exp=None, layout="pairs", swap=False, first=0):
    pos = np.arange(first, first + T, dtype=np.float64)[:, None]
    i = np.arange(d // 2, dtype=np.float64)
    omega = base ** (-(2 * i if omega_exp is None else omega_exp(i)) / d)
    a = pos * omega[None, :]
    s, c = (np.cos(a), np.sin(a)) if swap else (np.sin(a), np.cos(a))
    if layout == "halves":
        return np.concatenate([s, c], axis=-1)
    return np.stack([s, c], axis=-1).reshape(T, d)


SINUSOIDAL = Target("sinusoidal_positional_encoding", "array", _sin_cases, [
    Misconception("sin_cos_swapped", "sin and cos swapped",
                  "Even columns hold sin, odd columns hold cos: row 0 is [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, swap=True)),
    Misconception("halves_layout", "all the sines first, then all the cosines",
                  "The two members of a pair sit next to each other: column 2i is sin and column 2i + 1 is "
                  "cos of the same angle. Interleave them instead of concatenating.",
                  lambda T, d, base=10000.0: _pe(T, d, base, layout="halves")),
    Misconception("frequency_exponent", "wrong exponent in the frequencies",
                  "omega_i = base ** (-2i / d_model) for pair i = 0 .. d_model/2 - 1. If you loop over the "
                  "even column numbers j = 2i, the exponent is -j / d_model, not -2j / d_model.",
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: i)),
    Misconception("frequency_exponent", "wrong exponent in the frequencies",
                  "omega_i = base ** (-2i / d_model) for pair i = 0 .. d_model/2 - 1. If you loop over the "
                  "even column numbers j = 2i, the exponent is -j / d_model, not -2j / d_model.",
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: 4 * i)),
    Misconception("positions_from_one", "positions start at 1",
                  "Row t encodes position t and the first row is position 0: [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, first=1)),
])


TARGETS = [SINUSOIDAL]
