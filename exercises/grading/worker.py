r"""The grader's child process: grade a list of jobs, one JSON line per event.

The parent (``exercises.grading.grader``) reads ``{"event": "start"}`` before each job and kills this
process when a job overruns its time limit, so reader code that hangs never hangs the
grader. Whatever the reader's code prints goes to stderr; the protocol has its own copy of
the original stdout.
"""
import importlib.util
import json
import os
import sys
import traceback

_modules = {}


def _load(path):
    name = f"_graded_{len(_modules)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _import_failure(target, label, path, exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = "\n" + "".join(traceback.format_list(frames[-3:])).rstrip() if frames else ""
    if isinstance(exc, SyntaxError):
        where = f"\n  line {exc.lineno}: {(exc.text or '').strip()}"
    return {"target": target.key, "label": label, "status": "fail", "kind": "import", "misconception": None,
            "message": f"your file {path} could not be imported: {type(exc).__name__}: {exc}{where}"}


def run_job(job):
    """Grade one job: ``{"target", "source", "attr", "label"}``."""
    import importlib

    from exercises.grading.checking import grade_candidate
    from exercises.grading.checks import target as target_of, targets
    from exercises.grading.saved import saved

    target = target_of(job["target"])
    path = job["source"]
    if path not in _modules:
        try:
            _modules[path] = _load(path)
        except BaseException as e:  # a SystemExit or SyntaxError in the reader's file is a result too
            _modules[path] = e
    module = _modules[path]
    if isinstance(module, BaseException):
        return _import_failure(target, job["label"], path, module)

    reference_module = importlib.import_module(f"solutions.{target.module}")
    reference = getattr(reference_module, target.name)
    candidate = module.__dict__.get(job["attr"])
    # Grade each exercise on its own: while this one runs, its siblings in the reader's module
    # are the reference ones, so an unfinished rotate_half cannot fail apply_rotary.
    siblings = [n for n in targets(target.module) if n != job["attr"]]
    with saved(module.__dict__, siblings):
        for n in siblings:
            module.__dict__[n] = getattr(reference_module, n)
        return grade_candidate(target, candidate, reference, job["label"], source_file=path)


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the reader's prints, even from C, land on stderr
    sys.stdout = sys.stderr
    from mini_transformer import backend
    backend.set_backend("numpy")

    def emit(**message):
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    jobs = json.loads(sys.stdin.read())
    import exercises.grading.checking  # noqa: F401  (imported before the first clock starts)
    emit(event="ready")
    for job in jobs:
        emit(event="start", index=job["index"])
        try:
            result = run_job(job)
        except BaseException as e:  # the grader itself must never take the worker down silently
            result = {"target": job["target"], "label": job["label"], "status": "fail", "kind": "crashed",
                      "misconception": None,
                      "message": f"grading stopped with {type(e).__name__}: {e}; your code may have changed "
                                 "something the grader relies on."}
        emit(event="result", index=job["index"], result=result)
    emit(event="done")


if __name__ == "__main__":
    main()
