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
#: (with the BLAS threads it was given), and with --hold FILE waits for FILE first
FAKE = '''
import argparse, json, os, time
ap = argparse.ArgumentParser()
for flag in ("--name", "--value", "--hold", "--out", "--parts"):
    ap.add_argument(flag)
ap.add_argument("--no-progress", action="store_true")
a = ap.parse_args()
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.txt"), "a") as f:
    f.write(f"{a.name} {os.environ.get('OPENBLAS_NUM_THREADS')} {os.environ.get('OMP_NUM_THREADS')}\\n")
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
