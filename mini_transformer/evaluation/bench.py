r"""Training-step throughput of the engine, both kernel sets, and the same model in PyTorch eager mode.

    python -m mini_transformer.evaluation.bench            # a table
    python -m mini_transformer.evaluation.bench --json     # everything, machine-readable
    python -m mini_transformer.evaluation.bench --configs workbook larger long --check

Three configurations: *workbook* (vocab 64, d_model 64, 2 layers, 4 heads, T 64,
batch 16), *larger* (vocab 64, d_model 128, 4 layers, 4 heads, T 128, batch
32) and *long* (vocab 64, d_model 128, 2 layers, 4 heads, T 512, batch 4,
where attention dominates), all with RoPE and AdamW; the default runs
*workbook* and *larger*. The engine runs with ``kernels="fast"`` and with
``kernels="reference"``, and PyTorch (when it is importable; it is never a
requirement) runs the same model on the same threads. The engines run in
alternating rounds in one process and each ratio is taken from the median
round of each, so a noisy machine slows them alike. A round lasts about a
quarter of a second (``--steps`` fixes it instead). Achieved FLOP/s is set
against a float32 matrix-multiply ceiling measured in the same run.

Peak memory is the peak growth of allocated bytes during one step, after the
timed rounds: for the engine as ``tracemalloc`` sees it (NumPy reports its
buffers to it), for PyTorch from the allocation and free events of
``torch.profiler`` (``profile_memory=True``), the same quantity from PyTorch's
own CPU allocator; the JSON names each engine's measure
(``peak_memory_measure``). ``--check`` exits with status 1, after the report,
when the fast set was slower than the reference on any configuration
(``slower_than_reference``).

The bench tunes its process first (``kernels.tune()``: threads for the fast
kernels, freed memory kept) and runs with OpenBLAS's idle threads spinning
2^22 cycles (``kernels.tuning.relaunch_with_blas_spin``). After the last matrix
product of a round, each engine's idle BLAS or OpenMP threads keep spinning
for a while on the cores the next engine's round needs, so the bench waits
``settle_seconds()`` after every round, untimed. The JSON records every
setting. Figures and the commands that made them: ``bench_results/``.
"""
import argparse
import json
import os
import statistics
import sys
import time
import tracemalloc

from ..engine import backend, kernels
from ..engine.kernels import tuning
from ..model import GPTConfig, TinyGPT

CONFIGS = {
    "workbook": dict(vocab_size=64, d_model=64, n_layers=2, n_heads=4, T=64, batch=16),
    "larger": dict(vocab_size=64, d_model=128, n_layers=4, n_heads=4, T=128, batch=32),
    "long": dict(vocab_size=64, d_model=128, n_layers=2, n_heads=4, T=512, batch=4),
}
DEFAULT_CONFIGS = ("workbook", "larger")
PEAK_MEMORY_MEASURE = {"fast": "tracemalloc", "reference": "tracemalloc",
                       "torch": "torch.profiler memory events"}


def train_flops(c):
    r"""FLOPs of one training step: 6 N per token for the weights (forward 2N, backward 4N) plus
    attention's score and value products, 12 L T d_model per token (forward and backward)."""
    d, L = c["d_model"], c["n_layers"]
    n_matmul = L * 12 * d * d + d * c["vocab_size"]   # qkv 3d^2, out d^2, MLP 8d^2 per layer; the head
    tokens = c["batch"] * c["T"]
    return tokens * (6 * n_matmul + 12 * L * c["T"] * d)


def matmul_ceiling(n=512, repeats=20):
    """float32 FLOP/s of an n x n matrix product on the active backend (best of ``repeats``)."""
    a = backend.rng(0).normal(size=(n, n))
    b = backend.rng(1).normal(size=(n, n))
    a @ b
    best = float("inf")
    for _ in range(repeats):
        backend.synchronize()
        t = time.perf_counter()
        a @ b
        backend.synchronize()
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best


