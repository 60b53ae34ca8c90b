r"""Turn ``solutions/`` into the reader's ``exercises/`` (and into blank drill files).

A solution region is the block between two marker lines inside a function body::

    # BEGIN SOLUTION Exercise 6.1
    ...
    # END SOLUTION

``stub_source`` replaces each region with the book's one stub format::

    # TODO: Exercise 6.1
    raise NotImplementedError("Exercise 6.1")

so the signature and the docstring, which sit above the region, stay as they are. A module
becomes an exercise module when at least one of its labels starts with ``Exercise``; drill-only
modules (labels ``Drill ...``) never appear in ``exercises/`` and are blanked on demand by
``python -m exercises drill`` (``torch_drill_text``: the same blank for PyTorch).
"""
import ast
import re
import textwrap

from exercises.grading import stored
from exercises.grading.errors import CommandError
from exercises.grading.paths import EXERCISES, SOLUTIONS

_BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION(?: (?P<label>\S.*?))?[ \t]*$")
_END = re.compile(r"^[ \t]*# END SOLUTION[ \t]*$")

HEADER = ("# Generated from solutions/{name}.py by `python -m exercises generate`; do not edit by hand\n"
          "# except inside the function bodies, which are yours. Grade with `python -m pytest`.\n")


def stub_lines(indent, label):
    """The two lines that stand in for a solution region."""
    return [f"{indent}# TODO: {label}\n", f'{indent}raise NotImplementedError("{label}")\n']


def regions(text, where="<source>"):
    """``[(label, first_line, last_line, indent)]`` of every marked region (0-based, inclusive)."""
    found, start = [], None
    for n, line in enumerate(text.splitlines(keepends=True)):
        m = _BEGIN.match(line)
        if m:
            if start is not None:
                raise ValueError(f"{where}:{n + 1}: BEGIN SOLUTION inside another region "
                                 f"(opened on line {start[1] + 1}); close it with END SOLUTION first.")
            if not m.group("label"):
                raise ValueError(f"{where}:{n + 1}: a BEGIN SOLUTION marker needs a label, "
                                 "e.g. '# BEGIN SOLUTION Exercise 6.1'.")
            start = (m.group("label"), n, m.group("indent"))
        elif _END.match(line):
            if start is None:
                raise ValueError(f"{where}:{n + 1}: END SOLUTION without a BEGIN SOLUTION above it.")
            found.append((start[0], start[1], n, start[2]))
            start = None
    if start is not None:
        raise ValueError(f"{where}:{start[1] + 1}: BEGIN SOLUTION is never closed with END SOLUTION.")
    return found


def stub_source(text, where="<source>"):
    """``text`` with every solution region replaced by its stub lines."""
    lines = text.splitlines(keepends=True)
    for label, first, last, indent in reversed(regions(text, where)):
        lines[first:last + 1] = stub_lines(indent, label)
    return "".join(lines)


def region_labels(text, where="<source>"):
    r"""``{qualname: label}`` for every function or method that holds a region.

    A class whose methods hold regions maps to their (shared) label too, under its own name.
    """
    spans = regions(text, where)
    labels = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                qual = prefix + child.name
                inside = [lab for lab, first, _, _ in spans if child.lineno - 1 < first < child.end_lineno]
                if isinstance(child, ast.FunctionDef) and inside:
                    labels[qual] = inside[0]
                if isinstance(child, ast.ClassDef):
                    visit(child, qual + ".")
                    if inside:
                        labels[qual] = inside[0]

    visit(ast.parse(text), "")
    return labels


def solution_modules():
    """Names of the modules in ``solutions/`` (none in a student copy)."""
    return sorted(p.stem for p in SOLUTIONS.glob("*.py") if not p.name.startswith("_"))


def _solution_text(name):
    return (SOLUTIONS / f"{name}.py").read_text()


def exercise_modules():
    """Names of the modules that have numbered exercises (and so a file in ``exercises/``)."""
    if not SOLUTIONS.is_dir():  # a student copy: its stored knowledge says which
        return [m for m in stored.modules() if stored.read(m).get("exercise_text")]
    out = []
    for name in solution_modules():
        if any(lab.startswith("Exercise ") for lab, *_ in regions(_solution_text(name), name)):
            out.append(name)
    return out


def generated_text(name):
    """What ``exercises/<name>.py`` must contain."""
    if not (SOLUTIONS / f"{name}.py").is_file():
        data = stored.read(name)
        if data and data.get("exercise_text"):
            return data["exercise_text"]
        raise LookupError(f"No solutions/{name}.py and no stored exercise file for {name!r}.")
    return HEADER.format(name=name) + stub_source(_solution_text(name), f"solutions/{name}.py")


