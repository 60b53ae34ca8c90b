r"""The library's floors: no import circle, no floor importing a floor above it, nothing from the book.

``mini_transformer`` reads as four floors, from the bottom: ``engine`` (arrays, autograd, layers,
optimiser, kernels), ``positional`` (the schemes and their scaling), ``model`` (attention, the
Transformer, cache, checkpoints, data, training) and ``evaluation`` (measures, streaming, benches,
experiments). Every import in every file, the ones inside functions included, is read with
``ast`` and resolved to the module it names.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "mini_transformer"
FLOORS = ("engine", "positional", "model", "evaluation")


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIBRARY.rglob("*.py")}


def imports_of(path):
    """Every module ``path`` imports (absolute dotted names; submodules where a name is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            found.update(subs if subs else [target])
    return found


GRAPH = {m: {i for i in imports_of(p) if i in MODULES and i != m} for m, p in MODULES.items()}


def floor_of(module):
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def test_the_top_folder_shows_the_floors_and_nothing_else():
    entries = sorted(p.name for p in LIBRARY.iterdir() if p.name != "__pycache__")
    assert entries == sorted(["__init__.py", *FLOORS])


def test_no_floor_imports_a_floor_above_it():
    upward = [(m, i) for m, deps in GRAPH.items() for i in deps
              if floor_of(m) is not None and floor_of(i) is not None and floor_of(i) > floor_of(m)]
    assert upward == []


def circles_in(graph):
    """The strongly connected components of two or more modules (Tarjan): each is an import circle."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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


def test_no_import_circle_anywhere_in_the_library():
    assert circles_in(GRAPH) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_library_never_imports_the_book(module):
    book = {i for i in imports_of(MODULES[module]) if i.split(".")[0] in ("exercises", "solutions", "chapters", "tests")}
    assert book == set()


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
    assert "mini_transformer.engine.strict" in GRAPH["mini_transformer.engine.backend"]