def numpy_engine(c, kernel_set="fast"):
    """A training step of our engine with the kernel set ``kernel_set``, on fixed data."""
    cfg = GPTConfig(vocab_size=c["vocab_size"], d_model=c["d_model"], n_layers=c["n_layers"],
                    n_heads=c["n_heads"], max_len=c["T"], positional="rope", kernels=kernel_set)
    model = TinyGPT(cfg)
    opt = model.kernels.AdamW(model.parameters(), lr=1e-3)
    rng = backend.rng(0)
    x = rng.integers(0, c["vocab_size"], (c["batch"], c["T"]))
    y = rng.integers(0, c["vocab_size"], (c["batch"], c["T"]))

    def step():
        loss = model.loss(x, y)
        opt.zero_grad()                 # as the PyTorch step does: the optimiser's own list, no module walk
        loss.backward()
        model.kernels.clip_grad_norm(opt.params, 1.0)
        opt.step()
        backend.synchronize()
    step.model, step.opt, step.data = model, opt, (x, y)   # for profile_ops, which times the same step op by op
    return step


def torch_engine(c, threads, profile=False):
    """The same model in PyTorch eager mode (pre-norm, fused qkv, rotate-half RoPE, GELU-tanh, AdamW).

    ``profile=True`` puts each op in a ``torch.profiler.record_function`` span named ``"op: NAME"``
    (``profile_ops`` reads them); the arithmetic is the same.
    """
    import contextlib
    import torch
    import torch.nn as tnn
    import torch.nn.functional as tF

    def span(name):
        return torch.profiler.record_function("op: " + name) if profile else contextlib.nullcontext()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    d, H, T = c["d_model"], c["n_heads"], c["T"]
    d_head = d // H
    inv_freq = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    cos, sin = ang.cos(), ang.sin()

    def rope(t):
        t1, t2 = t[..., :d_head // 2], t[..., d_head // 2:]
        return t * cos + torch.cat([-t2, t1], dim=-1) * sin

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            self.qkv, self.o = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
            self.fc, self.proj = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

        def forward(self, x):
            B = x.shape[0]
            with span("layer norm"):
                h = self.n1(x)
            with span("q, k, v projection"):
                q, k, v = self.qkv(h).view(B, T, 3, H, d_head).permute(2, 0, 3, 1, 4)
            with span("RoPE"):
                q, k = rope(q), rope(k)
            with span("attention"):
                y = tF.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).reshape(B, T, d)
            with span("linear (out, MLP, head)"):
                y = self.o(y)
            x = x + y
            with span("layer norm"):
                h = self.n2(x)
            with span("linear (out, MLP, head)"):
                h = self.fc(h)
            with span("GELU"):
                h = tF.gelu(h, approximate="tanh")
            with span("linear (out, MLP, head)"):
                h = self.proj(h)
            return x + h

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok = tnn.Embedding(c["vocab_size"], d)
            self.blocks = tnn.ModuleList(Block() for _ in range(c["n_layers"]))
            self.nf = tnn.LayerNorm(d)
            self.head = tnn.Linear(d, c["vocab_size"], bias=False)

        def forward(self, idx):
            with span("embedding"):
                x = self.tok(idx)
            for b in self.blocks:
                x = b(x)
            with span("layer norm"):
                x = self.nf(x)
            with span("linear (out, MLP, head)"):
                return self.head(x)

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, c["vocab_size"], (c["batch"], T), generator=g)
    y = torch.randint(0, c["vocab_size"], (c["batch"], T), generator=g)

    def step():
        logits = model(x)
        with span("cross-entropy"):
            loss = tF.cross_entropy(logits.view(-1, c["vocab_size"]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        with span("clip grad norm"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step


def settle_seconds():
    r"""Long enough for idle BLAS threads to stop spinning: 2^n cycles at 1 GHz or faster, n = ``OPENBLAS_THREAD_TIMEOUT``
    (OpenBLAS's default 28 when unset, clamped to [4, 30] as OpenBLAS does), plus 20 ms for OpenMP's spin."""
    try:
        n = int(os.environ.get("OPENBLAS_THREAD_TIMEOUT") or 28)
    except ValueError:
        n = 28
    return 2 ** min(max(n, 4), 30) / 1e9 + 0.02


def _round(step, n):
    t = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t) / n


def peak_memory(step):
    """Peak bytes allocated by one step, as tracemalloc sees them (NumPy reports its buffers to it)."""
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def torch_peak_memory(step):
    """Peak bytes allocated by one PyTorch step above what was allocated before it: the running sum of the
    allocation (positive) and free (negative) events ``torch.profiler`` records, in time order. Frees of blocks
    allocated before the step are not recorded, as tracemalloc does not count them either."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    current = peak = 0
    for e in events:
        current += e.nbytes()
        peak = max(peak, current)
    return peak


def slower_than_reference(results):
    r"""The configurations of a ``run`` result on which the fast set was slower than the reference:
    reference/fast (``reference_slowdown``) below 1.0. Exactly 1.0 passes: the fast set must be at least
    the reference's speed, as issue 23 asks, and a tie is that."""
    return [name for name, row in results["configs"].items() if row["reference_slowdown"] < 1.0]


def run(names=DEFAULT_CONFIGS, rounds=11, steps_per_round=None, use_torch=True):
    """Median ms a step of every engine on every configuration, from alternating rounds; the ratios between them."""
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    torch = None
    if use_torch and backend.get_backend() != "cupy":
        try:
            import torch
        except ImportError:
            pass
    have_torch = torch is not None
    ceiling = matmul_ceiling()
    settle = settle_seconds()
    out = {"backend": backend.get_backend(), "threads": threads, "matmul_ceiling_flops": ceiling,
           "tuning": tuning.state(), "settle_seconds": settle, "torch": torch.__version__ if have_torch else None,
           "configs": {}}
    for name in names:
        c = CONFIGS[name]
        engines = {"fast": numpy_engine(c, "fast"), "reference": numpy_engine(c, "reference")}
        if have_torch:
            engines["torch"] = torch_engine(c, threads)
        for _ in range(2):  # warm up every engine
            for step in engines.values():
                step()
        n = steps_per_round or max(1, round(0.25 / _round(engines["fast"], 1)))   # about a quarter second a round
        times = {e: [] for e in engines}
        for _ in range(rounds):  # alternate, so a busy moment slows every engine alike
            for e, step in engines.items():
                times[e].append(_round(step, n))
                if len(engines) > 1:
                    time.sleep(settle)       # untimed: this engine's threads stop spinning first
        sec = {e: statistics.median(t) for e, t in times.items()}
        tokens = c["batch"] * c["T"]
        row = {"config": c, "steps_per_round": n, "ms_per_step": sec["fast"] * 1e3,
               "tokens_per_s": tokens / sec["fast"], "achieved_flops": train_flops(c) / sec["fast"],
               "fraction_of_matmul_ceiling": train_flops(c) / sec["fast"] / ceiling,
               "peak_bytes": peak_memory(engines["fast"]) if backend.get_backend() != "cupy" else None,
               "reference_ms_per_step": sec["reference"] * 1e3,
               "reference_slowdown": sec["reference"] / sec["fast"],
               "reference_peak_bytes": (peak_memory(engines["reference"])
                                        if backend.get_backend() != "cupy" else None),
               "peak_memory_measure": {e: PEAK_MEMORY_MEASURE[e] for e in engines}}
        if have_torch:
            row.update(torch_ms_per_step=sec["torch"] * 1e3, torch_tokens_per_s=tokens / sec["torch"],
                       speed_ratio_vs_torch=sec["torch"] / sec["fast"],
                       reference_speed_ratio_vs_torch=sec["torch"] / sec["reference"],
                       torch_peak_bytes=torch_peak_memory(engines["torch"]))
        out["configs"][name] = row
    return out


def busy_process():
    """Start a process that keeps the last core busy (pinned to it where the system allows), as a browser or a
    second experiment would; the caller stops it (``.kill()``)."""
    import subprocess
    last = (os.cpu_count() or 1) - 1
    code = ("import os\n"
            f"if hasattr(os, 'sched_setaffinity'): os.sched_setaffinity(0, {{{last}}})\n"
            "while True: pass\n")
    return subprocess.Popen([sys.executable, "-c", code])


def training_seconds(c, steps, setting, blas_n):
    """Seconds for ``steps`` steps of a fast-kernel training loop on config ``c``, tuned as ``setting`` says:
    ``"default"`` (``kernels.tune()``: every core, the governor on), ``"every core"`` (every core, no governor:
    the settings before the governor) or ``"one thread"`` (the kernels' pool and BLAS on one thread, no
    governor). Each step tells the governor it ended, as ``model.train.train`` does. OpenBLAS goes back to
    ``blas_n`` threads after the run, so the next run's governor finds it as the process started."""
    if setting == "default":
        kernels.tune()
    elif setting == "every core":
        kernels.tune(adaptive=False)
    else:
        kernels.tune(1, adaptive=False)
        tuning.blas_threads(1)
    step = numpy_engine(c, "fast")
    step()                                   # the first step builds caches; not timed
    t = time.perf_counter()
    for _ in range(steps):
        step()
        tuning.step_done()
    seconds = time.perf_counter() - t
    report = tuning.state()["governor"]
    tuning.blas_threads(blas_n)
    return seconds, report


def under_load(names, steps, rounds):
    r"""With one busy process on one core: the default settings' training time over the one-thread time,
    the two alternating, ``rounds`` times per configuration."""
    out = {"busy_core": (os.cpu_count() or 1) - 1, "steps": steps, "configs": {}}
    blas_n = tuning.blas_threads()             # None where OpenBLAS's count cannot be set: then left alone
    busy = busy_process()
    try:
        time.sleep(0.5)                      # the busy process is running before the first round
        for name in names:
            rows = []
            for _ in range(rounds):
                default, report = training_seconds(CONFIGS[name], steps, "default", blas_n)
                one, _ = training_seconds(CONFIGS[name], steps, "one thread", blas_n)
                every, _ = training_seconds(CONFIGS[name], steps, "every core", blas_n)
                rows.append({"default_s": default, "one_thread_s": one, "every_core_no_governor_s": every,
                             "ratio": default / one, "every_core_ratio": every / one, "governor": report})
            out["configs"][name] = {"rounds": rows, "max_ratio": max(r["ratio"] for r in rows),
                                    "median_ratio": statistics.median(r["ratio"] for r in rows)}
    finally:
        busy.kill()
        busy.wait()
    kernels.tune()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print machine-readable JSON")
    ap.add_argument("--configs", nargs="+", default=list(DEFAULT_CONFIGS), choices=list(CONFIGS),
                    help=f"configurations to run (default: {' '.join(DEFAULT_CONFIGS)}; long is T 512 and slow)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="alternating rounds per engine (default 11; with --under-load, 4)")
    ap.add_argument("--steps", type=int, default=None, help="steps per round (default: about 0.25 s a round)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch baseline")
    ap.add_argument("--threads", type=int, default=None, help="threads for the fast kernels (default: one per core)")
    ap.add_argument("--under-load", action="store_true",
                    help="with one busy process on one core, time a training run with the default settings and "
                         "with one thread, alternating --rounds times (default 4); --check then fails above 1.25x")
    ap.add_argument("--load-steps", type=int, default=150, help="training steps per --under-load run (default 150)")
    ap.add_argument("--check", action="store_true",
                    help="exit with status 1 if the fast set was slower than the reference (ref/fast below 1.0) "
                         "on any configuration")
    args = ap.parse_args(argv)
    if (args.rounds is not None and args.rounds < 1) or (args.steps is not None and args.steps < 1):
        ap.error(f"--rounds and --steps must be at least 1, got {args.rounds} and {args.steps}.")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be at least 1, got {args.threads}.")
    if args.under_load:
        res = under_load(args.configs, args.load_steps, args.rounds or 4)
        show, verdict = print_under_load, check_under_load
    else:
        kernels.tune(args.threads, adaptive=False)   # the bench alternates engines: no governor between them
        res = run(args.configs, args.rounds or 11, args.steps, use_torch=not args.no_torch)
        show, verdict = print_table, check
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        show(res)
    return verdict(res) if args.check else 0


def check(res):
    """Print which configurations had the fast set slower than the reference; 1 if any did, else 0."""
    slow = slower_than_reference(res)
    for name in slow:
        print(f"check failed: on {name} the fast set was slower than the reference "
              f"(reference/fast {res['configs'][name]['reference_slowdown']:.2f}x, below 1.0).", file=sys.stderr)
    if not slow:
        print("check passed: the fast set was at least the reference's speed on every configuration.",
              file=sys.stderr)
    return 1 if slow else 0


UNDER_LOAD_LIMIT = 1.25


def check_under_load(res):
    """1 if any round of ``under_load`` ran the default settings above ``UNDER_LOAD_LIMIT`` times one thread."""
    bad = [(name, r["max_ratio"]) for name, r in res["configs"].items() if r["max_ratio"] > UNDER_LOAD_LIMIT]
    for name, ratio in bad:
        print(f"check failed: under load on {name} the default settings took {ratio:.2f}x the one-thread time "
              f"in one round (the limit is {UNDER_LOAD_LIMIT}x).", file=sys.stderr)
    if not bad:
        print(f"check passed: under load the default settings stayed within {UNDER_LOAD_LIMIT}x the one-thread "
              f"time in every round.", file=sys.stderr)
    return 1 if bad else 0


def print_under_load(res):
    """The human-readable report of ``under_load``."""
    print(f"one busy process on core {res['busy_core']}; {res['steps']} training steps a run")
    print("ratio: default / one thread; no governor: every core without the governor / one thread")
    print(f"{'config':<10}{'round':>6}{'default s':>11}{'one thread s':>14}{'ratio':>8}{'no governor s':>15}"
          f"{'ratio':>8}{'governor chose':>16}")
    for name, r in res["configs"].items():
        for i, row in enumerate(r["rounds"], 1):
            chose = row["governor"]["threads_now"] if row["governor"] else "-"
            print(f"{name:<10}{i:>6}{row['default_s']:>11.2f}{row['one_thread_s']:>14.2f}{row['ratio']:>7.2f}x"
                  f"{row['every_core_no_governor_s']:>15.2f}{row['every_core_ratio']:>7.2f}x{chose:>16}")
        print(f"{name:<10}{'median':>6}{'':>25}{r['median_ratio']:>7.2f}x   (max {r['max_ratio']:.2f}x)")


def print_table(res):
    """The human-readable report of a ``run`` result."""
    t = res["tuning"]
    print(f"backend {res['backend']}, {res['threads']} threads, matmul ceiling "
          f"{res['matmul_ceiling_flops'] / 1e9:.1f} GFLOP/s, OPENBLAS_THREAD_TIMEOUT {t['openblas_thread_timeout']}, "
          f"kernel threads {t['threads']}, torch {res['torch'] or 'not run'}")
    print("peak MB: peak growth of allocated memory in one step (engine: tracemalloc; torch: torch.profiler)")
    print(f"{'config':<10}{'fast ms':>9}{'tokens/s':>11}{'GFLOP/s':>9}{'% ceil':>8}{'peak MB':>9}"
          f"{'ref ms':>9}{'ref/fast':>9}{'ref MB':>9}{'torch ms':>10}{'torch MB':>10}{'fast vs torch':>15}"
          f"{'ref vs torch':>14}")

    def mb(r, key):
        return f"{r[key] / 2**20:.1f}" if r.get(key) else "-"
    for name, r in res["configs"].items():
        tms = f"{r['torch_ms_per_step']:.2f}" if "torch_ms_per_step" in r else "-"
        ratio = f"{r['speed_ratio_vs_torch']:.2f}x" if "speed_ratio_vs_torch" in r else "-"
        ref_ratio = f"{r['reference_speed_ratio_vs_torch']:.2f}x" if "speed_ratio_vs_torch" in r else "-"
        print(f"{name:<10}{r['ms_per_step']:>9.2f}{r['tokens_per_s']:>11.0f}{r['achieved_flops'] / 1e9:>9.2f}"
              f"{100 * r['fraction_of_matmul_ceiling']:>7.1f}%{mb(r, 'peak_bytes'):>9}"
              f"{r['reference_ms_per_step']:>9.2f}{r['reference_slowdown']:>8.2f}x{mb(r, 'reference_peak_bytes'):>9}"
              f"{tms:>10}{mb(r, 'torch_peak_bytes'):>10}{ratio:>15}{ref_ratio:>14}")


if __name__ == "__main__":
    tuning.relaunch_with_blas_spin("mini_transformer.evaluation.bench")
    sys.exit(main())
