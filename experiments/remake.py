r"""Remake the evidence: every experiment the chapters cite, at its committed seeds, in one resumable command.

    python -m experiments.remake [--jobs N] [--only NAME ...] [--list] [--check] [--parts DIR]

Each experiment is one *unit*: a child process ``python -m experiments.MODULE --out PARTS/NAME --no-progress``
(with the arguments that give its committed seeds) whose environment sets ``OPENBLAS_NUM_THREADS=1
OMP_NUM_THREADS=1``, as the committed records were made: N children on N cores, not N times as many BLAS
threads waiting on each other. ``--jobs N`` runs N units at once, the longest chain first (a unit and the units
that read its record, by the wall times their records state: ``in_order``), so the long ones do not start last. A unit that finishes writes ``done.json`` beside its result
in ``PARTS/NAME/`` (atomically, like the result), so a rerun after a crash or a Ctrl-C skips it and says how many
it reused; the experiments that keep each finished seed (``--parts``) are given ``PARTS/NAME/seeds/``, so inside
a unit a rerun resumes at the seed it was on. A unit is reused whatever changed since: after a fix to an
experiment, delete its folder (or use another ``--parts``).  ``PARTS`` is ``build/evidence/remake`` for a plain run and
``build/evidence/check`` for ``--check``, so a check after a remake remakes every record instead of comparing
the remade records with themselves.

Without ``--check`` each finished unit's files are copied (atomically) into ``results/``, where the chapters read
them, as soon as it finishes: an experiment that reads another's record (``after``) starts once that record is
remade. Then the cost table ``bench_results/experiment_costs.md`` is rewritten, each row this command ran with
the wall time it measured.

With ``--check`` nothing in ``results/`` changes: each remade record is compared with the committed one, number
by number, and the command exits 1 if any differs. No record states a tolerance, so a number matches when it
is the committed one at the digits the record stores (``abs(new - old) <= 0.5e-k`` for a number stored with k
decimals; an integer exactly). A float written in full, as ``json`` writes it (``FULL_DIGITS`` significant digits
or more), carries no chosen precision: its last digits are the rounding of one summation order, which another BLAS
build or another CPU's vector width changes, so it matches within ``FULL_RELATIVE`` of itself or ``FULL_ABSOLUTE``, whichever is larger. A record may widen
that with a ``tolerance`` key (absolute, for the numbers in the dict that holds it and below).
Strings (the verdicts) must be equal. What describes the run rather than its outcome (``environment``, the
commands, the commit it ran at, wall times, load averages) is not compared.
"""
import argparse
import dataclasses
import decimal
import json
import math
import os
import subprocess
import sys
import time

from tqdm.auto import tqdm

from mini_transformer.engine.files import atomic_write
from . import costs
from .common import RESULTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = os.path.join(ROOT, "build", "evidence")
#: a plain run and a check keep their units apart: a check must not reuse the records a remake just installed
PARTS_OF = {False: os.path.join(PARTS, "remake"), True: os.path.join(PARTS, "check")}
COST_TABLE = os.path.join(ROOT, "bench_results", "experiment_costs.md")
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@dataclasses.dataclass(frozen=True)
class Unit:
    name: str               # the record it makes: results/NAME.json
    module: str             # run as python -m MODULE
    args: tuple = ()        # what makes the committed seeds, where the default does not
    keeps_seeds: bool = False   # the experiment takes --parts DIR and keeps each finished seed there
    after: tuple = ()       # records it reads: it starts once their units are done

    def command(self, folder):
        argv = [sys.executable, "-m", self.module, *self.args, "--out", folder, "--no-progress"]
        return argv + (["--parts", os.path.join(folder, "seeds")] if self.keeps_seeds else [])


