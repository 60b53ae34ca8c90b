# Generated from solutions/clinic.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""The failure-mode clinic: chapter 12's checks, one for each row of the book's failure table.

Each check receives ``make_patient``, a function that builds the patient to examine (a fresh
one on every call), and raises ``AssertionError`` (a plain ``assert``) when the patient has the
bug its row of the table is about. A patient (``exercises.adapters.clinic.Patient``) has

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
from exercises.adapters.clinic import attention_probe, make_patient  # noqa: F401  (the grader passes make_patient)


def check_cache(make_patient):
    r"""Row 1: cached generation degrades after a few tokens (the position index resets during decode).

    Run a sequence through the served model twice: once as one full forward pass, and once the
    way generation runs it, a prefill of a few tokens through ``model.new_cache()`` and then one
    token per call with the same cache. The logits at every position must agree.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.1
    raise NotImplementedError("Exercise 12.1")


def check_angles(make_patient):
    r"""Row 2: the loss explodes past the training length (RoPE angles the model never saw).

    A pair that never completed a turn in training saw only the angles of positions
    ``0 .. train_len - 1``. Served at ``serve_len``, its largest angle must stay within what
    position ``train_len`` would reach in training: for every such pair,

    .. math:: (\mathrm{serve\_len} - 1)\,\theta'_i \le \mathrm{train\_len}\cdot\theta_i,

    where :math:`\theta_i = \mathrm{base}^{-2i/d_{head}}` are the frequencies training used (base:
    ``model.cfg.rope_base``) and :math:`\theta'_i` those the served model uses
    (``model.positional.rotary.inv_freq``). On a trained model you would also evaluate the loss
    at 1x, 1.5x and 2x the training length; these patients are untrained, so check the angles.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.2
    raise NotImplementedError("Exercise 12.2")


def check_port(make_patient):
    r"""Row 3: a ported checkpoint produces garbage (the RoPE pairing convention differs).

    Compare the served model with the reference implementation, ``source``: the same
    checkpoint run by the code it was trained with. On the same input of ``train_len``
    tokens the two must give the same logits (the table's check compares one layer's
    rotated queries, which tells you where a difference starts).

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.3
    raise NotImplementedError("Exercise 12.3")


def check_reach(make_patient):
    r"""Row 4: long-context retrieval fails while perplexity looks fine (a recency bias).

    A needle probe asks whether a key that matches the query wins attention at any depth. On an
    untrained model probe the positional mechanism itself: with the content switched off
    (queries and keys all zero, so every score is whatever position adds), a query at position
    ``serve_len - 1`` must still reach the first token, in every head: give it at least half of
    the uniform weight ``1 / serve_len``. Use ``attention_probe(model, q, k, q_pos, k_pos)``, the
    model's attention with the projections taken out.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.4
    raise NotImplementedError("Exercise 12.4")


def check_sinks(make_patient):
    r"""Row 5: sliding-window attention collapses (the attention-sink tokens were evicted).

    Stream more than ``n_sink + window`` tokens, one per call, through
    ``model.new_cache(window=window, n_sink=n_sink, positions="slot")``. The last token's logits
    must equal a fresh forward pass over what the cache should hold when it arrives: the first
    ``n_sink`` tokens, the ``window`` tokens before it, and itself.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.5
    raise NotImplementedError("Exercise 12.5")


def check_shuffle(make_patient):
    r"""Row 6: the model ignores position entirely (the encoding never reaches attention).

    Shuffle the input and the output must change. In a causal model the mask alone leaks
    order, so shuffle only the tokens *before* the last one and look at the last position: a
    one-layer model that ignores position sees the same set of keys and values there and
    gives the same logits to the last digit. (The patients have one layer.)

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # TODO: Exercise 12.6
    raise NotImplementedError("Exercise 12.6")
