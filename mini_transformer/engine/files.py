r"""Writing a file so that a reader never sees half of it.

``atomic_write`` writes to a temporary file in the target's own folder, flushes
it to disk, and only then renames it over the target: an interrupted write
leaves the previous file untouched, and the rename is atomic only within one
folder. It sits on the bottom floor because every floor above, and the grader,
the book and the experiments, write files this way (checkpoints, results,
gradebooks, stored checks).
"""
import os
import tempfile


def atomic_write(path, write):
    """Call ``write(file_object)`` on a temporary file, fsync it, then rename it to ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; the result is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
