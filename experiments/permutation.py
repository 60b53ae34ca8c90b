r"""Permutation (the chapter's exercise 1): without position or a mask, attention cannot tell order.

Shuffle the tokens with a fixed permutation, run the model, un-shuffle its
outputs, and measure how far they moved:

* a ``TinyEncoder`` with no positional scheme is exactly permutation-equivariant
  (every token attends to every token, and nothing depends on where it sits);
* a ``TinyGPT`` with no positional scheme is not: the causal mask lets token t
  see exactly t + 1 tokens, which leaks order;
* every positional scheme probed here (``PROBED``: the 1-D schemes of chapters 1 to 11) breaks
  equivariance, which is its whole job. A scheme outside the library need not: position added to
  every channel is erased by the layer norms of a pre-norm encoder, which stays equivariant
  (chapter 1, §7).

The failure-mode table's check "model ignores position entirely" is this probe
on a trained model: a change near zero means the positions are not used.
Measured in float64 on O(1) random weights, so "exactly" means rounding only.

    python -m experiments.permutation [--quick]
"""
from mini_transformer.engine import backend
from mini_transformer.evaluation.measures import permutation_sensitivity
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from . import common
from .common import Timer, environment

#: the schemes probed, named rather than read from ``SCHEMES`` so that a scheme added to the library does not change
#: this record unseen: the 1-D schemes of chapters 1 to 11 (the 2-D ``relative_2d`` needs a square window). Chapter
#: 13's are not probed: ``mrope`` on text is ``rope``, ``fire`` is causal only (no ``TinyEncoder``), and
#: ``temperature`` is exactly NoPE before position ``floor_scale - 1``.
PROBED = ("none", "sinusoidal", "learned", "shaw", "transformer_xl", "t5", "rope", "alibi", "decoupled_rope")


def probe(model_cls, positional, seed, T=16):
    cfg = GPTConfig(vocab_size=32, d_model=32, n_layers=2, n_heads=4, max_len=T, positional=positional, seed=seed,
                    kernels="fast")
    model = model_cls(cfg).to_dtype("float64")
    draw = backend.rng(seed + 100)
    for p in model.parameters():  # O(1) weights, so a difference is not hidden by a tiny init
        p.data[...] = draw.normal(0.0, 0.5, p.shape, dtype="float64")
    x = backend.rng(seed).integers(0, 32, (4, T))
    return permutation_sensitivity(model, x, seed=seed).relative


def run(quick=False, seed=0, progress=False):
    seeds = [seed] if quick else [seed + i for i in range(5)]
    names = list(PROBED)
    with Timer() as timer:
        table = {}
        for model_cls in (TinyEncoder, TinyGPT):
            for name in names:
                values = [probe(model_cls, name, s) for s in seeds]
                table[f"{model_cls.__name__}/{name}"] = {"min": min(values), "max": max(values)}
    return {"relative_change": table, "seeds": seeds,
            "environment": environment(timer.seconds, d_model=32, n_layers=2, n_heads=4, T=16, batch_size=4)}


def plot(res):
    import matplotlib.pyplot as plt
    names = list(res["relative_change"])
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(names) + 1))
    ax.barh(names, [max(res["relative_change"][n]["min"], 1e-18) for n in names])
    ax.set(xscale="log", xlabel="relative change of the un-shuffled output (min over seeds)",
           title="permutation sensitivity (1e-16: rounding only, the model is blind to order)")
    fig.tight_layout()
    return fig


def report(res):
    """Print the results as a table."""
    for name, v in res["relative_change"].items():
        print(f"{name:<32} {v['min']:.2e} .. {v['max']:.2e}")


def main(argv=None):
    return common.main("permutation", __doc__, run, report, plot, argv)


if __name__ == "__main__":
    common.command_line("permutation", main)
