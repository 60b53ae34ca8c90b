r"""Why position interpolation costs so much at the training length here: head width, or the missing fine-tune?

Chapter 8 measured PI (factor 4) on a model with two heads of 32 channels: zero-shot it costs far more
than the sources' "a little" at the training length L (the result file holds the number). The sources' models have
128-channel heads, and their PI is fine-tuned. This chase separates the two:

1. At a fixed model size (``d_model`` 64, 2 layers), train RoPE models at L = 64 with one and four
   heads, so ``d_head`` is 64 and 16 (the same steps, batches and seeds as chapter 8's run, whose two
   heads of 32 channels are the middle width: ``context_extension``'s claims C7a and C10c are the same
   two costs for ``d_head`` 32, on the same seeds, so this run does not train that width again).
2. Zero-shot: PI's cost at L, the loss at L with PI minus the loss at L without it, same weights.
3. Fine-tune two copies at 4L for the same short fine-tune as chapter 8 (150 steps, batch 8), one
   unscaled and one with PI, and measure PI's cost at L again (PI minus unscaled, both fine-tuned).

Three seeds; every effect is paired within a seed and summarised by a 95% t-interval.

    python -m experiments.pi_head_width [--quick] [--seed N] [--parts FOLDER]
"""
from mini_transformer.evaluation import stats
from mini_transformer.evaluation.longrope_search import mean_loss, with_rope_scaling
from . import common
from .common import Timer, environment, text_model, train_text
from .context_extension import S, held_out

WIDTHS = {16: 4, 64: 1}  # d_head -> n_heads at d_model 64 (32, two heads, is context_extension's model)
SEEDS = 3
COMMAND = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.pi_head_width"
PI = {"rope_type": "linear", "factor": float(S)}


def one_model(d_head, L, steps, ft_steps, seed, quick, progress):
    """Losses at L (and 4L) of one width and seed: unscaled and PI, zero-shot and after the fine-tune."""
    model = text_model("rope", L, seed=seed, n_heads=WIDTHS[d_head])
    train_text(model, L, steps, seed=seed, progress=progress)
    held = held_out(L, seed, quick)
    out = {}
    for name, scaling in (("none", None), ("pi", PI)):
        m = with_rope_scaling(model, scaling)
        out[f"{name}_at_L"] = mean_loss(m, held[L])
        out[f"{name}_at_4L"] = mean_loss(m, held[S * L])
        train_text(m, S * L, ft_steps, seed=seed + 3, lr=1e-3, batch_size=8, progress=progress)
        out[f"{name}_finetuned_at_L"] = mean_loss(m, held[L])
        out[f"{name}_finetuned_at_4L"] = mean_loss(m, held[S * L])
    out["pi_cost_at_L"] = out["pi_at_L"] - out["none_at_L"]
    out["pi_cost_at_L_finetuned"] = out["pi_finetuned_at_L"] - out["none_finetuned_at_L"]
    return out


def claims(per_seed, seeds):
    def cost(w, key):
        return [p[str(w)][key] for p in per_seed]
    rec = stats.claim_record
    out = {}
    for w in WIDTHS:
        out[f"zero_shot_d{w}"] = rec(f"PI's cost at L, zero-shot, d_head {w} (nats/byte); 'a little' is under 0.1",
                                     "below", 0.1, values=cost(w, "pi_cost_at_L"), seeds=seeds)
        out[f"finetuned_d{w}"] = rec(f"PI's cost at L after the fine-tune, d_head {w} (nats/byte); 'a little' is "
                                     "under 0.1", "below", 0.1, values=cost(w, "pi_cost_at_L_finetuned"), seeds=seeds)
        out[f"finetune_removes_d{w}"] = rec(
            f"what the fine-tune removes of PI's cost at L, d_head {w}: zero-shot cost minus fine-tuned cost (nats/byte)",
            "above", 0.0, values=[a - b for a, b in zip(cost(w, "pi_cost_at_L"), cost(w, "pi_cost_at_L_finetuned"))],
            seeds=seeds)
    out["width_16_minus_64"] = rec("wider heads make PI cheaper at L, zero-shot: cost at d_head 16 minus cost at "
                                   "d_head 64 (nats/byte)", "above", 0.0,
                                   values=[a - b for a, b in zip(cost(16, "pi_cost_at_L"), cost(64, "pi_cost_at_L"))],
                                   seeds=seeds)
    return out


