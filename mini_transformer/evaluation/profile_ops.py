r"""Where a training step's time goes, op by op, forward and backward: fast kernels, reference, PyTorch eager.

    python -m mini_transformer.evaluation.profile_ops --configs larger            # a table
    python -m mini_transformer.evaluation.profile_ops --configs workbook larger long --out FILE.md

The step is the bench's (``bench.numpy_engine``, ``bench.torch_engine``): the
same model, data and optimiser. Each op is timed *inside* real steps, not on
its own:

* **Our engine.** The model runs under a copy of its kernel set in which every
  op is wrapped (``dataclasses.replace``), the linear layers' ``linear``
  among them. A wrapped op times its forward and then walks
  the graph it just built, back to its inputs, wrapping every new node's
  backward closure so that the autograd loop's call of it is timed under the
  op's name. An op called inside another (the reference's q, k, v projection
  calls ``linear``) counts as part of the outer one. The optimiser's step and
  the gradient clipping are timed in the step. What no op claims (residual
  adds, reshapes, the backward loop's bookkeeping and gradient sums) is the
  row "graph and glue": the whole step minus the rest.
* **PyTorch.** ``torch.profiler`` records the step; the forward of each op is a
  ``record_function`` span in the model (``bench.torch_engine(profile=True)``),
  and the backward of an op is every autograd node whose sequence number is
  that of a forward call made inside its span (PyTorch numbers each forward
  call and gives its backward node the same number). The profiler adds its own cost to every
  op, so the column is PyTorch's time *under the profiler*; the unprofiled step
  time is printed beside it.

The engines take turns, one step each (``profile``), and each time is the
median over ``--steps`` turns after two warm-up turns. The
process is tuned as the bench tunes it (``kernels.tune(adaptive=False)``), so the fast set
runs on the threads it runs on in the bench. Figures: ``bench_results/``.
"""
import argparse
import contextlib
import dataclasses
import functools
import os
import statistics
import sys
import time

from ..engine import autograd, backend, kernels
from ..engine.kernels import tuning
from ..positional import rope as rope_module
from . import bench

OPS = ("embedding", "layer norm", "q, k, v projection", "RoPE", "attention", "linear (out, MLP, head)",
       "GELU", "cross-entropy")
STEP_PARTS = ("clip grad norm", "AdamW", "graph and glue")
# Our kernel set's fields, by the op name the table gives them.
KERNEL_FIELDS = {"embedding": "embedding", "layer_norm": "layer norm", "rms_norm": "layer norm",
                 "qkv_projection": "q, k, v projection", "apply_rotary": "RoPE", "attention": "attention",
                 "gelu": "GELU", "cross_entropy": "cross-entropy", "linear": "linear (out, MLP, head)"}


class _Clock:
    """Seconds per op and phase, for one step; nested ops count as part of the outermost."""

    def __init__(self):
        self.times, self.depth = {}, 0

    def add(self, name, phase, seconds):
        self.times[(name, phase)] = self.times.get((name, phase), 0.0) + seconds

    def timed_backward(self, name, backward):
        def run(gy):
            t = time.perf_counter()
            out = backward(gy)
            self.add(name, "backward", time.perf_counter() - t)
            return out
        run.profiled = True
        return run

    def wrap(self, name, fn):
        """``fn`` timed forward, and the backward of every node its call creates timed under ``name``."""
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)             # inside another op: that op's time
            inputs = {id(a) for a in list(args) + list(kwargs.values()) if isinstance(a, autograd.Tensor)}
            self.depth += 1
            t = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            self.add(name, "forward", time.perf_counter() - t)
            outs = out if isinstance(out, (list, tuple)) else [out]
            stack = [o for o in outs if isinstance(o, autograd.Tensor)]
            seen = set()
            while stack:                               # every node between the op's output and its inputs
                node = stack.pop()
                if id(node) in seen or id(node) in inputs or node._backward is None:
                    continue
                seen.add(id(node))
                if not getattr(node._backward, "profiled", False):
                    node._backward = self.timed_backward(name, node._backward)
                stack.extend(node._parents)
            return out
        return run


@contextlib.contextmanager
def _profiled(model, clock):
    """Run ``model`` under a wrapped copy of its kernel set."""
    ks = model.kernels
    wrapped = {field: clock.wrap(label, getattr(ks, field) or rope_module.apply_rotary)
               for field, label in KERNEL_FIELDS.items()}
    model.kernels = dataclasses.replace(ks, **wrapped)
    try:
        yield
    finally:
        model.kernels = ks


def engine_stepper(c, kernel_set):
    """A function that runs one step of our engine (the bench's) and returns its seconds per op and phase."""
    step = bench.numpy_engine(c, kernel_set)
    model, opt, (x, y) = step.model, step.opt, step.data
    clock = _Clock()

    def profiled_step():
        clock.times = {}
        with _profiled(model, clock):
            t0 = time.perf_counter()
            loss = model.loss(x, y)
            opt.zero_grad()
            loss.backward()
            t1 = time.perf_counter()
            model.kernels.clip_grad_norm(opt.params, 1.0)
            t2 = time.perf_counter()
            opt.step()
            backend.synchronize()
            t3 = time.perf_counter()
        clock.add("clip grad norm", "step", t2 - t1)
        clock.add("AdamW", "step", t3 - t2)
        clock.add("whole step", "step", t3 - t0)
        return dict(clock.times)
    profiled_step.model = model
    return profiled_step


