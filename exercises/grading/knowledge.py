r"""What the grader knows about a module, and where it comes from.

In the workbook, everything is worked out in the grader's process from ``solutions/<module>.py``
(labels, reference outputs, sibling sources) and ``modules/<module>/checks.py`` (cases, misconceptions).
In a student copy there is no ``solutions/``: the same knowledge is read from
``exercises/grading/stored/<module>.json``, written by ``python -m exercises release --repo``.
Either way the grader sees one ``Knowledge`` and grades the same way; only the reference's
source (used to fill in an exercise's siblings while it is graded on its own) exists in the
workbook alone.
"""
import ast
import functools
import importlib
import inspect

from exercises.grading import stored
from exercises.grading.paths import SOLUTIONS


def _number(label):
    tail = label.split()[-1]
    return tuple(int(p) if p.isdigit() else p for p in tail.split("."))


class Knowledge:
    r"""Compiled checks and reader tests of one module, in exercise order."""

    def __init__(self, module, labels, compiled, tests, source_text=None):
        self.module = module
        self.labels = labels  # {name: "Exercise 6.1"}
        self.compiled = compiled  # {name: checking.Compiled}
        self.tests = tests  # {name: reader_tests.CompiledTest}
        self._source = source_text  # solutions/<module>.py, or None in a student copy

    @property
    def has_reference(self):
        return self._source is not None

    def names(self):
        """Every graded name (targets and reader tests), in label order."""
        return sorted(list(self.compiled) + list(self.tests), key=lambda n: _number(self.labels[n]))

    def check(self, name):
        return self.compiled.get(name) or self.tests[name]

    def reference_source(self, names, exclude=()):
        r"""Source of ``names`` from ``solutions/``, with the imports and every definition they use.

        Used to fill in the exercises next to the one graded, and to build the implementations a
        reader test receives. Never includes ``exclude`` (the exercise being graded). None in a
        student copy.
        """
        if self._source is None:
            return None
        tree = ast.parse(self._source)
        defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        wanted, todo = [], [n for n in names if n not in exclude]
        while todo:
            name = todo.pop()
            if name in wanted or name not in defs:
                continue
            wanted.append(name)
            used = {n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)}
            todo += [u for u in used if u in defs and u not in exclude and u not in self.tests]
        lines = self._source.splitlines(keepends=True)
        keep = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Expr))
                or getattr(n, "name", None) in wanted]
        parts = []
        for n in keep:
            first = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
            parts.append("".join(lines[first - 1:n.end_lineno]))
        return "\n".join(parts)

    def to_json(self):
        return {"module": self.module, "labels": self.labels,
                "targets": [c.to_json() for c in self.compiled.values()],
                "tests": [t.to_json() for t in self.tests.values()]}


def _live(module):
    from exercises.grading import modules
    from exercises.grading.checking import compile_target, signatures
    from exercises.grading.generate import region_labels
    from exercises.grading.reader_tests import CompiledTest
    path = SOLUTIONS / f"{module}.py"
    text = path.read_text()
    labels = region_labels(text, f"solutions/{module}.py")
    reference = importlib.import_module(f"solutions.{module}")
    compiled = {}
    for name, target in modules.targets(module).items():
        if name not in labels:
            raise LookupError(f"exercises/grading/modules/{module}/checks.py checks {name}, but solutions/{module}.py "
                              f"marks no solution region in it; add '# BEGIN SOLUTION Exercise N.M' there.")
        compiled[name] = compile_target(target, getattr(reference, name), labels[name])
    tests = {}
    for name, spec in modules.reader_tests(module).items():
        fn = getattr(reference, name)
        params = list(inspect.signature(fn).parameters)
        for m in spec.mutants:
            if m.wraps not in params:
                raise LookupError(f"mutant {m.key} of {name} wraps {m.wraps!r}, which {name} does not take "
                                  f"(it takes {', '.join(params)}).")
        tests[name] = CompiledTest(module, name, labels[name], params, signatures(name, fn, ()),
                                   [{"key": m.key, "wraps": m.wraps, "title": m.title, "hint": m.hint,
                                     "required": m.required} for m in spec.mutants])
    return Knowledge(module, labels, compiled, tests, text)


def _from_store(module, data):
    from exercises.grading.checking import Compiled
    from exercises.grading.reader_tests import CompiledTest
    return Knowledge(module, data["labels"], {d["name"]: Compiled.from_json(d) for d in data["targets"]},
                     {d["name"]: CompiledTest.from_json(d) for d in data["tests"]})


@functools.lru_cache(maxsize=None)
def knowledge(module):
    r"""The grader's knowledge of ``module``: from ``solutions/`` if present, else from the stored copy."""
    if (SOLUTIONS / f"{module}.py").is_file():
        return _live(module)
    data = stored.read(module)
    if data is None:
        raise LookupError(f"There is nothing to grade {module!r} against: no solutions/{module}.py and no "
                          f"exercises/grading/stored/{module}.json. The graded modules are: "
                          f"{', '.join(graded_modules()) or 'none'}.")
    return _from_store(module, data)


def graded_modules():
    r"""Modules the grader can grade here: those with checks and a reference, or stored ones."""
    from exercises.grading import modules
    live = [m for m in modules.names() if (SOLUTIONS / f"{m}.py").is_file()]  # a student copy has no checks.py
    return sorted(set(live) | set(stored.modules()))