def run(quick=False, seed=0, progress=True, parts=None):
    """Every width at every seed (resumed from ``parts``, a folder, where an earlier call kept a seed)."""
    L = 32 if quick else 64
    steps, ft_steps = (200, 10) if quick else (1500, 150)
    seeds = [seed] if quick else [seed + i for i in range(SEEDS)]
    size = {"L": L, "steps": steps, "finetune_steps": ft_steps, "quick": quick, "widths": WIDTHS}
    def every_width(s):
        return {str(w): one_model(w, L, steps, ft_steps, s, quick, progress) for w in WIDTHS}
    with Timer() as timer:
        made = [common.seed_part(parts, "pi_head_width", s, size, lambda s=s: every_width(s)) for s in seeds]
    per_seed = [values for values, _ in made]
    res = {"train_len": L, "target_len": S * L, "steps": steps, "finetune_steps": ft_steps, "seeds": seeds,
           "widths": {str(w): n for w, n in WIDTHS.items()}, "per_seed": per_seed,
           "mean": {str(w): {k: sum(p[str(w)][k] for p in per_seed) / len(per_seed) for k in per_seed[0][str(w)]}
                    for w in WIDTHS},
           "command": COMMAND + (" --quick" if quick else "") + (f" --seed {seed}" if seed else "")
           + (f" --parts {parts}" if parts else ""),
           # seconds: the seeds' own wall times, summed (a resumed call's own time is call_seconds)
           "environment": environment(sum(t for _, t in made), seeds=seeds, d_model=64, n_layers=2, batch_size=16,
                                      finetune_batch_size=8, call_seconds=round(timer.seconds, 1))}
    if not quick:
        res["claims"] = claims(per_seed, seeds)
    return res


def plot(res):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    widths = sorted(int(w) for w in res["per_seed"][0])
    for key, label in (("pi_cost_at_L", "zero-shot"), ("pi_cost_at_L_finetuned", "after the fine-tune at 4L")):
        means = [res["mean"][str(w)][key] for w in widths]
        line, = ax.plot(widths, means, marker="o", label=label)
        for w in widths:
            ax.plot([w] * len(res["per_seed"]), [p[str(w)][key] for p in res["per_seed"]], ".", color=line.get_color())
    ax.axhline(0, color="gray", lw=0.8)
    ax.set(xscale="log", xticks=widths, xlabel="d_head (d_model 64 fixed)", ylabel="PI's cost at L (nats/byte)",
           title="PI (factor 4) at the training length; dots are seeds")
    ax.set_xticklabels([str(w) for w in widths])
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def report(res):
    print(f"{'d_head':>6}{'none @L':>9}{'PI @L':>8}{'cost':>7}{'tuned none @L':>15}{'tuned PI @L':>13}{'cost':>7}")
    for w, r in res["mean"].items():
        print(f"{w:>6}{r['none_at_L']:>9.3f}{r['pi_at_L']:>8.3f}{r['pi_cost_at_L']:>7.3f}"
              f"{r['none_finetuned_at_L']:>15.3f}{r['pi_finetuned_at_L']:>13.3f}{r['pi_cost_at_L_finetuned']:>7.3f}")
    for key, rec in res.get("claims", {}).items():
        print(f"{key:<22} {stats.format_record(rec)}")
    print(f"seeds {res['seeds']}; {res['environment']['seconds']} s")


def main(argv=None):
    return common.main("pi_head_width", __doc__, run, report, plot, argv, parts=True)


if __name__ == "__main__":
    common.command_line("pi_head_width", main)
