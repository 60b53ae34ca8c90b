r"""What the grader knows about a module: its stored form, read from a student copy or compiled here.

The grader grades from one form only, the *stored form* of a module: its labels, every target's
compiled check (cases, the reference's outputs, every misconception's outputs) and its reader
tests' mutants, as ``wire`` data. A student copy reads it from
``exercises/grading/stored/<module>.npz`` (written by ``python -m exercises release --repo``);
the workbook compiles it in this process from ``solutions/<module>.py`` and the module's checks,
in memory, when the grader first needs it (every module in well under a second), so an edit to
either counts at once. Both go through ``wire`` bytes and the same ``Knowledge``.

The rule for the reference's own source, which only the workbook has: compiled here, each target
carries the reference's file without that exercise and the reader tests (``siblings``: they stand
in for the rest of the reader's file while it runs, so an unfinished rotate_half cannot fail
apply_rotary), and each reader test the file without the reader tests, to build the
implementations it runs on (``reference``). A release stores both as None: there the reader's own
siblings run, and a reader test runs on the reader's own implementations once they pass.
"""
import ast
import functools
import importlib
import inspect

from exercises.grading import stored, wire
from exercises.grading.paths import MODULES, SOLUTIONS, answer_paths


# ---------------------------------------------------------------------------
# Where a module's checks and mutants are: the one place that knows
# ---------------------------------------------------------------------------

def modules_with_checks():
    """The modules with a grading folder here (``modules/<module>/checks.py``); none in a student copy."""
    from exercises.grading import modules
    return modules.names()


def checks_of(module):
    """``{name: Target}`` of the module's ``checks.py``."""
    from exercises.grading import modules
    return modules.targets(module)


def reference_places():
    r"""``(files and folders, packages)`` the graded process may neither read nor import: ``solutions/`` and
    every file of a grading folder that a student copy does not hold (``paths.answer_paths``)."""
    places = answer_paths()
    packages = ["solutions"] + [".".join(("exercises", "grading", "modules", *p.relative_to(MODULES).with_suffix("").parts))
                                for p in places if p.suffix == ".py" and p.is_relative_to(MODULES)]
    return places, packages


def mutants_of(module):
    """``{test name: ReaderTest}`` of the module's ``mutants.py`` (empty when it has none)."""
    from exercises.grading import modules
    return modules.reader_tests(module)


# ---------------------------------------------------------------------------
# The stored form, and what the grader reads from it
# ---------------------------------------------------------------------------

class Knowledge:
    r"""Compiled checks and reader tests of one module, in exercise order, read from its stored form."""

    def __init__(self, data):
        from exercises.grading.compiled import Compiled
        from exercises.grading.reader_tests import CompiledTest
        self.module = data["module"]
        self.labels = data["labels"]  # {name: "Exercise 6.1"}
        self.compiled = {d["name"]: Compiled.from_stored(d) for d in data["targets"]}
        self.tests = {d["name"]: CompiledTest.from_stored(d) for d in data["tests"]}

    def names(self):
        """Every graded name (targets and reader tests), in label order."""
        return sorted(list(self.compiled) + list(self.tests),
                      key=lambda n: tuple(int(p) if p.isdigit() else p for p in self.labels[n].split()[-1].split(".")))

    def check(self, name):
        return self.compiled.get(name) or self.tests[name]


def reference_without(text, names):
    r"""The reference's source ``text`` without its top-level definitions ``names``."""
    lines = text.splitlines(keepends=True)
    for n in reversed(ast.parse(text).body):
        if getattr(n, "name", None) in names:
            del lines[min([n.lineno] + [d.lineno for d in n.decorator_list]) - 1:n.end_lineno]
    return "".join(lines)


def compile_module(module, reference=True):
    r"""The stored form of ``module``, worked out from ``solutions/`` and its checks.

    ``reference=False`` leaves out the reference's source and the held-out cases (what a release stores).
    """
    from exercises.grading.compiled import compile_target, signatures
    from exercises.grading.generate import region_labels
    from exercises.grading.reader_tests import CompiledTest
    text = (SOLUTIONS / f"{module}.py").read_text()
    labels = region_labels(text, f"solutions/{module}.py")
    solution = importlib.import_module(f"solutions.{module}")
    tests = mutants_of(module)
    targets = []
    for name, target in checks_of(module).items():
        if name not in labels:
            raise LookupError(f"exercises/grading/modules/{module}/checks.py checks {name}, but solutions/{module}.py "
                              f"marks no solution region in it; add '# BEGIN SOLUTION Exercise N.M' there.")
        compiled = compile_target(target, getattr(solution, name), labels[name],
                                  reference_without(text, [name, *tests]) if reference else None)
        targets.append((compiled if reference else compiled.without_held_out()).stored())  # a release: no held-out case
    compiled_tests = []
    for name, spec in tests.items():
        fn = getattr(solution, name)
        params = list(inspect.signature(fn).parameters)
        for m in spec.mutants:
            if m.wraps not in params:
                raise LookupError(f"mutant {m.key} of {name} wraps {m.wraps!r}, which {name} does not take "
                                  f"(it takes {', '.join(params)}).")
        compiled_tests.append(CompiledTest(
            module, name, labels[name], params, signatures(name, fn, ()),
            [{"key": m.key, "wraps": m.wraps, "title": m.title, "hint": m.hint, "required": m.required}
             for m in spec.mutants], reference_without(text, tests) if reference else None).stored())
    return {"module": module, "labels": labels, "targets": targets, "tests": compiled_tests}


@functools.lru_cache(maxsize=None)
def knowledge(module):
    r"""The grader's knowledge of ``module``: compiled from ``solutions/`` if present, else the stored copy."""
    if (SOLUTIONS / f"{module}.py").is_file():
        return Knowledge(wire.loads(wire.dumps(compile_module(module))))  # through the bytes a release stores
    data = stored.read(module)
    if data is None:
        raise LookupError(f"There is nothing to grade {module!r} against: no solutions/{module}.py and no "
                          f"exercises/grading/stored/{module}.npz. The graded modules are: "
                          f"{', '.join(graded_modules()) or 'none'}.")
    return Knowledge(data)


def graded_modules():
    r"""Modules the grader can grade here: those with checks and a reference, or stored ones."""
    live = [m for m in modules_with_checks() if (SOLUTIONS / f"{m}.py").is_file()]
    return sorted(set(live) | set(stored.modules()))
