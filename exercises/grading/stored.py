r"""A student copy's stored knowledge: ``exercises/grading/stored/<module>.npz`` (``wire`` data).

``python -m exercises release --repo`` writes it: the module's stored form
(``knowledge.compile_module(m, reference=False)``), its exercise file and its blank drill files.
"""
import os

from exercises.grading import wire
from exercises.grading.errors import CommandError
from exercises.grading.paths import STORED


def modules():
    return sorted(p.stem for p in STORED.glob("*.npz")) if STORED.is_dir() else []


def read(module):
    """The stored knowledge of ``module``, or None when there is none."""
    path = STORED / f"{module}.npz"
    if not path.is_file():
        return None
    try:
        return wire.loads(path.read_bytes())
    except Exception as e:  # a damaged or foreign file: a sentence, not a traceback
        raise CommandError(f"{path} cannot be read ({type(e).__name__}: {e}); rebuild the student copy with "
                         "`python -m exercises release --repo`.") from None


def write(folder, module, data):
    from mini_transformer.engine.files import atomic_write  # not in the graded process: it costs an import
    atomic_write(os.path.join(folder, f"{module}.npz"), lambda f: f.write(wire.dumps(data)))
