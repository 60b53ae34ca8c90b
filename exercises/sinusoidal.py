# Generated from solutions/sinusoidal.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""The sinusoidal positional encoding of "Attention Is All You Need": chapter 2's exercises.

Position ``t`` gets one point on each of ``d_model/2`` clocks. Pair ``i`` (columns
``2i`` and ``2i + 1``) turns at the frequency

.. math:: \omega_i = \mathrm{base}^{-2i/d_{model}}, \quad i = 0, \dots, d_{model}/2 - 1,

and holds the sine and the cosine of the angle ``t * omega_i``:

.. math::
    PE_{t, 2i} = \sin(t\,\omega_i), \qquad PE_{t, 2i+1} = \cos(t\,\omega_i).

A row of the table is one position, ``(d_model,)``; the table is ``(T, d_model)``.
"""
import math

from mini_transformer.engine.backend import xp


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    r"""The ``(T, d_model)`` table of sinusoidal encodings for positions ``0 .. T-1``.

    Column ``2i`` holds :math:`\sin(t\,\omega_i)` and column ``2i+1`` holds
    :math:`\cos(t\,\omega_i)`, with :math:`\omega_i = \mathrm{base}^{-2i/d_{model}}`.
    Row 1 starts ``[sin 1, cos 1, ...]``; row 0 is ``[0, 1, 0, 1, ...]``.

    Args:
        T: number of positions.
        d_model: even model width.
        base: sets the longest wavelength, ``2 * pi * base``.

    Returns:
        float64 array ``(T, d_model)``; row ``t`` encodes position ``t``.
    """
    # TODO: Exercise 2.1
    raise NotImplementedError("Exercise 2.1")


def shift_rotation(k, d_model, base=10000.0):
    r"""The ``(d_model, d_model)`` matrix :math:`M_k` with :math:`PE(t + k) = M_k\,PE(t)` for every ``t``.

    It is block-diagonal. Pair ``i`` (channels ``2i`` and ``2i + 1``) holds
    :math:`(\sin t\omega_i, \cos t\omega_i)`; moving ``k`` positions on turns it by the angle
    :math:`k\omega_i`, and the angle-addition formulas give its ``2 x 2`` block:

    .. math::
        \begin{bmatrix}\cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i\end{bmatrix}

    in rows and columns ``2i, 2i + 1``. Every entry outside the blocks is 0. ``k`` may be
    any integer: ``M_0`` is the identity and ``M_{-k}`` turns back.

    With the table's rows as row vectors, ``pe[t + k] == M_k @ pe[t]``, so for the whole table
    ``pe[k:] == pe[:-k] @ M_k.T``.

    Args:
        k: the offset, an integer.
        d_model: even model width.
        base: the encoding's base.

    Returns:
        float64 array ``(d_model, d_model)``.
    """
    # TODO: Exercise 2.2
    raise NotImplementedError("Exercise 2.2")


def test_sinusoidal_properties(sinusoidal_positional_encoding, shift_rotation):
    r"""A test that fails on a wrong sinusoidal table or a wrong shift matrix.

    You receive a ``sinusoidal_positional_encoding`` and a ``shift_rotation`` (the signatures of
    Exercises 2.1 and 2.2) and raise ``AssertionError`` (a plain ``assert``) when they are not what
    chapter 2 derives: the table of section 2, for any ``T``, ``d_model`` and ``base``, and the
    matrix with :math:`PE(t + k) = M_k\,PE(t)` for every ``t`` and every ``k``.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be (a swapped layout, a wrong exponent, a block that turns
    backwards); a good test fails on every one of them.

    Args:
        sinusoidal_positional_encoding: a function ``(T, d_model, base=10000.0) -> (T, d_model)``,
            as in Exercise 2.1.
        shift_rotation: a function ``(k, d_model, base=10000.0) -> (d_model, d_model)``, as in
            Exercise 2.2.
    """
    # TODO: Exercise 2.3
    raise NotImplementedError("Exercise 2.3")
