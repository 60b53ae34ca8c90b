r"""The full-size bake-off over seeds: ``train_short_test_long`` as it is, at seeds 0, 1 and 2.

``train_short_test_long`` trains the eight schemes once, at seed 0 (L = 64, 1500
steps, evaluated up to 8L), and chapters 1, 3, 4, 7 and 12 show its table. This
runs the same function at more seeds (each seed its own training batches and
evaluation windows, which the eight schemes of that seed share, and its own
initial weights: the token rows are shared too, but a scheme with position
parameters draws them before the blocks, so its other weights differ) and
reports, per
scheme, what a seed moves:

* **loss past L** at 2L, 4L and 8L (``loss_beyond``: the mean over positions
  t >= L), and its **rise**, loss past L at 8L minus the loss at L;
* the **context-use gap** at 8L: loss with the whole prefix in view minus loss
  with the last L tokens only (``context_use``); near 0, dropping the tokens
  further back than L costs the model nothing (whether any model gains from them
  on this text is chapter 7's question, section 8);
* how many seeds **refused** a length (the learned table has no row past L).

Each is a mean over seeds with a Student-t interval (``stats.t_interval``); a
scheme that refused a length at some seed has no value there. No claim is
judged here: ``short_long_seeds`` carries the chapters' verdicts at a smaller
size over five seeds. Seed 0 is the committed ``train_short_test_long`` run
itself, so its numbers must equal that record's.

It costs three bake-offs, one seed after another (each finished seed is kept
with ``--parts``, so a stopped run resumes at the seed it was on).

    python -m experiments.bake_off_seeds [--quick] [--seeds 0 1 2] [--parts DIR]
"""
import argparse
import math
import sys

from mini_transformer.evaluation import stats
from . import common, train_short_test_long as bake_off
from .common import environment

SEEDS = (0, 1, 2)


def per_seed(res):
    """What one seed's bake-off (``train_short_test_long.run``) says of each scheme, in the units summarised here."""
    out = {}
    for name, r in res["results"].items():
        use = r["context_use"]
        out[name] = {
            "loss": r["loss"], "loss_beyond": r["loss_beyond"],
            "rise": r["loss_beyond"][-1] - r["loss"][0],
            "context_use_gap": use["full_mean"] - use["window_mean"],
            "refused": [L for L, why in zip(res["lengths"], r["reasons"]) if why is not None],
        }
    return out


