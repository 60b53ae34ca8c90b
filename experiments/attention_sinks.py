r"""Attention sinks (the sources' exercise 6): do heads park attention on the first token, and does
evicting it hurt? Tried on what the sources and the literature say makes sinks appear.

For each setting (a corpus, a depth, a fixed first token or not, softmax or sigmoid attention):

1. Train a RoPE ``TinyGPT`` at length L.
2. Measure the share of each head's attention that lands on position 0, per layer and head,
   against what uniform causal attention gives (:math:`H_L / L`), and the share of heads whose
   mean share passes 0.3 (the sink metric of Gu et al., 2024, arXiv 2410.10781).
3. Evict the first token: run held-out windows of length L one token at a time, once with the
   full cache, once with a cache that drops token 0 right after it is read, and once dropping
   token 1 instead (the control: one token of context lost, but not the first). No position
   ever leaves the trained range. The loss on the late queries (t >= L/2), far from both
   tokens, says what the first token is worth beyond its content.
4. Stream held-out text four times longer than L through each cache policy: full attention, a
   window of W recent tokens, the window plus sinks, and recomputing the window at every step.

The settings: the library's source text with 2 layers; a repetitive corpus (a few sentences
repeated, as the sources suggest) with 2 and 4 layers; the same with a fixed first token (BOS) in
every training row, as real language models have; and that model again with softmax replaced by an unnormalised sigmoid, which Gu et al.
found forms no sink: the sources' explanation (a softmax row must sum to 1) put to a test; and the BOS
model again, trained four times longer (Gu et al. saw sinks emerge only after enough optimisation).

    python -m experiments.attention_sinks [--quick]

writes ``results/attention_sinks_settings.json`` and ``.png``. No setting formed a sink. Which of their
conditions kept one from forming (a context of 32, a repetitive corpus, an unnormalised sigmoid, a few million
training bytes; Gu et al. report the last two as preventing one) is not tested here. ``sink_control`` makes the conditions that form one, and ``sink_text`` tries text at
L = 256 with a BOS; chapter 10 reads all three. This module also holds what they share: the unnormalised
sigmoid attention, BOS batches, held-out windows, and ``DropToken``.
"""
import dataclasses
import math
import os

from mini_transformer.engine import backend
from mini_transformer.engine.backend import xp
from mini_transformer.model.corpus import repetitive_corpus
from mini_transformer.evaluation.measures import attention_mass
from mini_transformer.evaluation.streaming import stream_loss
from mini_transformer.model.train import TrainConfig, train
from . import common
from mini_transformer.engine.kernels import tuning
from .common import Timer, corpus, environment, text_model

BOS = 0                  # the fixed first token of the BOS settings: byte 0, which neither corpus holds
SINK_THRESHOLD = 0.3     # a head is a sink head when its mean attention share on position 0 passes this

POLICIES = {
    "full": dict(),
    "window": dict(window="W"),
    "window + 4 sinks (text positions)": dict(window="W", n_sink=4),
    "window + 4 sinks (slot positions)": dict(window="W", n_sink=4, positions="slot"),
    "window + 1 sink (slot positions)": dict(window="W", n_sink=1, positions="slot"),
    "window (slot positions)": dict(window="W", positions="slot"),
    "recompute window": dict(window="W", recompute=True),
}

# name, corpus, layers, BOS, attention
SETTINGS = [
    dict(name="text, 2 layers", corpus="text", n_layers=2, bos=False, attention="softmax"),
    dict(name="repetitive, 2 layers", corpus="repetitive", n_layers=2, bos=False, attention="softmax"),
    dict(name="repetitive, 4 layers", corpus="repetitive", n_layers=4, bos=False, attention="softmax"),
    dict(name="repetitive, 4 layers, BOS", corpus="repetitive", n_layers=4, bos=True, attention="softmax"),
    dict(name="repetitive, 4 layers, BOS, sigmoid", corpus="repetitive", n_layers=4, bos=True,
         attention="sigmoid"),
    # the literature's lever (Gu et al.: sinks emerge after enough optimisation): the BOS model trained 4x longer
    dict(name="repetitive, 4 layers, BOS, 4x steps", corpus="repetitive", n_layers=4, bos=True,
         attention="softmax", steps_factor=4),
]


# ---------------------------------------------------------------------------
# Sigmoid attention: an opt-in for this experiment, the default attention untouched
# ---------------------------------------------------------------------------

