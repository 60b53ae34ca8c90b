r"""Relative bias generalisation (the chapter's exercise 4): train at length 8, evaluate at 16.

Two ``TinyGPT`` models, identical but for the positional scheme: T5's bucketed
relative bias and a learned absolute table. Both train on sequences of length
8 and are then evaluated at lengths 8 and 16.

**The task** is ``data.lookback_task`` with a fixed k = 3: the first three
symbols are random and every later token repeats the one three places back,
s_j = s_{j-3}. The answer at position t is the token at t - 2, a fixed
*offset*. The right attention pattern is "look 2 back", the same at every
position, so a rule stated in offsets transfers to longer sequences unchanged.

**T5** scores query i against key j with a learned scalar b_{h, bucket(j - i)}.
Trained at length 8 it has seen the distances 0..7, and the distance that
matters, 2, is among them; at length 16 every query still finds its key 2
back through the same trained bucket. (With the default 32 buckets in the
causal form, distances 8..15 have exact buckets of their own that training
never reached; they keep their small initial values, so they neither help nor
win the softmax against the trained bucket.)

**Learned absolute** has ``max_len = 16``, so its table has 16 rows and it
accepts length 16 without an error. But training at length 8 only ever reads
rows 0..7: rows 8..15 get no gradient and keep their random initial values
(std 0.02, shrunk about 1% by weight decay). At positions 8..15 the model sees
vectors it was never trained on, and whatever rule it learned in terms of
absolute positions ("query at 5 attends to key at 3") has no entry there.
(With ``max_len = 8`` it would refuse length 16 outright, as
``train_short_test_long`` shows.)

Reported per model and seed: accuracy (argmax equals the target, over every
scored position) and mean loss at length 8 and at 16, and accuracy on the
positions 8..15 alone. The full run repeats this over ten seeds (weights and
training batches), the quick run over three; the test sequences are the same
for every model and seed.

    python -m experiments.relative_bias_generalisation [--quick]
"""
from tqdm.auto import tqdm

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.model.tasks import IGNORE, lookback_task
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.evaluation import stats
from . import common
from .common import Timer, environment

SCHEMES = ("t5", "learned")
K = 3             # look k back: the answer at position t is the token at t + 1 - k
VOCAB = 16        # 5 special ids + 11 symbols
TRAIN_LEN, TEST_LEN = 8, 16
MODEL = dict(d_model=32, n_layers=2, n_heads=4)

CHANCE = 1 / (VOCAB - 5)     # 11 symbols: a guess is right 1 time in 11
SENSIBLE = 0.9               # "sensible output": at least 90% of the answers right
GARBAGE = 2 * CHANCE         # twice chance: a low bar for "garbage" here (see no_position_accuracy)

SIZES = {
    True: dict(seeds=3, steps=300, batch_size=32, test_size=256),
    False: dict(seeds=10, steps=600, batch_size=32, test_size=1024),
}


def make_model(positional, seed):
    """A TinyGPT for the task; ``max_len = TEST_LEN`` so the learned table has a row for every test position."""
    cfg = GPTConfig(vocab_size=VOCAB, max_len=TEST_LEN, positional=positional, seed=seed, kernels="fast", **MODEL)
    return TinyGPT(cfg)


def train_batches(batch_size):
    """Fresh lookback sequences of length TRAIN_LEN, each batch seeded from the training generator."""
    def get_batch(rng):
        b = lookback_task(batch_size, TRAIN_LEN, K, VOCAB, seed=int(rng.host.integers(2 ** 31)))
        return b.x, b.y
    return get_batch


def score(model, batch, from_position=0):
    """(accuracy, mean loss) over the scored targets at positions >= ``from_position``."""
    y = backend.to_numpy(batch.y)                                       # (B, T)
    was_training = model.training
    model.eval()
    with no_grad():
        z = backend.to_numpy(model(batch.x).data).astype(np.float64)    # (B, T, V)
    model.train(was_training)
    z = z - z.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))       # (B, T, V)
    scored = y != IGNORE
    scored[:, :from_position] = False
    picked = np.take_along_axis(log_probs, np.where(scored, y, 0)[..., None], axis=-1)[..., 0]  # (B, T)
    right = z.argmax(axis=-1) == y
    return float(right[scored].mean()), float(-picked[scored].mean())


