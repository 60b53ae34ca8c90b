# Generated from solutions/long_context.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
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
    # TODO: Exercise 9.1
    raise NotImplementedError("Exercise 9.1")


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
    # TODO: Exercise 9.2
    raise NotImplementedError("Exercise 9.2")


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
    # TODO: Exercise 9.3
    raise NotImplementedError("Exercise 9.3")


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
    # TODO: Exercise 9.4
    raise NotImplementedError("Exercise 9.4")


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
    # TODO: Exercise 9.5
    raise NotImplementedError("Exercise 9.5")
