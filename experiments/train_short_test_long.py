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

**Runs long is not uses long.** A scheme whose loss stays flat past L has shown
that it can *run* there; whether it *uses* the tokens past L is a second
question. ``context_use`` answers it at 8L: at positions t >= L it scores each
next token twice, once with the whole prefix 0..t in view and once with only
the last L tokens t-L+1..t, run as a sequence of their own at positions
0..L-1 (a sliding window at the trained length). If the two losses match,
the tokens further back than L are not being used, however long the model
runs. A learned table cannot run the whole prefix (NaN, with its message) but
runs every window.

The quick run trains only ``none``, ``learned``, ``rope`` and ``alibi``, at
L = 32 for 300 steps: enough to check the directions (learned refuses, RoPE
climbs, ALiBi does not), not to rank the schemes.

    python -m experiments.train_short_test_long [--quick]
"""
import math

from tqdm.auto import tqdm

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.evaluation.measures import extrapolation_curve, token_losses
from . import common
from .common import Timer, corpus, environment, text_model, train_text

SCHEMES = ("none", "sinusoidal", "learned", "shaw", "transformer_xl", "t5", "rope", "alibi")
MULTIPLES = (1, 2, 4, 8)

#: the schemes the quick run's directions are about: the baseline, the refusal, the failure and the fix
QUICK_SCHEMES = ("none", "learned", "rope", "alibi")

#: quick: a direction check in well under a minute; full: the table and plot in results/
SIZES = {
    True: dict(train_len=32, steps=300, eval_batches=8, eval_batch_size=8, use_windows=32),
    False: dict(train_len=64, steps=1500, eval_batches=16, eval_batch_size=8, use_windows=64),
}


def context_use(model, stream, train_len, length, n_windows=32, stride=None, seed=0, batch_size=256):
    r"""Loss past ``train_len`` with the whole prefix in view, and with only the last ``train_len`` tokens.

    ``n_windows`` windows of ``length`` + 1 tokens are drawn from the token
    stream with ``seed``. At each scored position t (``train_len``,
    ``train_len + stride``, ... below ``length``; ``stride`` defaults to
    ``train_len // 8``) the next token t + 1 is predicted twice:

    * ``full``: from tokens 0..t, one forward pass over the whole window;
    * ``window``: from tokens t - L + 1..t only (L = ``train_len``), run as a
      sequence of its own at positions 0..L-1, what a sliding window of L does.

    Returns ``{"positions", "full", "window"}``, each a list with one mean over
    the windows per scored position, plus ``"full_mean"`` and ``"window_mean"``.
    A model that refuses the whole prefix (a learned table past its rows) gets
    NaN for ``full`` and the message under ``"reason"``.
    """
    L = train_len
    stride = stride or max(1, L // 8)
    if not L < length < len(stream):
        raise ValueError(f"context_use: length={length} must exceed train_len={L} and fit in the stream "
                         f"({len(stream)} tokens).")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(stream) - length, size=n_windows)                # (N,)
    s = stream[starts[:, None] + np.arange(length + 1)].astype(np.int64)          # (N, length + 1)
    x, y = s[:, :-1], s[:, 1:]
    positions = np.arange(L, length, stride)                                       # (P,) scored positions t
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            reason = None
            try:
                full = np.concatenate([token_losses(model, backend.asarray(x[i:i + 8]), y[i:i + 8])
                                       for i in range(0, n_windows, 8)])[:, positions]   # (N, P)
            except ValueError as e:                       # the model cannot encode the whole prefix
                full, reason = np.full((n_windows, len(positions)), np.nan), str(e)
            idx = positions[:, None] - L + 1 + np.arange(L)                              # (P, L) the last L tokens
            xw = x[:, idx].reshape(-1, L)                                                # (N * P, L)
            yw = y[:, idx].reshape(-1, L)
            window = np.concatenate([token_losses(model, backend.asarray(xw[i:i + batch_size]),
                                                  yw[i:i + batch_size])[:, -1]
                                     for i in range(0, len(xw), batch_size)]).reshape(n_windows, -1)  # (N, P)
    finally:
        model.train(was_training)
    out = {"positions": positions.tolist(), "full": full.mean(axis=0).tolist(),
           "window": window.mean(axis=0).tolist(), "full_mean": float(full.mean()),
           "window_mean": float(window.mean())}
    if reason is not None:
        out["reason"] = reason
    return out


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
                "context_use": context_use(model, corpus().split("val"), L, MULTIPLES[-1] * L,
                                           n_windows=size["use_windows"], seed=seed),
            }
    return {
        "train_len": L, "lengths": curve.lengths.tolist(), "multiples": list(MULTIPLES), "steps": steps,
        "seed": seed, "results": table, "context_use_length": MULTIPLES[-1] * L,
        "environment": environment(timer.seconds, seeds=[seed], d_model=64, n_layers=2, n_heads=4,
                                   batch_size=16, train_len=L, steps=steps, eval_windows=size["eval_batches"] *
                                   size["eval_batch_size"], context_use_windows=size["use_windows"]),
    }


def plot(res):
    import matplotlib.pyplot as plt
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(17, 4.4), gridspec_kw={"width_ratios": [1, 1, 1.1]})
    b.sharey(a)
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
    b.legend(fontsize=9, loc="upper left")
    names = [n for n, r in res["results"].items() if "context_use" in r]
    if names:
        full = [res["results"][n]["context_use"]["full_mean"] for n in names]
        window = [res["results"][n]["context_use"]["window_mean"] for n in names]
        xs = range(len(names))
        c.bar([x - 0.2 for x in xs], full, 0.4, label="whole prefix in view")
        c.bar([x + 0.2 for x in xs], window, 0.4, label=f"only the last L = {res['train_len']} tokens")
        finite = [v for v in full + window if math.isfinite(v)]
        low = min(finite) - 0.3
        for x, f in zip(xs, full):
            if not math.isfinite(f):
                c.text(x - 0.2, low + 0.02, "refused", rotation=90, ha="center", va="bottom", fontsize=8)
        c.set_xticks(list(xs), names, rotation=30, ha="right")
        c.set_ylim(low, max(finite) + 0.2)
        c.set(ylabel="loss (nats/byte)",
              title=f"positions t >= L of {res['context_use_length']}-token windows: runs long vs uses long")
        c.legend(fontsize=8)
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
    print(f"\npositions L..{res['context_use_length'] - 1} of {res['context_use_length']}-token windows: "
          f"loss with the whole prefix, with the last L = {res['train_len']} only")
    for name, r in res["results"].items():
        if "context_use" not in r:        # a result file that measured it for some schemes only
            continue
        u = r["context_use"]
        print(f"{name:<15}{_fmt(u['full_mean']):>8}{_fmt(u['window_mean']):>8}")
    env = res["environment"]
    print(f"seeds {env['seeds']}, d_model {env['d_model']}, {env['n_layers']} layers, {env['n_heads']} heads, "
          f"batch {env['batch_size']}, L {env['train_len']}, {env['steps']} steps, {env['eval_windows']} eval windows "
          f"per length; {env['seconds']} s on {env['cores']} cores ({env['backend']})")


def main(argv=None):
    return common.main("train_short_test_long", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("train_short_test_long", main)
