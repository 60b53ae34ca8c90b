r"""The reader's clock: every chapter run from a fresh clone the way a reader runs it, quiet and beside a busy process.

A reader clones the repository, opens a chapter and runs it top to bottom in their own kernel, with
whatever thread settings their machine has: none. So this script

1. clones the repository (``git clone``, the commit asked for) into a temporary folder;
2. converts each chapter with ``jupytext --to ipynb`` next to it, in the clone's ``chapters/``;
3. runs it with ``jupyter nbconvert --to notebook --execute`` in the default environment: the
   thread variables (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
   ``OPENBLAS_THREAD_TIMEOUT``) and the test suite's settings are removed from the child's
   environment, and ``PYTHONPATH`` points at the clone, so its own code is what imports;
4. times each run (wall seconds, the whole ``nbconvert`` command, kernel start included), first
   quiet, then with one other busy process beside it (``python -c "while True: pass"``, one core
   held, killed after each chapter).

It writes ``<label>.md`` (chapter, seconds quiet, seconds busy, under 25 s?, the 1-minute load average
before each run) and ``<label>.json``
(the commit, the date, the machine: nproc and load average at the start and before every run, each
run's three slowest cells, and the command). The chapter processes are never niced: a reader's are not.

    python bench_results/reader_clock/run.py --label before
    python bench_results/reader_clock/run.py --label after --busy-slowest 5   # busy only for the 5 slowest
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUDGET_S = 25   # chapters/README.md: a chapter runs top to bottom in under 25 s on a 2-core laptop
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
SUITE_VARIABLES = ("PE_USE_REFERENCE", "PE_MAINTAINER", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION", "CI")
BUSY = [sys.executable, "-c", "while True: pass"]


def reader_env(clone):
    """This process's environment without any thread setting or test-suite setting, importing from ``clone``."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES + SUITE_VARIABLES}
    env["PYTHONPATH"] = str(clone)   # what `pip install -e .` in the clone would give the reader
    return env


def clone_at(repo, commit, folder):
    subprocess.run(["git", "clone", "-q", str(repo), str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "checkout", "-q", commit], check=True)
    return subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def run_chapter(clone, chapter, env, timeout):
    """Convert and execute one chapter; returns (seconds, ok, the last lines of its errors)."""
    source = clone / "chapters" / f"{chapter}.py"
    notebook = source.with_suffix(".ipynb")
    subprocess.run(["jupytext", "--quiet", "--to", "ipynb", "-o", str(notebook), str(source)],
                   check=True, env=env, cwd=clone)
    command = ["jupyter", "nbconvert", "--to", "notebook", "--execute", "--output",
               f"{chapter}.executed.ipynb", str(notebook)]
    start = time.monotonic()
    try:
        out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=clone, timeout=timeout)
        ok, tail = out.returncode == 0, out.stderr[-1500:]
    except subprocess.TimeoutExpired:
        ok, tail = False, f"killed after {timeout} s"
    return time.monotonic() - start, ok, tail, slowest_cells(notebook.with_name(f"{chapter}.executed.ipynb"))


def slowest_cells(executed, n=3):
    """The ``n`` slowest code cells of an executed notebook (nbclient's timestamps): where a chapter's time goes."""
    if not executed.is_file():
        return []
    cells = []
    for i, c in enumerate(json.loads(executed.read_text())["cells"]):
        t = c.get("metadata", {}).get("execution", {})
        if c["cell_type"] == "code" and "iopub.execute_input" in t and "shell.execute_reply" in t:
            seconds = (datetime.datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00"))
                       - datetime.datetime.fromisoformat(t["iopub.execute_input"].replace("Z", "+00:00")))
            first = next((line for line in "".join(c["source"]).splitlines() if line.strip()), "")
            cells.append({"cell": i, "seconds": round(seconds.total_seconds(), 1), "first_line": first[:80]})
    return sorted(cells, key=lambda c: -c["seconds"])[:n]


def timed(clone, chapter, env, timeout, busy):
    """One timed run, with one busy process beside it when ``busy``; the load average just before it."""
    load = os.getloadavg()
    spinner = subprocess.Popen(BUSY) if busy else None
    try:
        if spinner:
            time.sleep(0.5)   # let the spinner take its core before the chapter starts
        seconds, ok, tail, cells = run_chapter(clone, chapter, env, timeout)
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
    return {"seconds": round(seconds, 1), "ok": ok, "load_before": [round(x, 2) for x in load], "slowest_cells": cells,
            **({} if ok else {"error_tail": tail})}


