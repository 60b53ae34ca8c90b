r"""The grader's checks, one file per exercise module, found by the module's name.

``checks/rope.py`` holds the checks of ``solutions/rope.py``: a list ``TARGETS`` of
``exercises.grading.checking.Target``, one per function or class the reader writes. Nothing
else registers them: a new module ``m`` needs ``solutions/m.py`` and ``checks/m.py``, and
every command finds it (see ``exercises/grading/README.md``).
"""
import functools
import importlib
import pkgutil


def modules():
    """Names of the modules that have a checks file, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@functools.lru_cache(maxsize=None)
def targets(module):
    """``{name: Target}`` of one module, in the file's order, each target's ``module`` filled in."""
    try:
        checks = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{module}":
            raise
        raise LookupError(f"There are no checks for {module!r}: add exercises/grading/checks/{module}.py "
                          f"(the modules with checks are: {', '.join(modules())}).") from None
    out = {}
    for t in checks.TARGETS:
        t.module = module
        out[t.name] = t
    return out


def target(key):
    """The target ``'rope.rotate_half'``."""
    module, name = key.split(".", 1)
    found = targets(module)
    if name not in found:
        raise LookupError(f"exercises/grading/checks/{module}.py has no target {name!r}; it has "
                          f"{', '.join(found)}.")
    return found[name]


def all_targets():
    """``{key: Target}`` over every checks file."""
    return {t.key: t for m in modules() for t in targets(m).values()}