def no_position_accuracy(batch, from_position=TRAIN_LEN):
    """Accuracy of a rule that uses no position, over the scored targets at positions >= ``from_position``.

    The rule guesses uniformly among the symbols seen so far other than the current one (the current one
    if there is no other); a look-back sequence holds at most K symbols, so it does far better than
    chance 1/11. Its expected accuracy is the bar for "garbage" (book, §7 exercise 4): output worse than
    ignoring position. Computed exactly, as the mean chance that the guess is right, not by sampling guesses.
    """
    right = []
    for xs, ys in zip(backend.to_numpy(batch.x).tolist(), backend.to_numpy(batch.y).tolist()):
        for t in range(from_position, len(xs)):
            if ys[t] == IGNORE:
                continue
            others = set(xs[:t + 1]) - {xs[t]} or {xs[t]}
            right.append((ys[t] in others) / len(others))
    return sum(right) / len(right)


def run(quick=False, seed=0, progress=True):
    size = SIZES[bool(quick)]
    seeds = [seed + i for i in range(size["seeds"])]
    test = {T: lookback_task(size["test_size"], T, K, VOCAB, seed=10_000 + T) for T in (TRAIN_LEN, TEST_LEN)}
    with Timer() as timer:
        table = {name: [] for name in SCHEMES}
        for s in tqdm(seeds, desc="seeds", disable=not progress):
            for name in SCHEMES:
                model = make_model(name, s)
                cfg = TrainConfig(steps=size["steps"], lr=3e-3, warmup=size["steps"] // 10, min_lr=3e-4, seed=s,
                                  progress=progress)
                result = train(model, train_batches(size["batch_size"]), cfg)
                acc8, loss8 = score(model, test[TRAIN_LEN])
                acc16, loss16 = score(model, test[TEST_LEN])
                acc_beyond, loss_beyond = score(model, test[TEST_LEN], from_position=TRAIN_LEN)
                table[name].append({"seed": s, "final_train_loss": result.losses[-1],
                                    "accuracy_8": acc8, "loss_8": loss8, "accuracy_16": acc16, "loss_16": loss16,
                                    "accuracy_beyond_8": acc_beyond, "loss_beyond_8": loss_beyond})
    summary = {name: {key: _mean_std([r[key] for r in rows]) for key in rows[0] if key != "seed"}
               for name, rows in table.items()}
    return {
        "claims": claims(table, seeds, no_position_accuracy(test[TEST_LEN])),
        "command": "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m "
                   "experiments.relative_bias_generalisation" + (" --quick" if quick else ""),
        "task": f"lookback_task(k={K}, vocab_size={VOCAB})", "k": K, "train_len": TRAIN_LEN, "test_len": TEST_LEN,
        "steps": size["steps"], "seeds": seeds, "per_seed": table, "summary": summary,
        "environment": environment(timer.seconds, seeds=seeds, vocab_size=VOCAB, max_len=TEST_LEN,
                                   batch_size=size["batch_size"], steps=size["steps"],
                                   test_sequences=size["test_size"], **MODEL),
    }


