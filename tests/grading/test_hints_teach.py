r"""Hints teach, they do not hand the answer over; stub docstrings state the contract, not the code.

For every exercise of every chapter (found by its heading, ``### Exercise N.M: ...``, the way
``python -m exercises syllabus`` finds it), the cells between its heading and the next heading are
read: the hint cells (markdown tagged ``hint``) and the ``use("module", "name", ...)`` cell that names
the functions the reader writes. Each name's label (``Exercise N.M``) leads to its reference body in
``solutions/<module>.py`` (every region of that label, so a class's methods count together) and to its
stub docstring in the generated ``exercises/<module>.py``.

The rule for "a shared line of code": each line of the reference body is normalised (its trailing comment
dropped, a leading ``return`` dropped, the prefixes ``xp.``, ``hostnp.``, ``math.`` and ``self.`` dropped,
then every space and backtick removed); lines shorter than 12 characters after that are too trivial to count
(``return y``, ``pass``, ``)``, ``else:``), and so are a bare name (one line of a call split over several) and
a call that only names its arguments, ``f(a, b, key=c)``: that is how a given function is called, which a
contract states (a call of the array library, ``xp.arange(n)``, or of ``range`` still counts), and a new name
for a given one (``L = original_max_position_embeddings``). The right-hand side of an assignment counts as a
line of its own (``x = a + b`` is given away by ``a + b`` alone). A hint or a docstring fails when any such
line appears, normalised the same way, anywhere in its text (line breaks removed too, so a line of code split
over two lines of markdown still counts). A hint is held to more than a docstring: no piece of a line may
appear in it either, that is no call, operation, subscript or comparison of the reference (each
sub-expression, normalised the same way) of 14 characters or more, the same exemptions applied. A docstring
may name a condition of its contract that the code also tests (``offset + T > T_max`` is refused). Every
exercise also needs at least two hints: a nudge, then the key idea with a small case to test it on.
"""
import ast
import re
import textwrap

import pytest

from exercises.grading import notebooks
from exercises.grading.generate import generated_text, labels_of, regions
from exercises.grading.paths import SOLUTIONS
from exercises.grading.syllabus import exercises_in

SHORTEST = 12  # normalised characters; shorter lines are too trivial to give anything away
_USE = re.compile(r"""\buse\(\s*["'](?P<module>\w+)["']\s*,(?P<names>[^)]*)\)""")


def normalise(text):
    r"""``text`` without prefixes, spaces, line breaks or backticks: what two spellings of one line share."""
    text = re.sub(r"\b(?:xp|hostnp|math|self)\.", "", text)
    return re.sub(r"[\s`]+", "", text)


_ARG = r"[\w.]+(?:=[\w.]+)?"  # a name, a number, or a keyword set to one
_NAMED_CALL = re.compile(rf"^(?!(?:xp|hostnp|math)\.)(?!range\()[\w.]+\((?:{_ARG}(?:,{_ARG})*)?\)$")


def counts(line):
    r"""Whether a (stripped) line of code is one that gives something away (see the module docstring)."""
    n = normalise(line)
    if re.fullmatch(r"[\w.]+=[\w.]+", n):  # a new name for a given one, ``L = original_max_position_embeddings``
        return False
    if len(n) < SHORTEST or re.search(r"[-+*/%<>=(\[]", n) is None:
        return False
    return not _NAMED_CALL.match(re.sub(r"\s+", "", line))


def code_lines(body):
    r"""The normalised lines of a reference body that are long enough to give something away."""
    out = set()
    for line in body.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line.strip())
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"^return\s+", "", line)
        candidates = [line]
        m = re.match(r"^[\w\[\]., :*]+?\s*(?<![=!<>])=(?!=)\s*(?P<rhs>.+)$", line)
        if m:
            candidates.append(m.group("rhs"))
        out.update(normalise(c) for c in candidates if counts(c))
    return out


SHORTEST_PIECE = 14  # normalised characters, for the pieces of a line that a hint may not hold either


def reference_body(module, label):
    r"""Every region of ``label`` in ``solutions/<module>.py``, unindented, one after the other."""
    text = (SOLUTIONS / f"{module}.py").read_text()
    lines = text.splitlines()
    return "\n".join(textwrap.dedent("\n".join(lines[first + 1:last]))
                     for lab, first, last, _ in regions(text) if lab == label)


