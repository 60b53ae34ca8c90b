r"""The training loop: AdamW, warmup and cosine decay, clipping, evaluation, checkpoints.

Deterministic given a seed: the batches come from one seeded generator whose
state is saved in each checkpoint, so stopping, loading and continuing gives
the same losses as training straight through. A NaN or infinite loss stops
training with an error naming the step, before anything is written.

From the command line it trains a byte-level TinyGPT on the standard
library's source, with the fast kernels and a tuned process::

    python -m mini_transformer.model.train --positional alibi --steps 1500 --out alibi.npz
    python -m mini_transformer.model.train --resume alibi.npz --steps 3000      # carry on to step 3000
"""
import argparse
import math
import time
from dataclasses import dataclass, field
from typing import Optional

try:
    from tqdm.auto import tqdm
except ImportError:  # a bare GPU box may have only numpy, cupy and pytest: train without a bar there
    tqdm = None

from ..engine import backend
from ..engine.autograd import no_grad
from ..engine.kernels import tuning
from .checkpoint import load_checkpoint, save_checkpoint
from ..engine.optim import cosine_lr


@dataclass
class TrainConfig:
    steps: int = 500                 # optimiser steps in all (a resumed run counts the steps already done)
    lr: float = 3e-3                 # peak learning rate
    warmup: int = 20                 # steps of linear warmup
    min_lr: float = 3e-4             # learning rate at the end of the cosine decay
    weight_decay: float = 0.01       # AdamW's decoupled decay, on matrices only
    grad_clip: float = 1.0           # global gradient-norm limit (0 turns clipping off)
    eval_every: int = 0              # evaluate every this many steps (0: only at the end, if eval_batch given)
    eval_batches: int = 4            # batches averaged per evaluation
    seed: int = 0                    # seeds the batch generator
    checkpoint_path: Optional[str] = None  # where to save (atomically); None saves nothing
    checkpoint_every: int = 0        # save every this many steps (0: only at the end)
    progress: bool = True            # show a tqdm bar with loss and tokens/s


@dataclass
class TrainResult:
    losses: list = field(default_factory=list)       # training loss at every step
    eval_losses: list = field(default_factory=list)  # (step, mean evaluation loss)
    tokens_per_s: float = 0.0
    seconds: float = 0.0


def evaluate_loss(model, eval_batch, n_batches, seed=12345):
    """Mean loss over ``n_batches`` batches drawn from ``eval_batch(rng)`` with a fixed seed."""
    rng = backend.rng(seed)
    was_training = model.training
    model.eval()
    with no_grad():
        total = sum(float(model.loss(*eval_batch(rng)).item()) for _ in range(n_batches))
    model.train(was_training)
    return total / n_batches


def train(model, get_batch, cfg=None, eval_batch=None, resume_from=None):
    r"""Train ``model`` on batches ``(x, y) = get_batch(rng)``; return a ``TrainResult``.

    ``rng`` is a ``backend.Generator`` seeded with ``cfg.seed``. With
    ``resume_from`` the weights, optimiser moments, step and generator state
    come from that checkpoint and training continues from its step.
    """
    cfg = cfg or TrainConfig()
    if cfg.steps < 0:
        raise ValueError(f"TrainConfig.steps must be at least 0, got {cfg.steps}.")
    try:
        ops = model.kernels                      # the fast AdamW for a model built with kernels="fast"
    except AttributeError:
        raise TypeError(f"train needs a model that carries its kernel set as model.kernels, as TinyGPT and "
                        f"TinyEncoder do (from GPTConfig.kernels); a {type(model).__name__} has none.") from None
    opt = ops.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = backend.rng(cfg.seed)
    start = 0
    if resume_from is not None:
        meta = load_checkpoint(resume_from, model, opt)
        start = meta["step"]
        rng.host.bit_generator.state = meta["train_state"]["rng"]
    result = TrainResult()
    model.train()
    tokens, t0 = 0, time.perf_counter()
    show = cfg.progress and tqdm is not None
    bar = tqdm(range(start, cfg.steps), desc="train", leave=False) if show else range(start, cfg.steps)
    for step in bar:
        x, y = get_batch(rng)
        loss = model.loss(x, y)
        value = float(loss.item())
        if not math.isfinite(value):
            where = f" The last good checkpoint, {cfg.checkpoint_path!r}, is unchanged." if cfg.checkpoint_path else ""
            raise FloatingPointError(f"The training loss became {value} at step {step}; stopping before the update."
                                     f"{where} Lower the learning rate or check the data.")
        model.zero_grad()
        loss.backward()
        if cfg.grad_clip:
            ops.clip_grad_norm(opt.params, cfg.grad_clip)
        opt.lr = cosine_lr(step, cfg.lr, cfg.warmup, cfg.steps, cfg.min_lr)
        opt.step()
        tuning.step_done()              # the thread governor of kernels.tune(), if the process was tuned
        result.losses.append(value)
        tokens += x.size
        done = step + 1
        if eval_batch is not None and cfg.eval_every and done % cfg.eval_every == 0:
            result.eval_losses.append((done, evaluate_loss(model, eval_batch, cfg.eval_batches)))
        if cfg.checkpoint_path and cfg.checkpoint_every and done % cfg.checkpoint_every == 0:
            save_checkpoint(cfg.checkpoint_path, model, opt, done, {"rng": rng.host.bit_generator.state})
        if show:
            bar.set_postfix(loss=f"{value:.3f}", tok_s=f"{tokens / (time.perf_counter() - t0):.0f}")
    result.seconds = time.perf_counter() - t0
    result.tokens_per_s = tokens / result.seconds if result.seconds > 0 else 0.0
    if eval_batch is not None and (not result.eval_losses or result.eval_losses[-1][0] != cfg.steps):
        result.eval_losses.append((cfg.steps, evaluate_loss(model, eval_batch, cfg.eval_batches)))
    if cfg.checkpoint_path:
        save_checkpoint(cfg.checkpoint_path, model, opt, cfg.steps, {"rng": rng.host.bit_generator.state})
    return result