UNITS = (
    Unit("attention_sinks_settings", "experiments.attention_sinks"),
    Unit("bake_off_seeds", "experiments.bake_off_seeds", keeps_seeds=True),   # train_short_test_long at 3 seeds
    Unit("chapter01_nope", "experiments.chapter01_nope"),
    Unit("chapter02_adding", "experiments.chapter02_adding"),
    Unit("chapter03_learned", "experiments.chapter03_learned", after=("relative_bias_generalisation",)),
    Unit("context_extension", "experiments.context_extension", keeps_seeds=True),
    Unit("input_schemes_at_train_len", "experiments.input_schemes_at_train_len"),
    Unit("long_context", "experiments.long_context", keeps_seeds=True),
    Unit("permutation", "experiments.permutation"),
    Unit("pi_head_width", "experiments.pi_head_width", keeps_seeds=True),
    Unit("positions_today", "experiments.positions_today", keeps_seeds=True),
    Unit("relative_bias_generalisation", "experiments.relative_bias_generalisation"),
    Unit("rope_copy", "experiments.rope_copy"),
    # the committed record holds seeds 0 to 4 of every arm (made in parts with --merge); the default is 0, 1, 2
    Unit("short_long_seeds", "experiments.short_long_seeds", args=("--seeds", "0,1,2,3,4")),
    Unit("sink_control", "experiments.sink_control", after=("attention_sinks_settings",)),
    Unit("sink_text", "experiments.sink_text"),
    Unit("train_short_test_long", "experiments.train_short_test_long"),
)

#: keys that describe a run (its machine, time and command), not what it measured: --check skips them
NOT_COMPARED = {"environment", "command", "commands", "claims_command", "claims_recomputed_by", "load_average",
                "commit"}
#: what a unit's folder holds besides the files its experiment wrote
BOOKKEEPING = {"done.json", "log.txt", "seeds"}


# ---------------------------------------------------------------------------
# Comparing a remade record with the committed one
# ---------------------------------------------------------------------------

def read_stored(text):
    """A committed record with every float kept as the ``Decimal`` it was written as (its digits say its precision)."""
    return json.loads(text, parse_float=decimal.Decimal)


#: a float stored with this many significant digits or more was written in full (``repr``), not rounded by its record
FULL_DIGITS = 15
#: how far, relative to itself, a float written in full may move: far above float64's rounding of a different
#: summation order (about 1e-16 a step, compounding over a run), far below any digit a chapter quotes
FULL_RELATIVE = 1e-9
#: ... and how far from zero such a float may move: a number under it is itself rounding (NoPE's equivariance gap
#: of about 1e-16, a difference of two equal sums), which a different summation order changes entirely
FULL_ABSOLUTE = 1e-12


def allowed(stored, tolerance=0.0):
    """How far a remade number may lie from ``stored``: the record's tolerance, half its last stored digit, or, for a
    float written in full, ``FULL_RELATIVE`` of its size or ``FULL_ABSOLUTE``."""
    if isinstance(stored, decimal.Decimal) and stored.is_finite():
        digit = 0.5 * 10.0 ** stored.as_tuple().exponent
        if len(stored.as_tuple().digits) >= FULL_DIGITS:
            digit = max(digit, FULL_RELATIVE * abs(float(stored)), FULL_ABSOLUTE)
        return max(tolerance, digit)
    return tolerance


def differences(old, new, path="", tolerance=0.0):
    """``(numbers compared, [(path, committed, remade, allowed)])`` for a committed record ``old`` (``read_stored``)
    and a remade one ``new`` (plain ``json``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        tolerance = float(old.get("tolerance", tolerance))
        compared, found = 0, []
        for key in sorted(set(old) | set(new)):
            if key in NOT_COMPARED or key.endswith("seconds"):
                continue
            where = f"{path}/{key}" if path else key
            if key not in old or key not in new:
                found.append((where, old.get(key, "(absent)"), new.get(key, "(absent)"), None))
                continue
            n, d = differences(old[key], new[key], where, tolerance)
            compared, found = compared + n, found + d
        return compared, found
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return 0, [(path, f"{len(old)} items", f"{len(new)} items", None)]
        compared, found = 0, []
        for i, (a, b) in enumerate(zip(old, new)):
            n, d = differences(a, b, f"{path}/{i}", tolerance)
            compared, found = compared + n, found + d
        return compared, found
    numbers = (int, float, decimal.Decimal)
    if (isinstance(old, numbers) and isinstance(new, numbers)
            and not isinstance(old, bool) and not isinstance(new, bool)):
        a, b, limit = float(old), float(new), allowed(old, tolerance)
        same = (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= limit
        return 1, [] if same else [(path, old, new, limit)]
    return 0, [] if old == new and type(old) is type(new) else [(path, old, new, None)]


def check_unit(unit, folder, results):
    """``(numbers compared, differences)`` of the unit's remade record against the committed one."""
    committed = os.path.join(results, f"{unit.name}.json")
    if not os.path.exists(committed):
        return 0, [("", "(no committed record)", f"{unit.name}.json remade", None)]
    with open(committed) as f:
        old = read_stored(f.read())
    with open(os.path.join(folder, f"{unit.name}.json")) as f:
        new = json.load(f)
    return differences(old, new)


