r"""Positions in today's models, settled on trained models with seeds: chapter 13's five claims.

Each claim compares paired arms (both arms of a comparison share the seed: the same initial token rows and
the same training batches) and reads a 95% Student-t interval of the per-seed effect by the verdict rule
(``chapters/README.md``, "Evidence and the verdict rule").

**Text arms** (C2 to C5): the byte-level ``TinyGPT`` of ``short_long_seeds`` (d_model 64, 2 layers, 4 heads,
d_head 16), trained on standard-library text at **L = 32 for 500 steps of 8 windows**, evaluated at L, 2L and
4L (the loss over every position, and over positions t >= L only), five seeds:

* ``rope``: full RoPE, base 10,000, every layer;
* ``prope``: p-RoPE (Barbero et al., 2024) as Gemma 4 ships it, ``rope_scaling={"rope_type": "proportional",
  "factor": 1.0}`` with ``partial_rotary_factor`` 0.25: the first 2 of the 8 pairs keep
  $\theta_i = 10000^{-2i/16}$ over the full head, the other 6 turn at frequency 0 (the library's ``'rope'``
  scheme runs this as it is; nothing here was added for it);
* ``per_layer``: Gemma 3's layout at this size, read by ``layer_rope`` from a config written in Gemma 3's keys
  (``GEMMA3_LIKE``): layer 0 a sliding layer, base 10,000 (``rope_local_base_freq``) with a window of
  ``WINDOW`` = L/2 keys, layer 1 a global layer, base 1,000,000 (``rope_theta``), full attention. The model
  takes one scheme for all its layers, so ``PerLayerRoPE`` (below) is that scheme: each layer's frequencies as
  ``layer_rope`` reads them, and the window as a score bias of -1e9 past it;
* ``window_one_base`` and ``bases_no_window``: what ``per_layer``'s gain is made of, the window alone (base
  10,000 in both layers) and the two bases alone (no window);
* ``fire``, ``alibi``, ``none``: chapter 7's comparison, with FIRE (Li et al., 2023) beside ALiBi, unscaled
  RoPE (the ``rope`` arm) and NoPE, at these seeds and sizes; ``context_use`` at 4L for the four;
* ``temperature``: NoPE with Llama 4's temperature tuning, each query scaled by
  $\tau(m) = 1 + 0.1\log(\lfloor (m+1)/\text{floor\_scale}\rfloor + 1)$ with **floor_scale = L/4 = 8**, not
  Llama 4's 8192: at 8192 $\tau$ is 1 at every position these models reach and the arm would be NoPE itself;
  at L/4 it steps four times inside the training length, where the model trains with it, and keeps rising
  past L (to $1 + 0.1\ln 17 = 1.28$ at 4L). Measured beside ``none``: the loss past L, and the mean entropy of
  the attention rows of the queries t >= L of 4L windows.

**Sink arms** (C1): chapter 10's Bigram-Backcopy task (``sink_control``: 16 triggers, 32 successors a token,
L = 64, BOS first) with its RoPE model (2 layers, 8 heads, AdamW at 1e-2, weight decay 0.1, batches of 16),
trained for 400 steps (``sink_control`` trains 600; its softmax control had 8 of its 16 heads over the bar by
step 400 at every seed) with and without ``attention_sinks`` (GPT-OSS's learned logit per head), five seeds. Measured on held-out rows: Gu et al.'s metric (the share of heads whose mean attention on position 0
passes 0.3), the mean weight each row gives the learned sink (1 minus its row sum), the loss, and the
back-copy accuracy.

    python -m experiments.positions_today [--quick] [--parts DIR]

writes ``results/positions_today.json`` and ``.png``. ``--parts DIR`` keeps each finished seed, so a stopped
run resumes there. ``--quick`` (L = 16, 60 steps, one seed) only checks that every arm runs and that the
directions are measured; it settles nothing.
"""
import os
import sys

from tqdm.auto import tqdm

from mini_transformer.engine import backend, kernels
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.engine.backend import xp
from mini_transformer.evaluation import stats
from mini_transformer.evaluation.measures import attention_mass, extrapolation_curve
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.positional.base import PositionalScheme, key_minus_query, per_head
from mini_transformer.positional.model_configs import layer_rope
from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary
from . import common
from .common import Timer, corpus, environment, seed_part
from .sink_control import BATCH as SINK_BATCH, LR as SINK_LR, SINK_THRESHOLD, SIZE, T as SINK_T
from .sink_control import VOCAB, WEIGHT_DECAY, BigramBackcopy, held_out
from .train_short_test_long import context_use

