r"""Long context, measured: does a model that runs at 8x its training length use that context?

The sources' claim (book §4, survey §9.2 and §11): perplexity on long text stays flat while
long-range retrieval fails, because long-text perplexity is dominated by local context. Tested
on one model and the same sequences, over several seeds:

1. Train ``TinyGPT`` at L on standard-library text in which every window hides a passkey
   (``data.text_passkey_task``: ``KEY_START d_1..d_n KEY_END`` somewhere, ``QUERY`` and the
   digits at the end), so the model learns both to predict text and to retrieve the key.
   Once with ALiBi (built to run past L) and once with RoPE (unscaled), per seed.
2. At lengths L, 2L, 4L and 8L: the loss on the text bytes of those sequences (what a
   perplexity benchmark sees) and the passkey accuracy at five depths, ``n_trials`` keys a
   cell (what a retrieval probe sees), from which ``effective_context_length``.
3. On plain held-out text: the loss at every position of ``n_windows`` windows of 8L (loss by
   position, split at L) and the loss at one position given the last w tokens only, w = 1 .. L
   (how much context next-byte prediction needs at all).
4. The positive control: the ALiBi model of the same seed, trained on at 8L (400 more steps,
   batch 8), probed the same way. If the probe can see retrieval at 8L, this model shows it; so
   a model trained at L that fails there fails for want of training, not for a blind probe. (A
   model trained at 8L from scratch, 1200 steps at batch 8, learned the text but no key at all:
   a key is 3 of 256 bytes, too rare a signal for so short a run.)

Each claim is saved as a ``stats.claim_record`` under ``"claims"``: per-seed effects with a
Student-t interval over seeds. Shares of keys are per-seed too (``SHARES_NOTE`` says why not a
Wilson interval over keys pooled across seeds).

    python -m experiments.long_context [--quick] [--seeds 0 1 2 3 4]
    python -m experiments.long_context --reclaim   # the claims again, no training
"""
import argparse
import functools
import json
import math
import os
import sys

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.files import atomic_write
from mini_transformer.model.tasks import IGNORE, text_passkey_task
from mini_transformer.evaluation.measures import effective_context_length, passkey_grid, token_losses
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.evaluation import stats
from . import common
from .attention_sinks import process_settings
from .common import RESULTS, Timer, corpus, environment, text_model

SCHEMES = ("alibi", "rope")
CONTROL = "alibi_long"        # the positive control: ALiBi trained at the longest length
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
N_DIGITS = 3
RUNS_LONG = 0.05              # "does not rise past L": a rise under 0.05 nats (chapter 7's bar for "runs long")
FLAT = RUNS_LONG              # "stays flat": no rise, so the same bar as "does not rise past L"
EXPLODES = math.log(2)        # "perplexity explodes": a rise over ln 2 nats, the perplexity more than doubled
COLLAPSE = 0.5                # "collapses": the share of keys found falls by at least half of all keys
LOCAL = 0.75                  # "dominated by local context": 4 bytes buy at least 3/4 of what L bytes buy, 3x the rest
MATCHED_FROM = 3              # C2b's inside baseline starts at position 3, the first that sees 4 bytes: positions 0 to 2
                              # see fewer, and their higher loss would pull the inside mean up (a bias toward "no rise")
# Claims whose conditions these runs do not meet: the verdict is "not tested here", the interval's kept beside it.
COLLAPSE_NOT_TESTED = ("the book's collapse is on long documents, and its ALiBi mechanism a recency penalty far back "
                       "in a long context (book §2.5, §4); these runs reach 8L = 256 bytes, not a long document "
                       "(that the flattest head here, slope 1/256, penalises a key by at most 255/256 of a nat "
                       "there is an explanation not tested here)")
LOCAL_NOT_TESTED = ("the context curve stops at w = L bytes, inside the training length, so it does not measure what "
                    "bytes past L add to a long text's loss; and no arm shows this curve gaining from far context "
                    "(a positive control in the same measurement)")
C2B_NOT_TESTED = ("this split compares different positions of one 8L window, which mixes position with how much "
                  "context each position has; chapter 7's C5 settles the sentence on the same tokens, with the whole "
                  "prefix and with only the last L in view (short_long_seeds/runs_long_alibi)")
SHARES_NOTE = ("a share of keys is one number per seed (n_trials keys each) with a t-interval over seeds, not keys "
               "pooled over seeds with a Wilson interval: the seeds differ far more than the keys within a seed do "
               "(the per-seed counts are in runs; one seed's cell of 64 keys has a Wilson half-width of about 0.1)")

