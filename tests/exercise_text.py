r"""Helpers for tests that write a reader's exercise file: fill a stub with a body."""


def stub(label, indent="    "):
    """The two lines the generator writes for an exercise."""
    return f'{indent}# TODO: {label}\n{indent}raise NotImplementedError("{label}")\n'


def fill(text, label, body, indent="    "):
    r"""``text`` with the (first) stub of ``label`` replaced by ``body`` (lines without indentation)."""
    lines = "".join(f"{indent}{line}\n" if line else "\n" for line in body.strip("\n").splitlines())
    assert stub(label, indent) in text, f"no stub of {label} in the text"
    return text.replace(stub(label, indent), lines, 1)