NAME = "positions_today"
COMMAND = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.positions_today"
SEEDS = (0, 1, 2, 3, 4)     # 5: several gaps compared are under 0.05 nats (the README's seed rule)
MULTIPLES = (1, 2, 4)
P_ROPE = 0.25               # Gemma 4's partial_rotary_factor on its global layers (model_configs' gemma-4 entry)
ATTN_SCALE = 0.1            # Llama 4's attn_scale
RISE = 0.05                 # nats: "runs long" means the rise past L stays under this (short_long_seeds' bar)
SAME = 0.05                 # nats: "costs nothing" means a loss no more than this above the other arm's
COPY_SAME = 0.05            # back-copy accuracy: "unchanged" means no more than 5 points below
MASKED = -1e9               # a score bias that no softmax row can lift above 0 weight

#: arm -> (scheme, GPTConfig keyword arguments), every arm at the same sizes; per_layer's scheme is replaced
TEXT_ARMS = {
    "rope": ("rope", {}),
    "prope": ("rope", {"rope_scaling": {"rope_type": "proportional", "factor": 1.0},
                       "extra": {"partial_rotary_factor": P_ROPE}}),
    "per_layer": ("rope", {}),
    "window_one_base": ("rope", {}),         # C3's decomposition: the window alone, base 10,000 in both layers
    "bases_no_window": ("rope", {}),         # ... and the bases alone, no window
    "fire": ("fire", {}),
    "alibi": ("alibi", {}),
    "none": ("none", {}),
    "temperature": ("temperature", {}),      # floor_scale L/4 and attn_scale 0.1 filled in by text_arm
}
USE_ARMS = ("fire", "alibi", "rope", "none")          # chapter 7's comparison: context_use for these
ENTROPY_ARMS = ("none", "temperature")
SINK_ARMS = ("bos", "learned_sink")                    # attention_sinks False, True

SIZES = {
    True: dict(train_len=16, steps=60, eval_batches=2, eval_batch_size=8, use_windows=8, sink_steps=60,
               sink_rows=8),
    False: dict(train_len=32, steps=500, eval_batches=8, eval_batch_size=8, use_windows=32, sink_steps=400,
                sink_rows=32),
}
TEXT_BATCH, TEXT_LR = 8, 3e-3


# ---------------------------------------------------------------------------
# Per-layer RoPE with a sliding window (Gemma 3's layout), as one scheme
# ---------------------------------------------------------------------------

