r"""Your exercises: one file per chapter module (``rope.py``, ...), with the functions you write.

* ``python -m exercises grade rope`` grades ``exercises/rope.py`` and prints feedback;
  ``python -m pytest`` grades every file (``tests/reader/test_exercises.py``), skipping what you have
  not touched.
* ``python -m exercises --help`` lists the other commands: drill, release, grade-folder,
  refresh-outputs, generate.
* Chapters load your functions with ``from exercises import use, reveal``.

The grader, drills and instructor tools live in ``exercises/grading/``; you never need to open it.
"""


def __getattr__(name):
    # ``from exercises import use, reveal`` without importing the grader into every ``import exercises.rope``
    if name in ("use", "reveal"):
        from exercises.grading import use as module
        return getattr(module, name)
    raise AttributeError(f"module 'exercises' has no attribute {name!r}")
