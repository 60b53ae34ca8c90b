r"""Train short, test long, over seeds: the verdicts of chapters 4, 5 and 7, with intervals and controls.

``train_short_test_long`` trains all eight schemes once (one seed, L = 64, 1500
steps, up to 8L): an illustration, far too costly to repeat over seeds on two
cores. This experiment repeats only what the chapters' verdicts need, at a
smaller size, over seeds (three by default; the committed result added seeds 3
and 4 to every arm with ``--seeds 3,4 --merge``, five in all):

* **the size**: the same byte-level ``TinyGPT`` (d_model 64, 2 layers, 4 heads),
  trained at **L = 32 for 500 steps of 8 windows** (not 64 for 1500 steps of 16) and
  evaluated at L and **4L = 128** (not 8L). Each arm shares the seed's initial
  token rows and training batches with every other arm (the effects are paired).
* **the arms**: ``none``, ``sinusoidal`` (the unscaled table, each row of norm
  $\sqrt{d_{model}/2} \approx 5.7$, about 35 times a token row initialised at
  std 0.02), ``sinusoidal_scaled`` (the same table times $0.02\sqrt 2$, so its
  entries have the token rows' rms 0.02: the scale confound removed),
  ``t5`` (32 buckets to ``max_distance`` 128: at L = 32 distances 0..31 reach
  buckets 0..21 only), ``t5_max_L`` (``max_distance`` = L = 32: every distance
  from 31 on shares bucket 31, which training reaches), ``rope``, ``alibi``,
  ``transformer_xl`` and ``shaw`` (clipped at 16).
* **the controls**, trained at **4L = 128** (2 windows a batch, the
  same tokens per step): ``alibi_long``, ALiBi on the same text (the control for
  the text, not for the measurement), which shows how
  much the tokens further back than L are worth on this text to an ALiBi model that
  trained with them in view (it keeps its distance penalty: no arm without one
  trains at 4L on this text); and ``rope_long_copy``, RoPE on the *doubled* text
  (every 48-byte chunk written twice, so each byte of a second copy is 48 back,
  L < 48 < 4L), trained for 1000 steps, a task that needs far retrieval: if the
  "whole prefix vs last L tokens" measurement can see far-context use, it must
  see it there. (``alibi_long_copy``, ALiBi on the same doubled text, is an arm
  ``--arms`` can add; it is not in the default run, whose cost it did not fit.)

Per arm and seed: the mean loss at L and at 4L over every position, the mean
over positions t >= L of the 4L windows, and ``context_use`` at 4L (the next
token at t = L, L + 4, ... scored once with the whole prefix and once with
only the last L tokens, run as a sequence of their own; the same tokens both
ways). Two effects are read from the last pair, per seed:

* the **rise past L** = loss with the whole prefix - loss with the last L only.
  A scheme that runs long has a rise near 0; one that breaks, a large one.
* the **far-context gain** = loss with the last L only - loss with the whole
  prefix (the rise with its sign turned): above 0 when tokens further back
  than L help.

The T5 arms also record how far each bucket of the trained table moved from
its initial value (largest over heads), the "trained buckets".

    python -m experiments.short_long_seeds [--quick]

The quick run (two arms, two seeds, L = 16, 60 steps) only checks that it runs.
"""
import copy
import math
import os

from tqdm.auto import tqdm

from mini_transformer.engine import backend
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.positional.sinusoidal import SinusoidalPositionalEncoding, sinusoidal_positional_encoding
from mini_transformer.evaluation import stats
from mini_transformer.evaluation.measures import extrapolation_curve
from . import common
from mini_transformer.model.train import TrainConfig, train
from .common import Timer, corpus, environment, text_model
from .train_short_test_long import context_use

SCALE = 0.02 * math.sqrt(2)   # sin and cos have rms 1/sqrt(2): this gives the table the token rows' rms, 0.02

#: arm -> (scheme, GPTConfig.extra, training length as a multiple of L[, data]); data "text" unless named
ARMS = {
    "none": ("none", {}, 1),
    "sinusoidal": ("sinusoidal", {}, 1),
    "sinusoidal_scaled": ("sinusoidal", {}, 1),
    "t5": ("t5", {}, 1),
    "t5_max_L": ("t5", {"max_distance": None}, 1),    # None: filled with L
    "rope": ("rope", {}, 1),
    "alibi": ("alibi", {}, 1),
    "transformer_xl": ("transformer_xl", {}, 1),
    "shaw": ("shaw", {}, 1),
    "alibi_long": ("alibi", {}, 4),                   # the positive control on text: trained at 4L
    "rope_long_copy": ("rope", {}, 4, "copy"),        # the positive control that must see it: far copies
    "alibi_long_copy": ("alibi", {}, 4, "copy"),      # not in the default run (its cost did not fit)
}
DEFAULT_ARMS = ("alibi", "transformer_xl", "alibi_long", "rope_long_copy", "t5", "t5_max_L", "sinusoidal",
                "sinusoidal_scaled", "none", "rope", "shaw")
