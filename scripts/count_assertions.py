r"""Count the test suite's assertions, so a reorganisation can show it lost none.

``python scripts/count_assertions.py [ROOT]`` reads every ``test_*.py`` and ``conftest.py`` under ``tests/`` and
``exercises/grading/modules/`` of ROOT (default: this repository) with ``ast`` and prints, per top folder and in all:
test functions, ``assert`` statements, ``pytest.raises`` / ``pytest.warns`` blocks, and calls to helpers named
``assert_*`` or ``*.assert_*`` (NumPy's testing functions and the suite's own). Run it before and after a move and
compare the totals; a test moved from one folder to another moves its count with it.
"""
import ast
import sys
from collections import Counter
from pathlib import Path


def counts(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    c = Counter()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            c["tests"] += 1
        elif isinstance(node, ast.Assert):
            c["assert"] += 1
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("raises", "warns"):
                c["raises/warns"] += 1
            elif name.startswith("assert_"):
                c["assert_*()"] += 1
    return c


def main(root):
    root = Path(root).resolve()
    files = [p for base in ("tests", "exercises/grading/modules") for p in sorted((root / base).rglob("*.py"))
             if (p.name.startswith("test_") or p.name == "conftest.py") and "__pycache__" not in p.parts]
    by_top, total = {}, Counter()
    for p in files:
        c = counts(p)
        top = "/".join(p.relative_to(root).parts[:2])
        by_top.setdefault(top, Counter()).update(c)
        total.update(c)
    keys = ("tests", "assert", "raises/warns", "assert_*()")
    print(f"{'folder':40s} " + " ".join(f"{k:>12s}" for k in keys))
    for top, c in sorted(by_top.items()):
        print(f"{top:40s} " + " ".join(f"{c[k]:12d}" for k in keys))
    print(f"{'all (' + str(len(files)) + ' files)':40s} " + " ".join(f"{total[k]:12d}" for k in keys))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
