r"""Long context, measured: does a model that runs at 8x its training length use that context?

The sources' claim (book §4, survey §9.2 and §11): perplexity on long text stays flat while
long-range retrieval fails, because long-text perplexity is dominated by local context. Tested
on one model and the same sequences:

1. Train ``TinyGPT`` at L on standard-library text in which every window hides a passkey
   (``data.text_passkey_task``: ``KEY_START d_1..d_n KEY_END`` somewhere, ``QUERY`` and the
   digits at the end), so the model learns both to predict text and to retrieve the key.
   Once with ALiBi (built to run past L) and once with RoPE (unscaled).
2. At lengths L, 2L, 4L and 8L: the loss on the text bytes of those sequences (what a
   perplexity benchmark sees) and the passkey accuracy at five depths (what a retrieval
   probe sees), from which ``effective_context_length``.
3. On plain held-out text: the loss at every position of a window of 8L (loss by position)
   and the loss at one position given the last w tokens only, w = 1 .. L (how much context
   next-byte prediction needs at all).

    python -m mini_transformer.evaluation.experiments.long_context [--quick]
"""
import functools

from ...engine import backend
from ...engine.autograd import no_grad
from ...model.data import IGNORE, text_passkey_task
from ..measures import effective_context_length, passkey_grid, token_losses
from ...model.train import TrainConfig, train
from . import common
from .attention_sinks import process_settings
from .common import Timer, corpus, environment, text_model

SCHEMES = ("alibi", "rope")
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
N_DIGITS = 3

SIZES = {
    True: dict(train_len=32, steps=150, multiples=(1, 2, 4), n_trials=4, contexts=(1, 2, 4, 8, 16, 32)),
    # the full mode fits the five minutes a run may take on the shared 2-core machine: L = 32, 1200 steps
    False: dict(train_len=32, steps=1200, multiples=(1, 2, 4, 8), n_trials=16, contexts=(1, 2, 4, 8, 16, 32)),
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


def loss_at_each_position(model, stream, T, n_rows, seed):
    """Mean loss at each position 0 .. T-1 over ``n_rows`` held-out windows of length T: ``(T,)`` list."""
    g = backend.hostnp.random.default_rng(seed)
    starts = g.integers(0, len(stream) - T - 1, size=n_rows)
    idx = starts[:, None] + backend.hostnp.arange(T + 1)
    s = stream[idx].astype("int64")
    with no_grad():
        ell = token_losses(model, backend.asarray(s[:, :-1]), backend.asarray(s[:, 1:]))   # (n_rows, T)
    return ell.mean(axis=0).tolist()


def run_scheme(positional, size, seed, progress):
    L = size["train_len"]
    lengths = [m * L for m in size["multiples"]]
    with Timer() as timer:
        text = corpus()
        model = text_model(positional, L, seed=seed)
        cfg = TrainConfig(steps=size["steps"], lr=3e-3, warmup=max(1, size["steps"] // 10), min_lr=3e-4,
                          seed=seed, progress=progress)
        result = train(model, passkey_batches(text.train, L), cfg)
        model.eval()
        task = functools.partial(text_passkey_task, text=text.val)
        grid = passkey_grid(model, lengths, DEPTHS, n_trials=size["n_trials"], seed=seed + 1, n_digits=N_DIGITS,
                            task=task)
        text_loss = {L_: text_loss_on_passkey_rows(model, text.val, L_, size["n_trials"], seed + 1) for L_ in lengths}
        per_position = loss_at_each_position(model, text.val, lengths[-1], 16, seed + 2)
        context = context_curve(model, text.val, size["contexts"], 256, seed + 3)
    return {"final_train_loss": result.losses[-1], "lengths": lengths, "depths": list(DEPTHS),
            "passkey_accuracy": grid.accuracy.tolist(), "passkey_digit_accuracy": grid.digit_accuracy.tolist(),
            "effective_context_length": effective_context_length(grid, 0.5),
            "text_loss_on_passkey_rows": [text_loss[L_] for L_ in lengths],
            "loss_by_position": per_position, "loss_given_context": {str(w): v for w, v in context.items()},
            "seconds": round(timer.seconds, 1)}



def run(quick=False, seed=0, progress=True):
    size = SIZES[quick]
    with Timer() as timer:
        models = {name: run_scheme(name, size, seed, progress) for name in SCHEMES}
    return {"train_len": size["train_len"], "steps": size["steps"], "seed": seed, "n_digits": N_DIGITS,
            "n_trials": size["n_trials"], "threshold": 0.5, "models": models,
            "environment": environment(timer.seconds, d_model=64, n_layers=2, n_heads=4, batch_size=16,
                                       process=process_settings())}


def plot(res):
    import matplotlib.pyplot as plt
    L = res["train_len"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for name, r in res["models"].items():
        mean_acc = [sum(row) / len(row) for row in r["passkey_accuracy"]]
        line, = axes[0].plot(r["lengths"], r["text_loss_on_passkey_rows"], "o-", label=f"{name}: text loss")
        axes[1].plot(r["lengths"], mean_acc, "s-", color=line.get_color(), label=f"{name}: passkey accuracy")
        pos = list(range(len(r["loss_by_position"])))
        axes[2].plot(pos, r["loss_by_position"], lw=0.8, color=line.get_color(), label=name)
    for ax in axes[:2]:
        ax.axvline(L, color="k", ls="--", lw=0.8, label="training length")
        ax.set_xscale("log", base=2)
        ax.set_xticks(res["models"]["alibi"]["lengths"], [str(v) for v in res["models"]["alibi"]["lengths"]])
        ax.set_xlabel("context length")
        ax.legend(fontsize=8)
    axes[0].set(ylabel="loss on the text bytes (nats)", title="what perplexity sees")
    axes[1].set(ylabel="keys retrieved (mean over depths)", ylim=(-0.05, 1.05), title="what a passkey probe sees")
    axes[2].axvline(L, color="k", ls="--", lw=0.8, label="training length")
    axes[2].set(xlabel="position t", ylabel="loss (nats)", title="loss by position on plain text")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as tables."""
    for name, r in res["models"].items():
        print(f"\n{name} (trained at L = {res['train_len']}, {r['seconds']} s, final training loss "
              f"{r['final_train_loss']:.3f}); effective context length {r['effective_context_length']}")
        print(f"{'length':>8}{'text loss':>11}  passkey accuracy at depths {r['depths']}")
        for L, loss, acc in zip(r["lengths"], r["text_loss_on_passkey_rows"], r["passkey_accuracy"]):
            print(f"{L:>8}{loss:>11.3f}  " + " ".join(f"{a:.2f}" for a in acc))
        print("loss given the last w tokens:", {w: round(v, 3) for w, v in r["loss_given_context"].items()})


def main(argv=None):
    return common.main("long_context", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("long_context", main)
