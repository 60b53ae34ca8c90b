r"""The chapters' way to import an exercise: yours once you have written it, the reference until then.

    from exercises import use
    rotate_half, apply_rotary = use("rope", "rotate_half", "apply_rotary")

prints, for each name, which version the chapter runs. A function whose body is still the
stub counts as not written. Set ``PE_USE_REFERENCE=1`` to run the chapter on the reference
alone (the notebook tests do).

While the chapter runs, the stubs left in ``exercises/<module>`` are filled with the
reference too, so your ``apply_rotary`` can call ``rotate_half`` before you write it.

In a student copy there is no reference: an exercise you have not written comes back as a
stand-in that raises ``ExerciseNotWritten`` ("Exercise 6.2 (apply_rotary) is not written yet:
write it in exercises/rope.py") when a cell calls it.
"""
import importlib
import os
import sys

from exercises.grading.generate import function_is_stub, labels_of


class ExerciseNotWritten(Exception):
    r"""Raised by the stand-in for an exercise you have not written, in a copy without the reference."""

    def _render_traceback_(self):  # Jupyter shows this sentence instead of a traceback
        return [f"ExerciseNotWritten: {self}"]


def _written(obj):
    if isinstance(obj, type):
        return not any(function_is_stub(v) for v in vars(obj).values() if callable(v))
    return not function_is_stub(obj)


def _reference(module):
    try:
        return importlib.import_module(f"solutions.{module}")
    except ModuleNotFoundError as e:
        if e.name not in ("solutions", f"solutions.{module}"):
            raise
        return None  # a student copy: no reference


def _stand_in(module, name, why):
    try:
        label = labels_of(module).get(name, "this exercise")
    except LookupError:
        label = "this exercise"
    message = (f"{label} ({name}) is not written yet: write it in exercises/{module}.py, then rerun this cell. "
               "This copy of the workbook has no reference to stand in for it." if why is None else
               f"{name} is not available: exercises/{module}.py does not import ({why}). Fix the file, then rerun "
               "this cell.")

    def stand_in(*args, **kwargs):
        raise ExerciseNotWritten(message)
    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = message
    return stand_in


def _import_problem(e):
    if isinstance(e, SyntaxError):
        return f"{type(e).__name__}: {e.msg}, line {e.lineno}: {(e.text or '').strip()}"
    return f"{type(e).__name__}: {e}"


def use(module, *names):
    """The reader's ``exercises.<module>.<name>`` when written, else the reference (or a stand-in)."""
    reference = _reference(module)
    force = os.environ.get("PE_USE_REFERENCE", "") not in ("", "0") and reference is not None
    problem = None
    try:  # reload, so an edit to your file counts without restarting the kernel
        yours = sys.modules.get(f"exercises.{module}")
        yours = importlib.reload(yours) if yours is not None else importlib.import_module(f"exercises.{module}")
    except Exception as e:  # a file that does not import yet must not stop the chapter
        yours, problem = None, _import_problem(e)
        sys.modules.pop(f"exercises.{module}", None)
        instead = "runs the reference" if reference is not None else "is unavailable"
        print(f"exercises/{module}.py does not import: {problem}\n"
              f"Until it does, every exercise of that file {instead}.")
    picked = []
    for name in names:
        mine = getattr(yours, name, None) if yours is not None else None
        # a stub patched with the reference (or a stand-in) by an earlier call is not yours
        mine_here = mine is not None and getattr(mine, "__module__", None) == yours.__name__
        if not force and mine_here and _written(mine):
            print(f"{name:<34} yours      (exercises/{module}.py)")
            picked.append(mine)
            continue
        why = ("PE_USE_REFERENCE is set" if force else f"exercises/{module}.py does not import" if problem
               else "not written yet")
        if reference is not None:
            print(f"{name:<34} reference  ({why})")
            picked.append(getattr(reference, name))
        else:
            print(f"{name:<34} missing    ({why}; this copy has no reference)")
            picked.append(_stand_in(module, name, problem))
    if yours is not None:  # let written exercises call unwritten ones
        for name, obj in list(vars(yours).items()):
            if callable(obj) and getattr(obj, "__module__", None) == yours.__name__ and not _written(obj):
                if reference is not None and hasattr(reference, name):
                    setattr(yours, name, getattr(reference, name))
                elif reference is None:
                    setattr(yours, name, _stand_in(module, name, None))
    return picked[0] if len(picked) == 1 else tuple(picked)


def reveal(module, name):
    """The reference source of an exercise, folded away until you click it (an answer cell)."""
    import html
    import inspect

    from IPython.display import HTML
    reference = _reference(module)
    if reference is None:
        return HTML("<p>The reference solutions are not part of this copy of the workbook.</p>")
    src = inspect.getsource(getattr(reference, name))
    src = "\n".join(line for line in src.splitlines() if "SOLUTION" not in line)
    return HTML(f"<details><summary>Reference solution: <code>{name}</code> (open after you try)</summary>"
                f"<pre>{html.escape(src)}</pre></details>")