def sigmoid_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False, offset=None):
    r"""y = P V with P = \sigma(s\, Q K^\top + \text{bias} + b) elementwise, zero where ``mask`` is False.

    No row is normalised, so a query with nothing to look up can put (close to) zero weight
    everywhere: it needs no sink. :math:`\sigma(z) = \frac{1}{2}(1 + \tanh(z/2))`, stable at
    both ends, with the gradient of ``tanh``. ``offset`` b defaults to :math:`-\ln T_k`, so at
    initialisation a row's weights sum to about 1 (Ramapuram et al., 2024). Same signature as
    ``functional.scaled_dot_product_attention``.
    """
    d_head, T_k = q.shape[-1], k.shape[-2]
    s = (1.0 / d_head ** 0.5) if scale is None else scale
    b = -math.log(T_k) if offset is None else offset
    scores = (q @ k.transpose(tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))) * s + b  # (B, H, T_q, T_k)
    if bias is not None:
        scores = scores + bias
    p = ((scores * 0.5).tanh() + 1.0) * 0.5                 # sigma(scores), in (0, 1)
    if mask is not None:
        p = p * mask.astype(p.dtype)                        # masked keys get weight 0
    y = p @ v                                               # (B, H, T_q, d_head)
    return (y, p.data) if return_weights else y


def use_sigmoid_attention(model):
    """Make every attention layer of ``model`` run ``sigmoid_attention``; the other kernels stay."""
    model.kernels = dataclasses.replace(model.kernels, name=model.kernels.name + "+sigmoid",
                                        attention=sigmoid_attention)   # every layer asks the model's set
    return model


# ---------------------------------------------------------------------------
# Data: windows of a corpus, with or without a fixed first token
# ---------------------------------------------------------------------------

def corpus_named(name):
    return corpus() if name == "text" else repetitive_corpus(400_000, seed=0)


def batches(text, T, bos, batch_size=16):
    """``rng -> (x, y)``: windows of length T, the first token replaced by BOS when ``bos``."""
    def get(rng):
        if not bos:
            return text.get_batch("train", batch_size, T, rng)
        x, y = text.get_batch("train", batch_size, T - 1, rng)           # (B, T - 1) each
        first = xp.full((batch_size, 1), BOS, dtype=x.dtype)
        return xp.concatenate([first, x], axis=1), xp.concatenate([x[:, :1], y], axis=1)  # (B, T)
    return get


def held_out(text, n_rows, T, bos, start=5_000):
    """``n_rows`` consecutive held-out windows of length T from ``start`` (BOS first when ``bos``): ``(n_rows, T)``."""
    val = text.val
    n = T - 1 if bos else T
    rows = [val[start + i * n:start + (i + 1) * n].astype("int64") for i in range(n_rows)]
    if bos:
        rows = [backend.hostnp.concatenate([[BOS], r]) for r in rows]
    return backend.asarray(backend.hostnp.stack(rows))


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------

class DropToken:
    r"""A cache policy for the eviction test: the token at text position ``index`` is evicted right after it is
    read, everything else stays. A fresh one per stream (it counts the steps it has seen)."""

    def __init__(self, index):
        self.index, self.steps = index, 0

    def __call__(self, n_tokens, window, n_sink):
        self.steps += 1
        if self.steps == self.index + 1:        # token `index` has just arrived; nothing was dropped before it
            return xp.concatenate([xp.arange(self.index), xp.arange(self.index + 1, n_tokens)])
        return xp.arange(n_tokens)


