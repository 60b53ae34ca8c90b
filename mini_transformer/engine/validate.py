r"""Argument checks shared across the library: one sentence per mistake, naming the argument, the value and the limit."""
import numbers


def check_int(name, value, minimum=None, even=False, why=""):
    """``value`` as an int, after checking it is an integer (not a bool), at least ``minimum``, and even if asked.

    The error reads "NAME must be an integer >= MINIMUM, got VALUE (WHY)."; ``why``
    says what the limit is for, e.g. "RoPE turns pairs of channels".
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (minimum is not None and value < minimum) or (even and value % 2)):
        need = "an integer" + (f" >= {minimum}" if minimum is not None else "") + (" and even" if even else "")
        raise ValueError(f"{name} must be {need}, got {value!r}" + (f" ({why})" if why else "") + ".")
    return int(value)


def check_lengths(name, values):
    """A non-empty list of positive integer lengths, each checked by name."""
    values = list(values)
    if not values:
        raise ValueError(f"{name} must hold at least one length, got an empty {name}={values!r}.")
    return [check_int(f"each length in {name}", v, minimum=1) for v in values]


def check_rotary_width(x, cos):
    """The rotary width r (the tables' last axis), after checking it is even and fits x's channels."""
    r = cos.shape[-1]
    if r % 2 or r > x.shape[-1]:
        raise ValueError(f"apply_rotary: the tables cover {r} channels, but x has {x.shape[-1]}; the rotary "
                         f"width must be even and at most the head size.")
    return r
