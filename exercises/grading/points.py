r"""Points an instructor sets: a table per module, by default one point a star.

    python -m exercises points --module sinusoidal learned --out points.json   # the default table, to edit
    python -m exercises grade-folder submissions --out book --module sinusoidal learned --points points.json

The table is JSON, one object per module, one number per exercise::

    {"sinusoidal": {"2.1": 1, "2.2": 2, "2.3": 3}, "learned": {"3.1": 1, "3.2": 2, "3.3": 3}}

An exercise the file leaves out keeps its default: its stars, read from the chapter's exercise
heading (``### Exercise 2.2: ...   ★★☆ · 12 min``, see ``syllabus.py``), or one point where no
chapter names it (a drill). A passing exercise scores its points. A test the reader writes scores
its points times the fraction of the mutants it must catch that it caught (partial credit), once it
passes on the reference; a test that fails the reference scores zero.

Points are kept to two decimal places (0.01 of a point) everywhere: the file takes numbers from 0 to
1000 with at most two decimals, a test's share is rounded to two decimals (3 points * 2/3 = 2, 4 * 2/3 =
2.67), and the gradebook, the feedback files and the Canvas CSV print each number with every one of
those digits (``fmt``: 2.67, 0.5, 12345.67), never rounded further.
"""
import json
from pathlib import Path

from mini_transformer.engine.files import atomic_write
from exercises.grading.errors import CommandError


def stars_by_number():
    r"""``{"2.1": 1, ...}``: every exercise's stars, from the chapters' exercise headings (empty without chapters)."""
    from exercises.grading.paths import CHAPTERS
    from exercises.grading.syllabus import exercises_in
    out = {}
    for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.py")) if CHAPTERS.is_dir() else []:
        for e in exercises_in(path.read_text()):
            out[e.number] = e.stars
    return out


def default_table(modules):
    r"""``{module: {number: points}}``: one point a star, for every exercise of ``modules``."""
    from exercises.grading.knowledge import knowledge
    stars = stars_by_number()
    table = {}
    for m in modules:
        k = knowledge(m)
        numbers = [k.labels[n].split()[-1] for n in k.names()]
        table[m] = {n: stars.get(n, 1) for n in numbers}
    return table


def load(path, modules):
    r"""The table for ``modules``: the defaults, overridden by the file ``path`` (None: the defaults alone)."""
    table = default_table(modules)
    if path is None:
        return table
    try:
        given = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise CommandError(f"--points {path}: cannot read it as JSON ({type(e).__name__}: {e}).") from None
    if not isinstance(given, dict):
        raise CommandError(f"--points {path}: expected an object of modules, got {type(given).__name__}.")
    for m, numbers in given.items():
        if m not in table:
            continue  # a table for the whole course serves every session's gradebook
        if not isinstance(numbers, dict):
            raise CommandError(f"--points {path}: {m!r} must map exercise numbers to points, got {numbers!r}.")
        for number, value in numbers.items():
            if number not in table[m]:
                raise CommandError(f"--points {path}: {m} has no exercise {number!r}; its exercises are "
                                 f"{', '.join(table[m])}.")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1000:
                raise CommandError(f"--points {path}: {m} exercise {number} is worth {value!r}; give a number "
                                 "from 0 to 1000.")
            if round(value, 2) != value:  # the gradebook keeps 0.01 of a point: more would be cut silently
                raise CommandError(f"--points {path}: {m} exercise {number} is worth {value!r}; give at most two "
                                 "decimal places (points are kept to 0.01).")
            table[m][number] = value
    return table


def write(path, modules):
    r"""Write the default table of ``modules`` to ``path``, for the instructor to edit."""
    text = json.dumps(default_table(modules), indent=1) + "\n"
    atomic_write(Path(path), lambda f: f.write(text.encode()))
    return Path(path)


def worth(table, result):
    r"""``(points scored, points possible)`` of one result under ``table``."""
    module = result["target"].split(".", 1)[0]
    number = result["label"].split()[-1]
    possible = table.get(module, {}).get(number, 1)
    caught = result.get("caught")
    if caught and result["kind"] in ("pass", "weak_test") and caught[1]:
        return round(possible * caught[0] / caught[1], 2), possible
    return (possible if result["status"] == "pass" else 0), possible


def fmt(x):
    """``6`` for 6.0, ``4.67`` for 4.666.., ``12345.67`` as it is: points to two decimals, as every output prints them."""
    return f"{round(float(x), 2):.2f}".rstrip("0").rstrip(".")  # not :g, which keeps six digits: 12345.7
