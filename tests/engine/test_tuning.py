"""The thread governor of ``kernels.tune()``, driven by a hand-made clock: it keeps the setting whose steps
were timed faster, stops a probe that is clearly slower, and probes again when the steps slow down."""
import re

import pytest

from mini_transformer.engine.kernels import threads, tuning


class FakeMachine:
    """A clock whose step takes ``seconds[threads in force]``: the governor's only view of the machine."""

    def __init__(self, seconds):
        self.seconds, self.now = dict(seconds), 0.0

    def clock(self):
        return self.now

    def run_step(self):
        self.now += self.seconds[threads.threads()]


@pytest.fixture
def machine(monkeypatch):
    monkeypatch.setattr(tuning, "blas_threads", lambda n=None: 2)   # BLAS stays as it is in a test
    previous = threads.threads()
    yield
    threads.set_threads(previous)


def run(governor, fake, steps):
    governor.step_done()                  # the loop's first call only starts the clock
    for _ in range(steps):
        fake.run_step()
        governor.step_done()


def test_a_quiet_machine_keeps_every_core(machine):
    fake = FakeMachine({1: 1.0, 2: 0.6})
    g = tuning.Governor(2, clock=fake.clock)
    run(g, fake, 20)
    assert g.choice == 2 and threads.threads() == 2 and g.expected == pytest.approx(0.6)


def test_nothing_changes_until_the_first_step_so_a_process_that_does_not_train_keeps_every_core(machine):
    """profile_ops and the bench tune() and then time steps of their own: they must not be left on the
    probe's one thread (as they were, when the governor began its probe as it was made)."""
    threads.set_threads(2)
    fake = FakeMachine({1: 1.0, 2: 0.6})
    g = tuning.Governor(2, clock=fake.clock)
    for _ in range(5):
        fake.run_step()                     # steps that never call step_done
    assert threads.threads() == 2 and g.plan == [] and g.choice == 2
    g.step_done()                           # a training loop's first call: the probe starts on one thread
    assert threads.threads() == 1 and g.plan[0] == 1


def test_a_busy_core_makes_it_fall_back_to_one_thread_and_stop_the_slow_probe_early(machine):
    fake = FakeMachine({1: 1.0, 2: 3.6})   # the collapse: two threads 3.6x one when a core is busy
    g = tuning.Governor(2, clock=fake.clock)
    run(g, fake, 6)                         # 4 steps on one thread (one warm-up), then 2 on two: decided
    assert g.choice == 1 and threads.threads() == 1 and not g.plan
    assert g.times[2] == pytest.approx([3.6, 3.6])   # the warm-up and one timed step: no third slow step


def test_when_the_load_arrives_it_probes_again_and_switches(machine):
    fake = FakeMachine({1: 1.0, 2: 0.6})
    g = tuning.Governor(2, clock=fake.clock, period=1000)
    run(g, fake, 20)
    assert g.choice == 2
    fake.seconds[2] = 3.6                   # another program takes a core
    for _ in range(12):
        fake.run_step()
        g.step_done()
    assert g.choice == 1 and g.switches == 1


def test_without_tune_step_done_does_nothing(monkeypatch):
    monkeypatch.setitem(tuning._state, "governor", None)
    before = threads.threads()
    tuning.step_done()
    assert threads.threads() == before


def test_blas_threads_reads_back_what_it_sets():
    n = tuning.blas_threads()
    if n is None:
        pytest.skip("NumPy's BLAS here is not an OpenBLAS whose thread count can be set")
    try:
        assert tuning.blas_threads(1) == 1
    finally:
        tuning.blas_threads(n)
    assert tuning.blas_threads() == n


@pytest.mark.slow
def test_the_governor_cannot_change_the_numbers_one_thread_and_two_train_alike():
    """The governor switches threads by timing, so a run must not depend on the threads: the same seeded steps
    on one thread (pool and BLAS) and on two give bitwise the same losses."""
    from mini_transformer.evaluation import bench
    blas = tuning.blas_threads()
    previous = threads.threads()
    losses = {}
    try:
        for n in (1, 2):
            threads.set_threads(n)
            tuning.blas_threads(n if blas else None)
            step = bench.numpy_engine(dict(bench.CONFIGS["workbook"], batch=64), "fast")   # big enough to thread
            model, opt = step.model, step.opt
            losses[n] = []
            for _ in range(3):
                step()
                losses[n].append(float(model.loss(*_batch()).item()))
    finally:
        threads.set_threads(previous)
        if blas:
            tuning.blas_threads(blas)
    assert losses[1] == losses[2]