def labels_of(name):
    """``{qualname: label}`` of a module's exercises, from ``solutions/`` or the stored copy."""
    if (SOLUTIONS / f"{name}.py").is_file():
        return region_labels(_solution_text(name), f"solutions/{name}.py")
    data = stored.read(name)
    if data is None:
        raise LookupError(f"No solutions/{name}.py and no stored knowledge for {name!r}.")
    return data["region_labels"]


# ---------------------------------------------------------------------------
# Is a function still a stub?
# ---------------------------------------------------------------------------

def _body_without_docstring(fn_node):
    body = list(fn_node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def body_is_stub(fn_node):
    """True when the body (past the docstring) is only ``raise NotImplementedError(...)``."""
    body = _body_without_docstring(fn_node)
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    if isinstance(exc, ast.Call):
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def function_is_stub(fn):
    """True for a live function object whose source is still the stub; False when unknowable."""
    import inspect
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        node = ast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_is_stub(node)


# ---------------------------------------------------------------------------
# Drift: does exercises/ still say what solutions/ would generate?
# ---------------------------------------------------------------------------

def _segment(lines, node, start=None):
    """Source lines of ``node`` (decorators included) from ``start`` or its first line."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    return "".join(lines[first if start is None else start:node.end_lineno])


def _header(lines, fn):
    """The ``def`` line(s) and the docstring: everything the reader must not change."""
    body = fn.body
    stop = body[0].end_lineno if _body_without_docstring(fn) != body else body[0].lineno - 1
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list]) - 1
    return "".join(lines[first:stop])


def drift(name, current_text=None):
    r"""Differences between ``exercises/<name>.py`` and what ``generate`` would write.

    Everything the generator owns must match: the module docstring, every import and
    top-level statement, each function's signature and docstring, and each stub body that
    the reader has not replaced yet. Bodies the reader has filled in, and helpers or imports
    the reader has added, are the reader's and are ignored. Returns a list of sentences
    (empty when nothing drifted).
    """
    path = EXERCISES / f"{name}.py"
    if current_text is None:
        if not path.exists():
            return [f"exercises/{name}.py is missing; run `python -m exercises generate`."]
        current_text = path.read_text()
    want_text = generated_text(name)
    want, want_lines = ast.parse(want_text), want_text.splitlines(keepends=True)
    try:
        have = ast.parse(current_text)
    except SyntaxError as e:
        return [f"exercises/{name}.py does not parse ({e}); it cannot be compared with solutions/{name}.py."]
    have_lines = current_text.splitlines(keepends=True)
    problems = []

    if ast.get_docstring(want) != ast.get_docstring(have):
        problems.append(f"exercises/{name}.py: the module docstring differs from solutions/{name}.py.")

    def compare_function(w, h, qual):
        if _header(want_lines, w) != _header(have_lines, h):
            problems.append(f"exercises/{name}.py: the signature or docstring of {qual} differs "
                            f"from solutions/{name}.py.")
        if body_is_stub(w):
            if body_is_stub(h) and _segment(want_lines, w) != _segment(have_lines, h):
                problems.append(f"exercises/{name}.py: the stub of {qual} differs from the one "
                                "generated (its exercise number or TODO line changed).")
        elif _segment(want_lines, w) != _segment(have_lines, h):
            problems.append(f"exercises/{name}.py: {qual} is given code in solutions/{name}.py "
                            "and differs here.")

    def defs(node):
        return {c.name: c for c in node.body if isinstance(c, (ast.FunctionDef, ast.ClassDef))}

    have_defs = defs(have)
    have_stmts = {_segment(have_lines, c) for c in have.body
                  if not isinstance(c, (ast.FunctionDef, ast.ClassDef))}
    for i, w in enumerate(want.body):
        if i == 0 and ast.get_docstring(want) is not None:
            continue
        if isinstance(w, (ast.FunctionDef, ast.ClassDef)):
            h = have_defs.get(w.name)
            if h is None or type(h) is not type(w):
                problems.append(f"exercises/{name}.py: {w.name} is missing.")
            elif isinstance(w, ast.FunctionDef):
                compare_function(w, h, w.name)
            else:
                if _header(want_lines, w) != _header(have_lines, h):
                    problems.append(f"exercises/{name}.py: the class line or docstring of {w.name} differs.")
                h_methods = defs(h)
                for wm in w.body:
                    if isinstance(wm, ast.FunctionDef):
                        hm = h_methods.get(wm.name)
                        if hm is None:
                            problems.append(f"exercises/{name}.py: {w.name}.{wm.name} is missing.")
                        else:
                            compare_function(wm, hm, f"{w.name}.{wm.name}")
        elif _segment(want_lines, w) not in have_stmts:
            problems.append(f"exercises/{name}.py: this line is missing or changed: "
                            f"{_segment(want_lines, w).strip()!r}.")
    return problems


def filled_in(name):
    """Qualified names of the exercise functions in ``exercises/<name>.py`` the reader has written."""
    path = EXERCISES / f"{name}.py"
    if not path.exists():
        return []
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return ["(the file does not parse)"]
    stubs = set(labels_of(name))
    out = []
    for node in tree.body:
        pairs = [(node.name, node)] if isinstance(node, ast.FunctionDef) else (
            [(f"{node.name}.{m.name}", m) for m in node.body if isinstance(m, ast.FunctionDef)]
            if isinstance(node, ast.ClassDef) else [])
        out += [q for q, fn in pairs if q in stubs and not body_is_stub(fn)]
    return out


def generate(force=False, check=False):
    r"""Write (or with ``check=True`` only compare) every exercise module.

    Refuses to overwrite a file in which the reader has written code, unless ``force``.
    Returns a list of sentences describing what was done or what is wrong.
    """
    if not SOLUTIONS.is_dir():
        raise CommandError("There is no solutions/ folder here (a student copy has none), so there is nothing to "
                         "generate exercises/ from.")
    report = []
    for name in exercise_modules():
        if check:
            report += drift(name)
            continue
        written = filled_in(name)
        if written and not force:
            report.append(f"exercises/{name}.py holds your code in {', '.join(written)}; not overwritten. "
                          "Pass --force to replace it with fresh stubs.")
            continue
        (EXERCISES / f"{name}.py").write_text(generated_text(name))
        report.append(f"wrote exercises/{name}.py")
    return report


def drill_text(module, names, title, minutes):
    r"""A blank drill file: the module's imports, then ``names`` with signatures and docstrings only."""
    if not (SOLUTIONS / f"{module}.py").is_file():
        text = ((stored.read(module) or {}).get("drill") or {}).get("text")
        if text is None:
            raise CommandError(f"No solutions/{module}.py and no stored blank file for the drill {title!r}.")
        return text
    src = stub_source(_solution_text(module), f"solutions/{module}.py")
    tree, lines = ast.parse(src), src.splitlines(keepends=True)
    imports = [_segment(lines, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    by_name = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"solutions/{module}.py defines no {', '.join(missing)}; check the DRILL of "
                         f"exercises/grading/modules/{module}/checks.py.")
    defs = [_segment(lines, n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
            and n.name in names]
    head = (f'r"""Drill: {title}. Target {minutes} minutes from this blank file.\n\n'
            "Write every body from memory, without opening solutions/ or the chapter. The clock\n"
            "started when this file was written. Grade (and stop the clock) with\n\n"
            f"    python -m exercises drill {title} --grade\n"
            '"""\n')
    return head + "".join(imports) + "\n\n" + "\n\n".join(defs)


TORCH_MARKER = "# drill language: torch"  # the line of a PyTorch blank; the grader reads it (drill.language_of)
_BACKEND_IMPORT = re.compile(r"^(from mini_transformer\.engine\.backend import .*|import numpy( as np)?)\n", re.M)
_TENSOR_WORDS = [(re.compile(r"\ban array\b"), "a tensor"), (re.compile(r"\bAn array\b"), "A tensor"),
                 (re.compile(r"\barray\b"), "tensor"), (re.compile(r"\barrays\b"), "tensors")]


def torch_drill_text(module, names, title, minutes):
    r"""The PyTorch blank of a drill: ``drill_text``'s signatures and docstrings, with ``import torch`` for the
    backend's import, the docstrings' arrays as tensors, and ``TORCH_MARKER``, so ``--grade`` grades it in PyTorch.

    Built from the NumPy blank's text (which a student copy stores), never from ``solutions/`` directly.
    """
    text = drill_text(module, names, title, minutes)
    tree = ast.parse(text)
    first = tree.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise ValueError(f"the blank file of the drill {title!r} does not start with its docstring.")
    rest = "".join(text.splitlines(keepends=True)[first.end_lineno:])
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    last_import = "".join(text.splitlines(keepends=True)[imports[-1].lineno - 1:imports[-1].end_lineno])
    rest = rest.replace(last_import, last_import + "import torch\n", 1) if imports else "import torch\n" + rest
    rest = _BACKEND_IMPORT.sub("", rest)
    for pattern, word in _TENSOR_WORDS:
        rest = pattern.sub(word, rest)
    head = (f'r"""Drill: {title}, in PyTorch. Target {minutes} minutes from this blank file.\n\n'
            "Write every body from memory in PyTorch, without opening solutions/ or the chapter. The\n"
            "grader calls your code with torch tensors of the dtypes the docstrings name (float64 unless\n"
            "they say otherwise) and expects tensors back, of the dtypes they name. The clock started when\n"
            "this file was written. Grade (and stop the clock) with\n\n"
            f"    python -m exercises drill {title} --grade --torch\n"
            '"""\n' + TORCH_MARKER + "\n")
    return head + rest
