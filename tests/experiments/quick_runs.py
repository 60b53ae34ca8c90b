r"""The experiments' quick modes the tests read, each run once in a subprocess: jobs for the background threads.

``QUICK`` names each run a test module's fixture reads: the experiment's module and the keyword arguments of its
``run``. ``result(name)`` is that run's record, as ``json`` reads back what the experiment's ``run`` returned
(the form every committed record has), computed beside the other tests from the end of collection when a
selected test asks for the fixture of that name (``tests/experiments/conftest.py``), or here and now if not.
The subprocess runs on one BLAS thread, as the experiments' committed commands do, with the environment this
process had when collection ended.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QUICK = {   # fixture name: (module, run's keyword arguments)
    "short_long": ("experiments.train_short_test_long", {"quick": True, "seed": 0, "progress": False}),
    "relative": ("experiments.relative_bias_generalisation", {"quick": True, "seed": 0, "progress": False}),
    "sinks": ("experiments.attention_sinks", {"quick": True, "seed": 0, "progress": False}),
    "positions_today_quick": ("experiments.positions_today", {"quick": True, "seed": 0, "progress": False}),
    "pi_head_width_quick": ("experiments.pi_head_width", {"quick": True, "progress": False}),
    "rope_copy_quick": ("experiments.rope_copy", {"quick": True, "progress": False}),
}
RUN = ("import importlib, json, sys\n"
       "record = importlib.import_module(sys.argv[1]).run(**json.loads(sys.argv[2]))\n"
       "with open(sys.argv[3], 'w') as f:\n"
       "    json.dump(record, f)\n")


def job(name, env):
    r"""``run()``: the quick run ``name`` of ``QUICK`` in a subprocess, its record read back."""
    module, kwargs = QUICK[name]
    env = dict(env, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

    def run():
        out = Path(background.folder(name)) / "record.json"
        done = background.run([sys.executable, "-c", RUN, module, json.dumps(kwargs), str(out)],
                              env=env, cwd=str(ROOT), timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return json.loads(out.read_text())
    return run


def result(name):
    r"""The record of the quick run ``name``: the background's, or one made now."""
    return background.result(f"quick {name}", job(name, background.snapshot()))