def main(argv=None):
    """Train a byte-level TinyGPT on the standard library's source; print the losses; save a checkpoint."""
    from .checkpoint import read_checkpoint
    from .corpus import stdlib_corpus
    from . import GPTConfig, TinyGPT
    from ..positional import SCHEMES
    ap = argparse.ArgumentParser(prog="python -m mini_transformer.model.train", description=main.__doc__)
    ap.add_argument("--positional", default="rope", choices=sorted(SCHEMES), help="the positional scheme")
    ap.add_argument("--max-len", type=int, default=64, help="training length T (default 64)")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=500, help="optimiser steps in all (default 500)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernels", default="fast", choices=["fast", "reference"])
    ap.add_argument("--corpus-bytes", type=int, default=1_000_000, help="bytes of source text to load")
    ap.add_argument("--out", help="checkpoint to write (atomically) at the end and every --every steps")
    ap.add_argument("--every", type=int, default=0, help="also save every this many steps (0: only at the end)")
    ap.add_argument("--resume", help="a checkpoint to continue from; the model's settings come from it")
    ap.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = ap.parse_args(argv)
    try:
        if args.resume:
            cfg = GPTConfig(**dict(read_checkpoint(args.resume)[0]["config"], kernels=args.kernels))
        else:
            cfg = GPTConfig(vocab_size=256, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads,
                            max_len=args.max_len, positional=args.positional, seed=args.seed, kernels=args.kernels)
        corpus = stdlib_corpus(max_bytes=args.corpus_bytes)
    except (OSError, ValueError) as e:          # a missing or damaged checkpoint, a bad size: one sentence
        ap.error(str(e))
    T, B = cfg.max_len, args.batch
    result = train(TinyGPT(cfg), lambda rng: corpus.get_batch("train", B, T, rng),
                   TrainConfig(steps=args.steps, lr=args.lr, warmup=max(1, args.steps // 10), min_lr=args.lr / 10,
                               seed=args.seed, checkpoint_path=args.out or args.resume,
                               checkpoint_every=args.every, progress=not args.no_progress),
                   eval_batch=lambda rng: corpus.get_batch("val", B, T, rng), resume_from=args.resume)
    if result.losses:
        print(f"{cfg.positional}: train loss {result.losses[0]:.3f} -> {result.losses[-1]:.3f} over "
              f"{len(result.losses)} steps, {result.tokens_per_s:.0f} tokens/s")
    print(f"held-out loss at step {result.eval_losses[-1][0]}: {result.eval_losses[-1][1]:.3f} nats per byte")
    if args.out or args.resume:
        print(f"saved {args.out or args.resume}")
    return result


if __name__ == "__main__":
    from ..engine.kernels import tune, tuning
    tuning.relaunch_with_blas_spin("mini_transformer.model.train")
    tune()
    main()