def interval(values):
    """``{"mean", "lo", "hi", "n"}`` over the finite ``values``; None where fewer than two are finite."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if len(finite) < 2:
        return None
    mean, _, lo, hi = stats.t_interval(finite)
    return {"mean": mean, "lo": lo, "hi": hi, "n": len(finite)}


def over_seeds(seeds_runs, lengths):
    """Per scheme: the loss past L at each length past L, the rise and the gap, each an ``interval`` over seeds."""
    schemes = list(next(iter(seeds_runs.values())))
    out = {}
    for name in schemes:
        runs = [seeds_runs[s][name] for s in seeds_runs]
        out[name] = {
            "loss_beyond": {str(L): interval([r["loss_beyond"][i] for r in runs])
                            for i, L in enumerate(lengths) if i > 0},
            "rise": interval([r["rise"] for r in runs]),
            "context_use_gap": interval([r["context_use_gap"] for r in runs]),
            "seeds_refusing": sum(1 for r in runs if r["refused"]),
        }
    return out


def run(quick=False, seeds=SEEDS, progress=True, parts=None):
    """The bake-off at every seed (each kept in ``parts`` as it finishes), then the intervals; a dict ready to save."""
    size = bake_off.SIZES[bool(quick)]
    seeds_runs, seconds, first = {}, 0.0, None
    for seed in seeds:
        res, took = common.seed_part(parts, "bake_off_seeds", seed, size,
                                     lambda: bake_off.run(quick, seed, progress=progress))
        first = first or res
        seeds_runs[str(seed)] = per_seed(res)
        seconds += took
    return {
        "seeds": list(seeds), "train_len": first["train_len"], "lengths": first["lengths"],
        "multiples": first["multiples"], "steps": first["steps"], "per_seed": seeds_runs,
        "over_seeds": over_seeds(seeds_runs, first["lengths"]),
        "environment": dict(first["environment"], **environment(seconds, seeds=list(seeds))),
    }


def plot(res):
    """Loss past L against the evaluation length, per scheme: the mean over seeds and its interval, each seed dotted."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    lengths, undrawn = res["lengths"][1:], []
    for i, (name, o) in enumerate(res["over_seeds"].items()):
        shown = [(n, o["loss_beyond"][str(n)]) for n in lengths if o["loss_beyond"][str(n)] is not None]
        if not shown:
            undrawn.append(name)                         # no interval at any length past L: nothing to draw
            continue
        xs, cells = zip(*shown)
        mean = [c["mean"] for c in cells]
        err = [[c["mean"] - c["lo"] for c in cells], [c["hi"] - c["mean"] for c in cells]]
        ax.errorbar(xs, mean, yerr=err, marker="os^vDP*X"[i % 8], capsize=3, color=f"C{i}", label=name)
        for run in res["per_seed"].values():
            ax.plot(lengths, run[name]["loss_beyond"][1:], color=f"C{i}", lw=0.6, ls=":", alpha=0.7)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.set(xlabel="evaluation length" + "".join(
        f"\n{name}: not drawn (refused past L at {res['over_seeds'][name]['seeds_refusing']} of {len(res['seeds'])} "
        f"seeds; an interval needs two seeds with a value)" for name in undrawn),
           ylabel="loss past L (nats/byte)",
           title=f"Trained at L = {res['train_len']}, seeds {res['seeds']}: mean, 95% t-interval, each seed dotted")
    if ax.get_legend_handles_labels()[1]:                # one seed draws nothing: no empty legend
        ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def _cell(i):
    return "   -   " if i is None else f"{i['mean']:.3f} [{i['lo']:.3f}, {i['hi']:.3f}]"


def report(res):
    """Print the intervals, one row a scheme."""
    L, lengths = res["train_len"], res["lengths"]
    print(f"the bake-off at seeds {res['seeds']} (L = {L}, {res['steps']} steps): mean [95% t-interval] over seeds")
    head = "".join(f"{f'past L at {n}':>26}" for n in lengths[1:])
    print(f"{'scheme':<15}{head}{'rise (8L - L)':>26}{'context-use gap':>26}  refused")
    for name, o in res["over_seeds"].items():
        cells = "".join(f"{_cell(o['loss_beyond'][str(n)]):>26}" for n in lengths[1:])
        print(f"{name:<15}{cells}{_cell(o['rise']):>26}{_cell(o['context_use_gap']):>26}  "
              f"{o['seeds_refusing']} of {len(res['seeds'])} seeds")
    print(f"{res['environment']['seconds']} s of training and evaluation, summed over seeds")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the bake-off's quick size (four schemes, L = 32)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help="seeds (default 0 1 2)")
    ap.add_argument("--out", default=common.RESULTS, help="folder for bake_off_seeds.json (full mode only)")
    ap.add_argument("--no-progress", action="store_true", help="hide progress bars")
    ap.add_argument("--parts", default=None,
                    help="folder that keeps each finished seed (bake_off_seeds_seedN.json), so a stopped run resumes")
    args = ap.parse_args(argv)
    if len(set(args.seeds)) != len(args.seeds):
        ap.error(f"--seeds is {args.seeds}; each seed once (one seed alone fills --parts, with no interval).")
    res = run(args.quick, args.seeds, progress=not args.no_progress, parts=args.parts)
    res["command"] = " ".join(["python -m experiments.bake_off_seeds", *(sys.argv[1:] if argv is None else argv)])
    report(res)
    if not args.quick:
        common.save("bake_off_seeds", res, plot(res), args.out)
    return res


if __name__ == "__main__":
    common.command_line("bake_off_seeds", main)
