r"""RoPE against no position on the copy task (chapter 6, claim C4), over five seeds.

The task: random symbols, a separator, the same symbols again; writing the next symbol needs the key
exactly $n$ positions back. The separator sits at position $n$ in every row, so that offset is fixed and
absolute positions could solve the task as well: this compares RoPE with no position, not relative
position with absolute. Chapter 6 trains one RoPE model and one without position on it (``d_model`` 32,
2 layers, 4 heads, 150 steps); this experiment repeats that for five seeds (weights and batches) and
scores both on the same 1024 held-out rows, per position of the copied half.

The claim (book §6): with RoPE a decoder learns the task better than the same decoder without position,
which has only the causal mask's weak signal. Its effect is the held-out copy accuracy of RoPE minus that
of no position, paired within a seed. It is not a claim that the model without position cannot learn the
task: it finds the first copied symbol in most rows, which needs order, and the causal mask is the only
order it has. So the effect is also measured on positions 2 to n alone.

    python -m experiments.rope_copy [--quick] [--seed N]
"""
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import to_numpy
from mini_transformer.model import GPTConfig, TinyGPT, tasks
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.evaluation import stats
from . import common
from .common import Timer, environment

N_COPY, STEPS, SEEDS, TEST_ROWS = 8, 150, 5, 1024
COMMAND = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.rope_copy"


def config(positional, seed):
    return GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=4, max_len=2 * N_COPY, positional=positional,
                     seed=seed)


def batches(rng):
    b = tasks.copy_task(32, N_COPY, vocab_size=16, seed=int(rng.host.integers(2 ** 31)))
    return b.x, b.y


def accuracy_by_position(model, rows):
    """Held-out accuracy at each position of the copied half, on ``rows`` rows of a fixed test set."""
    test = tasks.copy_task(rows, N_COPY, vocab_size=16, seed=10_000)
    with no_grad():
        pred = to_numpy(model(test.x).data).argmax(-1)
    return [float(v) for v in (pred[:, N_COPY:] == to_numpy(test.y)[:, N_COPY:]).mean(axis=0)]  # (n,)


def run(quick=False, seed=0, progress=True):
    steps, rows = (60, 128) if quick else (STEPS, TEST_ROWS)
    seeds = [seed] if quick else [seed + i for i in range(SEEDS)]
    per_seed = []
    with Timer() as timer:
        for s in seeds:
            row = {}
            for positional in ("rope", "none"):
                model = TinyGPT(config(positional, s))
                train(model, batches, TrainConfig(steps=steps, lr=3e-3, warmup=steps // 10, seed=s, progress=progress))
                row[positional] = accuracy_by_position(model, rows)
            per_seed.append(row)
    res = {"steps": steps, "n_copy": N_COPY, "test_rows": rows, "seeds": seeds, "per_seed": per_seed,
           "command": COMMAND + (" --quick" if quick else "") + (f" --seed {seed}" if seed else ""),
           "environment": environment(timer.seconds, seeds=seeds, vocab_size=16, d_model=32, n_layers=2, n_heads=4,
                                      batch_size=32)}
    if not quick:
        def mean(v):
            return sum(v) / len(v)
        rec = stats.claim_record
        res["claims"] = {
            "C4": rec("held-out copy accuracy, RoPE minus no position, all n positions of the copied half", "above",
                      0.0, values=[mean(p["rope"]) - mean(p["none"]) for p in per_seed], seeds=seeds),
            "C4_after_first": rec("the same on positions 2 to n (the first is found without position)", "above",
                                  0.0, values=[mean(p["rope"][1:]) - mean(p["none"][1:]) for p in per_seed],
                                  seeds=seeds),
            "rope_accuracy": rec("held-out copy accuracy of RoPE, all positions (above 0.95)", "above", 0.95,
                                 values=[mean(p["rope"]) for p in per_seed], seeds=seeds),
        }
    return res


def plot(res):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3))
    xs = list(range(1, res["n_copy"] + 1))
    for name in ("rope", "none"):
        for i, p in enumerate(res["per_seed"]):
            ax.plot(xs, p[name], marker="o", ms=3, color="C0" if name == "rope" else "C1",
                    alpha=0.7, label=name if i == 0 else None)
    chance = 1 / (16 - tasks.FIRST_SYMBOL)  # the symbols are ids FIRST_SYMBOL .. 15, eleven of them
    ax.axhline(chance, color="gray", ls=":", label=f"chance, 1/{16 - tasks.FIRST_SYMBOL}")
    ax.set(xlabel="position in the copied half", ylabel="held-out accuracy", ylim=(0, 1.05),
           title=f"copy task, {len(res['seeds'])} seeds: RoPE against no position")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def report(res):
    for s, p in zip(res["seeds"], res["per_seed"]):
        for name in ("rope", "none"):
            print(f"seed {s} {name:>5}: " + " ".join(f"{v:.2f}" for v in p[name]))
    for key, rec in res.get("claims", {}).items():
        print(f"{key:<15} {stats.format_record(rec)}")
    print(f"{res['environment']['seconds']} s")


def main(argv=None):
    return common.main("rope_copy", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("rope_copy", main)