def torch_stepper(c):
    """A function that runs one PyTorch step under ``torch.profiler`` and returns its seconds per op and phase,
    with the seconds of one more step run without the profiler as ``("unprofiled step", "step")``."""
    from torch.profiler import ProfilerActivity, profile
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    step = bench.torch_engine(c, threads, profile=True)

    def profiled_step():
        t = time.perf_counter()
        step()
        plain = time.perf_counter() - t
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            t = time.perf_counter()
            step()
            whole = time.perf_counter() - t
        times = {("whole step", "step"): whole, ("unprofiled step", "step"): plain}
        events = prof.events()
        label_of_seq = {}                               # forward op's sequence number -> the span it ran in
        for e in events:
            if e.sequence_nr >= 0 and not e.name.startswith("autograd::"):
                span = e.cpu_parent
                while span is not None and not span.name.startswith("op: "):
                    span = span.cpu_parent
                if span is not None:
                    label_of_seq.setdefault(e.sequence_nr, span.name[4:])
        for e in events:
            key = None
            if e.name.startswith("op: ") and e.cpu_parent is None:
                label = e.name[4:]
                key = (label, "step" if label in STEP_PARTS else "forward")
            elif e.name.startswith("autograd::engine::evaluate_function: ") and e.sequence_nr in label_of_seq:
                key = (label_of_seq[e.sequence_nr], "backward")
            elif e.name.startswith("Optimizer.step#"):
                key = ("AdamW", "step")
            if key is not None:
                times[key] = times.get(key, 0.0) + e.cpu_time_total / 1e6
        return times
    return profiled_step


def profile(c, steps, use_torch=True):
    """Median ms per op and phase for each engine: the engines take turns, one step each, ``steps`` times
    (after two warm-up turns), so a busy moment of the machine falls on all of them alike. Between turns
    the profiler waits, untimed, as the bench does (``bench.settle_seconds``)."""
    steppers = {"fast": engine_stepper(c, "fast"), "reference": engine_stepper(c, "reference")}
    if use_torch:
        steppers["torch"] = torch_stepper(c)
    per_step = {e: [] for e in steppers}
    settle = bench.settle_seconds()
    for i in range(steps + 2):
        for e, stepper in steppers.items():
            times = stepper()
            if i >= 2:
                per_step[e].append(times)
            time.sleep(settle)          # the last engine's idle threads stop spinning before the next one starts
    return {e: _medians(p) for e, p in per_step.items()}


def _medians(per_step):
    keys = set().union(*per_step)
    return {k: statistics.median(s.get(k, 0.0) for s in per_step) * 1e3 for k in keys}


def rows(prof):
    """(op, phase, ms per engine) rows, the step's parts and the rest ("graph and glue") included."""
    out = []
    for name in OPS:
        for phase in ("forward", "backward"):
            out.append((name, phase, {e: p.get((name, phase), 0.0) for e, p in prof.items()}))
    for name in STEP_PARTS[:2]:
        out.append((name, "step", {e: p.get((name, "step"), 0.0) for e, p in prof.items()}))
    rest = {}
    for e, p in prof.items():
        claimed = sum(v for (n, ph), v in p.items() if n not in ("whole step", "unprofiled step"))
        rest[e] = p[("whole step", "step")] - claimed
    out.append(("graph and glue", "rest of the step", rest))
    out.append(("whole step", "", {e: p[("whole step", "step")] for e, p in prof.items()}))
    return out


def markdown(config_name, prof):
    """One config's table: ms per op and phase for each engine, and reference/fast."""
    engines = list(prof)
    c = bench.CONFIGS[config_name]
    head = (f"### {config_name} (vocab {c['vocab_size']}, d_model {c['d_model']}, {c['n_layers']} layers, "
            f"{c['n_heads']} heads, T {c['T']}, batch {c['batch']})\n\n")
    cols = ["op", "phase"] + [f"{e} ms" for e in engines] + ["reference / fast"]
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for name, phase, ms in rows(prof):
        ratio = (f"{ms['reference'] / ms['fast']:.2f}x" if ms.get("fast", 0) > 0.05 and "reference" in ms
                 else "")
        lines.append("| " + " | ".join([name, phase] + [f"{ms[e]:.1f}" for e in engines] + [ratio]) + " |")
    tail = ""
    if "torch" in prof:
        tail = (f"\nPyTorch's step without the profiler: {prof['torch'][('unprofiled step', 'step')]:.1f} ms "
                f"(under it: {prof['torch'][('whole step', 'step')]:.1f} ms).\n")
    return head + "\n".join(lines) + "\n" + tail


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="+", default=["larger"], choices=list(bench.CONFIGS))
    ap.add_argument("--steps", type=int, default=10, help="profiled steps per engine (default 10)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    ap.add_argument("--out", default=None, help="also write the tables to this markdown file")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}.")
    kernels.tune(adaptive=False)                         # as the bench: the engines take turns, no governor
    have_torch = False
    if not args.no_torch:
        try:
            import torch  # noqa: F401
            have_torch = True
        except ImportError:
            pass
    command = "python -m mini_transformer.evaluation.profile_ops " + " ".join(argv if argv is not None else sys.argv[1:])
    parts = [f"Made by `{command}`; {os.cpu_count()} cores, kernel threads {tuning.state()['threads']}, "
             f"OPENBLAS_THREAD_TIMEOUT {tuning.state()['openblas_thread_timeout']}; medians of {args.steps} "
             f"steps (ms).\n"]
    for name in args.configs:
        c = bench.CONFIGS[name]
        prof = profile(c, args.steps, use_torch=have_torch)
        parts.append(markdown(name, prof))
        print(parts[-1], flush=True)
    if args.out:
        text = "\n".join(parts)
        tmp = args.out + ".partial"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)                       # never a half-written table
    return 0


if __name__ == "__main__":
    tuning.relaunch_with_blas_spin("mini_transformer.evaluation.profile_ops")
    sys.exit(main())
