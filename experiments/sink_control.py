r"""The attention sink, made to form: a task where most queries have nothing to look up.

Bigram-Backcopy (Guo et al., 2024, "Active-Dormant Attention Heads", arXiv 2410.13835), written for
this workbook: every row starts with a BOS token; each next token follows a fixed random bigram table,
except after one of a few trigger tokens, where it copies the token before the trigger. Only the
queries at triggers need attention (to look one token back); every other query predicts from its own
token, and a head that must still spend its softmax row somewhere can park it on BOS: the sink.

Guo et al. use 3 triggers in 64 tokens; here 16 triggers and a flat bigram table (32 successors a token) make
copying worth more, so the copy head, and its sink, form within a few hundred steps on two cores; about four
queries in five still have nothing to look up (a trigger at 405 of the 2,016 query positions 1 to 63 of the 32
held-out rows). Four arms, five seeds each, the same RoPE ``TinyGPT`` (2 layers, 8 heads,
d_model 64, AdamW at 1e-2, weight decay 0.1, batches of 16 rows) and data:

* ``softmax``: the ordinary model, AdamW. The positive control: it must form a sink.
* ``sigmoid, normalised``: :math:`P_{ij} = \sigma(s\,q_i\cdot k_j + b) / \sum_j \sigma(\cdot)`, rows summing to 1
  again (Gu et al., 2024: 30% sink heads).
* ``sigmoid``: the same without the division (Gu et al.: 0.44%, no sink), rows free to spend nothing.
* ``relu``: :math:`P_{ij} = \mathrm{ReLU}(s\,q_i\cdot k_j)/L` (Guo et al.: no sink).

For each: Gu et al.'s metric (the share of heads whose mean attention on position 0 passes 0.3, at
T = 64) over training; the mean attention on position 0 per layer and per query position; on the
softmax arm, the mechanism (the BOS key's alignment with the queries, its value's norm, the residual
stream's size at BOS); and eviction as StreamingLLM measures it, past the training length.

    python -m experiments.sink_control [--quick]

writes ``results/sink_control.json`` and ``.png``, and the softmax model of seed 0 as
``results/sink_control_softmax_seed0.npz``: a plain ``TinyGPT`` checkpoint that
``evaluation.attention_mass`` reads with no code from this file (``load_control``).
"""
import dataclasses
import math
import os
import sys
import time

from mini_transformer.engine import backend, functional as F
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.evaluation import stats
from mini_transformer.evaluation.measures import attention_mass
from mini_transformer.evaluation.streaming import stream_loss
from . import common
from .attention_sinks import DropToken, sigmoid_attention
from .common import RESULTS, Timer, environment

VOCAB = 64               # content tokens 0 .. 63
BOS = VOCAB              # the fixed first token, id 64; the model's vocabulary is 65
N_TRIGGERS = 16          # trigger tokens: after one, the next token copies the token before it
SUCCESSORS = 32          # each token's bigram row has 32 possible successors
T = 64                   # training length, and Gu et al.'s measuring length
SINK_THRESHOLD = 0.3     # a head is a sink head when its mean attention on position 0 passes this (Gu et al.)
SIZE = 0.1               # the claims' threshold: a sink "forms" when more than one head in ten is a sink head
BREAKS = 0.05            # a window "breaks" when the loss rises by more than this (nats per token)
ARMS = ("softmax", "sigmoid, normalised", "sigmoid", "relu")
SEEDS = (0, 1, 2, 3, 4)      # 5: the gaps compared are under 0.05 nats (the README's seed rule)
LR, WEIGHT_DECAY, BATCH = 1e-2, 0.1, 16   # AdamW, constant rate after 50 steps of warmup
CHECKPOINT = os.path.join(RESULTS, "sink_control_softmax_seed0.npz")
COMMAND = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.sink_control"


# ---------------------------------------------------------------------------
# The task
# ---------------------------------------------------------------------------

