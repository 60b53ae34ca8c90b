r"""The reader's side of the workbook: exercises, the grader, drills and instructor tools.

* ``exercises/<module>.py`` hold the stubs you fill in; they are generated from
  ``solutions/`` by ``python -m exercises generate``.
* ``python -m pytest`` grades them (``tests/test_exercises.py``); untouched ones are skipped.
* ``python -m exercises --help`` lists the commands: grade, drill, release, grade-folder,
  refresh-outputs, generate.
"""
