r"""A reader test against the mutants, beside other tests: the grader's loop, shown in a chapter.

Chapters 2, 3 and 6 run the reader's property test, and a weaker one, on every mutant of the
exercise (``exercises/grading/modules/<module>/mutants.py``) and print one row per mutant saying which test
caught it. The scoring is the grader's own (``exercises.grading.reader_tests.run``).
"""
from exercises.grading.modules import reader_tests
from exercises.grading.reader_tests import run


def scoreboard(module, test_name, implementations, tests):
    r"""Run each of ``tests`` (``{column: test}``) on ``implementations`` and on every mutant of ``test_name``.

    Prints whether each test passes on the implementations as they are, then one row per mutant
    saying which tests caught it: the grader's own loop, shown in a chapter. Returns
    ``{column: {"reference": outcome, mutant key: outcome, ...}}``.
    """
    mutants = reader_tests(module)[test_name].mutants
    runs = {column: run(test, lambda: dict(implementations), mutants, "", "") for column, test in tests.items()}
    print("on the chapter's functions: " + "; ".join(f"{column} {r['reference']['result']}"
                                                      for column, r in runs.items()))
    w_key = max(len("mutant"), *(len(m.key) for m in mutants)) + 2
    w_wraps = max(len("wraps"), *(len(m.wraps) for m in mutants)) + 2
    widths = [max(len(c), 6) + 2 for c in runs]
    print(f"{'mutant':<{w_key}}{'wraps':<{w_wraps}}" + "".join(f"{c:>{w}}" for c, w in zip(runs, widths)))
    for m in mutants:
        print(f"{m.key:<{w_key}}{m.wraps:<{w_wraps}}"
              + "".join(f"{'MISSED' if r[m.key]['result'] == 'passed' else 'caught':>{w}}"
                        for r, w in zip(runs.values(), widths)))
    return runs