def cell(run):
    return "not run" if run is None else f"{run['seconds']:.1f}" + ("" if run["ok"] else " (FAILED)")


def load(run):
    return "" if run is None else f"{run['load_before'][0]:.1f}"


def table(rows):
    lines = ["| chapter | seconds quiet | seconds busy | under 25 s? | load before, quiet | load before, busy |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, r in rows.items():
        q, b = r.get("quiet"), r.get("busy")
        good = all(x["ok"] and x["seconds"] <= BUDGET_S for x in (q, b) if x is not None)
        verdict = ("yes" if good else "no") + ("" if b is not None else " (quiet only)")
        lines.append(f"| {name} | {cell(q)} | {cell(b)} | {verdict} | {load(q)} | {load(b)} |")
    total = lambda k: sum(r[k]["seconds"] for r in rows.values() if r.get(k))  # noqa: E731
    lines.append(f"| **all** | {total('quiet'):.1f} | {total('busy'):.1f} | | | |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", required=True, help="names the outputs: <label>.md and <label>.json")
    p.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this one)")
    p.add_argument("--commit", default="HEAD", help="what to check out in the clone (default: HEAD)")
    p.add_argument("--chapters", nargs="*", help="chapter names (default: every chapters/NN_*.py)")
    p.add_argument("--busy-slowest", type=int, default=None,
                   help="run busy only for the N slowest quiet chapters (default: busy for every chapter)")
    p.add_argument("--timeout", type=float, default=600, help="seconds before a chapter's run is killed")
    p.add_argument("--out", default=str(HERE), help="folder for the outputs (default: this script's)")
    args = p.parse_args(argv)

    started = datetime.datetime.now().astimezone()
    load_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="reader_clock_"))
    try:
        clone = work / "repo"
        commit = clone_at(args.repo, args.commit, clone)
        env = reader_env(clone)
        where = subprocess.run([sys.executable, "-c", "import mini_transformer; print(mini_transformer.__file__)"],
                               env=env, cwd=clone / "chapters", capture_output=True, text=True, check=True)
        if not where.stdout.strip().startswith(str(clone)):
            raise RuntimeError(f"the clone's mini_transformer does not import first: {where.stdout.strip()}")
        chapters = args.chapters or sorted(p.stem for p in (clone / "chapters").glob("[0-9]*.py"))
        rows = {name: {} for name in chapters}
        for name in chapters:
            rows[name]["quiet"] = timed(clone, name, env, args.timeout, busy=False)
            print(f"{name} quiet {rows[name]['quiet']['seconds']:.1f} s", flush=True)
        busy = chapters
        if args.busy_slowest is not None:
            busy = sorted(chapters, key=lambda n: -rows[n]["quiet"]["seconds"])[:args.busy_slowest]
        for name in chapters:
            if name in busy:
                rows[name]["busy"] = timed(clone, name, env, args.timeout, busy=True)
                print(f"{name} busy {rows[name]['busy']['seconds']:.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    record = {
        "commit": commit, "date": started.isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "load_average_at_start": [round(x, 2) for x in load_start],
                    "platform": platform.platform(), "python": platform.python_version()},
        "command": "python " + " ".join(shlex.quote(a) for a in [str(Path(__file__).relative_to(ROOT))]
                                        + (sys.argv[1:] if argv is None else list(argv))),
        "how": "fresh git clone; jupytext --to ipynb; jupyter nbconvert --to notebook --execute; env without "
               + ", ".join(THREAD_VARIABLES + SUITE_VARIABLES) + "; busy = one `python -c 'while True: pass'`",
        "budget_s": BUDGET_S,
        "chapters": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.label}.json").write_text(json.dumps(record, indent=1) + "\n")
    header = (f"Commit `{commit[:10]}`, {started:%Y-%m-%d %H:%M}, {os.cpu_count()} cores, load average at start "
              f"{', '.join(f'{x:.2f}' for x in load_start)} (1, 5, 15 min). Command: `{record['command']}`.\n\n")
    (out / f"{args.label}.md").write_text(header + table(rows))
    print(header + table(rows))


if __name__ == "__main__":
    main()