SIZES = {
    True: dict(train_len=32, steps=30, multiples=(1, 4), n_trials=4, contexts=(1, 2, 4, 8, 16, 32),
               n_windows=8, context_rows=64, seeds=(0, 1), control_seeds=(0, 1), control_steps=5,
               control_batch=4),
    # the full mode: 5 seeds of the two models at L = 32 (1200 steps, batch 16), 3 seeds of the control
    # (the ALiBi model of the same seed, trained on for 400 steps at 8L, batch 8), 64 keys a cell, 128 windows
    # for the loss by position
    False: dict(train_len=32, steps=1200, multiples=(1, 2, 4, 8), n_trials=64, contexts=(1, 2, 4, 8, 16, 32),
                n_windows=128, context_rows=512, seeds=(0, 1, 2, 3, 4), control_seeds=(0, 1, 2),
                control_steps=400, control_batch=8),
}


def passkey_batches(text, T, batch_size=16):
    """``rng -> (x, y)``: text windows of length T, each hiding a key at a random depth."""
    def get(rng):
        b = text_passkey_task(batch_size, T, float(rng.host.random()), seed=int(rng.host.integers(2 ** 31)),
                              n_digits=N_DIGITS, text=text)
        return b.x, b.y
    return get


def text_loss_on_passkey_rows(model, text, L, n_rows, seed):
    """Mean loss over the text bytes (not the key, not the answer) of passkey rows of length L, all depths."""
    H = L - N_DIGITS
    total, count = 0.0, 0
    with no_grad():
        for d in DEPTHS:
            b = text_passkey_task(n_rows, L, d, seed=seed, n_digits=N_DIGITS, text=text)
            y = backend.to_numpy(b.y)
            scored = (y != IGNORE)
            scored[:, H:] = False                                   # the answer is retrieval, not text
            ell = token_losses(model, b.x, backend.asarray(backend.hostnp.where(y == IGNORE, 0, y)))
            total += float(ell[scored].sum())
            count += int(scored.sum())
    return total / count


def context_curve(model, stream, contexts, n_rows, seed):
    """Loss at one position predicted from its last w tokens only, for each w: ``{w: loss}``."""
    g = backend.hostnp.random.default_rng(seed)
    w_max = max(contexts)
    ends = g.integers(w_max, len(stream) - 1, size=n_rows)          # the predicted token is stream[end]
    out = {}
    with no_grad():
        for w in contexts:
            x = stream[ends[:, None] + backend.hostnp.arange(-w, 0)].astype("int64")      # (n_rows, w)
            y = stream[ends[:, None] + backend.hostnp.arange(-w + 1, 1)].astype("int64")  # (n_rows, w)
            out[w] = float(token_losses(model, backend.asarray(x), backend.asarray(y))[:, -1].mean())
    return out


def loss_at_each_position(model, stream, T, n_rows, seed, chunk=32):
    """Mean loss at each position 0 .. T-1 over ``n_rows`` held-out windows of length T: ``(T,)`` list."""
    g = backend.hostnp.random.default_rng(seed)
    starts = g.integers(0, len(stream) - T - 1, size=n_rows)
    idx = starts[:, None] + backend.hostnp.arange(T + 1)
    s = stream[idx].astype("int64")
    total = backend.hostnp.zeros(T)
    with no_grad():
        for i in range(0, n_rows, chunk):                               # chunks bound the (B, H, T, T) scores
            part = s[i:i + chunk]
            ell = token_losses(model, backend.asarray(part[:, :-1]), backend.asarray(part[:, 1:]))  # (b, T)
            total += backend.to_numpy(ell).sum(axis=0)
    return (total / n_rows).tolist()


def inside_and_beyond(per_position, L):
    """``[mean over t < L, mean over t >= L]`` of a loss-by-position list (chapter 9's split)."""
    inside, beyond = per_position[:L], per_position[L:]
    return [sum(inside) / len(inside), sum(beyond) / len(beyond)]


