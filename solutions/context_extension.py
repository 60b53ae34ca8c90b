r"""Stretching RoPE past its training length: the functions of chapter 8's exercises.

RoPE turns pair ``i`` of a query or key at position ``m`` by the angle ``m * theta_i``, with

.. math:: \theta_i = \mathrm{base}^{-2i/d}, \quad i = 0, \dots, d/2 - 1,

where ``d`` is the rotary dimension (``d_head`` unless only part of the head turns). Pair ``i``
completes one turn every :math:`\lambda_i = 2\pi/\theta_i` tokens. A model trained on ``L``
tokens has seen only the angles ``0 .. L theta_i``; every method here rescales the
:math:`\theta_i` (and YaRN also the softmax temperature) so that a longer context lands on
angles the model knows. ``s`` = ``factor`` is the new length over the trained one.
"""
import math

from mini_transformer.engine.backend import xp


def critical_dimension(d_head, base, train_len):
    r"""Liu et al.'s critical dimension :math:`d_{extra}`: the dimensions whose pairs turn fully within training.

    .. math:: d_{extra} = 2\left\lceil \frac{d}{2}\,\log_{\mathrm{base}}\frac{L}{2\pi} \right\rceil,

    clipped to ``0 .. d_head``. It is twice the number of pairs whose wavelength
    :math:`\lambda_i = 2\pi\,\mathrm{base}^{2i/d}` is shorter than ``L``; the pairs from
    :math:`d_{extra}/2` on never complete a turn in training. Worked example (the survey's):
    ``d_head = 128``, ``base = 10000``, ``L = 4096`` (Llama 2) gives
    :math:`64 \log_{10^4}(651.9) = 45.03`, so :math:`d_{extra} = 92`.

    Args:
        d_head: the rotary dimension ``d`` (even).
        base: RoPE's base (``rope_theta``), above 1.
        train_len: the training length ``L`` in tokens.

    Returns:
        int, even, between 0 and ``d_head``.
    """
    # BEGIN SOLUTION Exercise 8.1
    x = (d_head / 2) * math.log(train_len / (2 * math.pi)) / math.log(base)  # pairs below L, as a real number
    return 2 * min(max(math.ceil(x), 0), d_head // 2)
    # END SOLUTION


def ntk_base(base, factor, rotary_dim):
    r"""NTK-aware scaling's new base: :math:`\mathrm{base}' = \mathrm{base}\cdot s^{d/(d-2)}`.

    The exponent is chosen so that pair 0 keeps :math:`\theta_0 = 1` (it does for any base)
    and the slowest pair, :math:`\theta_{d/2-1} = \mathrm{base}^{-(d-2)/d}`, turns exactly ``s``
    times slower: :math:`(\mathrm{base}\, s^{d/(d-2)})^{-(d-2)/d} = \theta_{d/2-1}/s`. Worked
    example: base 10000, ``s = 4``, ``d = 4`` gives :math:`10000 \cdot 4^2 = 160000`.

    Args:
        base: the trained base (``rope_theta``).
        factor: the extension factor ``s >= 1``.
        rotary_dim: the rotary dimension ``d`` (even, above 2).

    Returns:
        float, the new base.
    """
    # BEGIN SOLUTION Exercise 8.2
    return base * factor ** (rotary_dim / (rotary_dim - 2))
    # END SOLUTION


def test_ntk_base(ntk_base):
    r"""A test that fails on a wrong NTK-aware base: it checks the property that defines the method.

    You receive an ``ntk_base`` (the signature of Exercise 8.2) and raise ``AssertionError`` (a
    plain ``assert``) when it is wrong: a base other than :math:`\mathrm{base}\cdot s^{d/(d-2)}` for
    any trained base, factor ``s`` and rotary dimension ``d``.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong in
    one way a reader's code can be (an exponent, a precedence, a constant); a good test fails on
    every one of them.

    Args:
        ntk_base: a function ``(base, factor, rotary_dim) -> new base``, as in Exercise 8.2.
    """
    # BEGIN SOLUTION Exercise 8.3
    base = 10000.0
    for d in (4, 32, 96, 128):
        old = base ** (-xp.arange(0, d, 2) / d)  # (d/2,) theta_i
        for s in (1.0, 2.5, 8.0):
            new = ntk_base(base, s, d) ** (-xp.arange(0, d, 2) / d)  # (d/2,) theta_i'
            assert new[0] == 1.0  # pair 0 is untouched (true of every base: a weak check on its own)
            assert math.isclose(float(old[-1] / new[-1]), s, rel_tol=1e-9)  # the slowest pair: exactly s
            assert bool(xp.all(new <= old * (1 + 1e-12)))  # no pair turns faster
    assert math.isclose(ntk_base(base, 4.0, 4), 160_000.0, rel_tol=1e-12)  # exponent 4 / 2 = 2
    # END SOLUTION


def yarn_attention_factor(factor, mscale=1.0):
    r"""YaRN's attention factor :math:`\sqrt{1/t} = 0.1\,m \ln s + 1` for ``s > 1``, and 1 for ``s <= 1``.

    It multiplies both cos and sin, so it scales every query and every key, and the
    attention logits by its square, :math:`1/t`. ``m`` = ``mscale`` (DeepSeek's configs give
    0.707 or 1). Worked example: ``s = 4`` gives :math:`0.1 \ln 4 + 1 = 1.1386`.

    Args:
        factor: the extension factor ``s``.
        mscale: the multiplier ``m`` of the logarithm.

    Returns:
        float.
    """
    # BEGIN SOLUTION Exercise 8.4
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0
    # END SOLUTION


def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    r"""The Llama 3.1 rule: keep the fast pairs, divide the slow ones by ``s``, blend in between.

    With :math:`\lambda_i = 2\pi/\theta_i` and ``L`` = ``original_max_position_embeddings``:

    * :math:`\lambda_i < L/h` (``h`` = ``high_freq_factor``): :math:`\theta_i` is kept;
    * :math:`\lambda_i > L/l` (``l`` = ``low_freq_factor``): :math:`\theta_i / s`;
    * in between, with :math:`g = (L/\lambda_i - l)/(h - l)`:
      :math:`(1 - g)\,\theta_i/s + g\,\theta_i`, which meets both bands at their edges.

    Llama 3.1 uses ``s = 8``, ``l = 1``, ``h = 4``, ``L = 8192``: pairs that turn more than
    4 times in 8192 tokens are kept, pairs that turn less than once are interpolated.

    Args:
        inv_freq: the trained frequencies :math:`\theta_i`, float64 ``(d/2,)``.
        factor: ``s``.
        low_freq_factor: ``l``.
        high_freq_factor: ``h``, above ``l``.
        original_max_position_embeddings: the trained length ``L``.

    Returns:
        float64 array ``(d/2,)``, the new frequencies.
    """
    # BEGIN SOLUTION Exercise 8.5
    L = original_max_position_embeddings
    wavelength = 2 * math.pi / inv_freq  # (d/2,) tokens per turn
    g = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)  # (d/2,) 0 .. 1 in the blend
    blended = (1 - g) * inv_freq / factor + g * inv_freq
    return xp.where(wavelength < L / high_freq_factor, inv_freq,
                    xp.where(wavelength > L / low_freq_factor, inv_freq / factor, blended))
    # END SOLUTION
