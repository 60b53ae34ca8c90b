r"""Train short, test long: which positional schemes still work past the length they were trained on?

One ``TinyGPT`` per scheme, all with the same size, steps, seed and training
batches, is trained on standard-library text at length L and then evaluated on
held-out text at 1x, 2x, 4x and 8x L (``evaluate.extrapolation_curve``). Two
numbers per length: ``loss``, the mean over every position of the window, and
``loss_beyond``, the mean over positions t >= L only, the ones no scheme saw in
training. What to expect:

* **learned** cannot run past L at all: its table has L rows and position L
  does not exist. That refusal is a result, recorded as NaN with the model's
  message, not a crash.
* **rope** (unscaled) runs at any length, but past L its rotation angles
  m\theta_i leave the range it was trained on, and the loss climbs.
* **alibi** adds a fixed penalty -m_h (i - j), defined at every distance, and
  was designed for exactly this: its loss should rise far less, or not at all.
* **t5** (causal, the default 32 buckets up to ``max_distance`` = 128) has one
  bucket per distance below 16, then logarithmically wider ones. Training at
  L = 64 reaches buckets 0..26 (bucket 26 spans distances 59..66); distances
  from 67 on fall in buckets 27..31, which keep their initial values, and
  every distance from 113 on shares the last of them.
* **shaw** clips distances at ``shaw_k`` = 16 (< L), so every distance it meets
  at 8L is one it was trained on.
* **sinusoidal** can compute any position, but positions past L are vectors
  the model never saw; **none** has no position to go wrong, only the causal mask.
* **transformer_xl** is evaluated **without memory**: one plain forward pass over
  the whole window, like every other scheme, so it meets distances up to
  8L - 1 in its sinusoidal R_{i-j}. It was trained without memory too
  (``train_text`` feeds independent windows), so segment recurrence would add
  a second change (a cache) on top of the longer window; we leave it out.

The quick run trains only ``none``, ``learned``, ``rope`` and ``alibi``, at
L = 32 for 300 steps: enough to check the directions (learned refuses, RoPE
climbs, ALiBi does not), not to rank the schemes.

    python -m mini_transformer.experiments.train_short_test_long [--quick]
"""
import math

from tqdm.auto import tqdm

from ..evaluate import extrapolation_curve
from . import common
from .common import Timer, corpus, environment, text_model, train_text

SCHEMES = ("none", "sinusoidal", "learned", "shaw", "transformer_xl", "t5", "rope", "alibi")
MULTIPLES = (1, 2, 4, 8)

#: the schemes the quick run's directions are about: the baseline, the refusal, the failure and the fix
QUICK_SCHEMES = ("none", "learned", "rope", "alibi")

#: quick: a direction check in well under a minute; full: the table and plot in results/
SIZES = {
    True: dict(train_len=32, steps=300, eval_batches=8, eval_batch_size=8),
    False: dict(train_len=64, steps=1500, eval_batches=16, eval_batch_size=8),
}


def run(quick=False, seed=0, progress=True, schemes=None):
    """Train and evaluate each scheme; ``schemes`` defaults to all eight (four in quick mode)."""
    size = SIZES[bool(quick)]
    L, steps = size["train_len"], size["steps"]
    schemes = schemes or (QUICK_SCHEMES if quick else SCHEMES)
    with Timer() as timer:
        table = {}
        for name in tqdm(schemes, desc="schemes", disable=not progress):
            # the same seed for every scheme: same initial token embeddings and the same training batches
            model = text_model(name, L, seed=seed)
            result = train_text(model, L, steps, seed=seed, progress=progress)
            curve = extrapolation_curve(model, corpus(), L, MULTIPLES, n_batches=size["eval_batches"],
                                        batch_size=size["eval_batch_size"], seed=seed)
            table[name] = {
                "final_train_loss": result.losses[-1],
                "loss": curve.loss.tolist(),
                "loss_beyond": curve.loss_beyond.tolist(),
                "reasons": curve.reasons,
            }
    return {
        "train_len": L, "lengths": curve.lengths.tolist(), "multiples": list(MULTIPLES), "steps": steps,
        "seed": seed, "results": table,
        "environment": environment(timer.seconds, seeds=[seed], d_model=64, n_layers=2, n_heads=4,
                                   batch_size=16, train_len=L, steps=steps, eval_windows=size["eval_batches"] *
                                   size["eval_batch_size"]),
    }


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(12.5, 4.2), sharey=True)
    lengths = res["lengths"]
    for i, (name, r) in enumerate(res["results"].items()):
        style = dict(marker="os^vDP*X"[i % 8], ls="-" if name in ("rope", "alibi", "learned", "t5") else "--",
                     color=f"C{i}", label=name)
        a.plot(lengths, r["loss"], **style)
        b.plot(lengths[1:], r["loss_beyond"][1:], **style)   # at 1x no position lies past L
    # a refused length has no point to draw, so the refusal is written under the axis instead
    refusals = [f"\n{name} refuses {', '.join(str(L) for L, why in zip(lengths, r['reasons']) if why)}: "
                f"no table row past max_len = {res['train_len']}"
                for name, r in res["results"].items() if any(r["reasons"])]
    for ax, ticks, title in ((a, lengths, "mean loss over the whole window"),
                             (b, lengths[1:], "mean loss over positions t >= L only")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(L) for L in ticks])
        ax.set(xlabel="evaluation length", title=title)
    a.axvline(res["train_len"], color="k", ls=":", lw=0.8)
    a.set_xlabel("evaluation length" + "".join(refusals))
    a.set_ylabel("loss (nats/byte)")
    b.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Trained at L = {res['train_len']} for {res['steps']} steps (seed {res['seed']}), "
                 f"evaluated at 1x..8x L")
    fig.tight_layout()
    return fig


def table_text(res):
    """The results as a plain-text table: loss (and loss past L) at each length, NaN for a refused length."""
    L = res["train_len"]
    head = "".join(f"{f'{m}x ({n})':>16}" for m, n in zip(res["multiples"], res["lengths"]))
    lines = [f"{'scheme':<15}{'train':>7}{head}", f"{'':<15}{'':>7}" + "".join(
        f"{'all / t>=' + str(L):>16}" for _ in res["lengths"])]
    for name, r in res["results"].items():
        cells = "".join(f"{_fmt(a)} / {_fmt(b):<6}".rjust(16) for a, b in zip(r["loss"], r["loss_beyond"]))
        lines.append(f"{name:<15}{r['final_train_loss']:>7.3f}{cells}")
    return "\n".join(lines)


def _fmt(v):
    return "  -  " if v is None or not math.isfinite(v) else f"{v:.3f}"


def report(res):
    """Print the results as a table."""
    print(table_text(res))
    for name, r in res["results"].items():
        for L, reason in zip(res["lengths"], r["reasons"]):
            if reason is not None:
                print(f"{name} at {L}: {reason}")
                break
    env = res["environment"]
    print(f"seeds {env['seeds']}, d_model {env['d_model']}, {env['n_layers']} layers, {env['n_heads']} heads, "
          f"batch {env['batch_size']}, L {env['train_len']}, {env['steps']} steps, {env['eval_windows']} eval windows "
          f"per length; {env['seconds']} s on {env['cores']} cores ({env['backend']})")


def main(argv=None):
    return common.main("train_short_test_long", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("train_short_test_long", main)
