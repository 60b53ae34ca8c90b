r"""The engine under the book: the functions of chapter 0's exercises.

Everything here works on plain arrays of the active backend (``xp``), in the book's
layout: attention scores are ``(B, H, T_q, T_k)``, and a softmax runs over the last
axis, the keys. The chapter wraps your ``softmax`` and ``softmax_backward`` into one op
of the engine (forward and backward side by side, as every op in
``mini_transformer/engine/autograd.py`` is written) and trains a TinyGPT on it.

A mask is a boolean array that broadcasts to the scores' shape, **True where a query may
look**, as in ``mini_transformer.engine.functional.scaled_dot_product_attention``. Every row
keeps at least one entry (a causal mask always keeps the diagonal).
"""
from mini_transformer.engine.backend import xp


def softmax(x, mask=None):
    r"""Softmax over the last axis, with an optional mask.

    .. math:: y_j = \frac{e^{x_j - c}}{\sum_{k\ \mathrm{kept}} e^{x_k - c}}, \qquad c = \max_{k\ \mathrm{kept}} x_k,

    and :math:`y_j = 0` where the mask is False. Subtracting :math:`c` changes nothing
    in exact arithmetic (it cancels between numerator and denominator) and keeps
    ``exp`` from overflowing: ``exp(1000.0)`` is ``inf`` in float64. Worked example:
    ``softmax([0, ln 2, ln 3]) == [1/6, 2/6, 3/6]``.

    Args:
        x: scores ``(..., T_k)``, float32 or float64.
        mask: ``None`` (keep everything), or a boolean array broadcasting to ``x.shape``,
            True where a query may look. Every row keeps at least one entry.

    Returns:
        array with the shape and dtype of ``x``: every row sums to 1, masked entries are
        exactly 0. ``x`` itself is left unchanged.
    """
    # BEGIN SOLUTION Exercise 0.1
    if mask is not None:
        x = xp.where(mask, x, -xp.inf)  # a masked score is -inf, so its weight e^(-inf) is exactly 0
    c = x.max(axis=-1, keepdims=True)  # (..., 1) the largest kept score of each row
    e = xp.exp(x - c)  # (..., T_k) at most 1, so nothing overflows
    return e / e.sum(axis=-1, keepdims=True)
    # END SOLUTION


def softmax_backward(y, gy):
    r"""The backward of ``softmax``: the gradient with respect to its input, from its output.

    Softmax's Jacobian is :math:`\partial y_i / \partial x_j = y_i(\delta_{ij} - y_j)` within a
    row (rows do not touch each other), so

    .. math:: gx_j = \sum_i gy_i\, y_i (\delta_{ij} - y_j) = y_j \Big(gy_j - \sum_i gy_i\, y_i\Big).

    It needs only the output ``y``: no ``exp`` is recomputed. Masked entries have
    :math:`y_j = 0`, so their gradient is 0, as it must be (their input was thrown away).

    Args:
        y: the softmax's output ``(..., T_k)``, each row summing to 1.
        gy: the gradient of the loss with respect to ``y``, same shape.

    Returns:
        ``gx``, the gradient with respect to the softmax's input: same shape and dtype as ``y``.
    """
    # BEGIN SOLUTION Exercise 0.2
    dot = (gy * y).sum(axis=-1, keepdims=True)  # (..., 1) sum_i gy_i y_i, one number per row
    return y * (gy - dot)
    # END SOLUTION


def test_softmax_and_its_gradient(softmax, softmax_backward):
    r"""A test that fails on a wrong softmax or a wrong backward: the properties that define them.

    You receive a ``softmax`` and a ``softmax_backward`` (the signatures of Exercises 0.1 and 0.2)
    and raise ``AssertionError`` (a plain ``assert``) when either is wrong: a forward that is not a
    softmax over the kept keys, or a backward that is not its gradient. Which inputs and which
    comparisons show each mistake is the exercise.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be; a good test fails on every one of them.

    Args:
        softmax: a function ``(x, mask=None) -> y``, as in Exercise 0.1.
        softmax_backward: a function ``(y, gy) -> gx``, as in Exercise 0.2.
    """
    # BEGIN SOLUTION Exercise 0.3
    g = xp.random.default_rng(0)
    x = g.standard_normal((2, 3, 5))  # (B, T_q, T_k): several rows, not square
    mask = g.random((3, 5)) > 0.4  # (T_q, T_k) True where a query may look ...
    mask[:, 0] = True  # ... and every row keeps at least one key
    y = softmax(x, mask)
    assert y.shape == x.shape
    assert xp.allclose(y.sum(axis=-1), 1.0, rtol=0, atol=1e-12)  # a distribution over the kept keys
    assert (y[:, ~mask] == 0).all() and (y >= 0).all()  # nothing on a masked key
    assert xp.allclose(softmax(x + 1000.0, mask), y, rtol=0, atol=1e-12)  # shift-invariant, no overflow

    gy = g.standard_normal(x.shape)  # random weights: with gy = 1 the true gradient is 0
    gx = softmax_backward(y, gy)
    h = 1e-5
    numeric = xp.zeros(x.size)
    for j in range(x.size):  # nudge one entry at a time, both ways
        up, down = x.copy(), x.copy()
        up.reshape(-1)[j] += h
        down.reshape(-1)[j] -= h
        numeric[j] = ((gy * softmax(up, mask)).sum() - (gy * softmax(down, mask)).sum()) / (2 * h)
    numeric = numeric.reshape(x.shape)
    assert xp.allclose(gx, numeric, rtol=0, atol=1e-8)  # central differences are good to about h^2
    # END SOLUTION


def cross_entropy(logits, targets):
    r"""The mean next-token loss in nats: :math:`-\frac{1}{N}\sum_n \ln \mathrm{softmax}(z_n)_{t_n}`.

    With :math:`c = \max_v z_v`,

    .. math:: \ln \mathrm{softmax}(z)_t = z_t - c - \ln \sum_v e^{z_v - c}

    (the log-sum-exp form: no probability is formed, so none underflows to 0 and no
    ``log(0)`` appears). Natural logarithms: the unit is the *nat*. A model that knows
    nothing gives every token probability ``1/V`` and scores exactly ``ln V``.

    Args:
        logits: ``(..., V)`` float array, one row of scores per predicted token.
        targets: integer array ``(...)`` with values in ``[0, V)``.

    Returns:
        a Python float: the mean over every target, in nats.
    """
    # BEGIN SOLUTION Exercise 0.4
    c = logits.max(axis=-1, keepdims=True)  # (..., 1)
    log_p = logits - c - xp.log(xp.exp(logits - c).sum(axis=-1, keepdims=True))  # (..., V) log softmax
    picked = xp.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]  # (...) log p of each target
    return float(-picked.mean())
    # END SOLUTION