def eviction_costs(model, windows):
    r"""Mean loss of held-out windows read one token at a time, with every token kept, with token 0 evicted,
    and with token 1 evicted (the control: one token of context lost, but not the first). Over all queries
    and over the late ones, t >= T/2, far from the evicted token."""
    T = windows.shape[1]
    runs = {"kept": stream_loss(model, windows).losses,
            "token 0 evicted": stream_loss(model, windows, keep_indices=DropToken(0)).losses,
            "token 1 evicted": stream_loss(model, windows, keep_indices=DropToken(1)).losses}
    return {"all queries": {k: float(v.mean()) for k, v in runs.items()},
            "late queries": {k: float(v[T // 2:].mean()) for k, v in runs.items()}}


def run_setting(setting, L, steps, stream_len, n_stream_rows, W, seed, progress):
    """Train one setting's model and measure it; returns a dict of plain numbers."""
    with Timer() as timer:
        text = corpus_named(setting["corpus"])
        model = text_model("rope", L, seed=seed, n_layers=setting["n_layers"])
        if setting["attention"] == "sigmoid":
            use_sigmoid_attention(model)
        cfg = TrainConfig(steps=steps, lr=3e-3, warmup=max(1, steps // 10), min_lr=3e-4, seed=seed,
                          progress=progress)
        result = train(model, batches(text, L, setting["bos"]), cfg)
        windows = held_out(text, 16, L, setting["bos"], start=0)                          # (16, L)
        mass = attention_mass(model, windows[:8], first_k=4, normalise=True)   # share of each row
        position0, first4 = mass.position0.tolist(), mass.first_k.tolist()
        eviction = eviction_costs(model, windows)
        tokens = held_out(text, n_stream_rows, stream_len, setting["bos"])                # (rows, stream_len)
        losses = {}
        for name, policy in POLICIES.items():
            kw = {k: (W if v == "W" else v) for k, v in policy.items()}
            losses[name] = stream_loss(model, tokens, **kw).mean_loss
    heads = [m for layer in position0 for m in layer]
    return {**setting, "train_len": L, "steps": steps, "final_train_loss": result.losses[-1],
            "mass_on_position_0": position0, "mass_on_first_4": first4,
            "sink_heads": sum(m > SINK_THRESHOLD for m in heads) / len(heads),
            "eviction": eviction,
            "stream_loss": losses, "seconds": round(timer.seconds, 1)}


def process_settings():
    """How this process was tuned: the fast kernels' threads, and OpenBLAS's threads and spin (the run's speed
    depends on them, and on a machine other jobs share, OpenBLAS threads that spin can cost more than they give)."""
    return dict(tuning.state(), openblas_num_threads=os.environ.get("OPENBLAS_NUM_THREADS"), load_average=os.getloadavg())


def run(quick=False, seed=0, progress=True):
    # the full mode fits the five minutes a run may take on the shared 2-core machine (with one BLAS thread):
    # six settings at L = 32, 2000 steps each (the last 8000)
    L = 32
    steps = 300 if quick else 2000
    stream_len = 4 * L
    W = L // 2
    uniform = sum(1.0 / (i + 1) for i in range(L)) / L
    with Timer() as timer:
        first = run_setting(SETTINGS[0], L, steps, stream_len, 1 if quick else 4, W, seed, progress)
        # quick mode: the other settings only for a few steps, to check that each runs end to end
        rest = [run_setting(s, 16 if quick else L, 20 if quick else steps * s.get("steps_factor", 1),
                            64 if quick else stream_len, 1 if quick else 4, 8 if quick else W, seed, progress)
                for s in SETTINGS[1:]]
    return {
        # the first setting's numbers at the top level (the quick mode's tests read them)
        "train_len": L, "window": W, "stream_len": stream_len, "steps": steps, "seed": seed,
        "final_train_loss": first["final_train_loss"],
        "mass_on_position_0": first["mass_on_position_0"], "mass_on_first_4": first["mass_on_first_4"],
        "uniform_mass_on_position_0": uniform, "sink_threshold": SINK_THRESHOLD,
        "stream_loss": first["stream_loss"],
        "settings": [first] + rest,
        "environment": environment(timer.seconds, d_model=64, n_heads=4, batch_size=16, process=process_settings()),
    }


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def plot(res):
    import matplotlib.pyplot as plt
    settings = res["settings"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    for i, s in enumerate(settings):
        per_layer = [sum(h) / len(h) for h in s["mass_on_position_0"]]
        top = [max(h) for h in s["mass_on_position_0"]]
        line, = a.plot(range(len(per_layer)), per_layer, "o-", label=s["name"])
        a.plot(range(len(top)), top, "^", color=line.get_color(), alpha=0.6)
    a.axhline(res["uniform_mass_on_position_0"], color="k", ls="--", lw=0.8, label="uniform causal attention")
    a.axhline(res["sink_threshold"], color="tab:red", ls=":", lw=0.8, label="sink threshold (Gu et al.)")
    a.set(xlabel="layer", ylabel="share of attention on position 0",
          title="mass on position 0: layer mean (o), largest head (^)", ylim=(0, 1))
    a.set_xticks(range(max(len(s["mass_on_position_0"]) for s in settings)))
    a.legend(fontsize=7)
    names = [s["name"] for s in settings]
    ys = range(len(names))
    late = [s["eviction"]["late queries"] for s in settings]
    b.barh([y + 0.27 for y in ys], [e["token 0 evicted"] - e["kept"] for e in late], 0.27,
           label="token 0 evicted (late queries, within L)")
    b.barh([y for y in ys], [e["token 1 evicted"] - e["kept"] for e in late], 0.27,
           label="token 1 evicted instead (the control)")
    b.barh([y - 0.27 for y in ys], [s["stream_loss"]["window"] - s["stream_loss"]["window + 4 sinks (slot positions)"]
                                    for s in settings], 0.27, label="window alone minus window + 4 sinks (stream of 4L)")
    b.axvline(0, color="k", lw=0.8)
    b.set_yticks(list(ys), names, fontsize=8)
    b.set(xlabel="loss increase when the first token is evicted (nats/byte)", title="what evicting the first token costs")
    b.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    return fig


def report(res):
    """Print one block per setting."""
    print(f"uniform causal attention puts {res['uniform_mass_on_position_0']:.3f} on position 0 at L = {res['train_len']}")
    for s in res["settings"]:
        print(f"\n{s['name']} (L = {s['train_len']}, {s['steps']} steps, {s['seconds']} s, "
              f"final training loss {s['final_train_loss']:.3f})")
        print("  share on position 0 by layer and head:", [[round(m, 3) for m in layer] for layer in s["mass_on_position_0"]])
        print(f"  sink heads (> {res['sink_threshold']}): {s['sink_heads']:.2f}")
        for which, e in s["eviction"].items():
            print(f"  {which}: " + ", ".join(f"{k} {v:.3f}" for k, v in e.items()))
        for name, loss in s["stream_loss"].items():
            print(f"  {name:<36} {loss:.3f}")


def main(argv=None):
    return common.main("attention_sinks_settings", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("attention_sinks", main)
