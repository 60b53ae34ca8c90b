"""A reader's file that does not parse."""


def rotate_half(x)
    return x