def gemma3_like(train_len, d_head, n_layers=2, global_base=1_000_000.0):
    """A config in Gemma 3's (transformers 4) keys at this model's size: every second layer global, the
    sliding layers with base 10,000 and a window of L/2, the global ones with base ``global_base`` (Gemma 3's
    bases; its window, 1024, and its pattern, 6, do not fit a 2-layer model trained at L = 32)."""
    return {"num_hidden_layers": n_layers, "head_dim": d_head, "rope_theta": float(global_base),
            "rope_local_base_freq": 10_000.0, "sliding_window_pattern": 2, "sliding_window": train_len // 2}


class PerLayerRoPE(PositionalScheme):
    r"""Each layer turns q and k by its own frequencies (one ``layer_rope`` entry a layer), and a sliding layer
    masks the keys at distance ``window`` or more: score bias -1e9 where $i - j \ge W$.

    ``layers`` is ``layer_rope(config)``'s list; ``window`` is ``config["sliding_window"]``, or None for no
    window in any layer (the bases alone).
    """

    per_row_positions = False

    def __init__(self, layers, window):
        if any(entry is None for entry in layers):
            raise ValueError("PerLayerRoPE turns every layer; a layer_rope entry of None (a NoPE layer) has no "
                             "frequencies to turn by.")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise ValueError(f"PerLayerRoPE: window={window!r} must be a whole number of keys, at least 1.")
        self.rotaries = []
        for entry in layers:
            rotary = RotaryEmbedding(entry["head_dim"], entry["rope_theta"])
            # the frequencies as the reader gives them (identical here: rope_type default, no scaling)
            rotary.inv_freq, rotary.attention_factor = xp.asarray(entry["inv_freq"]), entry["attention_factor"]
            self.rotaries.append(rotary)
        self.sliding = [entry["layer_type"] == "sliding_attention" for entry in layers]
        self.window = window

    def signature(self):
        return {"rope_theta": [r.base for r in self.rotaries], "sliding": list(self.sliding), "window": self.window}

    def rotate(self, x, pos, layer):
        cos, sin = self.rotaries[layer].at(pos)                                # (T, d_head) each, float64
        rotary = kernels.active().apply_rotary or apply_rotary
        return rotary(x, cos.astype(x.dtype), sin.astype(x.dtype))

    def score_bias(self, q, k, q_pos, k_pos, layer):
        if self.window is None or not self.sliding[layer]:
            return None
        far = -key_minus_query(q_pos, k_pos) >= self.window                     # (T_q, T_k) i - j >= W
        return per_head(xp.where(far, MASKED, 0.0).astype(q.dtype))            # (1, 1, T_q, T_k)


# ---------------------------------------------------------------------------
# The text arms: one arm, one seed
# ---------------------------------------------------------------------------

def text_arm(arm, L, seed):
    """The arm's model before training."""
    scheme, kw = TEXT_ARMS[arm]
    if arm == "temperature":
        kw = {"extra": {"floor_scale": L // 4, "attn_scale": ATTN_SCALE}}
    model = common.text_model(scheme, L, seed=seed, **kw)
    if arm in ("per_layer", "window_one_base", "bases_no_window"):
        config = gemma3_like(L, model.cfg.d_head, model.cfg.n_layers,
                             global_base=10_000.0 if arm == "window_one_base" else 1_000_000.0)
        window = None if arm == "bases_no_window" else config["sliding_window"]
        model.positional = PerLayerRoPE(layer_rope(config), window)
    return model


def attention_entropy(model, x, start):
    r"""Mean entropy $-\sum_j P_{ij}\ln P_{ij}$ (nats) of the attention rows of queries ``t >= start``, over
    rows, heads and layers, for token ids ``x`` ``(B, T)``."""
    layers = [block.attn for block in model.blocks]
    saved = [(a.record_attention, a.last_attention) for a in layers]
    try:
        for a in layers:
            a.record_attention = True
        model.eval()
        with no_grad():
            model(backend.asarray(x))
        probs = [backend.to_numpy(a.last_attention).astype(np.float64) for a in layers]   # each (B, H, T, T)
    finally:
        for a, (flag, last) in zip(layers, saved):
            a.record_attention, a.last_attention = flag, last
    rows = [-(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)).sum(axis=-1)[..., start:] for p in probs]
    return float(np.mean([r.mean() for r in rows]))


def run_text(arm, seed, size, progress=False):
    """Train one text arm at one seed and measure it: the dict kept per arm and seed."""
    L, steps = size["train_len"], size["steps"]
    model = text_arm(arm, L, seed)
    cfg = TrainConfig(steps=steps, lr=TEXT_LR, warmup=max(1, steps // 10), min_lr=TEXT_LR / 10, seed=seed,
                      progress=False)
    result = train(model, common.text_batches(L, TEXT_BATCH), cfg)
    curve = extrapolation_curve(model, corpus(), L, MULTIPLES, n_batches=size["eval_batches"],
                                batch_size=size["eval_batch_size"], seed=seed)
    out = {"final_train_loss": float(sum(result.losses[-20:]) / len(result.losses[-20:])),
           "loss": [float(v) for v in curve.loss], "beyond": [float(v) for v in curve.loss_beyond]}
    if arm in USE_ARMS:
        use = context_use(model, corpus().split("val"), L, MULTIPLES[-1] * L, n_windows=size["use_windows"],
                          seed=seed)
        out.update(full=use["full_mean"], window=use["window_mean"], rise=use["full_mean"] - use["window_mean"])
    if arm in ENTROPY_ARMS:
        stream = corpus().split("val")
        g = np.random.default_rng(seed)
        starts = g.integers(0, len(stream) - MULTIPLES[-1] * L, size=size["eval_batch_size"])
        x = stream[starts[:, None] + np.arange(MULTIPLES[-1] * L)].astype(np.int64)     # (B, 4L)
        out["entropy_past_L"] = attention_entropy(model, x, L)
        out["entropy_at_L"] = attention_entropy(model, x[:, :L], 0)
    return out


# ---------------------------------------------------------------------------
# The sink arms: one arm, one seed
# ---------------------------------------------------------------------------

def sink_model(arm, seed):
    """sink_control's RoPE model on Bigram-Backcopy, with GPT-OSS's learned sink logit per head if the arm asks."""
    return TinyGPT(GPTConfig(vocab_size=VOCAB + 1, d_model=64, n_layers=2, n_heads=8, max_len=SINK_T,
                             positional="rope", seed=seed, kernels="fast", attention_sinks=arm == "learned_sink"))


def sink_weight(model, x):
    """Mean weight a row gives the learned sink (1 minus the row's sum over the tokens), per layer and head,
    over the rows and queries of ``x``: ``(n_layers, H)``; zeros for a model without sinks."""
    layers = [block.attn for block in model.blocks]
    saved = [(a.record_attention, a.last_attention) for a in layers]
    try:
        for a in layers:
            a.record_attention = True
        model.eval()
        with no_grad():
            model(backend.asarray(x))
        probs = [backend.to_numpy(a.last_attention).astype(np.float64) for a in layers]   # each (B, H, T, T)
    finally:
        for a, (flag, last) in zip(layers, saved):
            a.record_attention, a.last_attention = flag, last
    return np.stack([(1.0 - p.sum(axis=-1)).mean(axis=(0, 2)) for p in probs])            # (n_layers, H)


def run_sink(arm, seed, size):
    """Train one sink arm at one seed on Bigram-Backcopy and measure it on held-out rows."""
    task = BigramBackcopy(seed=0)
    model = sink_model(arm, seed)
    steps = size["sink_steps"]
    cfg = TrainConfig(steps=steps, lr=SINK_LR, warmup=min(50, steps // 10), min_lr=SINK_LR,   # constant after warmup
                      weight_decay=WEIGHT_DECAY, seed=seed, progress=False)
    result = train(model, task.batches(batch_size=SINK_BATCH), cfg)
    x = held_out(task, n_rows=size["sink_rows"])                                  # (n, T), BOS first
    mass = attention_mass(model, x).position0                                      # (n_layers, H) on BOS
    parked = sink_weight(model, x)                                                 # (n_layers, H) on the sink
    rows = held_out(task, n_rows=size["sink_rows"], length=SINK_T + 1, seed=1003)  # (n, T + 1)
    ids, targets = backend.asarray(rows[:, :-1]), backend.asarray(rows[:, 1:])
    model.eval()
    with no_grad():
        loss = float(backend.to_numpy(model.loss(ids, targets).data))
        logits = backend.to_numpy(model(ids).data)                                 # (n, T, vocab)
    after = np.zeros(rows[:, :-1].shape, dtype=bool)                               # BOS (t = 0) is no trigger
    after[:, 1:] = task.is_trigger[rows[:, 1:-1]]                                  # target t + 1 follows a trigger
    copied = logits.argmax(-1) == rows[:, 1:]
    return {"final_train_loss": float(sum(result.losses[-20:]) / len(result.losses[-20:])),
            "heldout_loss": loss, "backcopy_accuracy": float(copied[after].mean()),
            "position0": mass.tolist(), "sink_heads": int((mass > SINK_THRESHOLD).sum()), "heads": int(mass.size),
            "bos_mass": float(mass.mean()), "sink_weight": parked.tolist(), "sink_mass": float(parked.mean()),
            "sink_logits": [[float(v) for v in backend.to_numpy(b.attn.sinks.data)] for b in model.blocks]
            if arm == "learned_sink" else None}


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

def run_seed(seed, size, progress=False, bar=None):
    """Every arm at one seed: ``{"text": {arm: ...}, "sink": {arm: ...}}``."""
    out = {"text": {}, "sink": {}}
    for arm in TEXT_ARMS:
        out["text"][arm] = run_text(arm, seed, size)
        if bar is not None:
            bar.update(1)
    for arm in SINK_ARMS:
        out["sink"][arm] = run_sink(arm, seed, size)
        if bar is not None:
            bar.update(1)
    return out


def run(quick=False, seed=0, progress=True, parts=None):
    size = SIZES[bool(quick)]
    seeds = (seed,) if quick else SEEDS
    per_seed, seconds = {}, {}
    with Timer() as timer:
        with tqdm(total=len(seeds) * (len(TEXT_ARMS) + len(SINK_ARMS)), desc="arms", disable=not progress) as bar:
            for s in seeds:
                values, took = seed_part(parts, NAME, s, size, lambda: run_seed(s, size, progress, bar))
                per_seed[s], seconds[s] = values, took
                if progress:
                    print(f"seed {s}: {took} s", file=sys.stderr, flush=True)
    L = size["train_len"]
    res = {"train_len": L, "multiples": list(MULTIPLES), "lengths": [m * L for m in MULTIPLES],
           "steps": size["steps"], "sink_steps": size["sink_steps"], "seeds": list(seeds),
           "per_seed": {str(s): v for s, v in per_seed.items()}, "seed_seconds": {str(s): v for s, v in seconds.items()},
           "arms": {"text": list(TEXT_ARMS), "sink": list(SINK_ARMS)},
           "settings": {"p_rope": P_ROPE, "floor_scale": L // 4, "attn_scale": ATTN_SCALE,
                        "per_layer_config": gemma3_like(L, 16), "sink_train_len": SINK_T,
                        "sink_threshold": SINK_THRESHOLD, "sink_size": SIZE, "text_batch": TEXT_BATCH,
                        "text_lr": TEXT_LR, "sink_batch": SINK_BATCH, "sink_lr": SINK_LR,
                        "sink_weight_decay": WEIGHT_DECAY},
           "thresholds": {"rise": RISE, "same": SAME, "copy_same": COPY_SAME},
           "command": COMMAND + (" --quick" if quick else "") + (f" --parts {parts}" if parts else ""),
           "commit": _commit(),
           "environment": environment(sum(seconds.values()), seeds=list(seeds), d_model=64, n_layers=2, n_heads=4,
                                      sink_n_heads=8, load_average=list(os.getloadavg()),
                                      threads="OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"),
           # a run resumed from --parts spent most of its time in earlier processes: the wall time is the sum of
           # each seed's own seconds, and this process's time is kept beside it
           "wall_seconds": round(sum(seconds.values()), 1), "process_seconds": round(timer.seconds, 1)}
    res["directions"] = directions(per_seed)
    if len(seeds) >= 2:
        res["claims"] = claims(per_seed)
    return res


def recompute_claims(name=NAME):
    """Rewrite the claims of the saved run from its per-seed values (after the claims' words change; nothing is
    retrained), keeping the command, commit, seeds and wall time it records."""
    res = common.load_result(name)
    res["claims"] = claims(res["per_seed"])
    res["claims_recomputed_by"] = ("python -c 'from experiments import positions_today; "
                                   "positions_today.recompute_claims()'")
    common.save(name, res, plot(res))
    return res


def _commit():
    """The commit the code ran at (``git rev-parse HEAD``), or None outside a checkout."""
    import subprocess
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


# ---------------------------------------------------------------------------
# The effects per seed, and the claims
# ---------------------------------------------------------------------------

#: effect name -> (what it is, in words with its unit; per-seed value from one seed's measurements)
EFFECTS = {
    "sink_heads_with": ("share of a seed's 16 heads whose mean attention on position 0 (BOS) passes 0.3, with "
                        "the learned sink logit",
                        lambda v: v["sink"]["learned_sink"]["sink_heads"] / v["sink"]["learned_sink"]["heads"]),
    "sink_heads_without": ("share of a seed's 16 heads whose mean attention on position 0 (BOS) passes 0.3, "
                           "without the learned sink logit (the BOS sink, chapter 10's control)",
                           lambda v: v["sink"]["bos"]["sink_heads"] / v["sink"]["bos"]["heads"]),
    "sink_heads_gap": ("share of heads whose mean attention on BOS passes 0.3, without the learned sink logit "
                       "minus with it",
                       lambda v: v["sink"]["bos"]["sink_heads"] / v["sink"]["bos"]["heads"]
                       - v["sink"]["learned_sink"]["sink_heads"] / v["sink"]["learned_sink"]["heads"]),
    "sink_takes_weight": ("with the learned sink logit: mean weight a row gives the sink minus the mean weight it "
                          "gives BOS, over heads, layers and queries (a share of the row)",
                          lambda v: v["sink"]["learned_sink"]["sink_mass"] - v["sink"]["learned_sink"]["bos_mass"]),
    "sink_loss": ("held-out loss on Bigram-Backcopy, with the learned sink logit minus without (nats per token)",
                  lambda v: v["sink"]["learned_sink"]["heldout_loss"] - v["sink"]["bos"]["heldout_loss"]),
    "sink_copy": ("back-copy accuracy on Bigram-Backcopy, without the learned sink logit minus with it (a share)",
                  lambda v: v["sink"]["bos"]["backcopy_accuracy"] - v["sink"]["learned_sink"]["backcopy_accuracy"]),
    "prope_past_L": ("loss at positions t >= L of 4L windows, full RoPE minus p-RoPE (p = 0.25) (nats)",
                     lambda v: v["text"]["rope"]["beyond"][2] - v["text"]["prope"]["beyond"][2]),
    "prope_2L": ("loss at positions t >= L of 2L windows, full RoPE minus p-RoPE (p = 0.25) (nats)",
                 lambda v: v["text"]["rope"]["beyond"][1] - v["text"]["prope"]["beyond"][1]),
    "prope_at_L": ("loss at L, full RoPE minus p-RoPE (p = 0.25) (nats)",
                   lambda v: v["text"]["rope"]["loss"][0] - v["text"]["prope"]["loss"][0]),
    "per_layer_past_L": ("loss at positions t >= L of 4L windows, one base (10,000, every layer full) minus per-layer "
                         "bases (sliding layer: base 10,000, window L/2; global layer: base 1,000,000) (nats)",
                         lambda v: v["text"]["rope"]["beyond"][2] - v["text"]["per_layer"]["beyond"][2]),
    "per_layer_2L": ("loss at positions t >= L of 2L windows, one base minus per-layer bases (nats)",
                     lambda v: v["text"]["rope"]["beyond"][1] - v["text"]["per_layer"]["beyond"][1]),
    "per_layer_at_L": ("loss at L, per-layer bases (with the sliding window) minus one base (nats)",
                       lambda v: v["text"]["per_layer"]["loss"][0] - v["text"]["rope"]["loss"][0]),
    "window_past_L": ("loss at positions t >= L of 4L windows, one base (10,000, every layer full) minus one base with "
                      "layer 0's window of L/2 (nats)",
                      lambda v: v["text"]["rope"]["beyond"][2] - v["text"]["window_one_base"]["beyond"][2]),
    "bases_past_L": ("loss at positions t >= L of 4L windows, one base (10,000) minus per-layer bases (10,000 and "
                     "1,000,000) without a window (nats)",
                     lambda v: v["text"]["rope"]["beyond"][2] - v["text"]["bases_no_window"]["beyond"][2]),
    "fire_vs_alibi": ("loss at positions t >= L of 4L windows, ALiBi minus FIRE (nats)",
                      lambda v: v["text"]["alibi"]["beyond"][2] - v["text"]["fire"]["beyond"][2]),
    "fire_vs_rope": ("loss at positions t >= L of 4L windows, unscaled RoPE minus FIRE (nats)",
                     lambda v: v["text"]["rope"]["beyond"][2] - v["text"]["fire"]["beyond"][2]),
    "fire_vs_none": ("loss at positions t >= L of 4L windows, NoPE minus FIRE (nats)",
                     lambda v: v["text"]["none"]["beyond"][2] - v["text"]["fire"]["beyond"][2]),
    "fire_rise": ("FIRE's rise past L at 4L (nats): loss at t >= L with the whole prefix minus with the last L "
                  "tokens only (chapter 7's context_use)",
                  lambda v: v["text"]["fire"]["rise"]),
    "fire_at_L": ("loss at L, ALiBi minus FIRE (nats)",
                  lambda v: v["text"]["alibi"]["loss"][0] - v["text"]["fire"]["loss"][0]),
    "temperature_past_L": ("loss at positions t >= L of 4L windows, NoPE minus NoPE with temperature tuning "
                           "(floor_scale L/4, attn_scale 0.1) (nats)",
                           lambda v: v["text"]["none"]["beyond"][2] - v["text"]["temperature"]["beyond"][2]),
    "temperature_entropy": ("mean entropy of the attention rows of queries t >= L in 4L windows, NoPE minus NoPE "
                            "with temperature tuning (nats)",
                            lambda v: v["text"]["none"]["entropy_past_L"] - v["text"]["temperature"]["entropy_past_L"]),
}


def effect_values(per_seed, effect):
    """One effect's per-seed values, in the order of the seeds, and those seeds."""
    seeds = sorted(per_seed, key=int)
    return [float(EFFECTS[effect][1](per_seed[s])) for s in seeds], [int(s) for s in seeds]


def directions(per_seed):
    """Each effect's per-seed values (the quick run's output: directions only, no interval)."""
    return {name: effect_values(per_seed, name)[0] for name in EFFECTS}


#: claim key -> (effect, side claimed, threshold, the source's words), chapter 13's ledger
CLAIMS = {
    "C1_sink": ("sink_heads_with", "below", SIZE,
                "with a learned sink logit per head no BOS sink forms: at most one head in ten puts more than 0.3 "
                "of its attention on BOS (GPT-OSS's sink takes the BOS sink's place)"),
    "C1_control_bos_sink": ("sink_heads_without", "above", SIZE,
                            "without the logit the same model forms the BOS sink (chapter 10): more than one head in "
                            "ten (the positive control of C1_sink)"),
    "C1_sink_gap": ("sink_heads_gap", "above", 0.0, "fewer BOS-sink heads with the learned logit than without"),
    "C1_sink_takes_weight": ("sink_takes_weight", "above", 0.0,
                             "with the learned logit a row parks more weight on the sink than on BOS"),
    "C1_sink_loss": ("sink_loss", "below", SAME,
                     "the learned logit leaves the task's loss unchanged: no more than 0.05 nats above without"),
    "C1_sink_copy": ("sink_copy", "below", COPY_SAME,
                     "the learned logit leaves the back-copy accuracy unchanged: no more than 0.05 below without"),
    "C2_prope": ("prope_past_L", "above", 0.0,
                 "p-RoPE runs past L better than full RoPE (this workbook's reading of Barbero et al.'s p-RoPE: the "
                 "pairs it keeps turn through whole periods within L, and the rest carry no position)"),
    "C2_prope_2L": ("prope_2L", "above", 0.0, "the same at 2L"),
    "C2_prope_at_L": ("prope_at_L", "above", 0.0, "p-RoPE costs nothing at the training length: its loss at L is below full RoPE's (Barbero et al. "
                                               "propose it as an improvement on RoPE)"),
    "C3_per_layer_base": ("per_layer_past_L", "above", 0.0,
                          "per-layer bases (local small with a window, global large) run past L better than one base"),
    "C3_per_layer_base_2L": ("per_layer_2L", "above", 0.0, "the same at 2L"),
    "C3_per_layer_base_at_L": ("per_layer_at_L", "below", SAME,
                               "per-layer bases with a window cost no more than 0.05 nats at L (Gemma 3 report)"),
    "C3_window_alone": ("window_past_L", "above", 0.0,
                        "what C3_per_layer_base's gain is made of: layer 0's window alone, one base in both layers"),
    "C3_bases_alone": ("bases_past_L", "above", 0.0,
                       "what C3_per_layer_base's gain is made of: the two bases alone, no window"),
    "C4_fire": ("fire_vs_alibi", "above", 0.0, "FIRE generalises past L better than ALiBi (Li et al., 2023)"),
    "C4_fire_vs_rope": ("fire_vs_rope", "above", 0.0, "FIRE generalises past L better than RoPE (Li et al.)"),
    "C4_fire_vs_none": ("fire_vs_none", "above", 0.0, "FIRE generalises past L better than NoPE (Li et al.)"),
    "C4_fire_runs_long": ("fire_rise", "below", RISE, "FIRE runs long: its rise past L at 4L stays under 0.05 nats"),
    "C4_fire_at_L": ("fire_at_L", "above", 0.0, "FIRE's loss at L is below ALiBi's (beside Li et al.'s comparison)"),
    "C5_temperature": ("temperature_past_L", "above", 0.0,
                       "temperature tuning lowers a NoPE model's loss past L (Llama 4, from Scalable-Softmax)"),
    "C5_temperature_entropy": ("temperature_entropy", "above", 0.0,
                               "temperature tuning keeps attention sharper past L: lower row entropy "
                               "(Scalable-Softmax's reason)"),
}


def claims(per_seed):
    """The claim records chapter 13 cites: t intervals of the per-seed paired effects."""
    out = {}
    for key, (effect, side, threshold, words) in CLAIMS.items():
        values, seeds = effect_values(per_seed, effect)
        rec = stats.claim_record(EFFECTS[effect][0], side, threshold, values=values, seeds=seeds, note=words)
        rec["metric"] = EFFECTS[effect][0]
        rec["arms"] = _arms_of(effect)
        rec["per_seed"] = dict(zip((str(s) for s in seeds), values))
        out[key] = rec
    out["C1_sink"]["positive_control"] = "C1_control_bos_sink"
    return out


def _arms_of(effect):
    """The arms an effect reads, from the arm names its measurement names."""
    if effect.startswith("sink"):
        return ["learned_sink"] if effect in ("sink_heads_with", "sink_takes_weight") else (
            ["bos"] if effect == "sink_heads_without" else list(SINK_ARMS))
    pairs = {"prope": ["rope", "prope"], "per_layer": ["rope", "per_layer"], "fire_vs_alibi": ["alibi", "fire"],
             "fire_vs_rope": ["rope", "fire"], "fire_vs_none": ["none", "fire"], "fire_rise": ["fire"],
             "fire_at_L": ["alibi", "fire"], "temperature": ["none", "temperature"],
             "window": ["rope", "window_one_base"], "bases": ["rope", "bases_no_window"]}
    return next(arms for prefix, arms in pairs.items() if effect.startswith(prefix))


# ---------------------------------------------------------------------------
# Report and plot
# ---------------------------------------------------------------------------

def report(res):
    L = res["train_len"]
    print(f"text arms at L = {L}, {res['steps']} steps; sink arms at L = {SINK_T}, {res['sink_steps']} steps; "
          f"seeds {res['seeds']}; {res['wall_seconds']} s")
    for s, v in res["per_seed"].items():
        for arm, r in v["text"].items():
            extra = f", rise {r['rise']:+.3f}" if "rise" in r else ""
            extra += f", entropy past L {r['entropy_past_L']:.3f}" if "entropy_past_L" in r else ""
            print(f"seed {s} {arm:>12}: loss at {res['lengths']} {[round(x, 3) for x in r['loss']]}, past L "
                  f"{[round(x, 3) for x in r['beyond'][1:]]}{extra}")
        for arm, r in v["sink"].items():
            print(f"seed {s} {arm:>12}: BOS-sink heads {r['sink_heads']}/{r['heads']}, BOS mass {r['bos_mass']:.3f}, "
                  f"sink weight {r['sink_mass']:.3f}, loss {r['heldout_loss']:.3f}, copy {r['backcopy_accuracy']:.2f}")
    if "claims" not in res:
        for name, values in res["directions"].items():
            print(f"{name}: {[round(x, 4) for x in values]}")
    for key, rec in res.get("claims", {}).items():
        print(f"{key}: {stats.format_record(rec, 3)}")


def plot(res):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    L, lengths = res["train_len"], res["lengths"]
    for i, arm in enumerate(res["arms"]["text"]):
        rows = np.array([v["text"][arm]["beyond"][1:] for v in res["per_seed"].values()])   # (seeds, 2)
        axes[0].errorbar(lengths[1:], rows.mean(axis=0), yerr=rows.std(axis=0), marker="os^vDPX"[i % 7],
                         color=f"C{i}", label=arm, capsize=3)
    axes[0].set(xscale="log", xlabel="evaluation length", ylabel="loss at t >= L (nats/byte)",
                title=f"past L = {L}: mean and spread over seeds")
    axes[0].set_xscale("log", base=2)
    axes[0].set_xticks(lengths[1:], [str(n) for n in lengths[1:]])
    axes[0].legend(fontsize=8)
    for j, arm in enumerate(res["arms"]["sink"]):
        bos = [v["sink"][arm]["bos_mass"] for v in res["per_seed"].values()]
        sink = [v["sink"][arm]["sink_mass"] for v in res["per_seed"].values()]
        xs = [j - 0.2, j + 0.2]
        axes[1].bar(xs, [np.mean(bos), np.mean(sink)], 0.4, color=["tab:blue", "tab:orange"],
                    label=["mean weight on BOS", "mean weight on the learned sink"] if j == 0 else None)
    axes[1].set_xticks(range(len(res["arms"]["sink"])), ["without sink logit", "with sink logit"])
    axes[1].set(ylabel="share of a row", title=f"Bigram-Backcopy, L = {SINK_T}: where rows park")
    axes[1].legend(fontsize=8)
    claims_ = res.get("claims", {})
    keys = [k for k in claims_ if not k.startswith("C1")]
    for y, k in enumerate(keys):
        rec = claims_[k]
        lo, hi = rec["interval"]
        axes[2].errorbar(rec["mean"], y, xerr=[[rec["mean"] - lo], [hi - rec["mean"]]], fmt="o", capsize=3)
        axes[2].plot([rec["threshold"]] * 2, [y - 0.3, y + 0.3], color="k", lw=0.8)
    axes[2].set_yticks(range(len(keys)), keys, fontsize=8)
    axes[2].axvline(0, color="k", ls=":", lw=0.8)
    axes[2].set(xlabel="effect (nats), 95% t interval over seeds", title="claims C2 to C5")
    fig.tight_layout()
    return fig


def main(argv=None):
    return common.main(NAME, __doc__, run, report, plot, argv, parts=True)


if __name__ == "__main__":
    common.command_line(NAME, main)
