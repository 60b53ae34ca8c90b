r"""A student copy's stored knowledge: what the grader needs, per module, without ``solutions/``.

``python -m exercises release --repo`` writes ``exercises/grading/stored/<module>.json`` into the
copy: the exercise labels, the generated exercise file, the blank drill files, every target's
compiled check (cases, expected outputs, misconception outputs) and the reader tests' mutants.
In the workbook itself the folder does not exist and everything is worked out from
``solutions/``.
"""
import json
import os

from exercises.grading.atomic import write_atomic
from exercises.grading.paths import STORED


def modules():
    return sorted(p.stem for p in STORED.glob("*.json")) if STORED.is_dir() else []


def read(module):
    """The stored knowledge of ``module``, or None when there is none."""
    path = STORED / f"{module}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise SystemExit(f"{path} is not valid JSON ({e}); rebuild the student copy with "
                         "`python -m exercises release --repo`.") from None


def write(folder, module, data):
    write_atomic(os.path.join(folder, f"{module}.json"), json.dumps(data))
