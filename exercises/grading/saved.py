r"""Change a few entries of a dict (or ``os.environ``) for a while, then put them back exactly."""
import contextlib

_ABSENT = object()


@contextlib.contextmanager
def saved(mapping, keys=None):
    r"""Restore ``mapping[k]`` for every ``k`` in ``keys`` on exit: old values back, new keys removed.

    With ``keys=None`` the whole mapping comes back exactly as it was, keys added meanwhile
    removed. The body may set those keys freely, e.g. fill a reader's module with reference
    functions while one exercise is graded, or set environment variables while a chapter runs.
    """
    whole = keys is None
    keys = list(mapping) if whole else list(keys)
    old = {k: mapping.get(k, _ABSENT) for k in keys}
    try:
        yield mapping
    finally:
        if whole:
            for k in [k for k in mapping if k not in old]:
                del mapping[k]
        for k, v in old.items():
            if v is _ABSENT:
                mapping.pop(k, None)
            else:
                mapping[k] = v
