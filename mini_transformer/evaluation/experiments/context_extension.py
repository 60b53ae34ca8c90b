r"""Context extension: a RoPE model trained at L, run at 4L with each method of the scaling family.

The sources' claims: unscaled RoPE falls apart past its training length;
position interpolation (PI) is stable at the new length but costs a little at
the original one; NTK-aware scaling sits between; YaRN and searched per-pair
factors do best; and a short fine-tune at the new length repairs most of the
damage.

1. Train a RoPE ``TinyGPT`` on standard-library text at length L.
2. For each method (none, linear = PI, ntk, dynamic, yarn, and factors found by
   ``longrope_search``), measure held-out loss at 4L zero-shot, and at L (the
   short-context retention), with the same weights.
3. Fine-tune a copy briefly at 4L with each method, and measure both again.
4. Full mode only: a RoPE model trained on the passkey task at L, its passkey
   grid (length x depth) before and after PI plus a short fine-tune at 4L.

    python -m mini_transformer.evaluation.experiments.context_extension [--quick]
"""
import math

from ...engine import backend
from ...model import data
from ...engine.autograd import no_grad
from ..measures import effective_context_length, passkey_grid, token_losses
from ..longrope_search import longrope_scaling, mean_loss, search, with_rope_scaling
from ...model import GPTConfig, TinyGPT
from ...model.train import TrainConfig, train
from . import common
from .common import Timer, corpus, environment, text_model, train_text

S = 4  # extend to 4L


def methods(L, factors):
    s = float(S)
    return {
        "none": None,
        "linear (PI)": {"rope_type": "linear", "factor": s},
        "ntk": {"rope_type": "ntk", "factor": s},
        "dynamic": {"rope_type": "dynamic", "factor": s, "original_max_position_embeddings": L},
        "yarn": {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L},
        "searched": longrope_scaling(factors, L, s),
    }


def losses(model, held, L):
    """Held-out loss at L, and at 4L split into all positions and the positions past L only."""
    with no_grad():
        long = backend.hostnp.concatenate([token_losses(model, x, y) for x, y in held[S * L]])  # (rows, 4L)
    return {"loss_at_L": mean_loss(model, held[L]), "loss_at_4L": float(long.mean()),
            "loss_past_L": float(long[:, L:].mean())}


def passkey_part(L, steps, ft_steps, seed, progress):
    """Train on passkeys at L; grid before, then after PI plus a fine-tune at 4L."""
    cfg = GPTConfig(vocab_size=32, d_model=64, n_layers=2, n_heads=4, max_len=L, positional="rope", seed=seed,
                    kernels="fast")
    model = TinyGPT(cfg)

    def batches(T):
        def get(rng):
            b = data.passkey_task(16, T, float(rng.host.random()), vocab_size=32,
                                  seed=int(rng.host.integers(2 ** 31)), n_digits=3)
            return b.x, b.y
        return get
    train(model, batches(L), TrainConfig(steps=steps, lr=3e-3, warmup=50, seed=seed, progress=progress))
    lengths = [L, 2 * L, 4 * L]
    before = passkey_grid(model, lengths, n_trials=16, n_digits=3, vocab_size=32, seed=seed)
    pi = with_rope_scaling(model, {"rope_type": "linear", "factor": float(S)})
    train(pi, batches(S * L), TrainConfig(steps=ft_steps, lr=1e-3, warmup=10, seed=seed + 1, progress=progress))
    after = passkey_grid(pi, lengths, n_trials=16, n_digits=3, vocab_size=32, seed=seed)
    return {"lengths": lengths, "depths": list(before.depths),
            "before": before.accuracy.tolist(), "after_pi_finetune": after.accuracy.tolist(),
            "effective_length_before": effective_context_length(before, 0.5),
            "effective_length_after": effective_context_length(after, 0.5)}