def run_scheme(positional, size, seed, progress, extend=None):
    """One model trained at L (then at ``extend["train_at"]``, when given) and every measurement at L .. 8L."""
    L = T = size["train_len"]
    steps = size["steps"]
    batch_size = 16
    lengths = [m * L for m in size["multiples"]]
    n_trials = size["n_trials"]
    with Timer() as timer:
        text = corpus()
        model = text_model(positional, T, seed=seed)
        cfg = TrainConfig(steps=steps, lr=3e-3, warmup=max(1, steps // 10), min_lr=3e-4, seed=seed,
                          progress=progress)
        result = train(model, passkey_batches(text.train, T, batch_size), cfg)
        if extend is not None:                      # the control: the same model, trained on at the long length
            T, steps, batch_size = extend["train_at"], extend["steps"], extend["batch_size"]
            cfg = TrainConfig(steps=steps, lr=1e-3, warmup=max(1, steps // 10), min_lr=1e-4, seed=seed + 100,
                              progress=progress)
            result = train(model, passkey_batches(text.train, T, batch_size), cfg)
        model.eval()
        task = functools.partial(text_passkey_task, text=text.val)
        grid = passkey_grid(model, lengths, DEPTHS, n_trials=n_trials, seed=seed + 1, n_digits=N_DIGITS, task=task)
        text_loss = {L_: text_loss_on_passkey_rows(model, text.val, L_, n_trials, seed + 1) for L_ in lengths}
        per_position = loss_at_each_position(model, text.val, lengths[-1], size.get("n_windows", 16), seed + 2)
        context = context_curve(model, text.val, size["contexts"], size.get("context_rows", 256), seed + 3)
    successes = [[int(round(a * n_trials)) for a in row] for row in grid.accuracy.tolist()]
    return {"seed": seed, "trained_at": T, "steps": size["steps"], "extended": extend,
            "final_train_loss": result.losses[-1], "lengths": lengths, "depths": list(DEPTHS),
            "passkey_accuracy": grid.accuracy.tolist(), "passkey_successes": successes, "passkey_trials": n_trials,
            "passkey_digit_accuracy": grid.digit_accuracy.tolist(),
            "effective_context_length": effective_context_length(grid, 0.5),
            "text_loss_on_passkey_rows": [text_loss[L_] for L_ in lengths],
            "loss_by_position": per_position, "n_windows": size.get("n_windows", 16),
            "inside_beyond": inside_and_beyond(per_position, L),
            "loss_given_context": {str(w): v for w, v in context.items()},
            "seconds": round(timer.seconds, 1)}


def mean(xs):
    return sum(xs) / len(xs)


def effects(r, L):
    """The per-seed effects the claims read, from one model's run ``r`` (a dict of ``run_scheme``)."""
    inside, beyond = r["inside_beyond"]
    acc = [mean(row) for row in r["passkey_accuracy"]]
    ctx = r["loss_given_context"]
    if not ctx["1"] > ctx[str(L)]:
        raise ValueError(f"loss_given_context must fall from 1 byte to L = {L} bytes for a share of that drop, "
                         f"got {ctx['1']} at 1 and {ctx[str(L)]} at {L}.")
    found = r["passkey_successes"]
    n = r["passkey_trials"]
    matched = r["loss_by_position"][MATCHED_FROM:L]
    return {"beyond_minus_inside": beyond - inside,
            "beyond_minus_matched": beyond - mean(matched),           # C2b: the inside from position MATCHED_FROM
            "far_key_share": found[-1][0] / n,                        # at 8L, depth 0: the key farthest back
            "share_at_L": sum(found[0]) / (n * len(found[0])),        # at L, every depth
            "text_rise": r["text_loss_on_passkey_rows"][-1] - r["text_loss_on_passkey_rows"][0],
            "retrieval_drop": acc[0] - acc[-1],
            "local_share": (ctx["1"] - ctx["4"]) / (ctx["1"] - ctx[str(L)])}


def pooled(runs, length_index, depth_index=None):
    """Passkeys found and tried, summed over seeds, at one length (one depth, or all): ``(successes, trials)``."""
    k = n = 0
    for r in runs:
        row = r["passkey_successes"][length_index]
        cells = row if depth_index is None else [row[depth_index]]
        k += sum(cells)
        n += r["passkey_trials"] * len(cells)
    return k, n


def make_claims(res):
    """The claim records (``stats.claim_record``) of chapter 9's ledger, from the per-seed runs."""
    L, runs = res["train_len"], res["runs"]
    seeds, control_seeds = res["seeds"], res["control_seeds"]
    per = {arm: [effects(r, L) for r in rs] for arm, rs in runs.items()}

    def with_control(rec, positive_control):
        if positive_control is not None:
            rec["positive_control"] = positive_control
        return rec

    def t(arm, key, effect, claimed, threshold=0.0, positive_control=None, not_tested=""):
        return with_control(stats.claim_record(effect, claimed, threshold, values=[e[key] for e in per[arm]],
                                               seeds=[r["seed"] for r in runs[arm]], not_tested=not_tested),
                            positive_control)

    # shares of keys: one per seed (n_trials keys each) and a t-interval over seeds (SHARES_NOTE)
    return {
        "C1b": t("alibi", "far_key_share", "ALiBi trained at L: share of keys retrieved at 8L, depth 0 (the farthest)",
                 "below", 0.5, positive_control="C1b_control"),
        "C1c": t("rope", "far_key_share", "unscaled RoPE trained at L: share of keys retrieved at 8L, depth 0 (the "
                                          "farthest)", "below", 0.5, positive_control="C1b_control"),
        "C1b_control": t(CONTROL, "far_key_share", "ALiBi trained on at 8L (positive control): share of keys "
                                                   "retrieved at 8L, depth 0", "above", 0.5),
        "C2a": t("rope", "beyond_minus_inside", "RoPE: loss beyond L minus loss inside L, windows of 8L (nats)",
                 "above", EXPLODES),
        "C2b": t("alibi", "beyond_minus_matched", "ALiBi: loss beyond L (positions L .. 8L - 1) minus loss inside L "
                                                  f"from position {MATCHED_FROM} (positions {MATCHED_FROM} .. L - 1, "
                                                  f"each with at least {MATCHED_FROM + 1} bytes of context), windows "
                                                  "of 8L (nats)",
                 "below", RUNS_LONG, positive_control="C2a", not_tested=C2B_NOT_TESTED),
        "C3a": t("alibi", "text_rise", "ALiBi: text loss on the passkey rows at 8L minus at L (nats)", "below", FLAT,
                 positive_control="C3a_control"),
        "C3a_control": t("rope", "text_rise", "RoPE (positive control): text loss at 8L minus at L (nats)", "above",
                         FLAT),
        "C3b": t("alibi", "retrieval_drop", "ALiBi: keys retrieved at L minus at 8L, mean over five depths", "above",
                 COLLAPSE, positive_control="C3b_control", not_tested=COLLAPSE_NOT_TESTED),
        "C3b_control": t("rope", "retrieval_drop", "RoPE (positive control): keys retrieved at L minus at 8L, mean "
                                                   "over five depths", "above"),
        "C4": t("alibi", "local_share", "ALiBi: share of the loss drop from 1 to L bytes of context that 4 bytes give",
                "above", LOCAL, not_tested=LOCAL_NOT_TESTED),
        "C4_control": t("alibi", "share_at_L", "ALiBi: share of keys retrieved at L, all depths (the model reads up "
                                               "to L bytes back when the task needs it; a retrieval measure, not the "
                                               "context curve, so not a positive control for C4)",
                        "above", 0.5),
    }


def same_size(a, b, control):
    """Whether two sizes make the same run of one arm (the control's keys count only for the control)."""
    def keys(size):
        return {k: v for k, v in json.loads(json.dumps(size)).items()
                if k not in ("seeds", "control_seeds") and (control or not k.startswith("control"))}
    return keys(a) == keys(b)


def _part(parts, arm, seed, size, make):
    """One (arm, seed) run, read from ``parts/ARM_SEED.json`` when an earlier call of the same size saved it."""
    if parts is None:
        return make()
    path = os.path.join(parts, f"{arm}_{seed}.json")
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        if same_size(saved["size"], size, control=arm == CONTROL):
            return saved["run"]
    r = make()
    os.makedirs(parts, exist_ok=True)
    text = json.dumps({"size": size, "run": r}, default=float)
    atomic_write(path, lambda f: f.write(text.encode()))
    return r


def run(quick=False, seeds=None, progress=True, parts=None):
    """Every arm at every seed (the control at ``control_seeds``), then the claims; a dict ready to save."""
    size = dict(SIZES[quick])
    seeds = list(size["seeds"] if seeds is None else seeds)
    control_seeds = [s for s in size["control_seeds"] if s in seeds] or seeds[:2]
    L = size["train_len"]
    runs = {arm: [] for arm in SCHEMES + (CONTROL,)}
    with Timer() as timer:
        for seed in seeds:
            for arm in SCHEMES:
                runs[arm].append(_part(parts, arm, seed, size, lambda: run_scheme(arm, size, seed, progress)))
                print(f"{arm} seed {seed}: {runs[arm][-1]['seconds']} s", flush=True)
            if seed in control_seeds:
                extend = dict(train_at=L * size["multiples"][-1], steps=size["control_steps"],
                              batch_size=size["control_batch"])
                runs[CONTROL].append(_part(parts, CONTROL, seed, size, lambda: run_scheme(
                    "alibi", size, seed, progress, extend=extend)))
                print(f"{CONTROL} seed {seed}: {runs[CONTROL][-1]['seconds']} s", flush=True)
    res = {"train_len": L, "steps": size["steps"], "seeds": seeds, "control_seeds": control_seeds,
           "n_digits": N_DIGITS, "n_trials": size["n_trials"], "n_windows": size["n_windows"],
           "threshold": 0.5, "flat_threshold": FLAT, "local_threshold": LOCAL, "size": size, "runs": runs,
           "command": "python -m experiments.long_context " + " ".join(sys.argv[1:]),
           # seconds: the runs' own wall times, summed (they ran one after another; a call that resumes from
           # --parts reuses saved runs, and its own time is call_seconds)
           "environment": environment(sum(r["seconds"] for rs in runs.values() for r in rs), d_model=64, n_layers=2,
                                      n_heads=4, batch_size=16, call_seconds=round(timer.seconds, 1),
                                      process=process_settings())}
    res["claims"] = make_claims(res)
    res["claims_note"] = SHARES_NOTE
    return res


def plot(res):
    import matplotlib.pyplot as plt
    L = res["train_len"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for name, rs in res["runs"].items():
        lengths = rs[0]["lengths"]
        loss = [mean([r["text_loss_on_passkey_rows"][i] for r in rs]) for i in range(len(lengths))]
        acc = [mean([mean(r["passkey_accuracy"][i]) for r in rs]) for i in range(len(lengths))]
        line, = axes[0].plot(lengths, loss, "o-", label=f"{name}: text loss")
        axes[1].plot(lengths, acc, "s-", color=line.get_color(), label=f"{name}: passkey accuracy")
        pos = list(range(len(rs[0]["loss_by_position"])))
        by_pos = [mean(v) for v in zip(*(r["loss_by_position"] for r in rs))]
        axes[2].plot(pos, by_pos, lw=0.8, color=line.get_color(), label=name)
    for ax in axes[:2]:
        ax.axvline(L, color="k", ls="--", lw=0.8, label="training length")
        ax.set_xscale("log", base=2)
        lengths = res["runs"]["alibi"][0]["lengths"]
        ax.set_xticks(lengths, [str(v) for v in lengths])
        ax.set_xlabel("context length")
        ax.legend(fontsize=8)
    n = len(res["seeds"])
    axes[0].set(ylabel="loss on the text bytes (nats)", title=f"what perplexity sees (mean of {n} seeds)")
    axes[1].set(ylabel="keys retrieved (mean over depths)", ylim=(-0.05, 1.05), title="what a passkey probe sees")
    axes[2].axvline(L, color="k", ls="--", lw=0.8, label="training length")
    axes[2].set(xlabel="position t", ylabel="loss (nats)", title="loss by position on plain text")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as tables: mean ± 95% half-width over seeds (text loss, and the share of keys found)."""
    for name, rs in res["runs"].items():
        n = len(rs)
        print(f"\n{name} (trained at {rs[0]['trained_at']}, {n} seeds, {sum(r['seconds'] for r in rs):.0f} s); "
              f"effective context lengths {[r['effective_context_length'] for r in rs]}")
        for i, length in enumerate(rs[0]["lengths"]):
            loss = stats.t_interval([r["text_loss_on_passkey_rows"][i] for r in rs])
            k, trials = pooled(rs, i)
            found = stats.t_interval([sum(r["passkey_successes"][i]) / (r["passkey_trials"] * len(r["depths"]))
                                      for r in rs])
            print(f"{length:>6}  text loss {stats.format_interval(loss[0], loss[2], loss[3], 3)}"
                  f"  keys {stats.format_interval(found[0], found[2], found[3])} over seeds ({k}/{trials} in all)")
    for key, rec in res["claims"].items():
        print(f"{key:<12} {stats.format_record(rec, 3)}  {rec['effect']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small run (seconds) that only checks the pieces")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds (default: the mode's)")
    ap.add_argument("--out", default=RESULTS, help="folder for long_context.json and .png (full mode only)")
    ap.add_argument("--parts", default=None, help="folder that keeps each finished (model, seed), so a rerun resumes")
    ap.add_argument("--no-progress", action="store_true", help="hide progress bars")
    ap.add_argument("--reclaim", action="store_true",
                    help="train nothing: recompute the claims of the saved result from its per-seed runs")
    args = ap.parse_args(argv)
    if args.reclaim:
        res = common.load_result("long_context", args.out)
        res["claims"] = make_claims(res)
        res.update(flat_threshold=FLAT, local_threshold=LOCAL)           # the bars the claims now use
        res["claims_command"] = "python -m experiments.long_context --reclaim"
        report(res)
        common.save("long_context", res, None, args.out)     # the runs and their plot are unchanged
        return res
    res = run(args.quick, args.seeds, progress=not args.no_progress, parts=args.parts)
    report(res)
    if not args.quick:
        common.save("long_context", res, plot(res), args.out)
    return res


if __name__ == "__main__":
    common.command_line("long_context", main)
