r"""Measuring long context: the functions of chapter 9's exercises.

Each one turns a model's outputs into a number that says whether the model *uses* a long
context, not only whether it accepts one. They work on arrays the model already produced:

* ``token_losses`` ``(N, T)``: the next-token loss of N sequences at each position
  ``t = 0 .. T-1`` (the loss at ``t`` is for predicting token ``t + 1`` from tokens ``0 .. t``);
* ``logits`` ``(B, T, V)`` and ``targets`` ``(B, T)``, with ``IGNORE = -1`` where nothing is scored;
* a passkey grid: context ``lengths`` and the retrieval ``accuracy`` at each.

Positions count from 0, and a model trained at length ``L`` has seen the positions
``0 .. L-1``, so position ``L`` is the first it never saw.
"""
import math

from mini_transformer.engine.backend import xp

IGNORE = -1  # a target that is not scored (mini_transformer.model.tasks.IGNORE)


def loss_by_position(token_losses, bucket):
    r"""Mean loss per bucket of consecutive positions.

    Bucket ``b`` covers the positions ``[b * bucket, min((b + 1) * bucket, T))``, so the last
    bucket is shorter when ``bucket`` does not divide ``T``, and its value is the mean over
    every sequence and every position in it. Worked example: the losses ``[[1, 2, 3, 4, 5]]``
    with ``bucket=2`` give ``[1.5, 3.5, 5.0]``.

    Args:
        token_losses: ``(N, T)`` float array, the loss of each sequence at each position.
        bucket: positions per bucket, at least 1.

    Returns:
        ``(ceil(T / bucket),)`` float array of bucket means, the dtype of ``token_losses``.
    """
    # BEGIN SOLUTION Exercise 9.1
    N, T = token_losses.shape
    per_position = token_losses.mean(axis=0)  # (T,) every sequence has every position
    starts = range(0, T, bucket)
    return xp.stack([per_position[s:s + bucket].mean() for s in starts])  # (n_buckets,)
    # END SOLUTION


def loss_inside_and_beyond(token_losses, train_len):
    r"""Mean loss on the positions the model trained on, and on the positions past them.

    A model trained at length ``train_len`` has seen the positions ``0 .. train_len - 1``.
    Return ``[mean over positions t < train_len, mean over positions t >= train_len]``, each
    over every sequence. The loss at position ``t`` belongs to the query at ``t`` (it predicts
    token ``t + 1``), so the split is by ``t``. Worked example: with ``train_len=2`` the
    losses ``[[1, 1, 4, 6]]`` give ``[1.0, 5.0]``.

    Args:
        token_losses: ``(N, T)`` float array with ``T > train_len``.
        train_len: the training length, at least 1.

    Returns:
        ``(2,)`` float array ``[inside, beyond]``, the dtype of ``token_losses``.
    """
    # BEGIN SOLUTION Exercise 9.2
    T = token_losses.shape[-1]
    if not 1 <= train_len < T:
        raise ValueError(f"train_len={train_len} leaves no position on one side of a window of T={T}; "
                         f"it must lie in [1, {T - 1}].")
    inside = token_losses[:, :train_len].mean()  # positions 0 .. train_len - 1: seen in training
    beyond = token_losses[:, train_len:].mean()  # positions train_len .. T - 1: never seen
    return xp.stack([inside, beyond])
    # END SOLUTION


def passkey_accuracy(logits, targets):
    r"""The share of rows whose every scored token is predicted right (the passkey, whole).

    ``targets`` are already the next tokens: ``targets[b, t]`` is what the prediction at
    position ``t`` should be, and it is ``IGNORE`` (-1) where nothing is scored. The
    prediction at ``t`` is ``argmax(logits[b, t])``. A row counts when all of its scored
    positions are right; a key with one wrong digit is a wrong key. Every row has at least
    one scored position.

    Args:
        logits: ``(B, T, V)`` float array.
        targets: ``(B, T)`` integer array, ``IGNORE`` where not scored.

    Returns:
        a Python float in ``[0, 1]``.
    """
    # BEGIN SOLUTION Exercise 9.3
    predicted = logits.argmax(axis=-1)  # (B, T)
    scored = targets != IGNORE  # (B, T)
    right = (predicted == targets) | ~scored  # an unscored position never makes a row wrong
    return float(right.all(axis=1).mean())
    # END SOLUTION