def run(quick=False, seed=0, progress=True):
    L = 32 if quick else 64
    steps, ft_steps = (300, 20) if quick else (1500, 150)
    with Timer() as timer:
        # two heads of 32 channels: with 16-channel heads too few pairs are slower than L to show the effect
        model = text_model("rope", L, seed=seed, n_heads=2)
        train_text(model, L, steps, seed=seed, progress=progress)
        c, g = corpus(), backend.rng(seed + 7)
        search_batches = [c.get_batch("train", 8, S * L, g) for _ in range(2)]
        held = {n: [c.get_batch("val", 8, n, backend.rng(seed + 11)) for _ in range(3 if quick else 6)]
                for n in (L, S * L)}
        found = search(model, search_batches, S * L, generations=4 if quick else 10,
                       population=8 if quick else 14, seed=seed)
        rows = {}
        for name, scaling in methods(L, found.factors).items():
            m = with_rope_scaling(model, scaling)
            row = losses(m, held, L)
            train_text(m, S * L, ft_steps, seed=seed + 3, lr=1e-3, batch_size=8, progress=progress)
            row.update({"finetuned_" + k: v for k, v in losses(m, held, L).items()})
            rows[name] = row
        passkey = None if quick else passkey_part(L, 2000, 200, seed, progress)
    return {"train_len": L, "target_len": S * L, "steps": steps, "finetune_steps": ft_steps, "seed": seed,
            "methods": rows, "searched_factors": found.factors, "search_history": found.history,
            "critical_pair": found.critical_pair, "passkey": passkey,
            "environment": environment(timer.seconds, d_model=64, n_layers=2, n_heads=2, batch_size=16)}


def plot(res):
    import matplotlib.pyplot as plt
    names = list(res["methods"])
    fig, axes = plt.subplots(1, 3 if res["passkey"] else 2, figsize=(15 if res["passkey"] else 10, 3.8))
    width = 0.2
    for ax, key, title in ((axes[0], "loss_at_4L", f"held-out loss at 4L = {res['target_len']}"),
                           (axes[1], "loss_at_L", f"retention: held-out loss at L = {res['train_len']}")):
        zero = [res["methods"][n][key] for n in names]
        tuned = [res["methods"][n]["finetuned_" + key] for n in names]
        xs = range(len(names))
        ax.bar([x - width / 2 for x in xs], zero, width, label="zero-shot")
        ax.bar([x + width / 2 for x in xs], tuned, width, label="after a short fine-tune at 4L")
        ax.set_xticks(list(xs), names, rotation=30, ha="right")
        lo = min(zero + tuned)
        ax.set(title=title, ylabel="nats/byte", ylim=(lo - 0.2, max(v for v in zero + tuned if math.isfinite(v)) + 0.1))
        ax.legend(fontsize=8)
    if res["passkey"]:
        p = res["passkey"]
        np = backend.hostnp  # plotting happens on the host
        grid = np.concatenate([np.array(p["before"]), np.array(p["after_pi_finetune"])], axis=1)
        im = axes[2].imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        axes[2].set_yticks(range(len(p["lengths"])), p["lengths"])
        axes[2].set_xticks(range(grid.shape[1]), [f"{d:g}" for d in p["depths"]] * 2)
        axes[2].set(title="passkey accuracy: before | after PI + fine-tune", xlabel="depth", ylabel="length")
        fig.colorbar(im, ax=axes[2])
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as a table."""
    print(f"{'method':<14}{'@L':>8}{'@4L':>8}{'past L':>8}{'tuned @L':>10}{'tuned @4L':>11}{'tuned past L':>14}")
    for name, r in res["methods"].items():
        print(f"{name:<14}{r['loss_at_L']:>8.3f}{r['loss_at_4L']:>8.3f}{r['loss_past_L']:>8.3f}"
              f"{r['finetuned_loss_at_L']:>10.3f}{r['finetuned_loss_at_4L']:>11.3f}{r['finetuned_loss_past_L']:>14.3f}")


def main(argv=None):
    return common.main("context_extension", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("context_extension", main)
