r"""Exercises in which the reader writes a test, scored by the mutants it catches.

The reader writes a function such as ``test_rope_properties(apply_rotary, RotaryEmbedding)``: it
receives implementations as arguments, named like the functions they stand for, and raises
``AssertionError`` when they are wrong. The grader calls it

1. with the reference implementations: it must pass;
2. once per **mutant**: the same implementations with one of them wrong in one realistic way
   (a sign error, an ignored offset, a swapped layout). A mutant the test fails on is caught.

A test that passes the reference and catches every mutant passes; one that lets some through
fails as a *weak test*, with the list of the mutants that got away and what would catch them
(the formative feedback; the summative one, ``feedback.py``, only counts them and names what they
break). Either way the gradebook scores it partially: its points times the fraction of the
mutants it caught (``points.worth``). A test that fails the reference scores nothing, and one that
never asserts anything catches nothing.

A mutant may be marked ``required=False``: the test is not meant to catch it (chapter 12's
clinic gives each check every planted bug, and each check answers for its own). Such a
mutant never makes a test weak; the report says which of them the test caught as well.

Mutants are declared per module in ``exercises/grading/modules/<module>/mutants.py``. Each one *wraps*
the implementation it replaces (``make(apply_rotary) -> a wrong apply_rotary``) instead of
re-implementing it, so the file holds no answer and ships in a student copy, where the reader's
own implementations stand in for the reference once they pass their exercises.
"""
import functools
import traceback
from dataclasses import dataclass, field


@dataclass
class Mutant:
    key: str  # stable name, shown in the report and asserted by the tests
    wraps: str  # the implementation it replaces: a parameter of the reader's test
    title: str  # what is wrong with it
    hint: str  # a check that catches it
    make: object  # the correct implementation -> the wrong one, with the same signature
    misconception: str = ""  # the misconception of the wrapped target that it reproduces, if any
    required: bool = True  # False: the test is not meant to catch it; the report says whether it did


@dataclass
class ReaderTest:
    name: str  # the reader's test function in exercises/<module>.py
    mutants: list = field(default_factory=list)


def disguised(wrong, original):
    r"""``wrong`` under ``original``'s name, docstring and module, so a test must look at behaviour."""
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrong, attr, getattr(original, attr))
        except (AttributeError, TypeError):
            pass
    if "__wrapped__" in getattr(wrong, "__dict__", {}):
        del wrong.__wrapped__
    return wrong


def wraps_function(original):
    """``functools.wraps`` without the ``__wrapped__`` pointer back to the original."""
    def decorate(wrong):
        return disguised(functools.wraps(original)(wrong), original)
    return decorate


# ---------------------------------------------------------------------------
# In the graded process: run the reader's test on the reference and on every mutant
# ---------------------------------------------------------------------------

def where(exc, source_file, display):
    """The frames of ``exc`` that lie in the reader's file (or the line of its syntax error), under ``display``."""
    if isinstance(exc, SyntaxError) and exc.filename == source_file:
        return f"\n  line {exc.lineno}: {(exc.text or '').strip()}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == source_file]
    text = "".join(traceback.format_list(frames[-3:])).rstrip()
    return ("\n" + text.replace(source_file, display)) if frames else ""


def outcome(test, impls, source_file, display):
    r"""What the test did: passed, failed an assertion, or raised something else."""
    try:
        test(**impls)
    except AssertionError as e:
        return {"result": "assertion", "type": "AssertionError", "message": text(e),
                "where": where(e, source_file, display)}
    except BaseException as e:  # a crash on a mutant still tells the mutant apart; on the reference it fails
        return {"result": "raised", "type": type(e).__name__, "message": text(e),
                "where": where(e, source_file, display)}
    return {"result": "passed"}


def text(e, limit=1000):
    """An exception's message, never raising, at most ``limit`` characters."""
    try:
        return str(e)[:limit]
    except Exception:
        return "(an exception whose message cannot be printed)"


