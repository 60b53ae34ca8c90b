"""The thread governor of ``kernels.tune()``, driven by a hand-made clock: it keeps the setting whose steps
were timed faster, stops a probe that is clearly slower, and probes again when the steps slow down."""
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