def effective_context_length(lengths, accuracy, threshold=0.5):
    r"""The longest context up to which retrieval works everywhere: where performance first breaks.

    ``accuracy[i]`` holds the retrieval accuracy at ``lengths[i]``, one number or one per
    depth; NaN marks a length the model refused, which counts as a failure. Length
    ``lengths[i]`` passes when every one of its accuracies is at least ``threshold``. Return
    the largest ``lengths[i]`` such that it and every shorter length pass, or 0 when the
    shortest already fails. A length that passes after a shorter one failed does not count.

    Args:
        lengths: ``(n,)`` strictly increasing integer array of context lengths.
        accuracy: ``(n,)`` or ``(n, n_depths)`` float array.
        threshold: the accuracy a cell needs, in ``[0, 1]``.

    Returns:
        a Python int, one of ``lengths`` or 0.
    """
    # BEGIN SOLUTION Exercise 9.4
    acc = accuracy.reshape(len(lengths), -1)  # (n, n_depths)
    passes = (acc >= threshold).all(axis=1)  # (n,) NaN >= threshold is False: a refusal fails
    best = 0
    for L, ok in zip(lengths, passes):
        if not ok:
            break  # the first failure ends the run, whatever comes after
        best = int(L)
    return best
    # END SOLUTION


def test_long_context_measures(loss_inside_and_beyond, effective_context_length):
    r"""A test that fails on a wrong measurement: it checks the definitions on cases you can work by hand.

    You receive a ``loss_inside_and_beyond`` and an ``effective_context_length`` (the signatures of
    Exercises 9.2 and 9.4) and raise ``AssertionError`` (a plain ``assert``) when they are wrong: a
    split other than the means over the positions a model of length ``L`` trained on and over those
    past it, or a length other than the longest one up to which every length passes at every depth.

    The grader runs your test on the reference, where it must pass, and on mutants, each
    wrong in one way a reader's code can be (where "beyond" starts, which length counts);
    a good test fails on every one of them.

    Args:
        loss_inside_and_beyond: a function ``(token_losses, train_len) -> (2,) array``.
        effective_context_length: a function ``(lengths, accuracy, threshold=0.5) -> int``.
    """
    # BEGIN SOLUTION Exercise 9.5
    for L, T in [(4, 10), (1, 3), (7, 8)]:
        step = xp.concatenate([xp.zeros((2, L)), xp.ones((2, T - L))], axis=1)  # 0 inside, 1 beyond
        inside, beyond = (float(v) for v in loss_inside_and_beyond(step, L))
        assert (inside, beyond) == (0.0, 1.0), f"L={L}, T={T}: got {(inside, beyond)}, expected (0, 1)"
    ramp = xp.arange(6, dtype="float64")[None, :]  # loss t at position t: inside mean 1, beyond mean 4
    assert [float(v) for v in loss_inside_and_beyond(ramp, 3)] == [1.0, 4.0]

    lengths = xp.asarray([8, 16, 32, 64])
    ecl = effective_context_length
    assert ecl(lengths, xp.asarray([0.9, 0.8, 0.2, 0.9])) == 16  # 64 passes again, but 32 broke first
    assert ecl(lengths, xp.asarray([0.1, 0.9, 0.9, 0.9])) == 0  # the shortest fails
    assert ecl(lengths, xp.asarray([0.9, 0.9, 0.9, 0.9])) == 64  # all pass
    assert ecl(lengths, xp.asarray([0.5, 0.5, 0.4, 0.5])) == 16  # exactly at the threshold passes
    assert ecl(lengths, xp.asarray([0.9, 0.9, math.nan, 0.9])) == 16  # a refusal is a failure
    depths = xp.asarray([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])  # length 16 fails at one depth
    assert ecl(lengths, depths) == 8  # every depth must pass, not their mean
    assert ecl(lengths, xp.asarray([0.9, 0.7, 0.7, 0.2]), threshold=0.8) == 8
    # END SOLUTION
