"""experiments.remake on a fake experiment: resume after a Ctrl-C, --only, --check and its comparison rule."""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from decimal import Decimal

import pytest

from experiments import remake

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: a stand-in for python -m experiments.NAME: writes NAME.json into --out, notes each start in runs.txt
#: (with the BLAS threads it was given) and the folder it ran in in cwds.txt, with --hold FILE waits for FILE
#: first, and with --skip exits 0 without writing its record
FAKE = '''
import argparse, json, os, time
ap = argparse.ArgumentParser()
for flag in ("--name", "--value", "--hold", "--out", "--parts"):
    ap.add_argument(flag)
ap.add_argument("--no-progress", action="store_true")
ap.add_argument("--skip", action="store_true")
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "runs.txt"), "a") as f:
    f.write(f"{a.name} {os.environ.get('OPENBLAS_NUM_THREADS')} {os.environ.get('OMP_NUM_THREADS')}\\n")
with open(os.path.join(here, "cwds.txt"), "a") as f:
    f.write(os.getcwd() + "\\n")
if a.skip:
    raise SystemExit(0)
while a.hold and not os.path.exists(a.hold):
    time.sleep(0.05)
record = {"value": float(a.value), "claims": {"C1": {"values": [float(a.value), 1.0], "verdict": "reproduces"}},
          "environment": {"seconds": time.time()}, "command": "python -m fake_experiment"}
with open(os.path.join(a.out, a.name + ".json"), "w") as f:
    json.dump(record, f)
'''


def fake_units(hold=None):
    b = ("--name", "b", "--value", "0.75") + (("--hold", str(hold)) if hold else ())
    return (remake.Unit("a", "fake_experiment", ("--name", "a", "--value", "0.25")),
            remake.Unit("b", "fake_experiment", b))


@pytest.fixture
def room(tmp_path, monkeypatch):
    """A folder with the fake experiment on the children's path, an empty results folder and a parts folder."""
    (tmp_path / "fake_experiment.py").write_text(FAKE)
    (tmp_path / "results").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), ROOT]))
    return tmp_path


def runs(room):
    path = room / "runs.txt"
    return path.read_text().split("\n")[:-1] if path.exists() else []


def committed(room, name, record):
    (room / "results" / f"{name}.json").write_text(json.dumps(record))


def run_here(room, *argv, units=None):
    return remake.main(["--parts", str(room / "parts"), "--no-progress", *argv], units=units or fake_units(),
                       results=str(room / "results"), cost_file=str(room / "costs.md"))


