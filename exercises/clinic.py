# Generated from solutions/clinic.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""The failure-mode clinic: chapter 12's checks, one for each row of the book's failure table.

Each check receives ``make_patient``, a function that builds the patient to examine (a fresh
one on every call), and raises ``AssertionError`` (a plain ``assert``) when the patient has the
bug its row of the table is about. A patient (``mini_transformer.evaluation.clinic.Patient``) has

* ``model``: the served ``TinyGPT`` (one layer, two heads of 8 channels, RoPE, float64);
* ``source``: the checkpoint it was loaded from, run by the code it was trained with;
* ``train_len``: the length it was trained at; ``serve_len``: the longest input it is served with;
* ``window``, ``n_sink``: its streaming policy, a sliding window plus sinks, positions by slot.

The grader runs every check on the healthy patient, where it must pass, and on six patients
with one bug planted each: the bug of its row must make it fail; the report says which of the
other five it catches as well. The patients are untrained, so a check looks at what a bug
breaks on any weights, never at how well a model predicts.
"""
import math

from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import rng, xp
from mini_transformer.evaluation.clinic import attention_probe, make_patient  # noqa: F401  (the grader passes make_patient)


def check_cache(make_patient):
    r"""Row 1: cached generation degrades after a few tokens (the position index resets during decode).

    Healthy means: generating with a cache (``model.new_cache()``, passed as ``cache=`` to every
    call) gives, at every position, the logits one full forward pass gives. The patient with the
    bug of this row breaks that as soon as decoding goes past its prompt.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.1
    raise NotImplementedError("Exercise 12.1")


def check_angles(make_patient):
    r"""Row 2: the loss explodes past the training length (RoPE angles the model never saw).

    Healthy means: served at ``serve_len`` tokens, no pair that never completed a turn in training
    meets an angle training did not reach (up to position ``train_len``). The frequencies training
    used follow from ``model.cfg.rope_base`` and ``model.cfg.d_head``; those the served model uses
    are ``model.positional.rotary.inv_freq``. On a trained model you would also evaluate the loss
    at 1x, 1.5x and 2x the training length; these patients are untrained, so check the angles.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.2
    raise NotImplementedError("Exercise 12.2")


def check_port(make_patient):
    r"""Row 3: a ported checkpoint produces garbage (the RoPE pairing convention differs).

    Healthy means: the served model computes what ``source`` computes, the same checkpoint run by
    the code it was trained with, on any input of up to ``train_len`` tokens, to rounding (the
    table's check compares one layer's rotated queries, which tells you where a difference starts).

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.3
    raise NotImplementedError("Exercise 12.3")


def check_reach(make_patient):
    r"""Row 4: long-context retrieval fails while perplexity looks fine (a recency bias).

    A needle probe asks whether a key that matches the query wins attention at any depth. On an
    untrained model probe the positional mechanism itself. Healthy means: with the content
    switched off, so that every score is whatever position adds, the last query of a
    ``serve_len``-token input still gives the first token at least half of the uniform weight
    ``1 / serve_len``, in every head. ``attention_probe(model, q, k, q_pos, k_pos)`` is the
    model's attention with the projections taken out: ``q`` ``(B, H, T_q, d_head)``, ``k``
    ``(B, H, T_k, d_head)``, positions ``(T_q,)`` and ``(T_k,)``, probabilities
    ``(B, H, T_q, T_k)`` back.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.4
    raise NotImplementedError("Exercise 12.4")


def check_sinks(make_patient):
    r"""Row 5: sliding-window attention collapses (the attention-sink tokens were evicted).

    Healthy means: a stream of tokens, one per call, through
    ``model.new_cache(window=window, n_sink=n_sink, positions="slot")``, keeps the first ``n_sink``
    tokens and the ``window`` most recent ones, so that each token's logits are those of a fresh
    forward pass over what the cache should hold when it arrives, once the window has slid.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.5
    raise NotImplementedError("Exercise 12.5")


def check_shuffle(make_patient):
    r"""Row 6: the model ignores position entirely (the encoding never reaches attention).

    Healthy means: the order of the input tokens matters to the output beyond rounding. In a
    causal model the mask alone leaks order, so the check must see through it: a one-layer model
    that ignores position (the patients have one layer) must fail it on every input.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.6
    raise NotImplementedError("Exercise 12.6")