def run(test, fresh_impls, mutants, source_file, display):
    r"""``{"reference": outcome, mutant.key: outcome, ...}``; ``fresh_impls()`` builds new implementations."""
    outcomes = {"reference": outcome(test, fresh_impls(), source_file, display)}
    for m in mutants:
        impls = fresh_impls()
        impls[m.wraps] = m.make(impls[m.wraps])
        outcomes[m.key] = outcome(test, impls, source_file, display)
    return outcomes


# ---------------------------------------------------------------------------
# In the grader's process: the verdict
# ---------------------------------------------------------------------------

@dataclass
class CompiledTest:
    r"""What the grader's process knows of a reader test: data only (a release stores it)."""
    module: str
    name: str
    label: str
    params: list  # the implementations it receives, by name
    signatures: dict
    mutants: list  # [{"key", "wraps", "title", "hint", "required"}] ("required" absent means True)
    reference: str = None  # the reference's source of the implementations it runs on (None in a student copy)

    is_class = False
    kind = "reader_test"

    @property
    def key(self):
        return f"{self.module}.{self.name}"

    def stored(self):
        """As the stored form holds it: plain data (``wire``)."""
        return dict(vars(self))

    @classmethod
    def from_stored(cls, d):
        return cls(**d)


def judge(c, report):
    r"""Pass, not attempted, or a failure: fails the reference, weak test, or an earlier problem."""
    from exercises.grading.judging import judge_problems, result

    early = judge_problems(c, report)
    if early:
        return early
    outcomes = report.get("outcomes") or {}
    if report.get("waiting"):
        return result(c, "fail", "waiting", f"{c.label} runs your test on your own {', '.join(c.params)}: this copy "
                                            "of the workbook has no reference to run it on. Make those exercises "
                                            "pass first, then grade again.")
    ref = outcomes.get("reference")
    if ref is None or any(m["key"] not in outcomes for m in c.mutants):
        return result(c, "fail", "crashed", "the grader did not get an answer for every run of your test.")
    if ref["result"] != "passed":
        what = "an assertion fails" if ref["result"] == "assertion" else f"it raises {ref['type']}"
        return result(c, "fail", "fails_reference",
                      f"fails the reference: your test must pass on correct implementations, but {what}: "
                      f"{ref['type']}: {ref['message']}{ref['where']}")
    required = [m for m in c.mutants if m.get("required", True)]
    optional = [m for m in c.mutants if not m.get("required", True)]
    caught = [m for m in required if outcomes[m["key"]]["result"] != "passed"]
    missed = [m for m in required if outcomes[m["key"]]["result"] == "passed"]
    also = [m for m in optional if outcomes[m["key"]]["result"] != "passed"]
    crashes = [f"{m['key']} (by {outcomes[m['key']]['type']}, not by an assertion)"
               for m in caught + also if outcomes[m["key"]]["result"] == "raised"]
    note = f"\nCaught by a crash rather than an assertion: {', '.join(crashes)}." if crashes else ""
    if optional:
        note = (f"\nAlso caught, of the {len(optional)} it is not meant for: "
                f"{', '.join(m['key'] for m in also) or 'none'}.") + note
    n = len(required)
    if not missed:
        what = (f"all {n} mutants" if not optional else
                f"the mutant it must catch, {required[0]['key']}" if n == 1 else
                f"all {n} mutants it must catch")
        r = result(c, "pass", "pass", f"{c.name}: passes on the reference and catches {what}.{note}")
    else:
        lines = "\n".join(f"  - {m['key']} ({m['wraps']}: {m['title']}). What catches it: {m['hint']}"
                          for m in missed)
        r = result(c, "fail", "weak_test", f"weak test: caught {len(caught)} of {n} mutants; "
                                            f"got away: {', '.join(m['key'] for m in missed)}.\n{lines}{note}")
    r["caught"] = [len(caught), n]
    r["escaped"] = [m["wraps"] for m in missed]  # what each escaped mutant breaks (summative feedback names no more)
    r["also_caught"] = [m["key"] for m in also]
    return r
