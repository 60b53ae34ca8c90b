r"""The graded process: load the reader's file in its box, run each job, report what happened.

Started by ``exercises.grading.grader`` as ``python -I -B worker.py``, in a throwaway folder with
a scrubbed environment (``sandbox.py``). It reads one request from stdin, limits itself,
installs the guard, loads the reader's file, and writes one JSON line per event on its own copy
of the original stdout: ``ready``, ``loaded``, then ``start`` and ``result`` for each job, then
``done``. Whatever the reader's code prints goes to stderr.

It reports facts, never verdicts: what the reader's object is, whether it is still a stub, its
signature, and what each call returned or raised. The grader's process compares those with the
reference's outputs, which this process never sees; the reference's code is never importable
here. Everything here is untrusted once the reader's file is loaded, and the grader treats it so.
"""
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _text(e):
    try:
        return str(e)[:2000]
    except Exception:
        return "(an exception whose message cannot be printed)"


def describe(obj, name, methods):
    r"""The facts the grader judges before any call: what ``obj`` is, whether it is a stub, its signature."""
    from exercises.grading.checking import signatures
    from exercises.grading.generate import function_is_stub
    if obj is None:
        return {"found": "missing", "type_name": "None", "stubs": {}, "signatures": {}}
    t = type(obj)
    type_name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
    if isinstance(obj, type):
        found = "class"
        stubs = {m: function_is_stub(obj.__dict__[m]) for m in methods if m in obj.__dict__}
    elif callable(obj):
        found = "function"
        stubs = {name: function_is_stub(obj)}
    else:
        return {"found": "other", "type_name": type_name, "stubs": {}, "signatures": {}}
    return {"found": found, "type_name": type_name, "stubs": stubs, "signatures": signatures(name, obj, methods)}


def run_cases(obj, methods, wire_cases, where=lambda e: ""):
    r"""Call ``obj`` on every case, up to the first raise: ``{"calls", "after"}`` (outputs, inputs afterwards)."""
    from exercises.grading.checking import arrays_in, case_from_wire, invoke
    from exercises.grading.wire import encode
    calls, after = [], []
    for wire_case in wire_cases:
        case = case_from_wire(wire_case)
        try:
            out = invoke(obj, case, bool(methods))
        except BaseException as e:  # anything the reader's code raises, even SystemExit
            calls.append({"raised": {"type": type(e).__name__, "message": _text(e), "where": where(e)}})
            break
        calls.append({"out": encode(out)})
        after.append([encode(a) for a in arrays_in(case)])
    return {"calls": calls, "after": after}


class Worker:
    def __init__(self, request, emit):
        self.request, self.emit = request, emit
        self.copy, self.display = request["file"], request["display"]
        self.module = None

    # -- what the reader's code did ---------------------------------------------
    def where(self, exc):
        """The frames of an exception that lie in the reader's file, with the reader's path."""
        if isinstance(exc, SyntaxError) and exc.filename == self.copy:
            return f"\n  line {exc.lineno}: {(exc.text or '').strip()}"
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == self.copy]
        if not frames:
            return ""
        return "\n" + "".join(traceback.format_list(frames[-3:])).rstrip().replace(self.copy, self.display)

    def describe(self, attr, name, methods):
        r"""What ``attr`` in the reader's file is, described under the exercise's ``name``."""
        return describe(self.module.__dict__.get(attr), name, methods)

    # -- loading the file ----------------------------------------------------------
    def load(self):
        spec = importlib.util.spec_from_file_location("_graded", self.copy)
        module = importlib.util.module_from_spec(spec)
        sys.modules["_graded"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as e:  # a SyntaxError or a SystemExit in the reader's file is a result too
            return f"your file {self.display} does not import: {type(e).__name__}: {_text(e)}{self.where(e)}"
        self.module = module
        return None

    # -- the jobs ------------------------------------------------------------------------
    def target(self, job):
        from exercises.grading.saved import saved
        methods = tuple(job["methods"])
        report = dict(self.describe(job["attr"], job["name"], methods), calls=[], after=[])
        if report["found"] not in ("function", "class") or any(report["stubs"].values()):
            return report
        obj = self.module.__dict__[job["attr"]]
        # While this exercise runs, the other exercises of the file are the reference's, so an
        # unfinished rotate_half cannot fail apply_rotary (in a student copy there is no source).
        with saved(self.module.__dict__):  # the whole module comes back as the reader wrote it
            if job["siblings"]:
                exec(compile(job["siblings"], "<the reference's other exercises>", "exec"), self.module.__dict__)
            report.update(run_cases(obj, methods, job["cases"], self.where))
        return report

    def reader_test(self, job):
        from exercises.grading import modules, reader_tests
        name = job["name"]
        report = dict(self.describe(job["attr"], name, ()), outcomes={})
        impl = job["implementations"]
        if report["found"] != "function" or any(report["stubs"].values()):
            return report
        if impl["from"] == "none":  # a student copy, and the implementations do not pass yet
            report["waiting"] = True
            return report
        test = self.module.__dict__[job["attr"]]
        names = job["params"]

        def fresh():
            if impl["from"] == "yours":
                return {n: self.module.__dict__[n] for n in names}
            namespace = {"__name__": "reference"}
            exec(compile(impl["source"], "<the reference>", "exec"), namespace)
            return {n: namespace[n] for n in names}

        wanted = set(job["mutants"])
        chosen = [m for m in modules.reader_tests(job["module"])[name].mutants if m.key in wanted]
        report["outcomes"] = reader_tests.run(test, fresh, chosen, self.copy, self.display)
        return report


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the reader's prints, even from C, land on stderr
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    sys.stdin.close()
    sys.path.insert(0, str(ROOT))

    def emit(**message):
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    # Everything the grader's side of this process needs is imported before the reader's code runs.
    from mini_transformer.engine import backend
    backend.set_backend("numpy")
    import exercises.grading.checking  # noqa: F401
    import exercises.grading.generate  # noqa: F401
    import exercises.grading.reader_tests  # noqa: F401
    import exercises.grading.saved  # noqa: F401
    from exercises.grading import modules, sandbox
    for module in request["mutant_modules"]:
        modules.reader_tests(module)

    sandbox.apply_limits(request["limits"])
    guard = sandbox.install_guard(os.getcwd(), request["reference_dirs"], request["private_dirs"])
    worker = Worker(request, emit)
    emit(event="ready")
    import_error = worker.load()
    emit(event="loaded", import_error=import_error, violations=list(guard.violations),
         reference_import=guard.reference_import)
    seen = len(guard.violations)
    for job in request["jobs"]:
        emit(event="start", index=job["index"])
        reference_import = guard.reference_import
        try:
            report = ({"import_error": import_error} if import_error else
                      worker.reader_test(job) if job["kind"] == "reader_test" else worker.target(job))
        except BaseException as e:  # the grader's side must never take the worker down silently
            report = {"crashed": f"grading stopped with {type(e).__name__}: {_text(e)}; your code may have "
                                 "changed something the grader relies on."}
        report["violations"] = guard.violations[seen:]
        report["reference_import"] = guard.reference_import if guard.reference_import != reference_import else ""
        seen = len(guard.violations)
        emit(event="result", index=job["index"], report=report)
    emit(event="done")


if __name__ == "__main__":
    main()
