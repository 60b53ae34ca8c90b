r"""Chapter 1, §5: what a model with no positional scheme learns from the causal mask, over seeds.

The task "say your position": the input is a beginning-of-sequence token (id 1) followed by random
tokens (ids 2..19), and the target at every position is the position itself, 0 to T - 1 (T = 12).
Three 2-layer models (d_model 16, two heads, ``positional="none"``) train on it for 200 steps
(lr 3e-3, warmup 10, batch 32), exactly as the chapter's own cell does, on five seeds:

* ``gpt_bos``: ``TinyGPT`` (causal) with the BOS token first;
* ``encoder_bos``: ``TinyEncoder`` (no mask) with the BOS token first;
* ``gpt_no_bos``: ``TinyGPT`` without the BOS token.

Each model is scored on 256 held-out rows (the same for every arm and seed): the accuracy at each
position. A model blind to position gives one answer per row on positions 1..11, so in expectation it
scores at most 1/11 there (exactly 1/11 when that answer is one of 1..11; a model that always answers 0
scores 0). Claims (95% t-interval over seeds of the per-seed shares, ``stats.share_record``, or of the
per-seed differences, ``stats.claim_record``):

* ``gpt_bos_above_chance``: chapter 1's C3, a NoPE decoder learns position from the mask: the
  decoder's accuracy on positions 1..11 minus 1/11, above 0;
* ``encoder_at_chance``: a NoPE encoder reads no position: its accuracy on positions 1..11 stays below
  1/11, the most a position-blind model scores in expectation (an accuracy at chance scatters around
  1/11, so the interval may contain it; chapter 1 settles its C5 exactly, by equivariance); its positive
  control is ``gpt_bos_above_chance``, the same measurement on a model that can see position;
* ``marker_gain``: the decoder's mean accuracy with the BOS token minus without it, above 0.

    python -m experiments.chapter01_nope [--quick]
"""
import sys

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import xp
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.evaluation import stats
from . import common
from .common import Timer, environment

NAME = "chapter01_nope"
T, V, BOS = 12, 20, 1
ARMS = {"gpt_bos": (TinyGPT, True), "encoder_bos": (TinyEncoder, True), "gpt_no_bos": (TinyGPT, False)}
SIZES = {True: dict(seeds=(0, 1), steps=40), False: dict(seeds=(0, 1, 2, 3, 4), steps=200)}


def position_batches(bos):
    """get_batch for 'say your position': x random (BOS first if bos), y = 0 .. T-1."""
    def get_batch(gen, batch_size=32):
        x = gen.integers(2, V, (batch_size, T))
        if bos:
            x[:, 0] = BOS
        return x, xp.broadcast_to(xp.arange(T), (batch_size, T)).copy()
    return get_batch


def position_accuracy(cls, bos, steps=200, seed=0):
    """Train a 2-layer model with no position on the task; return its held-out accuracy at each position."""
    model = cls(GPTConfig(vocab_size=V, d_model=16, n_layers=2, n_heads=2, max_len=T, positional="none", seed=seed))
    get_batch = position_batches(bos)
    train(model, get_batch, TrainConfig(steps=steps, lr=3e-3, warmup=10, seed=seed, progress=False))
    x, y = get_batch(backend.rng(1234), batch_size=256)  # held-out rows
    with no_grad():
        return (model(x).data.argmax(axis=-1) == y).mean(axis=0)  # (T,)


def claims(per_seed, seeds):
    def values(arm, key):
        return [r[key] for r in per_seed[arm]]
    chance = 1 / (T - 1)  # the most a position-blind answer scores on positions 1..11, in expectation
    trials = 256 * (T - 1)  # the held-out rows of position_accuracy, times the positions 1..11 of each

    def counts(arm):  # an accuracy on positions 1..11 back to the count of right answers it is the share of
        return [round(v * trials) for v in values(arm, "accuracy_after_0")]
    gpt = stats.share_record("accuracy of the NoPE TinyGPT (BOS first) on positions 1..11; the claim: above chance "
                             "1/11", "above", chance, counts("gpt_bos"), [trials] * len(seeds), seeds)
    enc = stats.share_record("accuracy of the NoPE TinyEncoder (BOS first) on positions 1..11; the claim: no better "
                             "than chance, below 1/11", "below", chance, counts("encoder_bos"),
                             [trials] * len(seeds), seeds)
    enc["positive_control"] = "gpt_bos_above_chance"
    gain = stats.claim_record("mean accuracy of the NoPE TinyGPT with the BOS token minus without it (a difference "
                              "of two shares, paired by seed: the t interval of the per-seed differences)",
                              "above", 0.0, values=[a - b for a, b in zip(values("gpt_bos", "accuracy"),
                                                                          values("gpt_no_bos", "accuracy"))],
                              seeds=seeds)
    return {"gpt_bos_above_chance": gpt, "encoder_at_chance": enc, "marker_gain": gain}


def run(quick=False, seed=0, progress=False):
    size = SIZES[bool(quick)]
    seeds = [seed + s for s in size["seeds"]]
    per_seed = {arm: [] for arm in ARMS}
    with Timer() as timer:
        for s in seeds:
            for arm, (cls, bos) in ARMS.items():
                acc = backend.to_numpy(position_accuracy(cls, bos, size["steps"], s))
                per_seed[arm].append({"seed": s, "accuracy": float(acc.mean()), "accuracy_after_0": float(acc[1:].mean()),
                                      "by_position": [round(float(a), 4) for a in acc]})
    return {"arms": list(ARMS), "task": f"say your position, T = {T}, V = {V}", "steps": size["steps"],
            "seeds": seeds, "per_seed": per_seed, "claims": claims(per_seed, seeds),
            "command": "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m "
                       f"experiments.{NAME}" + (" --quick" if quick else ""),
            "environment": environment(timer.seconds, seeds=seeds, steps=size["steps"], d_model=16, n_layers=2,
                                       n_heads=2, batch_size=32, held_out_rows=256, kernels="reference",
                                       blas_threads=1)}


def report(res):
    for arm in ARMS:
        print(f"{arm:<12} mean accuracy " + " ".join(f"{r['accuracy']:.2f}" for r in res["per_seed"][arm])
              + "; positions 1..11 " + " ".join(f"{r['accuracy_after_0']:.2f}" for r in res["per_seed"][arm]))
    for key, rec in res["claims"].items():
        print(f"{key:<22} {stats.format_record(rec)}")
    print(f"{res['environment']['seconds']} s")


def plot(res):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for i, arm in enumerate(ARMS):
        for j, r in enumerate(res["per_seed"][arm]):
            ax.plot(range(T), r["by_position"], "osd"[i], color=f"C{i}", alpha=0.6, label=arm if j == 0 else None)
    ax.hlines(1 / (T - 1), 1, T - 1, color="gray", ls="--", lw=0.8, label="chance on positions 1 to 11: 1/11")
    ax.set(xlabel="position", ylabel="held-out accuracy", title=f"Say your position, no scheme, {len(res['seeds'])} seeds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv=None):
    return common.main(NAME, __doc__, run, report, plot, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
