r"""``tests/background.py``, the thread that runs the suite's subprocess work beside the tests: each job runs once,
a test gets exactly its job's value or error, a job never submitted runs inline, and ``stop()`` leaves nothing
running. These use their own keys, so they never touch the jobs the conftests submitted."""
import os
import sys
import threading
import time
import types

import pytest

import background


def test_a_submitted_job_runs_once_and_every_caller_gets_its_value():
    calls = []
    background.submit("test: once", lambda: calls.append(1) or "value")
    assert background.result("test: once", lambda: "not this") == "value"
    assert background.result("test: once", lambda: "not this") == "value"
    assert calls == [1]


def test_a_key_never_submitted_runs_inline():
    assert background.result("test: never submitted", lambda: 41 + 1) == 42


def test_a_jobs_error_reaches_the_test_that_asks():
    def broken():
        raise ValueError("the job's own message")
    background.submit("test: broken", broken)
    with pytest.raises(ValueError, match="the job's own message"):
        background.result("test: broken", lambda: None)


def test_a_job_not_started_is_claimed_by_the_test_instead_of_waited_for():
    gate = threading.Event()
    blockers = [f"test: blocker {i}" for i in range(background.WORKERS)]
    for key in blockers:   # one for each worker, each holding it until the gate opens
        background.submit(key, lambda: gate.wait(30), priority=-10)
    where = []
    background.submit("test: queued", lambda: where.append(threading.current_thread().name) or "ran")
    try:
        assert background.result("test: queued", lambda: "not this") == "ran"
        assert where == [threading.current_thread().name]   # ran here, not behind the blocker
    finally:
        gate.set()
    assert all(background.result(key, lambda: None) is True for key in blockers)


def test_run_takes_the_environment_it_is_given_not_the_processes(monkeypatch):
    env = background.snapshot()
    monkeypatch.setenv("PE_BACKGROUND_PROBE", "changed by a test")
    out = background.run([sys.executable, "-c", "import os; print(os.environ.get('PE_BACKGROUND_PROBE'))"],
                         env=env, cwd=os.getcwd(), timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "None")


def test_run_kills_its_process_group_on_a_timeout():
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        background.run([sys.executable, "-c", "import time; time.sleep(60)"], env=background.snapshot(),
                       cwd=os.getcwd(), timeout=1)
    assert type(caught.value).__name__ == "TimeoutExpired" and time.monotonic() - start < 30


def test_first_use_is_the_place_of_the_first_test_that_asks_for_the_fixture():
    items = [types.SimpleNamespace(fixturenames=("a",)), types.SimpleNamespace(fixturenames=("b", "c")),
             types.SimpleNamespace(fixturenames=("c",)), types.SimpleNamespace()]
    assert background.first_use(items, background.uses("c")) == 1
    assert background.first_use(items, background.uses("a")) == 0
    assert background.first_use(items, background.uses("z")) is None


def test_the_log_names_each_job_its_thread_and_its_times(tmp_path, monkeypatch):
    monkeypatch.setenv("PE_BACKGROUND_LOG", str(tmp_path / "log.tsv"))
    background.submit("test: logged", lambda: "done")
    assert background.result("test: logged", lambda: None) == "done"
    (line,) = (tmp_path / "log.tsv").read_text().splitlines()
    key, thread, start, end = line.split("\t")
    assert key == "test: logged" and thread.startswith(("tests-background-", "MainThread"))
    assert 0 <= float(start) <= float(end)