def _batch():
    from mini_transformer.engine import backend
    rng = backend.rng(1)
    return rng.integers(0, 64, (64, 64)), rng.integers(0, 64, (64, 64))


class ScriptedMachine:
    """A clock whose steps take the listed seconds in turn, whatever the threads; it records the threads each step
    ran on. Halves and quarters are exact in binary, so a step can sit exactly on a threshold."""

    def __init__(self):
        self.now, self.ran_on = 0.0, []

    def clock(self):
        return self.now

    def steps(self, governor, seconds):
        for s in seconds:
            self.ran_on.append(threads.threads())
            self.now += s
            governor.step_done()


@pytest.fixture
def blas_calls(monkeypatch):
    """Every blas_threads(n) the governor makes, in order; OpenBLAS reports 2 threads."""
    calls = []
    monkeypatch.setattr(tuning, "blas_threads", lambda n=None: calls.append(n) or 2)
    previous = threads.threads()
    yield calls
    threads.set_threads(previous)


def test_the_probe_and_the_period_step_by_step(blas_calls):
    """Worked by hand, probe 3, period 5: 4 steps on one thread (the first a warm-up), 4 on two, then the winner
    until 5 steps have run on it, then the next probe; BLAS gets 1 thread with the pool's 1 and its own 2 with 2."""
    m = ScriptedMachine()
    g = tuning.Governor(2, probe=3, period=5, patience=1.25, clock=m.clock)
    assert blas_calls == [None]                                  # __init__ reads OpenBLAS's count: 2
    g.step_done()                                                # the loop's first call: the probe starts
    m.steps(g, [1.0] * 4 + [0.5] * 4)
    assert g.choice == 2 and g.expected == 0.5 and g.switches == 0 and g.times == {1: [1.0] * 4, 2: [0.5] * 4}
    m.steps(g, [0.5] * 5 + [1.0])                                # 5 steps on the winner, then a probe again
    assert m.ran_on == [1] * 4 + [2] * 4 + [2] * 5 + [1]
    assert blas_calls == [None, 1, 2, 2, 1]                      # start on 1, switch to 2, keep 2, probe on 1
    assert g.report() == {"threads_now": 2, "expected_step_s": 0.5, "switches": 0, "probe": 3, "period": 5,
                          "patience": 1.25}


def test_a_probe_stops_on_the_first_timed_step_past_patience_times_the_one_thread_median(blas_calls):
    """One thread: a warm-up of 8 s, then 2, 2 and 4 s: median 2 s, so with patience 1.25 a step on two threads
    slower than 2.5 s ends the probe. 2.5 s exactly is not slower; 3 s is. The one-thread probe never stops early."""
    m = ScriptedMachine()
    g = tuning.Governor(2, probe=3, period=1000, patience=1.25, clock=m.clock)
    g.step_done()
    m.steps(g, [8.0, 2.0, 2.0, 4.0, 8.0, 2.5, 3.0])
    assert g.times == {1: [8.0, 2.0, 2.0, 4.0], 2: [8.0, 2.5, 3.0]}    # stopped after 3 of the 4 planned on two
    assert g.choice == 1 and g.expected == 2.0 and g.switches == 1 and threads.threads() == 1
    # on the winner: steps at patience times its 2 s are not slow, and one slow step is not enough ...
    m.steps(g, [2.0, 2.0, 2.0, 2.5, 2.5, 2.5, 9.0, 2.0, 2.0])
    assert not g.plan and g.steps == 9 and threads.threads() == 1
    # ... but a median of the last 3 past 2.5 s is: the load changed, probe again (and decide 1 again: no switch)
    m.steps(g, [3.0, 3.0])
    assert g.plan == [1] * 4 + [2] * 4 and g.steps == 11 and threads.threads() == 1
    m.steps(g, [8.0, 2.0, 2.0, 2.0, 8.0, 9.0])
    assert g.choice == 1 and g.switches == 1


def test_without_openblas_the_governor_asks_blas_for_one_thread(monkeypatch):
    calls = []
    monkeypatch.setattr(tuning, "blas_threads", lambda n=None: calls.append(n) or None)   # no OpenBLAS found
    previous = threads.threads()
    try:
        g = tuning.Governor(2, clock=lambda: 0.0)
        g._use(2)
    finally:
        threads.set_threads(previous)
    assert g.blas_n == 1 and calls == [None, 1]


