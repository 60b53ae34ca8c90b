r"""Paired A/B of variants of the fast kernel set on one model: the variants take turns, one training step each,
and the verdict is the median of the per-turn ratios (a shared machine drifts by 10 to 30 % over minutes; turns
one step apart see the same drift).

    python bench_results/cpu_2026-12-03_after/ab.py CONFIG TURNS VARIANT [VARIANT ...]

CONFIG is one of the bench's configurations, optionally with sizes changed: ``long,T=256,batch=8``.

A VARIANT is ``name:field=module.attr`` (the fast set with one op replaced, e.g.
``reflinear:linear=mini_transformer.engine.functional.linear``) or ``name:@module.ATTR=value`` (a module
setting, e.g. ``blocks16:@mini_transformer.engine.kernels.threads._BLOCKS_PER_THREAD=16``), or a library op as it was at an
earlier commit (``everyrow:attention=git:f495730^:mini_transformer/engine/kernels/blocked_attention.py:attention``,
read with ``git show``, so run it inside the repository's clone); a module beside this script
(``qkv_one_product``, a trial that is not in the library) can be named too, and changes joined by ``+`` make one
variant. The fast set as it is always runs
first, as ``fast``. Run with ``OPENBLAS_THREAD_TIMEOUT=22``, as the bench runs.
"""
import dataclasses
import importlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the trials kept beside this script

from mini_transformer.engine import kernels
from mini_transformer.engine.kernels import tuning
from mini_transformer.evaluation import bench


def variant(spec):
    """(name, kernel set, settings) from one VARIANT argument; changes joined by ``+`` all apply."""
    name, changes = spec.split(":", 1)
    ops, settings = {}, []
    for change in changes.split("+"):
        target, value = change.split("=", 1)
        if target.startswith("@"):
            module, attr = target[1:].rsplit(".", 1)
            m = importlib.import_module(module)
            settings.append((m, attr, type(getattr(m, attr))(value)))
        elif value.startswith("git:"):
            ops[target] = from_git(value)
        else:
            module, attr = value.rsplit(".", 1)
            ops[target] = getattr(importlib.import_module(module), attr)
    return name, dataclasses.replace(kernels.FAST, **ops), settings


def from_git(value):
    """``git:REV:PATH:NAME``: NAME from the library module at PATH as it was at commit REV, loaded beside the
    module of today (in the same package, so its relative imports resolve) without touching the working tree."""
    import importlib.util
    import subprocess
    _, rev, path, name = value.split(":")
    source = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
    package = path[:-len(".py")].replace("/", ".").rsplit(".", 1)[0]
    module_name = f"{package}._at_{rev.replace('^', '_parent').replace('~', '_back')}"
    spec = importlib.util.spec_from_loader(module_name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[module_name] = module
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return getattr(module, name)


def main(argv):
    config, turns, specs = argv[0], int(argv[1]), argv[2:]
    name, *changes = config.split(",")                   # e.g. long,T=256: the bench's config with T changed
    c = dict(bench.CONFIGS[name], **{k: int(v) for k, v in (ch.split("=") for ch in changes)})
    tuning.tune(adaptive=False)
    step = bench.numpy_engine(c, "fast")
    variants = [("fast", kernels.FAST, [])] + [variant(s) for s in specs]
    defaults = {(m, a): getattr(m, a) for _, _, sets in variants for m, a, _ in sets}

    def run(kernel_set, sets):
        for (m, a), v in defaults.items():
            setattr(m, a, v)
        for m, a, v in sets:
            setattr(m, a, v)
        step.model.kernels = kernel_set
        t = time.perf_counter()
        step()
        return (time.perf_counter() - t) * 1000
    for _ in range(3):                                   # warm-up turns
        for _, ks, sets in variants:
            run(ks, sets)
    ms = {name: [] for name, _, _ in variants}
    for _ in range(turns):
        for name, ks, sets in variants:
            ms[name].append(run(ks, sets))
    print(f"{config}, {turns} turns; ms per step (median), the median of the per-turn ratios to fast with its 95 % "
          f"interval (order statistics: ranks n/2 -+ 1.96 sqrt(n)/2), and the share of turns the variant was slower")
    lo, hi = median_interval_ranks(turns)
    for name, _, _ in variants[1:]:
        ratios = sorted(a / b for a, b in zip(ms[name], ms["fast"]))
        slower = sum(r > 1 for r in ratios) / turns
        print(f"  {name:14s} {statistics.median(ms[name]):8.2f} ms (fast {statistics.median(ms['fast']):.2f})   "
              f"ratio {statistics.median(ratios):.3f} [{ratios[lo]:.3f}, {ratios[hi]:.3f}]   slower in {slower:.0%}")


def median_interval_ranks(n):
    """0-based ranks of the sorted sample that bound a 95 % interval for its median (normal approximation to the
    binomial: n/2 -+ 1.96 sqrt(n)/2)."""
    half = 1.96 * n ** 0.5 / 2
    return max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half + 0.5))


if __name__ == "__main__":
    main(sys.argv[1:])
