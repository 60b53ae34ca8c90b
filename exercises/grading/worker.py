r"""The graded process: load the reader's file in its box, run one job, report what happened.

Started by ``exercises.grading.grader``, once per job, as ``python -I -B worker.py`` in a throwaway
folder with a scrubbed environment (``sandbox.py``). It reads the job from stdin (``wire`` bytes),
limits itself, installs the guard, loads the reader's file and runs the job. Its stdout is a file
of the grader's, read once the process has ended; on it go, in turn, ``ready``, a line of JSON
saying how loading went, and the job's report (``wire.dumps``), so a process that stops early
says by what is missing where it stopped. What the reader's code prints goes to stderr, counted.

It reports facts, never verdicts: what the reader's object is, whether it is still a stub, its
signature, and what each call returned or raised. The grader's process compares those with the
reference's outputs, which this process never sees; the reference's code is never importable
here. Everything here is untrusted once the reader's file is loaded, and the grader treats it so.
"""
import copy
import importlib.util
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def describe(obj, name, methods):
    r"""The facts the grader judges before any call: what ``obj`` is, whether it is a stub, its signature."""
    from exercises.grading.compiled import signatures
    from exercises.grading.generate import function_is_stub
    from exercises.grading.wire import type_name
    found = "missing" if obj is None else "class" if isinstance(obj, type) else "function" if callable(obj) else "other"
    if found in ("missing", "other"):
        return {"found": found, "type_name": type_name(obj), "stubs": {}, "signatures": {}}
    stubs = ({m: function_is_stub(obj.__dict__[m]) for m in methods if m in obj.__dict__} if found == "class" else
             {name: function_is_stub(obj)})
    return {"found": found, "type_name": type_name(obj), "stubs": stubs, "signatures": signatures(name, obj, methods)}


def run_cases(obj, methods, cases, where=lambda e: "", boundary=None):
    r"""Call ``obj`` on every case, up to the first raise: ``{"calls", "after"}`` (outputs, inputs afterwards).

    ``boundary`` (``torch_boundary()``) converts each case's inputs before the call and the outputs after it."""
    from exercises.grading.targets import arrays_in, invoke
    from exercises.grading.reader_tests import text
    from exercises.grading.wire import plain
    inward, outward = boundary or (lambda case: case, lambda value: value)
    calls, after = [], []
    for case in map(copy.deepcopy, cases):  # the call may write into its inputs
        case = inward(case)
        try:
            out = invoke(obj, case, bool(methods))
        except BaseException as e:  # anything the reader's code raises, even SystemExit
            calls.append({"raised": {"type": type(e).__name__, "message": text(e, 2000), "where": where(e)}})
            break
        calls.append({"out": plain(outward(out))})  # as it is now: a later call cannot change it
        after.append(plain(arrays_in(outward(case))))
    return {"calls": calls, "after": after}


def torch_boundary():
    r"""``(inward, outward)``: a PyTorch drill's conversions at the edge of the reader's code.

    ``inward(case)`` is the case with every NumPy array among its arguments a tensor of the same
    dtype (``torch.tensor``); ``outward(value)`` is ``value`` with every tensor a NumPy array
    (``.detach().cpu().numpy()``), through tuples, lists and a case's arguments, so the grader
    judges what it judges in NumPy. A NumPy array the reader returns instead of a tensor comes
    back as an ``Opaque``, which the grader refuses by its type. Called before the guard:
    ``import torch`` in the reader's file then finds it loaded.
    """
    import dataclasses

    import numpy as np
    import torch

    from exercises.grading.targets import Case
    from exercises.grading.wire import Opaque

    def each(convert, case):  # every argument of a case, converted
        return dataclasses.replace(case, args=tuple(map(convert, case.args)),
                                   call_args=tuple(map(convert, case.call_args)),
                                   kwargs={k: convert(v) for k, v in case.kwargs.items()},
                                   call_kwargs={k: convert(v) for k, v in case.call_kwargs.items()})

    def inward(case):
        return each(lambda a: torch.tensor(a) if isinstance(a, np.ndarray) else a, case)

    def outward(value):
        if isinstance(value, torch.Tensor):
            try:
                return value.detach().cpu().numpy()
            except (TypeError, RuntimeError):  # a dtype NumPy has no match for (bfloat16): refused by its type
                return value
        if isinstance(value, np.ndarray):
            return Opaque("numpy.ndarray", "a NumPy array where a torch.Tensor belongs")
        if type(value) in (tuple, list):
            return type(value)(map(outward, value))
        return each(outward, value) if isinstance(value, Case) else value

    return inward, outward


class Printed(io.TextIOBase):
    r"""The reader's ``sys.stdout`` and ``sys.stderr``: counts every character, keeps what the file limit allows."""
    total = 0

    def write(self, s):
        self.total += len(s)
        try:
            os.write(2, str(s).encode(errors="replace"))
        except OSError:  # past the size limit of the grader's file: counted, not kept
            pass
        return len(s)