def reference_lines(module, label):
    r"""The code lines of every region of ``label`` in ``solutions/<module>.py``."""
    return code_lines(reference_body(module, label))


def reference_pieces(module, label):
    r"""The calls, operations, subscripts and comparisons of the reference that give something away."""
    out = set()
    for node in ast.walk(ast.parse(reference_body(module, label))):
        if isinstance(node, (ast.Call, ast.BinOp, ast.Subscript, ast.Compare)):
            piece = ast.unparse(node)
            if counts(piece) and len(normalise(piece)) >= SHORTEST_PIECE:
                out.add(normalise(piece))
    return out


def stub_docstrings(module, names):
    r"""``{qualname: docstring}`` of ``names`` (functions or classes, with their methods) in the exercise file."""
    tree = ast.parse(generated_text(module))
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            out[node.name] = ast.get_docstring(node) or ""
            if isinstance(node, ast.ClassDef):
                out.update({f"{node.name}.{m.name}": ast.get_docstring(m) or "" for m in node.body
                            if isinstance(m, ast.FunctionDef)})
    return out


def _heading(cell):
    return cell.cell_type == "markdown" and re.match(r"^#{1,4}\s", cell.source) is not None


def exercises_of(chapter):
    r"""``[(numbers, heading, hints, {module: [name, ...]})]``, one entry per exercise heading of ``chapter``."""
    out, current = [], None
    for cell in notebooks.read_chapter(chapter).cells:
        tags = notebooks.tags(cell)
        if cell.cell_type == "markdown" and notebooks.HINT_TAG not in tags:
            found = exercises_in("\n".join("# " + line for line in cell.source.splitlines()))
            if found:
                heading = next(line for line in cell.source.splitlines()
                               if re.match(r"#+\s+Exercises?\s", line))
                current = ([e.number for e in found], heading.lstrip("# "), [], {})
                out.append(current)
                continue
            if _heading(cell):
                current = None
        if current is None:
            continue
        if notebooks.HINT_TAG in tags:
            current[2].append(cell.source)
        elif cell.cell_type == "code":
            for m in _USE.finditer(cell.source):
                names = re.findall(r"""["'](\w+)["']""", m.group("names"))
                current[3].setdefault(m.group("module"), []).extend(names)
    return out


EXERCISES = [(chapter, entry) for chapter in notebooks.chapter_names() for entry in exercises_of(chapter)]


def test_every_exercise_of_the_book_is_found():
    # every "Exercise N.M" marker of solutions/ has its heading in a chapter: a heading this test cannot
    # read would escape it silently
    marked = {label for path in SOLUTIONS.glob("*.py") for label in labels_of(path.stem).values()
              if label.startswith("Exercise ")}
    assert {f"Exercise {n}" for _, (numbers, *_rest) in EXERCISES for n in numbers} == marked
    assert len(marked) >= 50
    for chapter, (numbers, heading, _, used) in EXERCISES:
        assert used, f"{chapter}: {heading!r} has no use(...) cell naming the functions the reader writes"
        labels = {labels_of(module).get(name) for module, names in used.items() for name in names}
        assert {f"Exercise {n}" for n in numbers} <= labels, (chapter, heading, labels)


@pytest.mark.parametrize("chapter, entry", EXERCISES, ids=[" and ".join(e[0]) for _, e in EXERCISES])
def test_hints_and_stub_docstrings_teach_without_the_code(chapter, entry):
    numbers, heading, hints, used = entry
    problems = []
    if len(hints) < 2:
        problems.append(f"{heading}: {len(hints)} hint(s); every exercise has two, a nudge and the key idea")
    for module, names in used.items():
        docstrings = stub_docstrings(module, names)
        for name in names:
            label = labels_of(module)[name]
            if label.split()[-1] not in numbers:
                continue  # a function of an earlier exercise, used again here
            lines = reference_lines(module, label)
            pieces = reference_pieces(module, label) | lines
            for n, hint in enumerate(hints, 1):
                text = normalise(hint)
                problems += [f"{heading}: hint {n} gives away {piece!r} of {name}'s reference"
                             for piece in pieces if piece in text]
            for qual, doc in docstrings.items():
                if qual.split(".")[0] != name:
                    continue
                text = normalise(doc)
                problems += [f"{heading}: the docstring of exercises/{module}.py:{qual} gives away the line "
                             f"{line!r}" for line in lines if line in text]
    assert not problems, f"{chapter}:\n" + "\n".join(problems)
