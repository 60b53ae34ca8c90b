r"""Helpers for tests that write a reader's exercise file: fill a stub with a body."""


def stub(label, indent="    "):
    """The two lines the generator writes for an exercise."""
    return f'{indent}# TODO: {label}\n{indent}raise NotImplementedError("{label}")\n'


def fill(text, label, body, indent="    "):
    r"""``text`` with the (first) stub of ``label`` replaced by ``body`` (lines without indentation)."""
    lines = "".join(f"{indent}{line}\n" if line else "\n" for line in body.strip("\n").splitlines())
    assert stub(label, indent) in text, f"no stub of {label} in the text"
    return text.replace(stub(label, indent), lines, 1)


def reference_body(module, label):
    r"""The body of ``label``'s answer in ``solutions/<module>.py``, unindented: what a reader would type."""
    from exercises.grading.paths import SOLUTIONS
    text = (SOLUTIONS / f"{module}.py").read_text()
    region = text.split(f"# BEGIN SOLUTION {label}\n", 1)[1].split("    # END SOLUTION", 1)[0]
    return "\n".join(line[4:] for line in region.splitlines())


def label_of(module, name):
    """The label of exercise ``name`` in ``solutions/<module>.py``, e.g. "Exercise 6.2"."""
    from exercises.grading.generate import region_labels
    from exercises.grading.paths import SOLUTIONS
    return region_labels((SOLUTIONS / f"{module}.py").read_text())[name]
