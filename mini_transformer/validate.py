r"""Argument checks shared across the library: one sentence per mistake, naming the argument and the limit."""
import numbers


def check_int(name, value, minimum=None, even=False, why=""):
    """``value`` as an int, after checking it is an integer (not a bool) at least ``minimum`` (and even if asked).

    The error names the argument, the value and the limit; ``why`` (a clause)
    says what the limit is for, e.g. "RoPE turns pairs of channels".
    """
    limits = ([f"at least {minimum}"] if minimum is not None else []) + (["even"] if even else [])
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (minimum is not None and value < minimum) or (even and value % 2)):
        need = "an integer" + (" " + " and ".join(limits) if limits else "")
        raise ValueError(f"{name}={value!r} must be {need}" + (f" ({why})" if why else "") + ".")
    return int(value)
