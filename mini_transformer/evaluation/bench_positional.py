r"""What each positional scheme costs: parameters, memory, forward time.

    python -m mini_transformer.evaluation.bench_positional            # a table
    python -m mini_transformer.evaluation.bench_positional --json     # everything, machine-readable

The workbook model (vocab 64, d_model 64, 2 layers, 4 heads, ``TinyGPT``,
batch 1, float32) with every scheme of ``positional.SCHEMES`` at its default
settings, ``max_len`` set to the longest T so the learned table and the 2-D
window (32 x 32 at T = 1024) cover it. For each scheme and each T:

* **extra params**: parameters beyond the same model with ``"none"``;
* **hook bytes**: bytes allocated at peak inside the scheme's hooks (``embed``,
  ``score_bias``, ``rotate``, ``output_term``), summed over every call of one
  forward: the positional tensors the scheme materialises, its outputs
  included (a rotated q is a new ``(B, H, T, d_head)`` array, a bias a
  ``(1, H, T, T)`` one);
* **peak extra**: the whole forward's peak traced memory minus that of
  ``"none"``, which also catches what a scheme makes attention do (Shaw's value
  term needs the unfused path, which keeps the probabilities). Where a
  scheme's arrays are not alive at the forward's peak, the column reads what
  else differs between the two models at that moment: Python objects (tuples,
  frames, small wrappers) and small arrays, tens to a few hundred bytes that
  stay flat as T grows (Transformer-XL's about 600 B at T = 8 to 32, before its
  own arrays reach the peak at T = 48). ``BOOKKEEPING`` (256 B) is the floor
  the tests allow below zero;
* **ms**: the best of ``--repeats`` forwards under ``no_grad``, in rounds that
  alternate between the schemes so that a noisy machine slows all of them alike.

Memory is measured with ``tracemalloc``, which sees NumPy's allocations; on the
CuPy backend the memory columns are left empty. Each traced forward runs with
the garbage collector paused, so a collection (and whatever finalizers it runs)
cannot land inside one scheme's trace, and the memory is measured in two rounds,
the second in the reverse order, each scheme keeping its smaller value: a
one-time allocation (the process's first trace, a cache filled once) is in at
most one of them. The models run the reference
kernels (``GPTConfig.kernels``' default), so every scheme goes through the same
plain attention and the memory differences are the schemes' own.
"""
import argparse
import gc
import json
import time
import tracemalloc

from ..engine import backend
from ..engine.autograd import no_grad
from ..model import GPTConfig, TinyGPT
from ..positional import SCHEMES

HOOKS = ("embed", "score_bias", "rotate", "output_term")
BOOKKEEPING = 256   # bytes: the interpreter's own objects for a call, or the noise of the peak column
WORKBOOK = dict(vocab_size=64, d_model=64, n_layers=2, n_heads=4)


def build(name, max_len):
    return TinyGPT(GPTConfig(positional=name, max_len=max_len, **WORKBOOK)).eval()


class HookMeter:
    """Wraps a scheme's hooks on the instance and adds up the peak bytes each call allocates.

    The interpreter's own bookkeeping for a call (argument tuples, frames: tens
    of bytes) is not the scheme's: the first ``FLOOR`` bytes of every call are
    not counted, which changes real arrays (KiB and up) by nothing visible.
    """

    FLOOR = BOOKKEEPING

    def __init__(self, scheme):
        self.scheme, self.bytes = scheme, 0
        for hook in HOOKS:
            setattr(scheme, hook, self._wrap(getattr(scheme, hook)))

    def _wrap(self, f):
        def measured(*args, **kwargs):
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            out = f(*args, **kwargs)
            _, peak = tracemalloc.get_traced_memory()
            self.bytes += max(peak - before - self.FLOOR, 0)
            return out
        return measured

    def remove(self):
        for hook in HOOKS:
            delattr(self.scheme, hook)   # the class's own method shows through again


def forward_memory(model, idx):
    """(hook bytes, whole-forward peak bytes above the starting point) of one forward."""
    meter = HookMeter(model.positional)
    collecting = gc.isenabled()
    gc.disable()                                         # no collection (or finalizer) inside the trace
    tracemalloc.start()
    try:
        with no_grad():
            model(idx)                                   # a first pass settles one-time interpreter allocations
            meter.bytes = 0
            start, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            model(idx)
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        meter.remove()
        if collecting:
            gc.enable()
    return meter.bytes, peak - start


