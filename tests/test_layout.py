r"""The house's floors: no import circle between files or folders, no private name across modules, imports one way.

``mini_transformer`` reads as four floors, from the bottom: ``engine`` (arrays, autograd, layers,
optimiser, kernels), ``positional`` (the schemes and their scaling), ``model`` (attention, the
Transformer, cache, checkpoints, data, training) and ``evaluation`` (measures, streaming, benches,
the clinic). The chapters' experiments are not in it: they sit in ``experiments/`` at the top of the
repository and use the library like any reader.

The rest of the house has floors too (STYLE.md, rule 28b). Every import in every file under
``mini_transformer/``, ``exercises/``, ``solutions/``, ``experiments/`` and ``book/`` (the website's build), the
ones inside functions included, is read with ``ast`` and resolved to the module it names:

* no circle between files, and none between folders: in every folder, its entries (each file, and
  each subfolder standing for everything inside it) import one another one way only. A test file
  (``test_*.py``, ``conftest.py``) uses everything and nothing imports it, so it draws no folder
  edge, as ``tests/`` draws none;
* no module imports a private name (one starting with ``_``) from another module, nor reads one off
  a module it imported (``notebooks._stable_ids``): a helper used across modules is public;
* imports go one way, down the rooms of ``MAY_IMPORT``: chapters use everything (they are not
  read here); the grader and the book's build use the library and the solutions; the solutions,
  the reader's files generated from them, and the experiments use the library only; the library
  uses none of them.
"""
import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "mini_transformer"
FLOORS = ("engine", "positional", "model", "evaluation")
TOPS = ("mini_transformer", "exercises", "solutions", "experiments", "book")

#: each room, and the rooms its files may import; a room may always import itself
MAY_IMPORT = {
    "library": set(),                               # mini_transformer/: nothing of the rest
    "solutions": {"library"},                       # solutions/: the reference answers
    "reader": {"library"},                          # exercises/*.py: the reader's files, generated from solutions/
    "experiments": {"library"},                     # experiments/: the chapters' experiments, measured on the library
    "grader": {"library", "solutions"},             # exercises/grading/: the grader, drills, instructor tools
    "book": {"library", "solutions", "grader"},     # book/: the website's build and its Sphinx configuration
    "adapters": {"library", "grader"},              # exercises/adapters/: what the chapters use to run the reader's code
    "front door": {"grader"},                       # exercises/__init__.py and __main__.py: `use`, `reveal`, the command line
}


def module_name(path, root=ROOT):
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_in(root=ROOT, tops=TOPS):
    """``{dotted name: path}`` of every ``.py`` file under the folders ``tops`` of ``root``."""
    return {module_name(p, root): p for top in tops for p in sorted((root / top).rglob("*.py"))
            if "__pycache__" not in p.parts}


MODULES = modules_in()


def resolve(target, modules):
    """The module ``target`` names, or the nearest package above it that is one of ``modules``; None outside them."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def dotted(node):
    """``a.b.c`` for the expression ``a.b.c``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return base and f"{base}.{node.attr}"
    return None


