r"""Change a few entries of a dict (or ``os.environ``) for a while, then put them back exactly."""
import contextlib

_ABSENT = object()


@contextlib.contextmanager
def saved(mapping, keys):
    r"""Restore ``mapping[k]`` for every ``k`` in ``keys`` on exit: old values back, new keys removed.

    The body may set those keys freely, e.g. fill a reader's module with reference functions
    while one exercise is graded, or set environment variables while a chapter runs.
    """
    keys = list(keys)
    old = {k: mapping.get(k, _ABSENT) for k in keys}
    try:
        yield mapping
    finally:
        for k, v in old.items():
            if v is _ABSENT:
                mapping.pop(k, None)
            else:
                mapping[k] = v