def test_the_governor_defaults_and_step_done_reaches_the_governor_tune_made(monkeypatch):
    g = tuning.Governor(2, clock=lambda: 0.0)
    assert g.report() == {"threads_now": 2, "expected_step_s": None, "switches": 0, "probe": 3, "period": 200,
                          "patience": 1.3}
    seen = []
    monkeypatch.setitem(tuning._state, "governor", type("Recorder", (), {"step_done": lambda self: seen.append(1)})())
    tuning.step_done()
    tuning.step_done()
    assert seen == [1, 1]


def test_report_gives_the_choice_the_expected_step_time_the_switches_and_the_settings(machine):
    fake = FakeMachine({1: 1.0, 2: 3.6})   # the busy core: one thread wins, a change from the two it started on
    g = tuning.Governor(2, probe=3, period=50, patience=1.5, clock=fake.clock)
    run(g, fake, 6)
    assert g.report() == {"threads_now": 1, "expected_step_s": 1.0, "switches": 1,
                          "probe": 3, "period": 50, "patience": 1.5}


# ---------------------------------------------------------------------------
# chapter_threads: the one visible line a chapter's first cell runs
# ---------------------------------------------------------------------------

class FakeOpenBLAS:
    """blas_threads as OpenBLAS answers it: reads the count, sets it when given one."""

    def __init__(self, n):
        self.n, self.calls = n, []

    def __call__(self, n=None):
        self.calls.append(n)
        if n is not None:
            self.n = n
        return self.n


@pytest.fixture
def kernel_threads():
    previous = threads.threads()
    yield
    threads.set_threads(previous)


def test_chapter_threads_puts_blas_and_the_kernels_on_one_thread_and_says_what_they_had(
        monkeypatch, capsys, kernel_threads):
    blas = FakeOpenBLAS(2)                      # OpenBLAS's default on a 2-core machine
    monkeypatch.setattr(tuning, "blas_threads", blas)
    threads.set_threads(3)
    got = tuning.chapter_threads()
    assert blas.n == 1 and blas.calls == [None, 1] and threads.threads() == 1
    assert got == {"blas_threads": 1, "blas_threads_before": 2, "threads": 1, "threads_before": 3}
    assert capsys.readouterr().out == ("chapter_threads: BLAS 1 thread (it had 2); "
                                       "fast kernels 1 thread (they had 3).\n")


def test_chapter_threads_sets_the_count_it_is_given(monkeypatch, capsys, kernel_threads):
    blas = FakeOpenBLAS(1)
    monkeypatch.setattr(tuning, "blas_threads", blas)
    threads.set_threads(1)
    got = tuning.chapter_threads(2)
    assert blas.n == 2 and threads.threads() == 2
    assert got == {"blas_threads": 2, "blas_threads_before": 1, "threads": 2, "threads_before": 1}
    assert capsys.readouterr().out == ("chapter_threads: BLAS 2 threads (it had 1); "
                                       "fast kernels 2 threads (they had 1).\n")


def test_chapter_threads_without_openblas_leaves_blas_alone_and_says_so(monkeypatch, capsys, kernel_threads):
    calls = []
    monkeypatch.setattr(tuning, "blas_threads", lambda n=None: calls.append(n) or None)
    threads.set_threads(2)
    got = tuning.chapter_threads()
    assert calls == [None] and threads.threads() == 1     # never asked to set what it cannot read
    assert got == {"blas_threads": None, "blas_threads_before": None, "threads": 1, "threads_before": 2}
    assert capsys.readouterr().out == ("chapter_threads: BLAS left as it is (no OpenBLAS found to set: another BLAS, "
                                       "or a system other than Linux); fast kernels 1 thread (they had 2).\n")


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "1"])
def test_chapter_threads_refuses_a_count_that_is_not_a_positive_integer(n, kernel_threads):
    before = threads.threads()
    with pytest.raises(ValueError, match=re.escape(f"chapter_threads: n must be an integer >= 1, got {n!r} "
                                                   "(1 runs every matrix product on the calling thread).")):
        tuning.chapter_threads(n)
    assert threads.threads() == before                  # nothing half-set


def test_chapter_threads_really_sets_openblas(capsys, kernel_threads):
    before = tuning.blas_threads()
    if before is None:
        pytest.skip("NumPy's BLAS here is not an OpenBLAS whose thread count can be set")
    try:
        tuning.chapter_threads()
        assert tuning.blas_threads() == 1 and threads.threads() == 1
    finally:
        tuning.blas_threads(before)
