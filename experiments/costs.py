r"""What the experiments cost: one table from the committed results, to plan seeds and sizes.

``python -m experiments.costs`` reads every ``results/NAME.json`` and prints
(or with ``--out FILE`` writes, atomically) a Markdown table: the seeds each run trained, the wall time its
run recorded, that time per seed, the load average the run saw where it recorded one, and the command
that made it. The times are what the runs measured on the machine that made them (``environment``): on a
shared machine they are upper bounds, not benchmarks.
"""
import argparse
import glob
import json
import os

from mini_transformer.engine.files import atomic_write
from .common import RESULTS


def _seeds(payload):
    """The seeds a result trained: its top-level ``seeds``, else the union over its claims' seeds, else its ``seed``."""
    if isinstance(payload.get("seeds"), list):
        return sorted(set(payload["seeds"]))
    found = {s for rec in payload.get("claims", {}).values() for s in rec.get("seeds", [])}
    if found:
        return sorted(found)
    return [payload["seed"]] if "seed" in payload else []


def _command(payload, env):
    """The command that made a result; a run made in parts (``commands``) is named by its first part and a count."""
    parts = payload.get("commands")
    if isinstance(parts, list) and parts:
        return parts[0] if len(parts) == 1 else f"{parts[0]} (and {len(parts) - 1} more parts)"
    return payload.get("command") or env.get("command")


def _load(env):
    process = env.get("process") or {}
    load = process.get("load_average") or env.get("load_average")
    return None if load is None else float(load[0] if isinstance(load, (list, tuple)) else load)


def cost_rows(folder=RESULTS):
    """One dict per result file: name, seeds, seconds, seconds per seed, load average, command."""
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            payload = json.load(f)
        env = payload.get("environment", {})
        seeds = _seeds(payload)
        seconds = env.get("seconds")
        rows.append(dict(name=os.path.basename(path)[:-5], seeds=seeds, seconds=seconds,
                         per_seed=None if seconds is None or not seeds else seconds / len(seeds),
                         load=_load(env), cores=env.get("cores"), backend=env.get("backend"),
                         command=_command(payload, env)))
    return rows


def _cell(value, fmt):
    return "not recorded" if value is None else format(value, fmt)


def cost_table(rows):
    """The rows as a Markdown table."""
    lines = ["| experiment | seeds | wall time (s) | per seed (s) | load average | cores, backend | command |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        seeds = ", ".join(map(str, r["seeds"])) if r["seeds"] else "not recorded"
        command = f"`{r['command']}`" if r["command"] else "not recorded"
        lines.append(f"| {r['name']} | {seeds} | {_cell(r['seconds'], '.0f')} | {_cell(r['per_seed'], '.0f')} | "
                     f"{_cell(r['load'], '.1f')} | {r['cores']}, {r['backend']} | {command} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the table to this Markdown file (atomically) instead of printing it")
    args = ap.parse_args(argv)
    text = cost_table(cost_rows())
    if args.out:
        header = ("# What the experiments cost\n\nMade by `python -m experiments.costs "
                  f"--out {args.out}` from the committed results. Each wall time is what that run recorded on "
                  "the machine named; runs on a shared machine (a load average above its cores) are upper "
                  "bounds, not benchmarks.\n\n")
        atomic_write(args.out, lambda f: f.write((header + text).encode()))
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