def load(path, display):
    r"""``(the reader's file as a module, None)``, or ``(None, the sentence saying why it does not import)``."""
    from exercises.grading.reader_tests import text, where
    spec = importlib.util.spec_from_file_location("_graded", path)
    module = sys.modules["_graded"] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # a SyntaxError or a SystemExit in the reader's file is a result too
        return None, (f"your file {display} does not import: {type(e).__name__}: {text(e, 2000)}"
                      f"{where(e, path, display)}")
    return module, None


def target(module, job, where, boundary=None):
    from exercises.grading.targets import Case
    methods = tuple(job["methods"])
    report = dict(describe(module.__dict__.get(job["attr"]), job["name"], methods), calls=[], after=[])
    if report["found"] not in ("function", "class") or any(report["stubs"].values()):
        return report
    obj = module.__dict__[job["attr"]]
    # While this exercise runs, the rest of the file is the reference's, so an unfinished
    # rotate_half cannot fail apply_rotary (a student copy has no source for it).
    if job["siblings"]:
        exec(compile(job["siblings"], "<the rest of the reference's file>", "exec"), module.__dict__)
    return dict(report, **run_cases(obj, methods, [Case(**c) for c in job["cases"]], where, boundary))


def reader_test(module, job, copy, display):
    from exercises.grading import reader_tests
    from exercises.grading.knowledge import mutants_of
    name, impl, names = job["name"], job["implementations"], job["params"]
    report = dict(describe(module.__dict__.get(job["attr"]), name, ()), outcomes={})
    if report["found"] != "function" or any(report["stubs"].values()):
        return report
    if impl["from"] == "none":  # a student copy, and the implementations do not pass yet
        return dict(report, waiting=True)

    def fresh():
        if impl["from"] == "yours":
            return {n: module.__dict__[n] for n in names}
        namespace = {"__name__": "reference"}
        exec(compile(impl["source"], "<the reference>", "exec"), namespace)
        return {n: namespace[n] for n in names}

    chosen = [m for m in mutants_of(job["module"])[name].mutants if m.key in set(job["mutants"])]
    return dict(report, outcomes=reader_tests.run(module.__dict__[job["attr"]], fresh, chosen, copy, display))


def main():
    answer = os.fdopen(os.dup(1), "wb", buffering=0)  # each write lands at once: a death loses none of it
    os.dup2(2, 1)  # the reader's prints, even from C, land on stderr
    sys.path.insert(0, str(ROOT))
    from exercises.grading import wire
    request = wire.loads(sys.stdin.buffer.read())
    job = request["job"]

    # Everything the grader's side of this process needs is imported before the reader's code runs.
    from mini_transformer.engine import backend
    backend.set_backend("numpy")
    import exercises.grading.compiled  # noqa: F401
    import exercises.grading.targets  # noqa: F401
    import exercises.grading.generate  # noqa: F401
    from exercises.grading import reader_tests, sandbox
    from exercises.grading.knowledge import mutants_of
    if job["kind"] == "reader_test":
        mutants_of(job["module"])
    boundary = torch_boundary() if request.get("language") == "torch" else None  # a PyTorch drill

    printed = Printed()
    sys.stdout = sys.stderr = printed
    sandbox.apply_limits(request["limits"])
    guard = sandbox.install_guard(os.getcwd(), *request["reference"], request["private_dirs"])
    answer.write(b"ready\n")
    copy, display = request["file"], request["display"]
    module, load_error = load(copy, display)
    load_facts = {"import_error": load_error, "violations": list(guard.violations),
                  "reference_import": guard.reference_import}
    answer.write(json.dumps(load_facts).encode() + b"\n")
    if not any(load_facts.values()):  # a file that fails to load fails every job the same way: nothing to run
        sandbox.set_alarm(request["job_s"])
        try:
            report = (reader_test(module, job, copy, display) if job["kind"] == "reader_test" else
                      target(module, job, lambda e: reader_tests.where(e, copy, display), boundary))
        except BaseException as e:  # the grader's side must never take the worker down silently
            report = {"crashed": f"grading stopped with {type(e).__name__}: {reader_tests.text(e)}; your code may "
                                 "have changed something the grader relies on."}
        sandbox.set_alarm(0)
        report.update(violations=list(guard.violations), reference_import=guard.reference_import,
                      printed=printed.total)
        data = wire.dumps(report)
        if len(data) > (request["limits"]["file_mb"] << 20) - 4096:
            data = wire.dumps({"crashed": f"crashed: your code returned {len(data) >> 20} MB of results, more "
                                          "than the grader reads back; the cases' outputs are a few kB."})
        answer.write(data)
    os._exit(0)  # no atexit handler or thread of the reader's code runs after the answer


if __name__ == "__main__":
    main()