def test_a_ctrl_c_keeps_the_finished_experiment_and_a_rerun_reuses_it(room):
    hold = room / "b may finish"
    driver = room / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import sys
        from experiments import remake
        sys.path.insert(0, {str(room)!r})
        from test_units import UNITS
        sys.exit(remake.main(sys.argv[1:], units=UNITS, results={str(room / 'results')!r},
                             cost_file={str(room / 'costs.md')!r}))
        """))
    (room / "test_units.py").write_text(textwrap.dedent(f"""
        from experiments.remake import Unit
        UNITS = (Unit("a", "fake_experiment", ("--name", "a", "--value", "0.25")),
                 Unit("b", "fake_experiment", ("--name", "b", "--value", "0.75", "--hold", {str(hold)!r})))
        """))
    argv = [sys.executable, str(driver), "--parts", str(room / "parts"), "--jobs", "1", "--no-progress"]
    # SIGINT back to its default in the runner: a shell that starts a job in the background (nohup, `&` in a
    # script, some CI runners) ignores SIGINT, the children inherit that, and Python then never raises
    # KeyboardInterrupt, as a terminal's Ctrl-C would
    first = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 30
    while not (len(runs(room)) == 2 and (room / "parts" / "a" / "done.json").exists()):   # a done, b running
        assert time.time() < deadline and first.poll() is None, first.communicate()[0]
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGINT)                       # Ctrl-C at the terminal: the whole process group
    out = first.communicate(timeout=30)[0]
    assert first.returncode == 130, out
    assert "stopped: 1 of 2 experiments finished" in out
    assert not (room / "parts" / "b" / "done.json").exists() and not (room / "results" / "b.json").exists()
    assert json.loads((room / "results" / "a.json").read_text())["value"] == 0.25   # installed as soon as done

    hold.write_text("")
    again = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert again.returncode == 0, again.stdout
    assert "2 experiments: 1 reused from" in again.stdout and "(a), 1 to run" in again.stdout
    assert runs(room) == ["a 1 1", "b 1 1", "b 1 1"]           # a ran once; every child had one BLAS thread
    assert json.loads((room / "results" / "b.json").read_text())["value"] == 0.75
    table = (room / "costs.md").read_text()
    assert "| a |" in table and "| b |" in table and "(experiments.remake, 1 at a time)" in table


def test_an_experiment_that_fails_is_named_and_fails_the_check(room, capsys):
    broken = (remake.Unit("c", "fake_experiment", ("--name", "c", "--value", "not a number")),)
    assert run_here(room, "--check", units=broken) == 1
    out, err = capsys.readouterr()
    assert re.search(r"^0 of 1 experiments run in \d+ s of wall time, 1 at a time \(0 reused\)$", err, re.M), err
    assert "c                                             -            -  DID NOT FINISH (its log: " in out
    assert "ValueError: could not convert string to float" in (room / "parts" / "c" / "log.txt").read_text()
    assert not (room / "parts" / "c" / "done.json").exists()


def test_only_runs_the_named_experiments(room, capsys):
    assert run_here(room, "--only", "b") == 0
    assert re.search(r"^1 of 1 experiments run in \d+ s of wall time, 1 at a time \(0 reused\)$",
                     capsys.readouterr().err, re.M)
    assert runs(room) == ["b 1 1"]
    assert sorted(os.listdir(room / "results")) == ["b.json"]
    with pytest.raises(SystemExit) as refused:
        run_here(room, "--only", "c")
    assert refused.value.code == 2
    assert "--only names 'c', which is not an experiment here; they are a, b." in capsys.readouterr().err


def test_check_passes_on_equal_records_and_reports_a_planted_difference(room, capsys):
    same = {"value": 0.25, "claims": {"C1": {"values": [0.25, 1.0], "verdict": "reproduces"}},
            "environment": {"seconds": 9.0}, "command": "another command"}    # a run's own details: not compared
    committed(room, "a", same)
    committed(room, "b", dict(same, value=0.5, claims={"C1": {"values": [0.75, 1.0], "verdict": "reproduces"}}))
    before = {p: (room / "results" / p).read_bytes() for p in os.listdir(room / "results")}

    assert run_here(room, "--check", "--only", "a") == 0
    out = capsys.readouterr().out
    assert "a                                             3            0  matches" in out

    assert run_here(room, "--check") == 1                     # the positive control: b's value planted at 0.5
    out = capsys.readouterr().out
    assert "b                                             3            1  DIFFERS" in out
    assert "b: value: committed 0.5, remade 0.75 (allowed ±0.05)" in out
    assert {p: (room / "results" / p).read_bytes() for p in os.listdir(room / "results")} == before
    assert runs(room) == ["a 1 1", "b 1 1"]                   # a's check run was reused


@pytest.mark.parametrize("old,new,differs", [
    ('{"x": 0.3}', {"x": 0.34}, False),             # stored with one decimal: anything that rounds to 0.3
    ('{"x": 0.3}', {"x": 0.36}, True),
    ('{"x": 0.300}', {"x": 0.3004}, False),          # three decimals stored: half of 0.001
    ('{"x": 0.300}', {"x": 0.3006}, True),
    ('{"x": 0.30000000000000004}', {"x": 0.3}, False),  # a float in full: within 1e-9 of itself
    ('{"x": 0.30000000000000004}', {"x": 0.300000001}, True),  # 3e-9 of itself off: more than rounding
    ('{"x": 6.496776044990396e-16}', {"x": 5.5e-16}, False),  # a float in full near zero: rounding itself
    ('{"x": 6.496776044990396e-16}', {"x": 2e-12}, True),
    ('{"x": 1.5e-16}', {"x": 1.54e-16}, False),      # 1.5e-16 states 1e-17
    ('{"x": 1.5e-16}', {"x": 1.56e-16}, True),
    ('{"n": 35}', {"n": 36}, True),                  # counts exactly
    ('{"x": 0.25, "tolerance": 0.1}', {"x": 0.3, "tolerance": 0.1}, False),   # a record's own tolerance
    ('{"x": 0.25}', {"x": 0.3}, True),
    ('{"c": {"verdict": "reproduces"}}', {"c": {"verdict": "not established"}}, True),
    ('{"v": [1, 2]}', {"v": [1, 2, 3]}, True),
    ('{"v": 1}', {"v": 1, "w": 2}, True),
    ('{"x": NaN}', {"x": float("nan")}, False),
    ('{"environment": {"seconds": 1}, "commands": ["a"], "train_seconds": 3}',
     {"environment": {"seconds": 2}, "commands": ["b"], "train_seconds": 4}, False),
])
def test_a_number_matches_at_the_digits_the_record_stores(old, new, differs):
    compared, found = remake.differences(remake.read_stored(old), new)
    assert bool(found) == differs, found


def test_the_allowed_difference_is_half_the_last_stored_digit():
    assert remake.allowed(Decimal("0.300")) == 0.0005
    assert remake.allowed(Decimal("12.5")) == 0.05
    assert remake.allowed(7) == 0.0 and remake.allowed(Decimal("0.3"), tolerance=0.2) == 0.2
    # written in full (15 significant digits or more): 1e-9 of itself, not half its 17th digit
    assert remake.allowed(Decimal("0.2027183836967292")) == pytest.approx(0.2027183836967292e-9, rel=1e-12)
    assert remake.allowed(Decimal("-12.345678901234567")) == pytest.approx(12.345678901234567e-9, rel=1e-12)
    assert remake.allowed(Decimal("6.496776044990396E-16")) == 1e-12      # near zero: the absolute floor
    assert remake.allowed(Decimal("0.12345678901234")) == 0.5e-14            # 14 digits: a rounded record


def test_every_unit_names_a_module_and_a_record_that_exist():
    for unit in remake.UNITS:
        assert os.path.exists(os.path.join(ROOT, *unit.module.split(".")) + ".py"), unit
        assert all(a in {u.name for u in remake.UNITS} for a in unit.after), unit
    made = {u.name for u in remake.UNITS}
    records = {n[:-5] for n in os.listdir(remake.RESULTS) if n.endswith(".json")}
    assert records <= made, records - made                    # every committed record is remade


def test_a_check_does_not_reuse_what_a_plain_remake_installed(capsys):
    """A plain run and --check keep their finished units in different folders by default: a check right after a
    remake must remake the records, not compare the ones the remake just installed with themselves."""
    remake.main(["--list", "--only", "permutation"])
    plain = capsys.readouterr().out
    remake.main(["--list", "--check", "--only", "permutation"])
    check = capsys.readouterr().out
    assert f"finished in {remake.PARTS_OF[False]})" in plain and f"finished in {remake.PARTS_OF[True]})" in check
    assert remake.PARTS_OF[False] != remake.PARTS_OF[True]


def test_the_longest_chain_starts_first_not_the_costliest_unit():
    # worked by hand: c waits on a, so a's chain is 10 + 100 = 110, more than b's 50; d waits on c: a's is 111
    units = (remake.Unit("a", "m"), remake.Unit("b", "m"), remake.Unit("c", "m", after=("a",)),
             remake.Unit("d", "m", after=("c",)))
    known = {"a": 10.0, "b": 50.0, "c": 100.0, "d": 1.0}
    assert [u.name for u in remake.in_order(units, known)] == ["a", "c", "b", "d"]   # chains 111, 101, 50, 1
    assert [u.name for u in remake.in_order(units, {"b": 50.0})] == ["b", "a", "c", "d"]   # unknown costs count 0
    # the committed records: attention_sinks_settings starts before every experiment but sink_control's chain
    order = [u.name for u in remake.in_order(remake.UNITS, remake.committed_costs(remake.RESULTS))]
    assert order.index("attention_sinks_settings") < order.index("sink_control") < order.index("positions_today")


# ---------------------------------------------------------------------------
# In this process (what mutation testing reaches): each part of the command on a case worked by hand
# ---------------------------------------------------------------------------

class Clock:
    """Stands in for ``remake.time``: ``perf_counter`` gives ``readings`` in turn (then 5.0 for ever), ``sleep``
    is short and counted, and a run that polls more than ``polls`` times is stopped, as one that never returns."""

    def __init__(self, readings=(), polls=2000):
        self.readings, self.polls, self.slept = list(readings), polls, 0

    def perf_counter(self):
        return self.readings.pop(0) if self.readings else 5.0

    def sleep(self, seconds):
        self.slept += 1
        if self.slept > self.polls:
            raise RuntimeError(f"still running after {self.polls} polls: a unit never started or never finished")
        time.sleep(0.01)

    strftime = staticmethod(time.strftime)


class Child:
    """A child process that has finished (``returncode`` 0 or 1) or runs until it is terminated (None)."""

    def __init__(self, returncode):
        self.returncode, self.terminated = returncode, False

    def poll(self):
        return self.returncode

    def terminate(self):
        self.terminated = True
        if self.returncode is None:
            self.returncode = -15

    def wait(self):
        assert self.returncode is not None, "waits for ever on a child that was never told to end"
        return self.returncode


def test_a_unit_command_runs_its_module_quietly_and_gives_a_keeping_experiment_its_seeds_folder():
    plain = remake.Unit("p", "experiments.p", ("--seeds", "0,1"))
    keeps = remake.Unit("k", "experiments.k", keeps_seeds=True)
    assert plain.command("F") == [sys.executable, "-m", "experiments.p", "--seeds", "0,1", "--out", "F",
                                  "--no-progress"]
    assert keeps.command("F") == [sys.executable, "-m", "experiments.k", "--out", "F", "--no-progress",
                                  "--parts", os.path.join("F", "seeds")]


def test_start_and_finish_write_the_log_done_json_and_the_installed_record(room, monkeypatch, capsys):
    elsewhere = room / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)                         # the children run in the repository, not here
    monkeypatch.setattr(remake, "time", Clock([100.0, 112.34, 200.0, 201.0, 300.0, 312.0]))
    a = remake.Unit("a", "fake_experiment", ("--name", "a", "--value", "0.25"), keeps_seeds=True)
    b = remake.Unit("b", "fake_experiment", ("--name", "b", "--value", "0.75"))
    c = remake.Unit("c", "fake_experiment", ("--name", "c", "--value", "1", "--skip"))   # exits 0, no record
    parts, results = room / "parts", room / "results"
    (parts / "a" / "seeds").mkdir(parents=True)
    (parts / "a" / "seeds" / "seed0.json").write_text("{}")
    (parts / "a" / "seeds" / "seed1.json").write_text("{}")
    (parts / "b").mkdir()                                # a folder left from before is no error
    runner = remake.Runner(str(parts), str(results), 3, install_each=True, progress=False)
    for unit in (a, b, c):
        runner.start(unit)
        runner.running[unit.name][1].wait()
        log = runner.running[unit.name][2]
        runner.finish(unit.name)
        assert log.closed and unit.name not in runner.running

    folder = str(parts / "a")
    assert (parts / "a" / "log.txt").read_text() == (
        f"\n$ {sys.executable} -m fake_experiment --name a --value 0.25 --out {folder} --no-progress --parts "
        f"{folder}/seeds\n(2 seed parts kept from before)\n")
    assert (parts / "b" / "log.txt").read_text() == (
        f"\n$ {sys.executable} -m fake_experiment --name b --value 0.75 --out {parts / 'b'} --no-progress\n")
    assert (room / "cwds.txt").read_text() == f"{remake.ROOT}\n" * 3
    assert runs(room) == ["a 1 1", "b 1 1", "c 1 1"]

    text = (parts / "a" / "done.json").read_text()
    done = json.loads(text)
    assert text == json.dumps(done, indent=2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", done.pop("finished")), text
    assert len(done.pop("load_average")) == 3
    assert done == {"name": "a", "seconds": 12.3, "jobs": 3,          # 112.34 - 100.0, to a tenth
                    "command": "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m fake_experiment --name a "
                               "--value 0.25 --out PARTS/a --no-progress"}
    assert json.loads((parts / "b" / "done.json").read_text())["seconds"] == 1.0
    assert json.loads((results / "a.json").read_text())["value"] == 0.25
    assert sorted(os.listdir(results)) == ["a.json", "b.json"]

    assert runner.failed == ["c"] and not (parts / "c" / "done.json").exists()
    assert capsys.readouterr().err == (
        "a: 2 finished seed parts kept from an earlier run\na: done in 12 s\nb: done in 1 s\n"
        f"c failed (exit code 0) after 12 s; its output is in {parts / 'c' / 'log.txt'}\n")


def test_a_ctrl_c_ends_the_running_children_and_keeps_one_that_had_just_finished(room, monkeypatch):
    monkeypatch.setattr(remake, "time", Clock())
    a, b = remake.Unit("a", "fake_experiment"), remake.Unit("b", "fake_experiment")
    parts = room / "parts"
    for name in "ab":
        (parts / name).mkdir(parents=True)
    (parts / "a" / "a.json").write_text('{"value": 0.25}')          # a wrote its record and exited 0
    runner = remake.Runner(str(parts), str(room / "results"), 2, install_each=True, progress=False)
    logs = {n: open(parts / n / "log.txt", "a") for n in "ab"}
    children = {"a": Child(0), "b": Child(None)}
    for unit in (a, b):
        runner.running[unit.name] = (unit, children[unit.name], logs[unit.name], 5.0, (0.5, 0.5, 0.5))
    runner.stop()
    assert not children["a"].terminated and children["b"].terminated
    assert runner.running == {} and runner.failed == [] and logs["a"].closed and logs["b"].closed
    assert (parts / "a" / "done.json").exists() and not (parts / "b" / "done.json").exists()
    assert json.loads((room / "results" / "a.json").read_text()) == {"value": 0.25}


class Scripted(remake.Runner):
    """A runner whose units need no child: each one is finished at the next poll, and fails if its name starts
    with x. ``started`` notes each start with how many units were running then."""

    def __init__(self, jobs):
        super().__init__("unused", "unused", jobs, install_each=False, progress=False)
        self.started = []

    def start(self, unit):
        self.started.append((unit.name, len(self.running)))
        self.running[unit.name] = (unit, Child(1 if unit.name.startswith("x") else 0))

    def finish(self, name):
        if self.running.pop(name)[1].returncode:
            self.failed.append(name)


def test_run_starts_at_most_jobs_units_each_after_what_it_reads_and_skips_one_that_reads_a_failure(monkeypatch,
                                                                                                     capsys):
    monkeypatch.setattr(remake, "time", Clock(polls=50))
    u = remake.Unit
    todo = [u("x", "m"), u("a", "m"), u("b", "m"), u("c", "m", after=("a",)), u("d", "m", after=("x",)),
            u("e", "m", after=("z",)), u("f", "m", after=("y",))]
    runner, done = Scripted(jobs=2), {"y"}
    runner.run(todo, done)
    # worked by hand, two at a time: x and a; b and c (a is done); d is not run (x failed); e (z is neither
    # here nor to be run) and f (y was done before)
    assert runner.started == [("x", 0), ("a", 1), ("b", 0), ("c", 1), ("e", 0), ("f", 1)]
    assert runner.failed == ["x", "d"] and done == {"y", "a", "b", "c", "e", "f"}
    assert "d not run: it reads x, which failed\n" in capsys.readouterr().err


def test_install_copies_what_the_experiment_wrote_and_nothing_of_the_bookkeeping(tmp_path):
    folder, results = tmp_path / "parts" / "a", tmp_path / "results"
    (folder / "seeds").mkdir(parents=True)
    for name in (".tmp-a.json", "a.json", "a.png", "done.json", "log.txt", "zz.json"):
        (folder / name).write_text(name)
    results.mkdir()
    remake.install(remake.Unit("a", "m"), str(tmp_path / "parts"), str(results))
    assert sorted(os.listdir(results)) == ["a.json", "a.png", "zz.json"]
    assert (results / "zz.json").read_text() == "zz.json"


def test_an_unknown_cost_counts_nothing_in_the_chain():
    units = (remake.Unit("a", "m"), remake.Unit("b", "m"), remake.Unit("c", "m", after=("a",)))
    # a and c have no cost: chains a 0 + 0, b 1.5, c 0; counted as 1 each, a's chain (2) would pass b's
    assert [u.name for u in remake.in_order(units, {"b": 1.5})] == ["b", "a", "c"]


@pytest.mark.parametrize("old,new,found", [
    ({"a": 1, "b": 2}, {"b": 3}, [("a", 1, "(absent)", None), ("b", 2, 3, 0.0)]),   # every key after a missing one
    ({"c": {"verdict": "x"}}, {"c": {"verdict": "y", "w": 2}},
     [("c/verdict", "x", "y", None), ("c/w", "(absent)", 2, None)]),
    ({"v": [1, 2]}, {"v": [1, 5]}, [("v/1", 2, 5, 0.0)]),
    ({"x": 1}, 5, [("", {"x": 1}, 5, None)]),            # a dict against a number
    ([1, 2], 5, [("", [1, 2], 5, None)]),                  # a list against a number
    (0.5, "0.5", [("", 0.5, "0.5", None)]),                # a number against a string
    (float("nan"), 1.0, [("", float("nan"), 1.0, 0.0)]),   # NaN matches only NaN
])
def test_differences_name_the_path_and_both_sides(old, new, found):
    got = remake.differences(old, new)[1]
    assert repr(got) == repr(found)                         # repr: nan equals nan there


def test_differences_count_the_numbers_compared_and_apply_a_tolerance_down_the_tree():
    assert remake.differences({"v": [1, 2, 3]}, {"v": [1, 2]}) == (0, [("v", "3 items", "2 items", None)])
    assert remake.differences({"tolerance": 0.1, "v": [Decimal("0.25")]}, {"tolerance": 0.1, "v": [0.3]}) == (2, [])
    # a difference equal to the tolerance still matches
    assert remake.differences({"n": 3, "tolerance": 1}, {"n": 4, "tolerance": 1}) == (2, [])


def test_a_float_of_exactly_fifteen_digits_is_written_in_full():
    assert remake.allowed(Decimal("0.123456789012345")) == pytest.approx(0.123456789012345e-9, rel=1e-12)


def test_a_long_value_is_cut_to_sixty_characters_in_a_difference_line():
    assert remake._short("x" * 60) == "x" * 60
    assert remake._short("y" * 61) == "y" * 57 + "..."
    assert remake.difference_line("a", "", "(no committed record)", "a.json remade", None) == (
        "a: (the record): committed (no committed record), remade a.json remade")
    assert remake.difference_line("a", "w", "(absent)", 2, None) == "a: w: committed (absent), remade 2"


def test_a_record_that_was_never_committed_is_one_difference_and_no_number(tmp_path):
    assert remake.check_unit(remake.Unit("a", "m"), str(tmp_path), str(tmp_path)) == (
        0, [("", "(no committed record)", "a.json remade", None)])


@pytest.mark.parametrize("n", [40, 41])
def test_the_check_report_prints_forty_differences_and_keeps_all_of_them(tmp_path, capsys, n):
    parts, results = tmp_path / "parts", tmp_path / "results"
    for d in (parts / "x", parts / "y", results):
        d.mkdir(parents=True)
    (results / "x.json").write_text(json.dumps({"v": list(range(n - 1))}))
    (parts / "x" / "x.json").write_text(json.dumps({"v": list(range(1, n))}))
    (results / "y.json").write_text('{"w": 1.5}')
    (parts / "y" / "y.json").write_text('{"w": 2.5}')
    units = (remake.Unit("x", "m"), remake.Unit("y", "m"))
    assert remake.check_report(units, str(parts), str(results), failed=["z"]) == 3   # two differ, one unfinished
    lines = [f"x: v/{i}: committed {i}, remade {i + 1} (allowed ±0)" for i in range(n - 1)]
    lines.append("y: w: committed 1.5, remade 2.5 (allowed ±0.05)")
    assert (parts / "check.txt").read_text() == "".join(line + "\n" for line in lines)
    out = capsys.readouterr().out
    assert out == "".join(line + "\n" for line in [
        "experiment" + " " * 21 + "numbers compared  differences  result",
        "x" + " " * 30 + " " * 14 + f"{n - 1}" + " " * 11 + f"{n - 1}  DIFFERS",
        "y" + " " * 30 + " " * 15 + "1" + " " * 12 + "1  DIFFERS",
        "z" + " " * 30 + " " * 15 + "-" + " " * 12 + f"-  DID NOT FINISH (its log: {parts / 'z' / 'log.txt'})",
        *lines[:40], *(["... and 1 more differences"] if n == 41 else []),
        f"every difference: {parts / 'check.txt'}"])


def test_the_cost_table_takes_this_run_s_times_and_keeps_the_others(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "a.json").write_text(json.dumps({"seeds": [0, 1, 2, 3], "command": "python -m old_a", "environment": {
        "seconds": 50.0, "load_average": [0.5, 0.6, 0.7], "cores": 2, "backend": "numpy"}}))
    (results / "b.json").write_text(json.dumps({"seed": 7, "command": "python -m old_b", "environment": {
        "seconds": 20.0, "cores": 2, "backend": "numpy"}}))
    (results / "c.json").write_text(json.dumps({"environment": {"seconds": 30.0, "cores": 1, "backend": "numpy"}}))
    done = {"a": {"seconds": 100.0, "load_average": [1.5, 2.0, 3.0], "command": "new a", "jobs": 2},
            "c": {"seconds": 12.0, "load_average": [0.3, 0.0, 0.0], "command": "new c", "jobs": 2}}
    remake.write_cost_table(str(tmp_path / "costs.md"), str(results), done)
    assert (tmp_path / "costs.md").read_text() == (
        "# What the experiments cost\n\nMade by `python -m experiments.remake`: each wall time is that experiment's "
        "child process as the command measured it, one BLAS thread each, several at a time (the command column "
        "says how many); a row the command did not remake keeps the time its record states. Runs on a shared "
        "machine (a load average above its cores) are upper bounds, not benchmarks.\n\n"
        "| experiment | seeds | wall time (s) | per seed (s) | load average | cores, backend | command |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n"
        "| a | 0, 1, 2, 3 | 100 | 25 | 1.5 | 2, numpy | `new a (experiments.remake, 2 at a time)` |\n"
        "| b | 7 | 20 | 20 | not recorded | 2, numpy | `python -m old_b` |\n"
        "| c | not recorded | 12 | not recorded | 0.3 | 1, numpy | `new c (experiments.remake, 2 at a time)` |\n")


def test_list_prints_each_experiment_its_cost_and_whether_it_is_kept(room, capsys):
    committed(room, "a", {"environment": {"seconds": 3600.0}})
    committed(room, "b", {"environment": {"seconds": 180.7}})
    (room / "parts" / "a").mkdir(parents=True)
    (room / "parts" / "a" / "done.json").write_text('{"name": "a"}')
    units = fake_units() + (remake.Unit("c", "fake_experiment"),)
    assert run_here(room, "--list", units=units) == 0
    parts = room / "parts"
    # 3600 + 180.7 = 3780.7 s = 1.0502 h
    assert capsys.readouterr().out == "".join(line + "\n" for line in [
        "experiment" + " " * 21 + f"committed cost (s)  kept  command  (kept: finished in {parts})",
        "a" + " " * 30 + " " * 14 + "3600  yes   python -m fake_experiment --name a --value 0.25",
        "b" + " " * 30 + " " * 15 + "181  no    python -m fake_experiment --name b --value 0.75",
        "c" + " " * 30 + " " * 6 + "not recorded  no    python -m fake_experiment",
        "sum of the committed costs: 3781 s (1.1 h); with --jobs N, about that over N, and never under the longest, "
        "3600 s"])
    for chosen in ((), units[2:]):                           # none, and one with no recorded cost
        remake.list_units(chosen, str(room / "results"), str(parts))
        assert capsys.readouterr().out.endswith("sum of the committed costs: 0 s (0.0 h); with --jobs N, about "
                                                "that over N, and never under the longest, 0 s\n")


def test_a_plain_run_reuses_and_reinstalls_what_it_kept(room, monkeypatch, capsys):
    monkeypatch.setattr(remake, "time", Clock())            # every reading 5.0: a wall time of 0 s
    parts, results = room / "parts", room / "results"
    assert run_here(room, "--jobs", "2") == 0
    out, err = capsys.readouterr()
    assert f"2 experiments: 0 reused from {parts} (none), 2 to run, 2 at a time\n" in err
    assert "2 of 2 experiments run in 0 s of wall time, 2 at a time (0 reused)\n" in err
    assert "experiment/s" not in err                           # --no-progress: no bar
    assert out == f"2 records written to {results}; the cost table to {room / 'costs.md'}\n"
    for name in "ab":
        (results / f"{name}.json").unlink()
    assert remake.main(["--parts", str(parts)], units=fake_units(), results=str(results),
                       cost_file=str(room / "costs.md")) == 0          # with the progress bar
    err = capsys.readouterr().err
    assert f"2 experiments: 2 reused from {parts} (a, b), 0 to run, 1 at a time\n" in err
    assert "experiment/s]" in err                              # the bar
    assert [json.loads((results / f"{n}.json").read_text())["value"] for n in "ab"] == [0.25, 0.75]
    assert sorted(runs(room)) == ["a 1 1", "b 1 1"]           # each ran once (two at a time: in either order)


def test_a_ctrl_c_in_this_process_says_how_many_are_kept(room, monkeypatch, capsys):
    monkeypatch.setattr(remake, "time", Clock())
    finish = remake.Runner.finish

    def finish_then_ctrl_c(self, name):
        finish(self, name)
        raise KeyboardInterrupt
    monkeypatch.setattr(remake.Runner, "finish", finish_then_ctrl_c)
    assert run_here(room) == 130
    assert capsys.readouterr().err.endswith(
        f"stopped: 1 of 2 experiments finished and kept in {room / 'parts'}; run the same command again to go on "
        "from there\n")


def test_failures_are_listed_at_the_end(room, capsys):
    broken = tuple(remake.Unit(n, "fake_experiment", ("--name", n, "--value", "1", "--skip")) for n in "cd")
    assert run_here(room, units=broken) == 1
    assert capsys.readouterr().err.endswith("failed: c, d\n")


def test_the_help_and_the_refusals_say_what_each_option_does(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")                     # one line per option
    with pytest.raises(SystemExit) as shown:
        remake.main(["--help"])
    assert shown.value.code == 0
    out = capsys.readouterr().out
    # each text whole, between a space or a line's start and the line's end
    for text in ["\nRemake the evidence: every experiment the chapters cite, at its committed seeds, in one "
                 "resumable command.",
                 "  --jobs JOBS ", " experiments run at once, one process and one BLAS thread each (default 1)",
                 "  --only NAME [NAME ...]", " these experiments only (names as --list prints)",
                 " print the experiments and their committed cost, run nothing",
                 " remake and compare with the committed records, changing none; exit code 1 on a difference",
                 f" folder that keeps each finished experiment (default {remake.PARTS_OF[False]}, and "
                 f"{remake.PARTS_OF[True]} with --check)",
                 "  --no-progress ", " no progress bar"]:
        assert text + ("\n" if not text.endswith(" ") else "") in out, text
    with pytest.raises(SystemExit) as refused:
        remake.main(["--jobs", "0"])
    assert refused.value.code == 2
    assert "--jobs is 0; it needs at least 1 (one experiment at a time)." in capsys.readouterr().err


def test_the_commit_a_record_names_is_not_compared_as_its_environment_is_not():
    # positions_today's record names the commit it ran at; a remake at a later commit is the same evidence
    old = remake.read_stored('{"commit": "af29cd4", "environment": {"seconds": 1}, "value": 0.25}')
    new = {"commit": "cd4d5cd", "environment": {"seconds": 2}, "value": 0.25}
    assert remake.differences(old, new) == (1, [])
    assert remake.differences(old, dict(new, value=0.5))[1][0][0] == "value"   # the outcome still is
