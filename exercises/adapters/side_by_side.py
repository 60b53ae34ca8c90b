r"""Train two models side by side on the same batches: the library's, and one that runs your functions.

A chapter builds the same ``TinyGPT`` twice, once as the library makes it and
once with its positional scheme computed by the reader's code (for example
``from_functions.rope(RotaryEmbedding(d_head), apply_rotary)``), trains both
in float64 on identical batches, and compares the loss curves step by step.
With a correct implementation they agree to rounding; with a wrong one they
part, and ``first_difference`` says at which step.
"""
from dataclasses import dataclass

from mini_transformer.model import TinyGPT
from mini_transformer.model.train import TrainConfig, train


@dataclass
class SideBySide:
    library: list        # training loss at every step, the library's model
    yours: list          # the same with your functions inside the model
    tolerance: float     # the largest difference that still counts as equal
    models: tuple = ()   # the two trained models, (library's, yours)

    @property
    def max_difference(self):
        return max(abs(a - b) for a, b in zip(self.library, self.yours))

    @property
    def first_difference(self):
        """The first step whose losses differ by more than the tolerance, or None when they never do."""
        return next((step for step, (a, b) in enumerate(zip(self.library, self.yours)) if abs(a - b) > self.tolerance),
                    None)

    def report(self):
        """One sentence: the curves agree, or where they part."""
        if self.first_difference is None:
            return (f"your functions train the model exactly as the library does: {len(self.library)} steps, the "
                    f"largest difference between the losses {self.max_difference:.1e} (at most {self.tolerance:g})")
        s = self.first_difference
        return (f"the curves part at step {s}: library {self.library[s]:.6f}, yours {self.yours[s]:.6f}; "
                f"look at the functions this model runs")

    def plot(self, ax=None, yours="your functions", title="the same model, the same batches", log=False):
        """Both loss curves on one axis, the step where they part marked; returns the axis."""
        from mini_transformer.evaluation.measures import axes_or_new
        ax = axes_or_new(ax, figsize=(6, 3))
        ax.plot(self.library, label="library", linewidth=3, alpha=0.5)
        ax.plot(self.yours, label=yours, linestyle="--")
        if self.first_difference is not None:
            ax.axvline(self.first_difference, color="red", linestyle=":", label="the curves part")
        ax.set(xlabel="step", ylabel="training loss (nats)", title=title, yscale="log" if log else "linear")
        ax.legend()
        return ax


def train_side_by_side(cfg, scheme, get_batch, steps=100, lr=3e-3, seed=0, tolerance=1e-6):
    r"""Train ``TinyGPT(cfg)`` twice in float64, the second with ``model.positional = scheme``; return a ``SideBySide``.

    ``get_batch(rng)`` gives ``(x, y)`` from a seeded generator; both runs draw
    the same batches from the same seed and start from the same weights.
    """
    runs, models = [], []
    for swap in (False, True):
        model = TinyGPT(cfg).to_dtype("float64")
        if swap:
            model.positional = scheme.to_dtype("float64")   # its parameters too, if it has any
        result = train(model, get_batch, TrainConfig(steps=steps, lr=lr, warmup=max(1, steps // 10), seed=seed,
                                                     progress=False))
        runs.append(result.losses)
        models.append(model)
    return SideBySide(runs[0], runs[1], tolerance, tuple(models))
