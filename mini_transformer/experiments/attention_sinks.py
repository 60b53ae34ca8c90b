r"""Attention sinks (the chapter's exercise 6): do heads park attention on the first tokens, and does
evicting those tokens from a sliding-window cache hurt?

1. Train a RoPE ``TinyGPT`` on standard-library text at length L.
2. Measure the attention mass on position 0, per layer and head, against what
   uniform causal attention would give (H_L / L).
3. Stream held-out text several times longer than L through each cache policy
   and compare the mean next-token loss: full attention, a window of W recent
   tokens, the window plus 4 sinks, and recomputing the window from scratch at
   every step; sinks with positions by slot and by place in the text.

    python -m mini_transformer.experiments.attention_sinks [--quick]
"""
import math

from .. import backend
from ..evaluate import attention_mass
from ..streaming import stream_loss
from . import common
from .common import Timer, corpus, environment, text_model, train_text

POLICIES = {
    "full": dict(),
    "window": dict(window="W"),
    "window + 4 sinks (text positions)": dict(window="W", n_sink=4),
    "window + 4 sinks (slot positions)": dict(window="W", n_sink=4, positions="slot"),
    "window (slot positions)": dict(window="W", positions="slot"),
    "recompute window": dict(window="W", recompute=True),
}


def run(quick=False, seed=0, progress=True):
    L = 32 if quick else 64
    steps = 300 if quick else 2000
    stream_len = 4 * L if quick else 8 * L
    W = L // 2
    with Timer() as timer:
        model = text_model("rope", L, seed=seed)
        result = train_text(model, L, steps, seed=seed, progress=progress)
        val = corpus().val
        x = backend.asarray(val[:8 * L].astype("int64").reshape(8, L))
        mass = attention_mass(model, x, first_k=4)
        tokens = backend.asarray(val[5_000:5_000 + stream_len].astype("int64"))
        losses = {}
        for name, policy in POLICIES.items():
            kw = {k: (W if v == "W" else v) for k, v in policy.items()}
            losses[name] = stream_loss(model, tokens, **kw).mean_loss
    uniform = sum(1.0 / (i + 1) for i in range(L)) / L
    return {
        "train_len": L, "window": W, "stream_len": stream_len, "steps": steps, "seed": seed,
        "final_train_loss": result.losses[-1],
        "mass_on_position_0": mass.position0.tolist(), "mass_on_first_4": mass.first_k.tolist(),
        "uniform_mass_on_position_0": uniform,
        "stream_loss": losses,
        "environment": environment(timer.seconds, d_model=64, n_layers=2, n_heads=4, batch_size=16),
    }


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    mass = res["mass_on_position_0"]
    for layer, heads in enumerate(mass):
        a.bar([layer * (len(heads) + 1) + h for h in range(len(heads))], heads, label=f"layer {layer}")
    a.axhline(res["uniform_mass_on_position_0"], color="k", ls="--", label="uniform causal attention")
    a.set(title="attention mass on position 0, per head", ylabel="mean mass", xticks=[])
    a.legend(fontsize=8)
    names = list(res["stream_loss"])
    b.barh(names, [res["stream_loss"][n] for n in names])
    b.set(xlabel=f"mean loss over a {res['stream_len']}-token stream (nats/byte)",
          title=f"cache policies, trained at L={res['train_len']}, window W={res['window']}")
    lo = min(res["stream_loss"].values())
    b.set_xlim(lo - 0.3, max(v for v in res["stream_loss"].values() if math.isfinite(v)) + 0.1)
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as a table."""
    for name, loss in res["stream_loss"].items():
        print(f"{name:<36} {loss:.3f}")
    print("mass on position 0 by layer and head:", [[round(m, 3) for m in layer] for layer in res["mass_on_position_0"]],
          f"(uniform: {res['uniform_mass_on_position_0']:.3f})")


def main(argv=None):
    return common.main("attention_sinks", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("attention_sinks", main)