def uses_of(path, modules=None, root=ROOT):
    r"""What ``path`` takes from other modules, as ``(module, name)`` pairs, imports inside functions included.

    ``name`` is the imported name, or None where the import names a module (``import a.b``,
    ``from a import b`` with ``a/b.py``). A name read off a module bound by an import
    (``notebooks._stable_ids(nb)``) is a use too.
    """
    modules = MODULES if modules is None else modules
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    uses, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                uses.append((a.name, None))
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                if f"{target}.{a.name}" in modules:
                    uses.append((f"{target}.{a.name}", None))
                    bound[a.asname or a.name] = f"{target}.{a.name}"
                else:
                    uses.append((target, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
            head, _, rest = (dotted(node.value) or "").partition(".")
            if head in bound:
                module = ".".join([bound[head]] + ([rest] if rest else []))
                if module in modules:
                    uses.append((module, node.attr))
    return uses


def imports_of(path, modules=None, root=ROOT):
    """Every module ``path`` imports (absolute dotted names; submodules where a name is one)."""
    return {target for target, _ in uses_of(path, modules, root)}


def graph_of(modules, root=ROOT):
    """``{module: the modules of ``modules`` it imports}``."""
    return {m: {resolve(t, modules) for t in imports_of(p, modules, root)} - {None, m} for m, p in modules.items()}


@functools.cache
def graph():
    """The house's import graph, read once, when the first test asks (not at collection: it reads every file)."""
    return graph_of(MODULES)


def floor_of(module):
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def room_of(module):
    """The room of ``MAY_IMPORT`` that ``module`` sits in."""
    top, _, rest = module.partition(".")
    if top in ("mini_transformer", "solutions", "experiments", "book"):
        return {"mini_transformer": "library"}.get(top, top)
    first = rest.partition(".")[0]
    if first in ("", "__main__"):
        return "front door"
    return {"grading": "grader", "adapters": "adapters"}.get(first, "reader")


def is_test(path):
    return path.name.startswith("test_") or path.name == "conftest.py"


def test_the_top_folder_shows_the_floors_and_nothing_else():
    entries = sorted(p.name for p in LIBRARY.iterdir() if p.name != "__pycache__")
    assert entries == sorted(["__init__.py", *FLOORS])


def test_no_floor_imports_a_floor_above_it():
    upward = [(m, i) for m, deps in graph().items() for i in deps
              if floor_of(m) is not None and floor_of(i) is not None and floor_of(i) > floor_of(m)]
    assert upward == []


def circles_in(graph):
    """The strongly connected components of two or more modules (Tarjan): each is an import circle."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def folder_circles(graph, modules):
    r"""Circles among the entries of one folder, each subfolder standing for everything inside it.

    Cutting every name to its first ``d`` parts merges each folder at that depth into one node; a
    circle among the nodes is a circle among siblings (or shows one above them). A test file draws
    no edge: it uses everything and nothing imports it.
    """
    found = []
    for d in range(1, max(len(m.split(".")) for m in graph) + 1):
        cut = lambda m: ".".join(m.split(".")[:d])  # noqa: E731
        merged = {}
        for m, deps in graph.items():
            merged.setdefault(cut(m), set()).update(
                set() if is_test(modules[m]) else {cut(i) for i in deps if cut(i) != cut(m)})
        found += [c for c in circles_in(merged) if c not in found]
    return found


def test_no_import_circle_between_files():
    assert circles_in(graph()) == []


def test_no_import_circle_between_folders():
    assert folder_circles(graph(), MODULES) == []


def private_uses(modules, root=ROOT):
    """``(importer, module, name)`` for each private name a module takes from another module."""
    found = []
    for m, p in modules.items():
        for target, name in uses_of(p, modules, root):
            home = resolve(target, modules)
            if home not in (None, m) and name and name.startswith("_") and not name.startswith("__"):
                found.append((m, target, name))
    return sorted(set(found))


def test_no_module_imports_a_private_name_from_another():
    assert private_uses(MODULES) == []


def against_the_direction(graph):
    """``(importer, room, imported, room)`` for each import that goes against ``MAY_IMPORT``."""
    return sorted((m, room_of(m), i, room_of(i)) for m, deps in graph.items() for i in deps
                  if room_of(i) != room_of(m) and room_of(i) not in MAY_IMPORT[room_of(m)])


def test_imports_go_one_way_down_the_rooms():
    assert against_the_direction(graph()) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room_of(m) == "library"))
def test_the_library_never_imports_the_book(module):
    book = {i for i in imports_of(MODULES[module]) if i.split(".")[0] in ("exercises", "solutions", "experiments", "chapters", "tests")}
    assert book == set()


def test_every_file_of_the_house_sits_in_a_room_and_the_rooms_import_downward():
    assert {room_of(m) for m in MODULES} == set(MAY_IMPORT)
    assert room_of("exercises.rope") == "reader" and room_of("exercises.grading.modules.rope.checks") == "grader"
    assert room_of("exercises") == room_of("exercises.__main__") == "front door"
    # the rooms themselves form no circle: the direction alone keeps the house acyclic between rooms
    assert circles_in(MAY_IMPORT) == []


def test_the_backend_switch_has_no_strict_branch_and_strict_needs_no_backend():
    backend = (LIBRARY / "engine" / "backend.py").read_text()
    assert '_name == "strict"' not in backend and "StrictArray" not in backend
    assert "mini_transformer.engine.backend" not in imports_of(LIBRARY / "engine" / "strict.py")


def test_the_checks_see_a_planted_circle_and_a_planted_upward_import():
    """Positive controls: the circle finder and the floor order on graphs where the answer is known."""
    assert circles_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles_in({"a": {"b"}, "b": set()}) == []
    assert floor_of("mini_transformer.evaluation.bench") > floor_of("mini_transformer.engine.autograd")
    assert floor_of("mini_transformer.model.train") > floor_of("mini_transformer.positional.rope")
    # the lazy import inside a function is read too (backend loads strict that way)
    assert "mini_transformer.engine.strict" in graph()["mini_transformer.engine.backend"]


# ---------------------------------------------------------------------------
# Positive controls: small fake trees, each breaking one rule, each caught
# ---------------------------------------------------------------------------

def plant(root, files):
    """Write ``{relative path: source}`` under ``root`` and read it back as the test reads the house."""
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    modules = modules_in(root)
    return modules, graph_of(modules, root)


LIBRARY_STUB = {"mini_transformer/__init__.py": "", "mini_transformer/engine/__init__.py": "",
                "mini_transformer/engine/autograd.py": "def _raw(x):\n    return x\n\ndef op(x):\n    return x\n"}


def test_a_planted_circle_between_files_is_caught_inside_a_function_too(tmp_path):
    modules, graph = plant(tmp_path, {**LIBRARY_STUB,
                                      "solutions/__init__.py": "", "solutions/a.py": "from solutions.b import f\n",
                                      "solutions/b.py": "def f():\n    from solutions import a\n"})
    assert circles_in(graph) == [["solutions.a", "solutions.b"]]


def test_a_planted_circle_between_folders_is_caught_though_no_two_files_close_one(tmp_path):
    # x/one -> y/one -> y/two -> x/two: no file circle, but folders x and y import each other
    modules, graph = plant(tmp_path, {
        "exercises/__init__.py": "", "exercises/grading/__init__.py": "",
        "exercises/grading/x/__init__.py": "", "exercises/grading/y/__init__.py": "",
        "exercises/grading/x/one.py": "from exercises.grading.y.one import f\n",
        "exercises/grading/y/one.py": "def f():\n    from exercises.grading.y import two\n",
        "exercises/grading/y/two.py": "from exercises.grading.x.two import g\n",
        "exercises/grading/x/two.py": "def g():\n    pass\n"})
    assert circles_in(graph) == []
    assert folder_circles(graph, modules) == [["exercises.grading.x", "exercises.grading.y"]]
    # the same tree without the last edge has no circle; a test file importing upward draws none either
    (tmp_path / "exercises/grading/y/two.py").write_text("")
    (tmp_path / "exercises/grading/y/test_one.py").write_text("from exercises.grading.x.one import f\n")
    modules, graph = plant(tmp_path, {})
    assert folder_circles(graph, modules) == []


def test_a_planted_private_import_is_caught_as_a_name_and_as_an_attribute(tmp_path):
    modules, graph = plant(tmp_path, {**LIBRARY_STUB,
                                      "mini_transformer/engine/nn.py": "from .autograd import _raw, op\n",
                                      "mini_transformer/engine/attention.py":
                                          "from mini_transformer.engine import autograd\n"
                                          "def f(x):\n    return autograd._raw(x), autograd.__name__\n",
                                      "mini_transformer/engine/ok.py": "def _own():\n    pass\n_own()\n"})
    assert private_uses(modules, tmp_path) == [
        ("mini_transformer.engine.attention", "mini_transformer.engine.autograd", "_raw"),
        ("mini_transformer.engine.nn", "mini_transformer.engine.autograd", "_raw")]


@pytest.mark.parametrize("importer, source, rooms", [
    ("mini_transformer/engine/nn.py", "from solutions.rope import rotate\n", ("library", "solutions")),
    ("mini_transformer/engine/nn.py", "def f():\n    import exercises.grading.grader\n", ("library", "grader")),
    ("solutions/rope.py", "from exercises.adapters.clinic import make_patient\n", ("solutions", "adapters")),
    ("solutions/rope.py", "from exercises.grading.grader import grade\n", ("solutions", "grader")),
    ("exercises/rope.py", "import solutions.rope\n", ("reader", "solutions")),
    ("exercises/grading/grader.py", "from exercises.adapters.clinic import make_patient\n", ("grader", "adapters")),
    ("mini_transformer/engine/nn.py", "from experiments.common import RESULTS\n", ("library", "experiments")),
    ("experiments/common.py", "from solutions.rope import rotate\n", ("experiments", "solutions")),
    ("exercises/grading/grader.py", "def f():\n    from book.site import build\n", ("grader", "book")),
])
def test_a_planted_import_against_the_direction_is_caught(tmp_path, importer, source, rooms):
    modules, graph = plant(tmp_path, {**LIBRARY_STUB, "solutions/__init__.py": "", "solutions/rope.py": "",
                                      "exercises/__init__.py": "", "exercises/rope.py": "",
                                      "exercises/grading/__init__.py": "", "exercises/grading/grader.py": "",
                                      "exercises/adapters/__init__.py": "", "exercises/adapters/clinic.py": "",
                                      "experiments/__init__.py": "", "experiments/common.py": "",
                                      "book/__init__.py": "", "book/site.py": "",
                                      importer: source})
    found = against_the_direction(graph)
    assert [(room, other) for _, room, _, other in found] == [rooms]
    # the same import the other way is allowed where the rooms say so
    allowed = [("exercises/grading/grader.py", "from solutions.rope import rotate\n"),
               ("solutions/rope.py", "from mini_transformer.engine.autograd import op\n"),
               ("experiments/common.py", "from mini_transformer.engine.autograd import op\n"),
               ("book/site.py", "from exercises.grading.grader import grade\n")]
    modules, graph = plant(tmp_path, {importer: "", **dict(allowed)})
    assert against_the_direction(graph) == []