class BigramBackcopy:
    r"""Rows ``BOS, x_1, x_2, ...``: :math:`x_{t+1} = x_{t-1}` when :math:`x_t` is a trigger, else
    :math:`x_{t+1} \sim P(\cdot \mid x_t)`, a fixed random bigram table with ``successors`` non-zero
    entries a row. :math:`x_1` is drawn uniformly from the non-triggers, so BOS is never copied."""

    def __init__(self, vocab=VOCAB, n_triggers=N_TRIGGERS, successors=SUCCESSORS, seed=0):
        if not 1 <= n_triggers < vocab or not 1 <= successors <= vocab:
            raise ValueError(f"BigramBackcopy needs 1 <= n_triggers < vocab and 1 <= successors <= vocab, got "
                             f"n_triggers={n_triggers}, successors={successors}, vocab={vocab}.")
        g = np.random.default_rng(seed)
        self.vocab = vocab
        self.triggers = np.sort(g.choice(vocab, n_triggers, replace=False))
        self.is_trigger = np.zeros(vocab, dtype=bool)
        self.is_trigger[self.triggers] = True
        table = np.zeros((vocab, vocab))
        for a in range(vocab):
            table[a, g.choice(vocab, successors, replace=False)] = g.dirichlet(np.ones(successors))
        self.table = table                                      # (vocab, vocab), rows sum to 1
        self.cumulative = np.cumsum(table, axis=1)
        self.first = np.flatnonzero(~self.is_trigger)           # x_1 is drawn from these

    def sample(self, n, length, g):
        """``n`` rows of ``length`` tokens, BOS first: a host int64 array ``(n, length)``."""
        rows = np.empty((n, length), dtype=np.int64)
        rows[:, 0] = BOS
        rows[:, 1] = self.first[g.integers(0, len(self.first), n)]
        for t in range(1, length - 1):
            cur = rows[:, t]
            u = g.random(n)[:, None]
            drawn = np.minimum((self.cumulative[cur] < u).sum(axis=1), self.vocab - 1)
            rows[:, t + 1] = np.where(self.is_trigger[cur], rows[:, t - 1], drawn)
        return rows

    def batches(self, batch_size=32, length=T):
        """``rng -> (x, y)`` for ``train``: rows of ``length + 1`` tokens split into input and target."""
        def get(rng):
            rows = self.sample(batch_size, length + 1, rng.host)
            return backend.asarray(rows[:, :-1]), backend.asarray(rows[:, 1:])
        return get

    def best_loss(self):
        r"""The loss of the true process per predicted token, far from the start: the bigram entropy averaged
        over the stationary mix of non-trigger tokens, times their share (a copy costs 0). Estimated on
        about 20,000 sampled tokens."""
        rows = self.sample(100, 201, np.random.default_rng(7))[:, 1:-1].ravel()
        p = self.table[rows[~self.is_trigger[rows]]]
        entropy = -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(axis=1)
        return float(entropy.sum() / rows.size)


# ---------------------------------------------------------------------------
# The arms: softmax, and three attentions whose rows need not sum to 1 (or do by division)
# ---------------------------------------------------------------------------

def relu_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, length=T):
    r"""y = P V with :math:`P = \mathrm{ReLU}(s\,QK^\top + \text{bias}) / L`, zero where ``mask`` is False.

    Divided by the training length L, a constant, so a row's size does not change with the cache's length
    (Wortsman et al., 2023, divide by the sequence length). A query can put exactly zero on every key."""
    s = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    scores = (q @ k.transpose(tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))) * s   # (B, H, T_q, T_k)
    if bias is not None:
        scores = scores + bias
    p = F.relu(scores) * (1.0 / length)
    if mask is not None:
        p = p * mask.astype(p.dtype)
    y = p @ v                                                                             # (B, H, T_q, d_head)
    return (y, p.data) if return_weights else y


