r"""The sinusoidal positional encoding of "Attention Is All You Need" (drill only).

.. math::
    PE_{t, 2i} = \sin(t \cdot \mathrm{base}^{-2i/d}), \qquad PE_{t, 2i+1} = \cos(t \cdot \mathrm{base}^{-2i/d})
"""
from mini_transformer.backend import xp


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
    # BEGIN SOLUTION Drill sinusoidal.1
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sin and cos come in pairs), got {d_model}.")
    pos = xp.arange(T, dtype=xp.float64)[:, None]  # (T, 1)
    two_i = xp.arange(0, d_model, 2, dtype=xp.float64)  # (d_model/2,) the values 2i
    omega = base ** (-two_i / d_model)  # (d_model/2,) omega_i
    angles = pos * omega[None, :]  # (T, d_model/2) t * omega_i
    return xp.stack([xp.sin(angles), xp.cos(angles)], axis=-1).reshape(T, d_model)  # sin even, cos odd
    # END SOLUTION
