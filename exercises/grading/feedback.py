r"""Feedback at two levels: what the grader's result says to the student.

* **formative** (the default, for a reader working alone): the grader's whole layered message: the
  misconception and its hint, the failing case and its input, each mutant a weak test let through
  and what would catch it.
* **summative** (for assessed work): what failed and of which kind, never how to fix it: the
  misconception's name without its hint or the input, the number of mutants that escaped a test and
  which implementations they break, never the mutant or the input that would catch it.

``text`` is the one place the two levels differ; the per-student files (``feedback_files.py``) and
Gradescope's ``results.json`` (``gradescope.py``) both print it.
"""
from exercises.grading.errors import CommandError

LEVELS = ("formative", "summative")

# summative sentences: the kind of failure, without the case or the input
_KIND = {
    "numbers": "some outputs are wrong", "shape": "an output has the wrong shape",
    "dtype": "an output has the wrong dtype", "type": "an output is of the wrong type",
    "nan": "an output holds NaN or Inf", "raised": "your code raises an error on a graded case",
    "mutated": "your code writes into its input", "no_error": "your code returns where it must raise an error",
    "timeout": "your code ran past the time limit", "crashed": "the process running your code died",
    "unfinished": "part of it still raises NotImplementedError", "signature": "the signature differs from the stub's",
    "missing": "it is not in your file", "link": "a link was handed in instead of the file",
    "import": "your file does not load", "reference_import": "your code imports the reference",
    "sandbox": "your code did something the grader does not allow",
    "fails_reference": "your test fails on correct implementations", "waiting": "it needs its implementations first",
}


def text(result, level="formative"):
    r"""The feedback of one result at ``level`` (``"formative"`` or ``"summative"``)."""
    if level not in LEVELS:
        raise CommandError(f"feedback level {level!r} is not one of: {', '.join(LEVELS)}.")
    if level == "formative" or result["status"] == "not attempted":
        return result.get("message") or result["status"]
    held = " on the held-out cases" if result.get("failed_on") == "held-out" else ""
    if result["status"] == "pass":
        caught = result.get("caught")
        return f"pass: catches all {caught[1]} mutants." if caught else "pass."
    kind = result["kind"]
    if kind == "weak_test":
        caught, n = result["caught"]
        counts = {}
        for w in result.get("escaped", []):
            counts[w] = counts.get(w, 0) + 1
        broke = ", ".join(f"{c} a wrong {w}" for w, c in counts.items())
        return (f"weak test: {n - caught} of {n} mutants escaped your test"
                + (f" ({broke})." if broke else "."))
    if kind == "misconception":
        title = _misconception_title(result)
        return f"fail{held}: misconception, {title}." if title else f"fail{held}: a known misconception."
    if kind == "import":
        first = (result.get("message") or "").splitlines()[:1]
        return f"fail: your file does not load ({first[0]})" if first else "fail: your file does not load."
    return f"fail{held}: {_KIND.get(kind, kind.replace('_', ' '))}."


def _misconception_title(result):
    from exercises.grading.knowledge import knowledge
    module, name = result["target"].split(".", 1)
    try:
        c = knowledge(module).check(name)
    except (LookupError, KeyError):
        return None
    return next((m["title"] for m in getattr(c, "misconceptions", []) if m["key"] == result.get("misconception")),
                None)