#: arms trained longer than ``steps``: the copy control needs the steps to learn its far copy
STEPS_TIMES = {"rope_long_copy": 2}
COPY_GAP = 48     # in the "copy" text every 48-byte chunk is written twice: the second copy is 48 back, L < 48 < 4L
MULTIPLE = 4

SIZES = {
    True: dict(train_len=16, steps=60, seeds=(0, 1), eval_batches=2, eval_batch_size=8, use_windows=8,
               arms=("alibi", "rope_long_copy")),
    False: dict(train_len=32, steps=500, seeds=(0, 1, 2), eval_batches=8, eval_batch_size=8, use_windows=32,
                arms=DEFAULT_ARMS),
}
BATCH = 8
RISE = 0.05   # nats: "runs long" means the rise past L stays under this
GAIN = 0.005  # nats: "uses far context" means the far-context gain exceeds this
EXPLODES = math.log(2)  # nats: "perplexity explodes" needs at least a doubled perplexity, as chapter 8 reads "degrades sharply"
#: why "does not use far context" is not tested by a gain on this text (the book means far retrieval)
NO_FAR_TASK = ("the book's claim is about retrieval far back in a long context, and testing it needs a scheme without "
               "a penalty that runs past L, trained where far context pays (chapter 9's passkeys), to compare: none "
               "was trained; on this text no gain from far context is established, not even for ALiBi trained at 4L "
               "with the far tokens in view (control_uses_far: not established)")
NO_PENALTY_TEST = ("on this text no gain from far context is established, so no effect of the penalty can show, and "
                   "chapter 9's passkey run, where far context pays, trained no scheme without a penalty that runs past "
                   "L (only ALiBi and unscaled RoPE, which breaks there)")


class ScaledSinusoidal(SinusoidalPositionalEncoding):
    r"""The sinusoidal table times ``scale``: x + scale * PE[t]. The scale-confound arm (no parameters)."""

    def __init__(self, d_model, base=10000.0, scale=SCALE):
        super().__init__(d_model, base)
        self.scale = float(scale)

    def signature(self):
        return {**super().signature(), "scale": self.scale}

    def embed(self, x, offset):
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, offset)   # (T, d_model)
        return x + (self.scale * pe).astype(x.dtype)


def doubled(stream, gap=COPY_GAP):
    """``stream`` cut into chunks of ``gap`` tokens, each written twice: c0 c0 c1 c1 ... (host array)."""
    n = len(stream) // gap
    return np.repeat(stream[:n * gap].reshape(n, gap), 2, axis=0).reshape(-1)


_COPY = None


def copy_corpus():
    """The text corpus with both splits doubled chunk by chunk: every token of a second copy is ``COPY_GAP`` back."""
    global _COPY
    if _COPY is None:
        c = copy.copy(corpus())
        c.train, c.val = doubled(c.train), doubled(c.val)
        _COPY = c
    return _COPY


def data_of(arm):
    return corpus() if (ARMS[arm] + ("text",))[3] == "text" else copy_corpus()


def build(arm, L, seed):
    """The model of one arm, before training, and its training length."""
    scheme, extra, mult = ARMS[arm][:3]
    extra = {k: (L if v is None else v) for k, v in extra.items()}
    T = mult * L
    model = text_model(scheme, T, seed=seed, extra=extra)
    if arm == "sinusoidal_scaled":
        model.positional = ScaledSinusoidal(model.cfg.d_model, model.cfg.sinusoidal_base)
    return model, T


