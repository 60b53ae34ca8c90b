r"""The training loop: AdamW, warmup and cosine decay, clipping, evaluation, checkpoints.

Deterministic given a seed: the batches come from one seeded generator whose
state is saved in each checkpoint, so stopping, loading and continuing gives
the same losses as training straight through. A NaN or infinite loss stops
training with an error naming the step, before anything is written.
"""
import math
import time
from dataclasses import dataclass, field
from typing import Optional

try:
    from tqdm.auto import tqdm
except ImportError:  # a bare GPU box may have only numpy, cupy and pytest: train without a bar there
    tqdm = None

from . import backend
from .autograd import no_grad
from .checkpoint import load_checkpoint, save_checkpoint
from .kernels import REFERENCE
from .optim import cosine_lr


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
    ops = getattr(model, "kernels", REFERENCE)   # the fast AdamW for a model built with kernels="fast"
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
