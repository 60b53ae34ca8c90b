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


def check_mask(name, mask):
    """``mask`` as given, after checking it is a boolean array (True where a query may look), or None.

    Integer and float masks are refused, not converted: an integer 0/1 mask could be read as "1 may look", but
    an additive float mask of 0 and -inf means the opposite (its nonzero entries are the hidden ones), and
    ``~mask`` on integers is a bitwise not that hides every score. The error reads "NAME: mask must be a
    boolean array ..., got dtype DTYPE ...".
    """
    dtype = getattr(mask, "dtype", None)
    if mask is not None and getattr(dtype, "kind", None) != "b":
        raise TypeError(f"{name}: mask must be a boolean array, True where a query may look, got "
                        f"{'dtype ' + str(dtype) if dtype is not None else type(mask).__name__}; for a 0/1 mask "
                        f"pass mask != 0 (an additive 0/-inf mask is a bias, not a mask).")
    return mask


def check_rotary_width(x, cos):
    """The rotary width r (the tables' last axis), after checking it is even and fits x's channels."""
    r = cos.shape[-1]
    if r % 2 or r > x.shape[-1]:
        raise ValueError(f"apply_rotary: the tables cover {r} channels, but x has {x.shape[-1]}; the rotary "
                         f"width must be even and at most the head size.")
    return r