def run_arm(arm, L, seed, size, progress=False):
    """Train one arm with one seed and measure it: the dict saved per seed."""
    model, T = build(arm, L, seed)
    table0 = backend.to_numpy(model.positional.table.data).copy() if ARMS[arm][0] == "t5" else None
    batch = BATCH * L // T                             # the same tokens per step at every training length
    data, lr, steps = data_of(arm), 3e-3, size["steps"] * STEPS_TIMES.get(arm, 1)
    cfg = TrainConfig(steps=steps, lr=lr, warmup=max(1, steps // 10), min_lr=lr / 10, seed=seed, progress=progress)
    with Timer() as t:    # common.train_text's settings, on this arm's text
        result = train(model, lambda rng: data.get_batch("train", batch, T, rng), cfg)
    curve = extrapolation_curve(model, data, L, (1, MULTIPLE), n_batches=size["eval_batches"],
                                batch_size=size["eval_batch_size"], seed=seed)
    use = context_use(model, data.split("val"), L, MULTIPLE * L, n_windows=size["use_windows"], seed=seed)
    out = {"seed": seed, "train_len": T, "steps": steps, "final_train_loss": float(result.losses[-1]),
           "loss_L": float(curve.loss[0]), "loss_4L": float(curve.loss[1]), "beyond_4L": float(curve.loss_beyond[1]),
           "full": use["full_mean"], "window": use["window_mean"], "rise": use["full_mean"] - use["window_mean"],
           "gain": use["window_mean"] - use["full_mean"], "train_seconds": round(t.seconds, 1)}
    if table0 is not None:
        moved = np.abs(backend.to_numpy(model.positional.table.data) - table0).max(axis=1)   # (num_buckets,)
        out["bucket_moved"] = [float(v) for v in moved]
    return out


def _common_seeds(per_seed, arms):
    return sorted(set.intersection(*[{r["seed"] for r in per_seed[a]} for a in arms]))


def _values(per_seed, arm, key, seeds=None):
    return [r[key] for r in per_seed[arm] if seeds is None or r["seed"] in seeds]


def _paired(per_seed, a, b, key):
    """Per seed: arm a's value minus arm b's, over the seeds both arms ran (paired: they share the seed)."""
    seeds = _common_seeds(per_seed, [a, b])
    return [x - y for x, y in zip(_values(per_seed, a, key, seeds), _values(per_seed, b, key, seeds))]


def claims(per_seed):
    """The claim records the chapters cite, each from per-seed values (t interval over the seeds)."""
    have = set(per_seed)
    c = {}

    def add(key, needs, effect, claimed, threshold, values, not_tested="", **extra):
        if set(needs) <= have and len(_common_seeds(per_seed, needs)) >= 2:
            seeds = _common_seeds(per_seed, needs)
            c[key] = dict(stats.claim_record(effect, claimed, threshold, values=values(seeds), seeds=seeds,
                                             not_tested=not_tested), **extra)

    rise = "rise past L at 4L (nats): loss at t >= L with the whole prefix minus with the last L tokens only"
    gain = "far-context gain at 4L (nats): loss at t >= L with the last L tokens only minus with the whole prefix"
    for arm in ("alibi", "rope", "sinusoidal", "sinusoidal_scaled", "t5", "t5_max_L", "transformer_xl", "shaw",
                "none"):
        add(f"runs_long_{arm}", [arm], f"{arm}: {rise}", "below", RISE, lambda s, a=arm: _values(per_seed, a, "rise", s))
        add(f"breaks_{arm}", [arm], f"{arm}: {rise}", "above", RISE, lambda s, a=arm: _values(per_seed, a, "rise", s))
    add("explodes_rope", ["rope"], f"rope: {rise}; the book's 'perplexity explodes' at 4L read as a rise over "
        f"ln 2, the perplexity more than doubled", "above", EXPLODES, lambda s: _values(per_seed, "rope", "rise", s))
    add("control_uses_far", ["alibi_long"], f"alibi trained at 4L on the same text (the control for the text: "
        f"does it reward far context at all?): {gain}", "above", GAIN,
        lambda s: _values(per_seed, "alibi_long", "gain", s))
    for arm in ("alibi", "transformer_xl", "rope", "t5", "shaw"):
        add(f"uses_far_{arm}", [arm, "rope_long_copy"], f"{arm} trained at L: {gain}", "below", GAIN,
            lambda s, a=arm: _values(per_seed, a, "gain", s), positive_control="copy_control_uses_far",
            not_tested=NO_FAR_TASK)
    add("copy_control_uses_far", ["rope_long_copy"],
        f"rope trained at 4L on the doubled text, every second copy 48 back (the positive control that needs far "
        f"context): {gain}", "above", GAIN, lambda s: _values(per_seed, "rope_long_copy", "gain", s))
    add("alibi_copy_uses_far", ["alibi_long_copy"],
        f"alibi trained at 4L on the doubled text, every second copy 48 back: {gain}", "above", GAIN,
        lambda s: _values(per_seed, "alibi_long_copy", "gain", s))
    add("penalty_is_cause", ["alibi", "transformer_xl"],
        "far-context gain of transformer_xl minus that of alibi, both trained at L (nats): above 0 if ALiBi's "
        "penalty, which XL lacks, is what keeps ALiBi from far context", "above", 0.0,
        lambda s: _paired(per_seed, "transformer_xl", "alibi", "gain"), not_tested=NO_PENALTY_TEST)
    add("t5_max_L_helps", ["t5", "t5_max_L"],
        "rise past L of t5 (max_distance 128) minus that of t5 with max_distance = L (nats)", "above", 0.0,
        lambda s: _paired(per_seed, "t5", "t5_max_L", "rise"))
    add("t5_rises_less_than_rope", ["t5", "rope"],
        "rise past L at 4L of rope minus that of t5, paired by seed (nats): above 0 if T5 rises less than "
        "unscaled RoPE, the relative scheme that breaks there", "above", 0.0,
        lambda s: _paired(per_seed, "rope", "t5", "rise"))
    add("t5_generalises_vs_none", ["t5", "none"],
        "rise past L at 4L of t5 minus that of none (no position at all), paired by seed (nats): below 0 if T5's "
        "bias generalises past L, costing it no more there than having no position", "below", 0.0,
        lambda s: _paired(per_seed, "t5", "none", "rise"))
    add("sinusoidal_worse_than_none", ["sinusoidal", "none"],
        "loss at t >= L of 4L windows, unscaled sinusoidal minus none (nats)", "above", 0.0,
        lambda s: _paired(per_seed, "sinusoidal", "none", "beyond_4L"))
    add("scaled_sinusoidal_worse_than_none", ["sinusoidal_scaled", "none"],
        "loss at t >= L of 4L windows, scaled sinusoidal minus none (nats)", "above", 0.0,
        lambda s: _paired(per_seed, "sinusoidal_scaled", "none", "beyond_4L"))
    add("scale_matters", ["sinusoidal", "sinusoidal_scaled"],
        "loss at t >= L of 4L windows, unscaled minus scaled sinusoidal (nats)", "above", 0.0,
        lambda s: _paired(per_seed, "sinusoidal", "sinusoidal_scaled", "beyond_4L"))
    for other in ("rope", "transformer_xl", "t5", "shaw"):
        add(f"alibi_pays_at_L_vs_{other}", ["alibi", other],
            f"mean loss at L, alibi minus {other}, paired by seed (nats)", "above", 0.0,
            lambda s, o=other: _paired(per_seed, "alibi", o, "loss_L"))
    for arm in ("transformer_xl", "alibi", "shaw"):
        # in one 4L window: loss_4L = (loss over t < L + 3 * loss over t >= L) / 4, so this is the first minus the rest
        add(f"short_context_costs_{arm}", [arm],
            f"{arm}: in the same 4L windows, mean loss over positions t < L minus over t >= L (nats)", "above", 0.0,
            lambda s, a=arm: [4 * (x - y) for x, y in zip(_values(per_seed, a, "loss_4L", s),
                                                          _values(per_seed, a, "beyond_4L", s))])
    return c


def run(quick=False, seed=0, progress=True, arms=None, seeds=None, previous=None):
    """Train and measure ``arms`` x ``seeds``; records of other arms or seeds in ``previous`` (a saved result) are kept."""
    size = SIZES[bool(quick)]
    L = size["train_len"]
    seeds = list(seeds) if seeds is not None else [seed + s for s in size["seeds"]]
    arms = list(arms or size["arms"])
    for arm in arms:
        if arm not in ARMS:
            raise ValueError(f"arms: {arm!r} is not an arm of this experiment; choose from {list(ARMS)}.")
    per_seed = {a: list(r) for a, r in (previous or {}).get("per_seed", {}).items()}
    seconds = (previous or {}).get("environment", {}).get("seconds", 0.0)
    with Timer() as timer:
        for s in seeds:
            for arm in tqdm(arms, desc=f"seed {s}", disable=not progress):
                rec = run_arm(arm, L, s, size)
                per_seed[arm] = sorted([r for r in per_seed.get(arm, []) if r["seed"] != s] + [rec],
                                       key=lambda r: r["seed"])
    per_seed = {a: per_seed[a] for a in ARMS if a in per_seed}
    all_seeds = sorted({r["seed"] for recs in per_seed.values() for r in recs})
    return {
        "train_len": L, "multiple": MULTIPLE, "steps": size["steps"], "seeds": all_seeds, "arms": list(per_seed),
        "per_seed": per_seed, "claims": claims(per_seed),
        "thresholds": {"rise": RISE, "gain": GAIN}, "sinusoidal_scale": SCALE, "copy_gap": COPY_GAP,
        "commands": (previous or {}).get("commands", []) + [command(quick, arms, seeds)],
        "environment": environment(seconds + timer.seconds, seeds=all_seeds, d_model=64, n_layers=2, n_heads=4,
                                   batch_size=BATCH, train_len=L, steps=size["steps"],
                                   eval_windows=size["eval_batches"] * size["eval_batch_size"],
                                   context_use_windows=size["use_windows"], interval="95% Student-t over seeds",
                                   threads="OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1, shared 2-core machine"),
    }


def command(quick, arms, seeds):
    return ("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments."
            f"short_long_seeds{' --quick' if quick else ''} --arms {','.join(arms)} "
            f"--seeds {','.join(str(s) for s in seeds)}" + ("" if quick else " --merge"))


def summary_rows(res):
    """(arm, key, stats.format_interval text) for the table: mean ± half-width over seeds."""
    rows = []
    for arm, recs in res["per_seed"].items():
        cells = {}
        for key in ("loss_L", "loss_4L", "beyond_4L", "full", "window", "rise"):
            vals = [r[key] for r in recs]
            if len(vals) < 2:                              # one seed: its value, no interval
                cells[key] = f"{vals[0]:.3f} (1 seed)"
                continue
            mean, hw, lo, hi = stats.t_interval(vals)
            cells[key] = stats.format_interval(mean, lo, hi, 3)
        rows.append((arm, cells))
    return rows


def report(res):
    L = res["train_len"]
    keys = ("loss_L", "loss_4L", "beyond_4L", "full", "window", "rise")
    print(f"trained at L = {L} ({res['steps']} steps), evaluated at {res['multiple']}L; mean ± 95% half-width over "
          f"seeds {res['seeds']}")
    print(f"{'arm':<18}" + "".join(f"{k:>17}" for k in keys))
    for arm, cells in summary_rows(res):
        print(f"{arm:<18}" + "".join(f"{cells[k]:>17}" for k in keys))
    for key, rec in res["claims"].items():
        print(f"{key:<34} {stats.format_record(rec, 3)}")
    env = res["environment"]
    print(f"{env['seconds']} s on {env['cores']} cores ({env['backend']})")


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2))
    arms = list(res["per_seed"])
    for i, arm in enumerate(arms):
        recs = res["per_seed"][arm]
        for ax, key in ((a, "rise"), (b, "gain")):
            vals = [r[key] for r in recs]
            ax.plot([i] * len(vals), vals, "k.", ms=5)
            mean, hw, lo, hi = stats.t_interval(vals)
            ax.errorbar([i], [mean], yerr=[[hw], [hw]], fmt="o", color=f"C{i % 10}", capsize=4)
    a.axhline(RISE, color="gray", ls=":", lw=0.8)
    a.set_yscale("symlog", linthresh=0.1)
    b.axhline(GAIN, color="gray", ls=":", lw=0.8)
    b.axhline(0, color="k", lw=0.5)
    for ax, title in ((a, f"rise past L (threshold {RISE}): whole prefix minus last L"),
                      (b, f"far-context gain (threshold {GAIN}): last L minus whole prefix")):
        ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right")
        ax.set(ylabel="nats per byte, positions t >= L of 4L windows", title=title)
    fig.suptitle(f"Trained at L = {res['train_len']} ({res['steps']} steps; alibi_long at 4L), "
                 f"seeds {res['seeds']}: dots are seeds, bars 95% t intervals")
    fig.tight_layout()
    return fig


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two arms, two seeds, 60 steps: only checks that it runs")
    ap.add_argument("--arms", default=None, help=f"comma-separated arms (default all): {','.join(ARMS)}")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default 0,1,2)")
    ap.add_argument("--merge", action="store_true", help="keep the other arms and seeds of the saved result")
    ap.add_argument("--out", default=common.RESULTS, help="folder for short_long_seeds.json and .png")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--reclaim", action="store_true",
                    help="train nothing: recompute the claims of the saved result from its per-seed values")
    args = ap.parse_args(argv)
    if args.reclaim:
        res = common.load_result("short_long_seeds", args.out)
        res["claims"] = claims(res["per_seed"])
        res["commands"] = res.get("commands", []) + [command(False, [], []).split(" --arms")[0] + " --reclaim"]
        report(res)
        common.save("short_long_seeds", res, plot(res), args.out)
        return res
    previous = None
    if args.merge and os.path.exists(os.path.join(args.out, "short_long_seeds.json")):
        previous = common.load_result("short_long_seeds", args.out)
    res = run(args.quick, progress=not args.no_progress, previous=previous,
              arms=args.arms.split(",") if args.arms else None,
              seeds=[int(s) for s in args.seeds.split(",")] if args.seeds else None)
    report(res)
    if not args.quick:
        common.save("short_long_seeds", res, plot(res), args.out)
    return res


if __name__ == "__main__":
    common.command_line("short_long_seeds", main)
