r"""The chapters' way to import an exercise: yours once you have written it, the reference until then.

    from exercises import use
    rotate_half, apply_rotary = use("rope", "rotate_half", "apply_rotary")

prints, for each name, which version the chapter runs. A function whose body is still the
stub counts as not written. Set ``PE_USE_REFERENCE=1`` to run the chapter on the reference
alone (the notebook tests do).

While the chapter runs, the stubs left in ``exercises/<module>`` are filled with the
reference too, so your ``apply_rotary`` can call ``rotate_half`` before you write it.
"""
import importlib
import os
import sys

from exercises.grading.generate import function_is_stub


def _written(obj):
    if isinstance(obj, type):
        return not any(function_is_stub(v) for v in vars(obj).values() if callable(v))
    return not function_is_stub(obj)


def use(module, *names):
    """The reader's ``exercises.<module>.<name>`` when written, else ``solutions.<module>.<name>``."""
    reference = importlib.import_module(f"solutions.{module}")
    force = os.environ.get("PE_USE_REFERENCE", "") not in ("", "0")
    try:  # reload, so an edit to your file counts without restarting the kernel
        yours = sys.modules.get(f"exercises.{module}")
        yours = importlib.reload(yours) if yours is not None else importlib.import_module(f"exercises.{module}")
    except Exception as e:  # a file that does not import yet must not stop the chapter
        yours = None
        print(f"(exercises/{module}.py does not import: {type(e).__name__}: {e}; using the reference)")
    picked = []
    for name in names:
        mine = getattr(yours, name, None) if yours is not None else None
        # a stub patched with the reference by an earlier call is not yours
        mine_here = mine is not None and getattr(mine, "__module__", None) == yours.__name__
        if not force and mine_here and _written(mine):
            print(f"{name:<34} yours      (exercises/{module}.py)")
            picked.append(mine)
        else:
            why = "PE_USE_REFERENCE is set" if force else "not written yet"
            print(f"{name:<34} reference  ({why})")
            picked.append(getattr(reference, name))
    if yours is not None:  # let written exercises call unwritten ones
        for name, obj in list(vars(yours).items()):
            if callable(obj) and getattr(obj, "__module__", None) == yours.__name__ and not _written(obj) \
                    and hasattr(reference, name):
                setattr(yours, name, getattr(reference, name))
    return picked[0] if len(picked) == 1 else tuple(picked)


def reveal(module, name):
    """The reference source of an exercise, folded away until you click it (an answer cell)."""
    import html
    import inspect

    from IPython.display import HTML
    src = inspect.getsource(getattr(importlib.import_module(f"solutions.{module}"), name))
    src = "\n".join(line for line in src.splitlines() if "SOLUTION" not in line)
    return HTML(f"<details><summary>Reference solution: <code>{name}</code> (open after you try)</summary>"
                f"<pre>{html.escape(src)}</pre></details>")
