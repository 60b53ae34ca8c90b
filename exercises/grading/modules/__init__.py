r"""Everything the grader knows about each exercise module, one folder a module, found by folder.

``modules/rope/`` is the grading folder of ``solutions/rope.py``:

* ``checks.py``: a list ``TARGETS`` of ``exercises.grading.targets.Target``, one per function or
  class the reader writes (cases and misconceptions), and optionally ``DRILL``, the module's timed
  drill (``exercises.grading.drill_target.Drill``);
* ``mutants.py`` (only where the reader writes a test): ``READER_TESTS``, the mutants each test
  must catch; they wrap the implementation they break, hold no answer, and ship in a student copy;
* ``wrong/``: known-wrong implementations written as a reader would, each file with its
  ``KNOWN_WRONG`` table (``tests/grading/test_grader.py`` grades every row);
* ``test_reader_tests.py`` (only where the reader writes a test): tests written the ways readers
  write them, and what the grader must say about each.

A module is a folder here with a ``checks.py``. Nothing else registers it: a new module ``m``
needs ``solutions/m.py`` and ``modules/m/``, and every command finds it (see
``exercises/grading/README.md``). Every lookup goes through ``paths.module_folder``.
"""
import functools
import importlib

from exercises.grading.paths import MODULES, module_folder


def names():
    """Names of the modules that have a grading folder with a ``checks.py``, sorted."""
    return sorted(p.name for p in MODULES.iterdir() if (p / "checks.py").is_file()) if MODULES.is_dir() else []


def _import(module, part):
    folder = module_folder(module)
    return importlib.import_module(f"{__name__}.{folder.name}.{part}")


@functools.lru_cache(maxsize=None)
def targets(module):
    """``{name: Target}`` of one module, in the file's order, each target's ``module`` filled in."""
    if not (module_folder(module) / "checks.py").is_file():
        raise LookupError(f"There are no checks for {module!r}: add exercises/grading/modules/{module}/checks.py "
                          f"(the modules with checks are: {', '.join(names())}).")
    out = {}
    checks = _import(module, "checks")
    held_out = getattr(checks, "HELD_OUT", {})  # {target name: () -> [Case]}: never in a student copy
    unknown = sorted(set(held_out) - {t.name for t in checks.TARGETS})
    if unknown:
        raise LookupError(f"exercises/grading/modules/{module}/checks.py has HELD_OUT cases for {', '.join(unknown)}, "
                          "which it does not check.")
    for t in checks.TARGETS:
        t.module = module
        t.held_out = held_out.get(t.name)
        out[t.name] = t
    return out


def target(key):
    """The target ``'rope.rotate_half'``."""
    module, name = key.split(".", 1)
    found = targets(module)
    if name not in found:
        raise LookupError(f"exercises/grading/modules/{module}/checks.py has no target {name!r}; it has "
                          f"{', '.join(found)}.")
    return found[name]


def all_targets():
    """``{key: Target}`` over every module's checks."""
    return {t.key: t for m in names() for t in targets(m).values()}


def mutant_modules():
    """Names of the modules whose folder has a ``mutants.py`` (a student copy has them too), sorted."""
    return sorted(p.name for p in MODULES.iterdir() if (p / "mutants.py").is_file()) if MODULES.is_dir() else []


@functools.lru_cache(maxsize=None)
def reader_tests(module):
    """``{test name: ReaderTest}`` of one module (empty when it has no ``mutants.py``)."""
    if not (module_folder(module) / "mutants.py").is_file():
        return {}
    return {t.name: t for t in _import(module, "mutants").READER_TESTS}


def drill(module):
    """The module's ``DRILL`` (``checks.py``), or None when it has none or no checks here (a student copy)."""
    if not (module_folder(module) / "checks.py").is_file():
        return None
    return getattr(_import(module, "checks"), "DRILL", None)


def known_wrong_files():
    """Every known-wrong implementation file, ``modules/<module>/wrong/*.py``, sorted by module and name."""
    return [p for m in names() for p in sorted((module_folder(m) / "wrong").glob("*.py"))]
