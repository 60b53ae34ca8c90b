r"""Checks of ``solutions/sinusoidal.py`` (chapter 2): the sinusoidal table, the shift matrix, their known mistakes."""
import numpy as np

from exercises.grading.drill_target import Drill
from exercises.grading.targets import Case, Misconception, Target


def _omega(d, base, omega_exp=None):
    i = np.arange(d // 2, dtype=np.float64)
    return base ** (-(2 * i if omega_exp is None else omega_exp(i)) / d)


# ---------------------------------------------------------------------------
# 2.1 sinusoidal_positional_encoding
# ---------------------------------------------------------------------------

def _sin_cases():
    return [Case(f"T {T}, d_model {d}" + (f", base {b:g}" if b != 10000.0 else ""), (T, d),
                 {} if b == 10000.0 else {"base": b},
                 show=f"T = {T}, d_model = {d}, base = {b!r}")
            for T, d, b in [(2, 4, 10000.0), (1, 4, 10000.0), (10, 16, 10000.0), (50, 64, 10000.0), (7, 8, 100.0)]]


def _pe(T, d, base=10000.0, omega_exp=None, layout="pairs", swap=False, first=0):
    pos = np.arange(first, first + T, dtype=np.float64)[:, None]
    a = pos * _omega(d, base, omega_exp)[None, :]
    s, c = (np.cos(a), np.sin(a)) if swap else (np.sin(a), np.cos(a))
    if layout == "halves":
        return np.concatenate([s, c], axis=-1)
    return np.stack([s, c], axis=-1).reshape(T, d)


_EXPONENT_HINT = ("omega_i = base ** (-2i / d_model) for pair i = 0 .. d_model/2 - 1. If you loop over the "
                  "even column numbers j = 2i, the exponent is -j / d_model, not -2j / d_model. Check: for "
                  "d_model = 8 the frequencies are 1, 0.1, 0.01, 0.001.")

SINUSOIDAL = Target("sinusoidal_positional_encoding", "array", _sin_cases, [
    Misconception("sin_cos_swapped", "sin and cos swapped",
                  "Even columns hold sin, odd columns hold cos: row 0 is [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, swap=True)),
    Misconception("halves_layout", "all the sines first, then all the cosines",
                  "The two members of a pair sit next to each other: column 2i is sin and column 2i + 1 is "
                  "cos of the same angle. Interleave them instead of concatenating.",
                  lambda T, d, base=10000.0: _pe(T, d, base, layout="halves")),
    Misconception("frequency_exponent", "wrong exponent in the frequencies", _EXPONENT_HINT,
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: i)),
    Misconception("frequency_exponent", "wrong exponent in the frequencies", _EXPONENT_HINT,
                  lambda T, d, base=10000.0: _pe(T, d, base, omega_exp=lambda i: 4 * i)),
    Misconception("positions_from_one", "positions start at 1",
                  "Row t encodes position t and the first row is position 0: [0, 1, 0, 1, ...].",
                  lambda T, d, base=10000.0: _pe(T, d, base, first=1)),
    Misconception("base_ignored", "the base argument is ignored",
                  "Use the base you are given: 10000 is only its default. With base = 100 and d_model = 8 "
                  "the frequencies are 1, 100^(-1/4), 0.1, 100^(-3/4).",
                  lambda T, d, base=10000.0: _pe(T, d, 10000.0)),
])


# ---------------------------------------------------------------------------
# 2.2 shift_rotation
# ---------------------------------------------------------------------------

def _shift_cases():
    return [Case(f"k {k}, d_model {d}" + (f", base {b:g}" if b != 10000.0 else ""), (k, d),
                 {} if b == 10000.0 else {"base": b},
                 show=f"k = {k}, d_model = {d}, base = {b!r}")
            for k, d, b in [(1, 2, 10000.0), (1, 4, 10000.0), (3, 8, 10000.0), (0, 4, 10000.0),
                            (-2, 8, 10000.0), (5, 16, 10000.0), (2, 8, 100.0)]]


def _shift(k, d, base=10000.0, sign=1.0, pairing="neighbours", omega_exp=None, scale_by_k=True):
    angle = (k if scale_by_k else 1) * _omega(d, base, omega_exp)
    c, s = np.cos(angle), sign * np.sin(angle)
    i = np.arange(d // 2)
    a, b = (2 * i, 2 * i + 1) if pairing == "neighbours" else (i, i + d // 2)
    M = np.zeros((d, d))
    M[a, a], M[a, b], M[b, a], M[b, b] = c, s, -s, c
    return M


SHIFT_ROTATION = Target("shift_rotation", "array", _shift_cases, [
    Misconception("rotates_backwards", "the block turns the wrong way",
                  "The pair is (sin, cos), sine first, so the textbook rotation [[cos, -sin], [sin, cos]] "
                  "turns it back: your M_k gives PE(t - k). From sin(a + b) = sin a cos b + cos a sin b and "
                  "cos(a + b) = cos a cos b - sin a sin b the block is [[cos kw, sin kw], [-sin kw, cos kw]].",
                  lambda k, d, base=10000.0: _shift(k, d, base, sign=-1.0)),
    Misconception("halves_pairing", "blocks on channels i and i + d_model/2",
                  "That is RoPE's rotate-half pairing. In the sinusoidal table a pair is two neighbouring "
                  "columns, 2i (sin) and 2i + 1 (cos): put block i in rows and columns 2i, 2i + 1.",
                  lambda k, d, base=10000.0: _shift(k, d, base, pairing="halves")),
    Misconception("angle_not_scaled_by_k", "every block turns by omega_i, whatever k is",
                  "Moving k positions on turns pair i by k * omega_i: your matrix is M_1 for every k. "
                  "Check M_0, which must be the identity.",
                  lambda k, d, base=10000.0: _shift(k, d, base, scale_by_k=False)),
    Misconception("frequency_exponent", "wrong exponent in the frequencies", _EXPONENT_HINT,
                  lambda k, d, base=10000.0: _shift(k, d, base, omega_exp=lambda i: i)),
])


TARGETS = [SINUSOIDAL, SHIFT_ROTATION]

# the timed drill, `python -m exercises drill sinusoidal`: the target from the chapter's "Retype by hand" table
DRILL = Drill(("sinusoidal_positional_encoding",), minutes=6)


# ---------------------------------------------------------------------------
# Held-out cases: other sizes, bases and edge cases, in the instructor's copy and the Gradescope bundle
# only (a student copy never holds them; see exercises/grading/README.md, "Held-out cases")
# ---------------------------------------------------------------------------

def _sin_held_out():
    return [Case(f"held-out {i}", (T, d), {} if b == 10000.0 else {"base": b}, show="(held out)")
            for i, (T, d, b) in enumerate([(3, 6, 10000.0), (17, 32, 10000.0), (100, 128, 10000.0),
                                           (5, 2, 10000.0), (9, 12, 500.0)])]


def _shift_held_out():
    return [Case(f"held-out {i}", (k, d), {} if b == 10000.0 else {"base": b}, show="(held out)")
            for i, (k, d, b) in enumerate([(7, 4, 10000.0), (-5, 16, 10000.0), (10, 32, 1000.0), (1, 6, 10000.0),
                                           (40, 12, 10000.0)])]


HELD_OUT = {"sinusoidal_positional_encoding": _sin_held_out, "shift_rotation": _shift_held_out}
