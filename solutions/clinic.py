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
    # BEGIN SOLUTION Exercise 12.1
    model = make_patient().model
    ids = rng(1).integers(0, model.cfg.vocab_size, (2, 12))        # (B, T)
    prefill = 4                                                     # shorter than the sequence: decode must run
    with no_grad():
        full = model(ids).data                                      # (B, T, vocab)
        cache = model.new_cache()
        steps = [model(ids[:, :prefill], cache=cache).data]
        steps += [model(ids[:, t:t + 1], cache=cache).data for t in range(prefill, ids.shape[1])]
    cached = xp.concatenate(steps, axis=1)                          # (B, T, vocab)
    assert cached.shape == full.shape
    worst = float(xp.abs(cached - full).max())
    assert worst < 1e-9, f"cached logits differ from the full forward's by up to {worst:.3g}"
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 12.2
    patient = make_patient()
    cfg = patient.model.cfg
    d = cfg.d_head
    trained = cfg.rope_base ** (-xp.arange(0, d, 2, dtype="float64") / d)    # (d/2,) theta_i of training
    served = patient.model.positional.rotary.inv_freq                         # (d/2,) theta'_i now
    never_turned = 2 * math.pi / trained > patient.train_len                  # pairs that never made a full turn
    reached = (patient.serve_len - 1) * served
    limit = patient.train_len * trained
    assert bool(xp.all(reached[never_turned] <= limit[never_turned])), (
        f"served at {patient.serve_len} tokens, the slow pairs reach angles {reached[never_turned]} radians; "
        f"training saw at most {limit[never_turned]}")
    # END SOLUTION


def check_port(make_patient):
    r"""Row 3: a ported checkpoint produces garbage (the RoPE pairing convention differs).

    Healthy means: the served model computes what ``source`` computes, the same checkpoint run by
    the code it was trained with, on any input of up to ``train_len`` tokens, to rounding (the
    table's check compares one layer's rotated queries, which tells you where a difference starts).

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # BEGIN SOLUTION Exercise 12.3
    patient = make_patient()
    ids = rng(2).integers(0, patient.model.cfg.vocab_size, (2, patient.train_len))
    with no_grad():
        served, reference = patient.model(ids).data, patient.source(ids).data
    worst = float(xp.abs(served - reference).max())
    assert worst < 1e-9, f"the served model differs from its checkpoint's own code by up to {worst:.3g}"
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 12.4
    patient = make_patient()
    cfg, T = patient.model.cfg, patient.serve_len
    q = xp.zeros((1, cfg.n_heads, 1, cfg.d_head))                   # (B, H, 1, d_head): no content
    k = xp.zeros((1, cfg.n_heads, T, cfg.d_head))                   # (B, H, T, d_head)
    probs = attention_probe(patient.model, q, k, xp.arange(T - 1, T), xp.arange(T))   # (1, H, 1, T)
    first = probs[0, :, 0, 0]                                       # (H,) weight on the farthest key
    assert bool(xp.all(first >= 0.5 / T)), f"weight on the first token, per head: {first} (uniform: {1 / T:.4f})"
    # END SOLUTION


def check_sinks(make_patient):
    r"""Row 5: sliding-window attention collapses (the attention-sink tokens were evicted).

    Healthy means: a stream of tokens, one per call, through
    ``model.new_cache(window=window, n_sink=n_sink, positions="slot")``, keeps the first ``n_sink``
    tokens and the ``window`` most recent ones, so that each token's logits are those of a fresh
    forward pass over what the cache should hold when it arrives, once the window has slid.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # BEGIN SOLUTION Exercise 12.5
    patient = make_patient()
    model, W, S = patient.model, patient.window, patient.n_sink
    N = S + W + 10                                                  # long enough that the window has slid
    ids = rng(4).integers(0, model.cfg.vocab_size, (2, N))
    with no_grad():
        cache = model.new_cache(window=W, n_sink=S, positions="slot")
        for t in range(N):
            streamed = model(ids[:, t:t + 1], cache=cache).data[:, -1]          # (B, vocab)
        kept = xp.concatenate([ids[:, :S], ids[:, N - 1 - W:]], axis=1)          # sinks, window, the last token
        fresh = model(kept).data[:, -1]
    worst = float(xp.abs(streamed - fresh).max())
    assert worst < 1e-9, f"streaming differs from the sinks plus the window by up to {worst:.3g}"
    # END SOLUTION


def check_shuffle(make_patient):
    r"""Row 6: the model ignores position entirely (the encoding never reaches attention).

    Healthy means: the order of the input tokens matters to the output beyond rounding. In a
    causal model the mask alone leaks order, so the check must see through it: a one-layer model
    that ignores position (the patients have one layer) must fail it on every input.

    Args:
        make_patient: a function ``() -> Patient``.
    """
    # BEGIN SOLUTION Exercise 12.6
    patient = make_patient()
    model, T = patient.model, patient.train_len
    assert model.cfg.n_layers == 1, "this shuffle check is exact for one layer only"
    ids = rng(5).integers(0, model.cfg.vocab_size, (2, T))
    perm = rng(6).permutation(T - 1)                                # a new order for tokens 0 .. T - 2
    assert not bool(xp.all(perm == xp.arange(T - 1)))
    shuffled = xp.concatenate([ids[:, :-1][:, perm], ids[:, -1:]], axis=1)
    with no_grad():
        before, after = model(ids).data[:, -1], model(shuffled).data[:, -1]     # (B, vocab) each
    change = float(xp.abs(after - before).max() / xp.abs(before).max())
    assert change > 1e-6, f"shuffling the input changed the last logits by {change:.3g} only (rounding)"
    # END SOLUTION