def _short(value):
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def difference_line(name, path, old, new, limit):
    within = "" if limit is None else f" (allowed ±{limit:.2g})"
    return f"{name}: {path or '(the record)'}: committed {_short(old)}, remade {_short(new)}{within}"


# ---------------------------------------------------------------------------
# Running the units
# ---------------------------------------------------------------------------

def finished(unit, parts):
    """The unit's ``done.json`` (its command, wall time and load), or None if it has not finished."""
    path = os.path.join(parts, unit.name, "done.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def install(unit, parts, results):
    """Copy the files the unit's experiment wrote into ``results`` (each atomically)."""
    folder = os.path.join(parts, unit.name)
    for entry in sorted(os.listdir(folder)):
        if entry in BOOKKEEPING or entry.startswith("."):
            continue
        with open(os.path.join(folder, entry), "rb") as f:
            data = f.read()
        atomic_write(os.path.join(results, entry), lambda f: f.write(data))


def committed_costs(results):
    """``{record name: wall time in seconds}`` from the committed records (None where a record states none)."""
    return {row["name"]: row["seconds"] for row in costs.cost_rows(results)}


class Runner:
    """The children: at most ``jobs`` at once, each unit once its ``after`` records are done."""

    def __init__(self, parts, results, jobs, install_each, progress):
        self.parts, self.results, self.jobs = parts, results, jobs
        self.install_each, self.progress = install_each, progress
        self.running = {}        # name -> (Popen, log file, start time, load average at start)
        self.failed = []

    def start(self, unit):
        folder = os.path.join(self.parts, unit.name)
        os.makedirs(folder, exist_ok=True)
        kept = os.path.join(folder, "seeds")
        reused = len(os.listdir(kept)) if os.path.isdir(kept) else 0
        log = open(os.path.join(folder, "log.txt"), "a")
        log.write(f"\n$ {' '.join(unit.command(folder))}\n" + (f"({reused} seed parts kept from before)\n"
                                                                 if reused else ""))
        log.flush()
        env = {**os.environ, **ONE_BLAS_THREAD}
        proc = subprocess.Popen(unit.command(folder), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        self.running[unit.name] = (unit, proc, log, time.perf_counter(), os.getloadavg())
        if reused:
            self.say(f"{unit.name}: {reused} finished seed parts kept from an earlier run")

    def finish(self, name):
        unit, proc, log, start, load = self.running.pop(name)
        log.close()
        seconds = time.perf_counter() - start
        folder = os.path.join(self.parts, name)
        if proc.returncode != 0 or not os.path.exists(os.path.join(folder, f"{name}.json")):
            self.failed.append(name)
            self.say(f"{name} failed (exit code {proc.returncode}) after {seconds:.0f} s; its output is in "
                     f"{os.path.join(folder, 'log.txt')}")
            return
        command = " ".join(f"{k}={v}" for k, v in ONE_BLAS_THREAD.items()) + " python -m " + " ".join(
            [unit.module, *unit.args, "--out", f"PARTS/{name}", "--no-progress"])
        done = {"name": name, "seconds": round(seconds, 1), "load_average": list(load), "jobs": self.jobs,
                "command": command, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        if self.install_each:                # before done.json: a unit marked done is in results/ too
            install(unit, self.parts, self.results)
        atomic_write(os.path.join(folder, "done.json"), lambda f: f.write(json.dumps(done, indent=2).encode()))
        self.say(f"{name}: done in {seconds:.0f} s")

    def stop(self):
        """Ctrl-C: end the children this runner started (each by its own id); finished units stay saved."""
        for name, (unit, proc, *_) in list(self.running.items()):
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
            if proc.returncode == 0:        # it finished just before the Ctrl-C: keep it
                self.finish(name)
            else:
                self.running.pop(name)[2].close()

    def say(self, text):
        tqdm.write(text, file=sys.stderr)

    def run(self, todo, done_names):
        """Run ``todo`` (units, in the order to start them: ``in_order``); returns when every unit has finished, failed or been blocked."""
        waiting = list(todo)
        bar = tqdm(total=len(todo), unit="experiment", disable=not self.progress, file=sys.stderr)
        try:
            while waiting or self.running:
                for unit in list(waiting):
                    if len(self.running) >= self.jobs:
                        break
                    blocked = [a for a in unit.after if a in self.failed]
                    if blocked:
                        waiting.remove(unit)
                        self.failed.append(unit.name)
                        self.say(f"{unit.name} not run: it reads {blocked[0]}, which failed")
                        bar.update(1)
                    elif all(a in done_names or a not in {u.name for u in todo} for a in unit.after):
                        waiting.remove(unit)
                        self.start(unit)
                if (getattr(bar, "postfix", None) or "") != ", ".join(self.running):   # redrawn only on a change
                    bar.set_postfix_str(", ".join(self.running))
                time.sleep(0.2)
                for name, (unit, proc, *_) in list(self.running.items()):
                    if proc.poll() is not None:
                        self.finish(name)
                        if name not in self.failed:
                            done_names.add(name)
                        bar.update(1)
        finally:
            bar.close()


def in_order(units, known):
    r"""``units`` in the order to start them: the longest chain first, a chain being a unit and every unit that
    waits on it (``after``), costed by ``known`` (seconds by name; a unit with no known cost counts 0). The costliest
    unit alone would start first and the cheap one that a costly one waits on last, so the costly one would
    start at the very end: ``sink_control`` (1346 s) waits on ``attention_sinks_settings`` (244 s)."""
    waiting_on = {u.name: [w for w in units if u.name in w.after] for u in units}

    def chain(unit):
        return (known.get(unit.name) or 0.0) + max((chain(w) for w in waiting_on[unit.name]), default=0.0)
    return sorted(units, key=lambda u: -chain(u))


def cost_table(rows, done):
    """The committed records' cost rows, each with this command's wall time where it remade the record."""
    out = []
    for row in rows:
        d = done.get(row["name"])
        if d is not None:
            row = dict(row, seconds=d["seconds"], load=d["load_average"][0],
                       per_seed=d["seconds"] / len(row["seeds"]) if row["seeds"] else None,
                       command=f"{d['command']} (experiments.remake, {d['jobs']} at a time)")
        out.append(row)
    return costs.cost_table(out)


def write_cost_table(path, results, done):
    header = ("# What the experiments cost\n\nMade by `python -m experiments.remake`: each wall time is that "
              "experiment's child process as the command measured it, one BLAS thread each, several at a time "
              "(the command column says how many); a row the command did not remake keeps the time its record "
              "states. Runs on a shared machine (a load average above its cores) are upper bounds, not "
              "benchmarks.\n\n")
    text = header + cost_table(costs.cost_rows(results), done)
    atomic_write(path, lambda f: f.write(text.encode()))


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------

def list_units(units, results, parts):
    known = committed_costs(results)
    print(f"{'experiment':<30} {'committed cost (s)':>18}  {'kept':<5} command  (kept: finished in {parts})")
    for unit in units:
        seconds = known.get(unit.name)
        state = "yes" if finished(unit, parts) else "no"
        cost = "not recorded" if seconds is None else f"{seconds:.0f}"
        print(f"{unit.name:<30} {cost:>18}  {state:<5} python -m {' '.join([unit.module, *unit.args])}")
    total = sum(s for s in (known.get(u.name) for u in units) if s is not None)
    print(f"sum of the committed costs: {total:.0f} s ({total / 3600:.1f} h); with --jobs N, about that over N, "
          f"and never under the longest, {max((known.get(u.name) or 0 for u in units), default=0):.0f} s")


def check_report(units, parts, results, failed=()):
    """Print the table of what matched and every difference; returns how many units differ or did not finish."""
    rows, lines = [], []
    for unit in units:
        compared, found = check_unit(unit, os.path.join(parts, unit.name), results)
        rows.append((unit.name, compared, len(found)))
        lines += [difference_line(unit.name, *d) for d in found]
    print(f"{'experiment':<30} {'numbers compared':>16} {'differences':>12}  result")
    for name, compared, n in rows:
        print(f"{name:<30} {compared:>16} {n:>12}  {'matches' if n == 0 else 'DIFFERS'}")
    for name in failed:
        print(f"{name:<30} {'-':>16} {'-':>12}  DID NOT FINISH (its log: {os.path.join(parts, name, 'log.txt')})")
    report = os.path.join(parts, "check.txt")
    atomic_write(report, lambda f: f.write("".join(line + "\n" for line in lines).encode()))
    for line in lines[:40]:
        print(line)
    if len(lines) > 40:
        print(f"... and {len(lines) - 40} more differences")
    if lines:
        print(f"every difference: {report}")
    return sum(1 for _, _, n in rows if n) + len(failed)


def main(argv=None, units=UNITS, results=RESULTS, cost_file=COST_TABLE):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1, help="experiments run at once, one process and one BLAS thread "
                                                        "each (default 1)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these experiments only (names as --list prints)")
    ap.add_argument("--list", action="store_true", help="print the experiments and their committed cost, run nothing")
    ap.add_argument("--check", action="store_true",
                    help="remake and compare with the committed records, changing none; exit code 1 on a difference")
    ap.add_argument("--parts", default=None, help=f"folder that keeps each finished experiment (default "
                                                  f"{PARTS_OF[False]}, and {PARTS_OF[True]} with --check)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    args.parts = args.parts or PARTS_OF[args.check]
    names = [u.name for u in units]
    if args.jobs < 1:
        ap.error(f"--jobs is {args.jobs}; it needs at least 1 (one experiment at a time).")
    unknown = [n for n in args.only or [] if n not in names]
    if unknown:
        ap.error(f"--only names {unknown[0]!r}, which is not an experiment here; they are {', '.join(names)}.")
    chosen = [u for u in units if args.only is None or u.name in args.only]
    if args.list:
        list_units(chosen, results, args.parts)
        return 0
    known = committed_costs(results)
    chosen = in_order(chosen, known)
    done = {u.name: finished(u, args.parts) for u in chosen}
    reused = [u for u in chosen if done[u.name]]
    todo = [u for u in chosen if not done[u.name]]
    print(f"{len(chosen)} experiments: {len(reused)} reused from {args.parts} "
          f"({', '.join(u.name for u in reused) or 'none'}), {len(todo)} to run, {args.jobs} at a time",
          file=sys.stderr)
    if not args.check:
        for unit in reused:
            install(unit, args.parts, results)
    runner = Runner(args.parts, results, args.jobs, install_each=not args.check,
                    progress=not args.no_progress)
    start = time.perf_counter()
    try:
        runner.run(todo, {u.name for u in reused})
    except KeyboardInterrupt:
        runner.stop()
        now = sum(1 for u in chosen if finished(u, args.parts))
        print(f"stopped: {now} of {len(chosen)} experiments finished and kept in {args.parts}; "
              "run the same command again to go on from there", file=sys.stderr)
        return 130
    ran = [u for u in chosen if finished(u, args.parts)]
    print(f"{len(todo) - len(runner.failed)} of {len(todo)} experiments run in {time.perf_counter() - start:.0f} s "
          f"of wall time, {args.jobs} at a time ({len(reused)} reused)", file=sys.stderr)
    if args.check:
        differing = check_report(ran, args.parts, results, runner.failed)
    else:
        write_cost_table(cost_file, results, {u.name: finished(u, args.parts) for u in units
                                              if finished(u, args.parts)})
        differing = 0
        print(f"{len(ran)} records written to {results}; the cost table to {cost_file}")
    if runner.failed:
        print(f"failed: {', '.join(runner.failed)}", file=sys.stderr)
    return 1 if runner.failed or differing else 0


if __name__ == "__main__":
    sys.exit(main())