def sigmoid_fixed(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r"""Unnormalised sigmoid attention with the offset fixed at :math:`-\ln L` (L the training length), so
    a streamed query with a short cache scores keys as in training."""
    return sigmoid_attention(q, k, v, bias=bias, mask=mask, scale=scale, return_weights=return_weights,
                             offset=-math.log(T))


def sigmoid_normalised(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    r""":math:`P_{ij} = \sigma_{ij} / \sum_j \sigma_{ij}`: sigmoid weights divided by their row's sum, so every
    row sums to 1 as softmax's do (Gu et al.'s "normalised sigmoid")."""
    s = (1.0 / q.shape[-1] ** 0.5) if scale is None else scale
    scores = (q @ k.transpose(tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))) * s - math.log(T)
    if bias is not None:
        scores = scores + bias
    w = ((scores * 0.5).tanh() + 1.0) * 0.5                                               # sigma, (B, H, T_q, T_k)
    if mask is not None:
        w = w * mask.astype(w.dtype)
    # each row sums to 1; a row whose every sigma underflowed to 0 in float32 (all scores under about -17, as when a
    # model that learned to park on BOS streams with BOS evicted) gives y = 0 instead of 0/0
    w = w / (w.sum(axis=-1, keepdims=True) + 1e-30)
    y = w @ v
    return (y, w.data) if return_weights else y


ATTENTION = {"softmax": None, "sigmoid, normalised": sigmoid_normalised, "sigmoid": sigmoid_fixed,
             "relu": relu_attention}


def control_model(arm, seed, n_layers=2, n_heads=8, d_model=64):
    """The arm's model: a RoPE TinyGPT on the fast kernels, its attention replaced unless the arm is softmax."""
    model = TinyGPT(GPTConfig(vocab_size=VOCAB + 1, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                              max_len=T, positional="rope", seed=seed, kernels="fast"))
    if ATTENTION[arm] is not None:
        model.kernels = dataclasses.replace(model.kernels, name=model.kernels.name + "+" + arm,
                                            attention=ATTENTION[arm])
    return model


def load_control(path=CHECKPOINT):
    """The committed softmax control (seed 0) as a plain TinyGPT, from its checkpoint alone."""
    meta, _, _ = read_checkpoint(path)
    model = TinyGPT(GPTConfig(**meta["config"]))
    load_checkpoint(path, model)
    return model.eval()


def held_out(task, n_rows=32, length=T, seed=999):
    """Held-out rows (BOS first), from a generator no training batch uses: ``(n_rows, length)``."""
    return task.sample(n_rows, length, np.random.default_rng(seed))


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------

def by_query_position(model, x):
    """Mean attention on position 0 per layer and query position, over heads and rows: ``(n_layers, T)``."""
    layers = [block.attn for block in model.blocks]
    saved = [(a.record_attention, a.last_attention) for a in layers]
    for a in layers:
        a.record_attention = True
    try:
        model.eval()
        model(backend.asarray(x))
        probs = [backend.to_numpy(a.last_attention) for a in layers]     # each (B, H, T, T)
    finally:
        for a, (flag, last) in zip(layers, saved):
            a.record_attention, a.last_attention = flag, last
    return np.stack([p[..., 0].mean(axis=(0, 1)) for p in probs])


def sink_metric(model, x):
    """Gu et al.'s metric and what it is made of: mean attention on position 0 per layer and head (the
    library's ``attention_mass``), and the number of heads above the threshold."""
    mass = attention_mass(model, x).position0                           # (n_layers, H)
    return {"position0": mass.tolist(), "sink_heads": int((mass > SINK_THRESHOLD).sum()), "heads": int(mass.size)}


def mechanism(model, x):
    r"""Why position 0: per layer, the mean cosine of the queries (t >= 1) with the BOS key against with the
    other keys they see; the BOS value's norm against the other values'; the residual stream's largest
    entry at BOS against the median largest entry of the other positions (massive activations)."""
    kept = []
    inner = model.kernels.attention

    def capture(q, k, v, **kw):
        kept.append((backend.to_numpy(q.data), backend.to_numpy(k.data), backend.to_numpy(v.data)))
        return inner(q, k, v, **kw)

    saved_kernels = model.kernels
    model.kernels = dataclasses.replace(saved_kernels, attention=capture)
    outputs = []
    saved_forward = [b.forward for b in model.blocks]
    def keeping(forward):                     # the block as it was, its output kept on the way out
        def run_block(*args, **kw):
            y = forward(*args, **kw)
            outputs.append(backend.to_numpy(y.data))          # (B, T, d_model): the residual stream after it
            return y
        return run_block

    for b, f in zip(model.blocks, saved_forward):
        b.forward = keeping(f)
    try:
        model.eval()
        model(backend.asarray(x))
    finally:
        model.kernels = saved_kernels
        for b in model.blocks:
            del b.forward
    out = []
    for (q, k, v), h in zip(kept, outputs):
        qn = q / np.linalg.norm(q, axis=-1, keepdims=True)                 # (B, H, T, d_head)
        kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
        cos = qn @ kn.swapaxes(-1, -2)                                     # (B, H, T, T)
        n = cos.shape[-1]
        seen = np.tril(np.ones((n - 1, n - 1), dtype=bool))               # keys 1 .. t for query t
        vnorm = np.linalg.norm(v, axis=-1)                                 # (B, H, T)
        peak = np.abs(h).max(axis=-1)                                      # (B, T): largest entry per position
        out.append({"cos_query_bos_key": float(cos[..., 1:, 0].mean()),
                    "cos_query_other_keys": float(cos[..., 1:, 1:][..., seen].mean()),
                    "value_norm_bos": float(vnorm[..., 0].mean()),
                    "value_norm_others": float(vnorm[..., 1:].mean()),
                    "residual_peak_bos": float(peak[:, 0].mean()),
                    "residual_peak_others_median": float(np.median(peak[:, 1:]))})
    return out


POLICIES = {
    "full (text positions)": dict(),
    "window (slot)": dict(window="W", positions="slot"),
    "window + 1 sink (slot)": dict(window="W", n_sink=1, positions="slot"),
    "window + 4 sinks (slot)": dict(window="W", n_sink=4, positions="slot"),
    "window + 4 sinks (text positions)": dict(window="W", n_sink=4),
    "recompute window": dict(window="W", recompute=True),
}


def eviction(model, task, W, stream_len, n_rows=16):
    r"""Two views of what the first token is worth. Inside L: held-out rows read one token at a time with
    every token kept, token 0 evicted right after it is read, or token 1 instead (the control); the loss of
    the late queries (t >= L/2). Past L: streams of ``stream_len`` tokens (BOS first) through each cache
    policy; the loss of the queries past the training length (t >= L)."""
    rows = held_out(task, n_rows, T, seed=1001)
    within = {"kept": stream_loss(model, rows).losses,
              "token 0 evicted": stream_loss(model, rows, keep_indices=DropToken(0)).losses,
              "token 1 evicted": stream_loss(model, rows, keep_indices=DropToken(1)).losses}
    streams = held_out(task, n_rows, stream_len, seed=1002)
    past = {}
    for name, policy in POLICIES.items():
        kw = {k: (W if v == "W" else v) for k, v in policy.items()}
        past[name] = stream_loss(model, streams, **kw).losses
    return ({k: float(v[T // 2:].mean()) for k, v in within.items()},
            {k: float(v[T - 1:].mean()) for k, v in past.items()})


# ---------------------------------------------------------------------------
# One arm, one seed
# ---------------------------------------------------------------------------

def run_one(arm, seed, steps, probes, task, x_eval, W, stream_len, n_stream_rows, lr=LR, weight_decay=WEIGHT_DECAY,
            save_to=None):
    """Train one arm at one seed, probing Gu et al.'s metric at ``probes`` steps; measure the trained model."""
    model = control_model(arm, seed)
    curve = []
    calls = [0]
    get = task.batches(batch_size=BATCH)

    def get_batch(rng):      # the probe: before the step that ``calls`` counts, measure the model as it stands
        if calls[0] in probes:
            m = sink_metric(model, x_eval)
            curve.append({"step": calls[0], "sink_heads": m["sink_heads"],
                          "layer_means": [sum(h) / len(h) for h in m["position0"]]})
            model.train()
        calls[0] += 1
        return get(rng)

    with Timer() as timer:
        cfg = TrainConfig(steps=steps, lr=lr, warmup=min(50, steps // 10), min_lr=lr,        # constant after warmup
                          weight_decay=weight_decay, seed=seed, progress=False)
        result = train(model, get_batch, cfg)
        final = sink_metric(model, x_eval)
        curve.append({"step": steps, "sink_heads": final["sink_heads"],
                      "layer_means": [sum(h) / len(h) for h in final["position0"]]})
        ids = backend.asarray(x_eval)
        trig = backend.to_numpy(ids[:, 1:-1])
        logits = backend.to_numpy(model.eval()(ids).data)                   # (B, T, vocab)
        after = task.is_trigger[trig]                                        # query t + 1 follows a trigger at t
        copied = (logits[:, 1:-1].argmax(-1) == backend.to_numpy(ids[:, 2:]))
        per_query = by_query_position(model, x_eval).tolist()
        within, past = eviction(model, task, W, stream_len, n_stream_rows)
        mech = mechanism(model, x_eval)
    if save_to is not None:
        save_checkpoint(save_to, model)
    return {"arm": arm, "seed": seed, "steps": steps, "final_train_loss": float(sum(result.losses[-50:]) / 50),
            "backcopy_accuracy": float(copied[after].mean()), **final, "by_query_position": per_query,
            "curve": curve, "eviction_within_L": within, "stream_past_L": past, "mechanism": mech,
            "seconds": round(timer.seconds, 1)}


# ---------------------------------------------------------------------------
# The run and its claims
# ---------------------------------------------------------------------------

NO_FAILURE_PAST_L = ("the softmax model's failure past L is not established (full attention over streams of 4L minus "
                     "recomputing the window: C3_fails_past_L_softmax, an interval holding 0), so the claim's condition, "
                     "a model that fails at distances past L, is not met: neither numbering has an established failure "
                     "to cause or prevent")

SURVEY_RULE = ("the survey's rule (§5.4) asks prefill, decode, padding, packing, the prefix cache and the sliding "
               "window to give a token the same position id, against hidden misalignment between them (its §11, "
               "item 4); it predicts nothing about which numbering costs less for a window with sinks streamed past "
               "L, the quantity measured here")


def claims_from(runs):
    """The claim records the chapters cite: t intervals over seeds, of the per-seed shares of sink heads (the
    pooled Wilson interval kept beside, not used) and of the per-seed losses."""
    def counts(arm):
        rs = [r for r in runs if r["arm"] == arm]
        return [r["sink_heads"] for r in rs], [r["heads"] for r in rs], [r["seed"] for r in rs]

    def per_seed(arm, f):
        rs = [r for r in runs if r["arm"] == arm]
        return [f(r) for r in rs], [r["seed"] for r in rs]

    out = {}
    for key, arm, side in (("C4_softmax", "softmax", "above"), ("C7_sigmoid_normalised", "sigmoid, normalised", "above"),
                           ("C7_sigmoid", "sigmoid", "below"), ("C7_relu", "relu", "below")):
        k, n, seeds = counts(arm)
        out[key] = stats.share_record(f"share of a seed's {n[0]} heads whose mean attention on position 0 passes "
                                      f"{SINK_THRESHOLD}, {arm} attention, Bigram-Backcopy (t interval over "
                                      f"{len(seeds)} seeds)", side, SIZE, k, n, seeds)
    out["C7_sigmoid"]["positive_control"] = out["C7_relu"]["positive_control"] = "C4_softmax"
    vals, seeds = per_seed("softmax", lambda r: sum(r["position0"][-1]) / len(r["position0"][-1])
                           - sum(r["position0"][0]) / len(r["position0"][0]))
    # book exercise 6's claim: its own setting formed no sink (attention_sinks_settings), and the models here that
    # form one have 2 layers, so the claim's mid-to-late layers are out of reach
    out["C4_depth_softmax"] = stats.claim_record(
        "mean attention on position 0, last layer minus first layer, softmax, Bigram-Backcopy (a share of attention)",
        "above", 0.0, values=vals, seeds=seeds,
        not_tested="the book says the mass grows with depth and is substantial in mid-to-late layers; the models "
                   "that form a sink here have 2 layers, where last minus first cannot tell growth with depth from "
                   "a sink held in one layer, and no sink-forming model with more layers was trained")
    out["C4_exercise_setting"] = exercise_setting_record()
    gap = lambda a, b: (lambda r: r["stream_past_L"][a] - r["stream_past_L"][b])
    for key, arm in (("C5_sigmoid_normalised", "sigmoid, normalised"), ("C5_sigmoid", "sigmoid")):
        vals, seeds = per_seed(arm, gap("window (slot)", "window + 4 sinks (slot)"))
        out[key] = stats.claim_record(f"loss past L, window of {runs[0]['window']} without sinks minus with 4 sinks "
                                      f"(slot positions), {arm} (nats per token)", "above", 0.0, values=vals, seeds=seeds)
    vals, seeds = per_seed("softmax", gap("window (slot)", "window + 4 sinks (slot)"))
    out["C5_breaks_softmax"] = stats.claim_record(
        f"loss past L, window of {runs[0]['window']} without sinks minus with 4 sinks (slot positions), softmax (nats "
        f"per token): 'breaks' read as a rise over {BREAKS} nats, the workbook's bar for a rise too small to call a "
        f"break (StreamingLLM's 160M model lost about 0.43)", "above", BREAKS, values=vals, seeds=seeds,
        not_tested="no positive control: no arm was trained in which evicting the first tokens is known to cost "
                   "more than the bar, as the rule asks of a claim about the first token (this task's queries need "
                   "at most one token back; whether that is why the cost is small is not tested)")
    vals, seeds = per_seed("softmax", gap("window + 4 sinks (slot)", "recompute window"))   # the book keeps four
    out["C5b_restores_softmax"] = stats.claim_record(
        "loss past L, window + 4 sinks minus recomputing the window, softmax (nats per token): the sinks restore the "
        "window", "below", BREAKS, values=vals, seeds=seeds,
        not_tested="there is nothing to restore: the window without sinks is as close to recomputing the window "
                   "(C5_breaks_softmax: nothing broke), so this test could not fail")
    vals, seeds = per_seed("softmax", lambda r: r["eviction_within_L"]["token 0 evicted"] - r["eviction_within_L"]["kept"])
    out["C6_softmax"] = stats.claim_record("loss of late queries (t >= L/2), token 0 evicted minus kept, softmax "
                                           "(nats per token)", "above", 0.0, values=vals, seeds=seeds)
    vals, seeds = per_seed("softmax", lambda r: r["eviction_within_L"]["token 1 evicted"] - r["eviction_within_L"]["kept"])
    out["C6_control_token1"] = stats.claim_record("loss of late queries (t >= L/2), token 1 evicted minus kept, softmax "
                                                  "(nats per token): the control", "above", 0.0, values=vals, seeds=seeds)
    for arm in ("softmax", "sigmoid, normalised"):
        key = arm.replace(", ", "_")
        vals, seeds = per_seed(arm, gap("window + 4 sinks (slot)", "window + 4 sinks (text positions)"))
        out["C1_window_logical_" + key] = stats.claim_record(
            f"loss past L, window + 4 sinks at slot positions minus at logical (text) positions, {arm} (nats per "
            f"token), measured beside the survey's rule that the window give a token the same position id, a different "
            f"quantity from that rule",
            "above", 0.0, values=vals, seeds=seeds, not_tested=SURVEY_RULE)
        vals, seeds = per_seed(arm, gap("full (text positions)", "recompute window"))
        out["C3_fails_past_L_" + key] = stats.claim_record(
            f"loss past L, full attention over the stream minus recomputing the window, {arm} (nats per token): the "
            f"model fails at distances past L", "above", 0.0, values=vals, seeds=seeds)
        vals, seeds = per_seed(arm, gap("window + 4 sinks (text positions)", "window + 4 sinks (slot)"))
        out["C3_" + key] = stats.claim_record(
            f"loss past L, window + 4 sinks at text positions minus at slot positions, {arm} (nats per token)",
            "above", 0.0, values=vals, seeds=seeds, not_tested=NO_FAILURE_PAST_L if arm == "softmax" else "")
    for key in ("C3_sigmoid_normalised", "C1_window_logical_sigmoid_normalised"):   # the arm that fails past L
        out[key]["positive_control"] = "C3_fails_past_L_sigmoid_normalised"
    return out


def exercise_setting_record(name="repetitive, 2 layers"):
    """Book exercise 6's own setting, "the tiny GPT" (the library's default, 2 layers) trained on a repetitive
    corpus, from ``attention_sinks``: one model, one seed, so the Wilson interval of its heads. Its three other
    softmax runs on that corpus (4 layers; with BOS; with BOS and 4x the steps) are different settings, one seed
    each, not seeds of this one: an interval over them would not be an interval over seeds."""
    first_runs = common.load_result("attention_sinks_settings")
    setting = next(s for s in first_runs["settings"] if s["name"] == name)
    heads = sum(len(layer) for layer in setting["mass_on_position_0"])
    sinks = sum(m > SINK_THRESHOLD for layer in setting["mass_on_position_0"] for m in layer)
    return stats.claim_record(
        f"share of the heads whose mean attention on position 0 passes {SINK_THRESHOLD}, softmax, the repetitive "
        f"corpus at L = 32 (book exercise 6's setting), {name}, one seed (Wilson interval of one model)", "above",
        SIZE, successes=int(sinks), trials=heads, seeds=[first_runs["seed"]])


def recompute_claims(name="sink_control"):
    """Rewrite the claims of a saved run from its per-seed values (after the claims above change; nothing is
    retrained), keeping the command, seeds and wall time it records."""
    res = common.load_result(name)
    res["claims"] = claims_from(res["runs"])
    res["claims_recomputed_by"] = "python -c 'from experiments import sink_control; sink_control.recompute_claims()'"
    common.save(name, res, plot(res))
    return res


def run(quick=False, seed=0, progress=True, arms=None, checkpoint=CHECKPOINT):
    steps = 60 if quick else 600
    probes = {0, 30} if quick else {0, 50, 100, 150, 200, 300, 400, 500}
    W, stream_len, n_rows = (16, 96, 2) if quick else (32, 4 * T, 16)
    seeds = (seed,) if quick else SEEDS
    arms = arms or (("softmax", "sigmoid") if quick else ARMS)
    task = BigramBackcopy(seed=0)
    x_eval = held_out(task)
    runs = []
    with Timer() as timer:
        for arm in arms:
            for s in seeds:
                t0 = time.perf_counter()
                save = checkpoint if (not quick and arm == "softmax" and s == 0) else None
                r = run_one(arm, s, steps, probes, task, x_eval, W, stream_len, n_rows, save_to=save)
                r["window"] = W
                runs.append(r)
                if progress:
                    print(f"{arm:>20} seed {s}: {r['sink_heads']}/{r['heads']} sink heads, loss "
                          f"{r['final_train_loss']:.3f}, copy {r['backcopy_accuracy']:.2f}, "
                          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    res = {"task": {"vocab": VOCAB, "bos": BOS, "triggers": task.triggers.tolist(), "successors": SUCCESSORS,
                    "best_loss": task.best_loss()},
           "train_len": T, "window": W, "stream_len": stream_len, "steps": steps, "seeds": list(seeds),
           "lr": LR, "weight_decay": WEIGHT_DECAY, "batch_size": BATCH, "sink_threshold": SINK_THRESHOLD, "size": SIZE,
           "uniform_mass_on_position_0": sum(1.0 / (i + 1) for i in range(T)) / T,
           "runs": runs, "command": COMMAND + (" --quick" if quick else ""),
           "checkpoint": None if quick else os.path.basename(CHECKPOINT),
           "environment": environment(timer.seconds, d_model=64, n_layers=2, n_heads=8, batch_size=BATCH,
                                      tokens_per_run=steps * BATCH * T, load_average=os.getloadavg())}
    if not quick and set(arms) == set(ARMS):
        res["claims"] = claims_from(runs)
    return res


def merge(parts):
    """One result from runs split by arm over several processes (``--arms``): the runs joined, the claims made,
    each part's wall time kept (they ran at the same time, so the total is the longest, not the sum)."""
    loaded = [common.load_result(p) for p in parts]
    res = dict(loaded[0])
    res["runs"] = [r for part in loaded for r in part["runs"]]
    if {r["arm"] for r in res["runs"]} != set(ARMS):
        raise ValueError(f"merge needs every arm of {ARMS}; the parts {parts} hold {sorted({r['arm'] for r in res['runs']})}.")
    res["claims"] = claims_from(res["runs"])
    res["command"] = " & ".join(part["command"] for part in loaded) + f"; then --merge {' '.join(parts)}"
    res["environment"] = dict(loaded[0]["environment"], seconds=max(p["environment"]["seconds"] for p in loaded),
                              parts_seconds=[p["environment"]["seconds"] for p in loaded])
    return res


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def arm_summary(res, arm):
    rs = [r for r in res["runs"] if r["arm"] == arm]
    return rs, sum(r["sink_heads"] for r in rs), sum(r["heads"] for r in rs)


def report(res):
    print(f"Bigram-Backcopy, L = {res['train_len']}, {res['steps']} steps, seeds {res['seeds']}; "
          f"uniform attention on position 0: {res['uniform_mass_on_position_0']:.3f}; "
          f"best possible loss {res['task']['best_loss']:.3f}")
    for arm in dict.fromkeys(r["arm"] for r in res["runs"]):
        rs, k, n = arm_summary(res, arm)
        p, lo, hi = stats.wilson_interval(k, n)
        layers = [[round(sum(h) / len(h), 2) for h in r["position0"]] for r in rs]
        print(f"{arm:>20}: sink heads {k}/{n} = {stats.format_interval(p, lo, hi)}; layer means {layers}; "
              f"loss {[round(r['final_train_loss'], 3) for r in rs]}; copy {[round(r['backcopy_accuracy'], 2) for r in rs]}")
        for r in rs:
            print(f"{'':>22}seed {r['seed']}: within L {({k: round(v, 3) for k, v in r['eviction_within_L'].items()})}")
            print(f"{'':>22}past L {({k: round(v, 3) for k, v in r['stream_past_L'].items()})}")
    for key, rec in res.get("claims", {}).items():
        print(f"{key}: {stats.format_record(rec)}")


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    colours = dict(zip(ARMS, ("tab:blue", "tab:green", "tab:orange", "tab:red")))
    for r in res["runs"]:
        steps = [c["step"] for c in r["curve"]]
        a.plot(steps, [c["sink_heads"] / r["heads"] for c in r["curve"]], "o-", color=colours[r["arm"]], ms=3,
               alpha=0.8, label=r["arm"] if r["seed"] == res["seeds"][0] else None)
        if r["arm"] == "softmax":
            for layer, curve in enumerate(r["by_query_position"]):
                b.plot(range(len(curve)), curve, color=("tab:blue", "tab:purple")[layer % 2], alpha=0.7,
                       label=f"layer {layer}" if r["seed"] == res["seeds"][0] else None)
    a.axhline(res["size"], color="k", ls=":", lw=0.8, label="claims' threshold (0.1)")
    a.set(xlabel="training step", ylabel="share of heads above 0.3 on position 0", title="Gu et al.'s metric over training",
          ylim=(-0.02, 1.02))
    a.legend(fontsize=8)
    queries = range(res["train_len"])               # uniform causal attention gives query t 1/(t+1) on position 0
    b.plot(queries, [1.0 / (t + 1) for t in queries], color="k", ls="--", lw=0.8, label="uniform, 1/(t+1)")
    b.set(xlabel="query position", ylabel="mean attention on position 0 (heads, rows)",
          title=f"softmax control: per query position, {len(res['seeds'])} seeds", ylim=(0, 1.02))
    b.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv=None):
    """The common command line, plus ``--arms A+B`` (run those arms only, saved as ``sink_control_part_A_B``, so
    two processes can share the arms) and ``--merge PART ...`` (join the parts into ``sink_control``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--merge" in argv:
        parts = argv[argv.index("--merge") + 1:]
        res = merge(parts)
        report(res)
        common.save("sink_control", res, plot(res))
        for part in parts:
            for ext in (".json", ".png"):
                os.remove(os.path.join(RESULTS, part + ext))
        return res
    # the checkpoint goes beside the result (--out), so a run made elsewhere (experiments.remake --check)
    # leaves the committed one alone
    out = argv[argv.index("--out") + 1] if "--out" in argv else RESULTS
    checkpoint = os.path.join(out, os.path.basename(CHECKPOINT))
    if "--arms" in argv:
        i = argv.index("--arms")
        arms = tuple(argv[i + 1].split("+"))
        unknown = [a for a in arms if a not in ARMS]
        if unknown:
            raise ValueError(f"--arms names {unknown[0]!r}; the arms are {ARMS}.")
        del argv[i:i + 2]
        name = "sink_control_part_" + "_".join(a.replace(", ", "_") for a in arms)
        part = lambda quick, seed, progress: dict(run(quick, seed, progress, arms=arms, checkpoint=checkpoint),
                                                  command=f"{COMMAND} --arms {'+'.join(arms)!r}")
        return common.main(name, __doc__, part, report, plot, argv)
    whole = lambda quick, seed, progress: run(quick, seed, progress, checkpoint=checkpoint)
    return common.main("sink_control", __doc__, whole, report, plot, argv)


if __name__ == "__main__":
    common.command_line("sink_control", main)