def forward_seconds(model, idx):
    backend.synchronize()
    t = time.perf_counter()
    model(idx)
    backend.synchronize()
    return time.perf_counter() - t


def run(schemes=None, Ts=(64, 256, 1024), batch=1, repeats=5):
    """Measure every scheme at every T; timing rounds alternate between schemes, best of ``repeats``.

    Alternating means a noisy neighbour slows every scheme alike, and the best
    of several rounds is the least disturbed one.
    """
    schemes = list(schemes or SCHEMES)
    max_len = max(Ts)
    trace = backend.get_backend() != "cupy"
    models = {name: build(name, max_len) for name in schemes}
    baseline_params = build("none", max_len).num_parameters()
    rows = {name: {"scheme": name, "extra_params": m.num_parameters() - baseline_params, "T": {}}
            for name, m in models.items()}
    for T in Ts:
        idx = backend.rng(T).integers(0, WORKBOOK["vocab_size"], (batch, T))
        best = {name: float("inf") for name in schemes}
        with no_grad():
            for name, m in models.items():
                m(idx)                                   # warm-up
            for _ in range(repeats):
                for name, m in models.items():
                    best[name] = min(best[name], forward_seconds(m, idx))
        memory = {name: (None, None) for name in schemes}
        if trace:
            # two rounds, the second reversed, each scheme keeping its smaller numbers: a one-time allocation
            # lands in one round only (CI, 2026-12-06: once in the baseline's trace at T=8, and every scheme's
            # peak+ read -4.9 KiB)
            for order in (schemes, schemes[::-1]):
                for name in order:
                    measured = forward_memory(models[name], idx)
                    memory[name] = measured if memory[name][0] is None else tuple(map(min, memory[name], measured))
        for name in schemes:
            hook_bytes, peak = memory[name]
            rows[name]["T"][T] = {"hook_bytes": hook_bytes, "peak_bytes": peak, "ms": 1000 * best[name]}
    rows = list(rows.values())
    if trace and "none" in schemes:
        base = next(r for r in rows if r["scheme"] == "none")
        for r in rows:
            for T in Ts:
                r["T"][T]["peak_extra_bytes"] = r["T"][T]["peak_bytes"] - base["T"][T]["peak_bytes"]
    return {"backend": backend.get_backend(), "repeats": repeats, "Ts": list(Ts), "rows": rows,
            "model": dict(WORKBOOK, batch=batch, max_len=max_len, dtype="float32")}


def _size(n):
    if n is None:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024


def table(res):
    Ts = res["Ts"]
    head = (f"{'scheme':<16}{'extra params':>13}"
            + "".join(f"{'hook T=' + str(T):>14}" for T in Ts)
            + "".join(f"{'peak+ T=' + str(T):>15}" for T in Ts)
            + "".join(f"{'ms T=' + str(T):>11}" for T in Ts))
    lines = [head, "-" * len(head)]
    for r in res["rows"]:
        lines.append(f"{r['scheme']:<16}{r['extra_params']:>13,}"
                     + "".join(f"{_size(r['T'][T]['hook_bytes']):>14}" for T in Ts)
                     + "".join(f"{_size(r['T'][T].get('peak_extra_bytes')):>15}" for T in Ts)
                     + "".join(f"{r['T'][T]['ms']:>11.2f}" for T in Ts))
    m = res["model"]
    lines.append(f"backend {res['backend']}; TinyGPT vocab {m['vocab_size']}, d_model {m['d_model']}, "
                 f"{m['n_layers']} layers, {m['n_heads']} heads, batch {m['batch']}, max_len {m['max_len']}, "
                 f"float32. hook = bytes allocated inside the scheme's hooks per forward; peak+ = forward peak "
                 f"above 'none' (a few hundred bytes that stay flat as T grows are Python objects and small arrays); "
                 f"ms = best of {res['repeats']} forwards (no_grad), rounds alternating.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print machine-readable JSON")
    ap.add_argument("--schemes", nargs="+", choices=sorted(SCHEMES), help="only these schemes (default: all)")
    ap.add_argument("--T", nargs="+", type=int, default=[64, 256, 1024], help="sequence lengths")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5, help="timed forwards per point (the best is reported)")
    args = ap.parse_args(argv)
    schemes = args.schemes
    if schemes and "none" not in schemes:
        schemes = ["none"] + schemes                 # the baseline of the peak+ column
    res = run(schemes, tuple(args.T), args.batch, args.repeats)
    print(json.dumps(res, indent=2) if args.json else table(res))


if __name__ == "__main__":
    main()
