r"""The mutants of the exercises in which the reader writes a test, one file per module.

``mutants/rope.py`` lists ``READER_TESTS``: for each test the reader writes in
``exercises/rope.py``, the mutants it must catch. A mutant wraps the implementation it breaks
(see ``exercises/grading/reader_tests.py``), so these files hold no answer: a student copy
ships them. A module without such exercises has no file here.
"""
import functools
import importlib
import pkgutil


def modules():
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@functools.lru_cache(maxsize=None)
def reader_tests(module):
    """``{test name: ReaderTest}`` of one module (empty when it has no mutants file)."""
    if module not in modules():
        return {}
    return {t.name: t for t in importlib.import_module(f"{__name__}.{module}").READER_TESTS}