def claims(table, seeds, no_position):
    """The claim records of chapter 5's C5 (book, §7 exercise 4): a t interval over the seeds of each.

    ``no_position`` is ``no_position_accuracy`` on the run's test set at TEST_LEN, the bar for "garbage".
    """
    def acc(name, key):
        return [r[key] for r in table[name]]

    return {
        "t5_sensible_at_16": stats.claim_record(
            f"t5 accuracy at length {TEST_LEN} after training at {TRAIN_LEN} (sensible: above {SENSIBLE})", "above",
            SENSIBLE, values=acc("t5", "accuracy_16"), seeds=seeds),
        "learned_garbage_past_8": stats.claim_record(
            f"learned accuracy on positions {TRAIN_LEN}..{TEST_LEN - 1} (garbage: below twice chance, "
            f"{GARBAGE:.3f})", "below", GARBAGE, values=acc("learned", "accuracy_beyond_8"), seeds=seeds),
        "learned_below_no_position_past_8": stats.claim_record(
            f"learned accuracy on positions {TRAIN_LEN}..{TEST_LEN - 1} (garbage: below a rule that uses no "
            f"position, {no_position:.4f})", "below", no_position, values=acc("learned", "accuracy_beyond_8"),
            seeds=seeds),
        "t5_beats_learned_past_8": stats.claim_record(
            f"t5 minus learned accuracy on positions {TRAIN_LEN}..{TEST_LEN - 1}, paired by seed", "above", 0.0,
            values=[a - b for a, b in zip(acc("t5", "accuracy_beyond_8"), acc("learned", "accuracy_beyond_8"))],
            seeds=seeds),
    }


def _mean_std(values):
    """Mean, spread and the 95% t half-width over the seeds (``stats.t_interval``)."""
    return {"mean": float(np.mean(values)), "std": float(np.std(values)), "min": float(np.min(values)),
            "max": float(np.max(values)), "half_width": stats.t_interval(values)[1]}


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    columns = [("accuracy_8", f"length {TRAIN_LEN}"), ("accuracy_16", f"length {TEST_LEN}, all"),
               ("accuracy_beyond_8", f"length {TEST_LEN},\npositions {TRAIN_LEN}..{TEST_LEN - 1}")]
    width = 0.38
    for i, name in enumerate(SCHEMES):
        rows = res["per_seed"][name]
        for ax, keys in ((a, columns), (b, [(c.replace("accuracy", "loss"), t) for c, t in columns])):
            xs = np.arange(len(keys)) + (i - 0.5) * width
            ax.bar(xs, [res["summary"][name][k]["mean"] for k, _ in keys], width, label=name, alpha=0.8)
            for x, (k, _) in zip(xs, keys):
                ax.plot([x] * len(rows), [r[k] for r in rows], "k.", ms=4)
    for ax, label in ((a, "accuracy (argmax = target)"), (b, "mean loss (nats)")):
        ax.set_xticks(range(len(columns)), [t for _, t in columns])
        ax.set_ylabel(label)
    chance = 1 / (VOCAB - 5)
    a.axhline(chance, color="gray", ls=":", lw=0.8)
    a.text(2.45, chance + 0.01, "chance", ha="right", va="bottom", fontsize=8, color="gray")
    a.set_ylim(0, 1.05)
    b.legend(loc="upper left", fontsize=9)
    fig.suptitle(f"Look {K} back, trained at length {TRAIN_LEN}: T5 bias vs learned absolute "
                 f"({len(res['seeds'])} seeds; dots are seeds)")
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as a table."""
    keys = ("accuracy_8", "accuracy_16", "accuracy_beyond_8", "loss_8", "loss_16", "loss_beyond_8")
    print("mean ± 95% t half-width over the seeds")
    print(f"{'scheme':<9}" + "".join(f"{k:>19}" for k in keys))
    for name in SCHEMES:
        cells = "".join(f"{res['summary'][name][k]['mean']:>10.3f} ± {res['summary'][name][k]['half_width']:<6.3f}"
                        for k in keys)
        print(f"{name:<9}{cells}")
    env = res["environment"]
    for key, rec in res.get("claims", {}).items():
        print(f"{key:<26} {stats.format_record(rec)}")
    print(f"{res['task']}, seeds {env['seeds']}, d_model {env['d_model']}, {env['n_layers']} layers, "
          f"{env['n_heads']} heads, max_len {env['max_len']}, batch {env['batch_size']}, {env['steps']} steps, "
          f"{env['test_sequences']} test sequences per length; {env['seconds']} s on {env['cores']} cores "
          f"({env['backend']})")


def main(argv=None):
    return common.main("relative_bias_generalisation", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("relative_bias_generalisation", main)
