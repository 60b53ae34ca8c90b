r"""A reader's exercise file, written for the grader's own tests: a stub filled in, the reference's body.

Used by every module folder's ``test_reader_tests.py`` and by ``tests/grading/``. The solution
markers are read by ``exercises.grading.generate``, the one parser of them.
"""
import re

from exercises.grading.generate import regions, stub_lines


def stub(label, indent="    "):
    """The two lines the generator writes for an exercise."""
    return "".join(stub_lines(indent, label))


def fill(text, label, body, indent="    "):
    r"""``text`` with the (first) stub of ``label`` replaced by ``body`` (lines without indentation)."""
    lines = "".join(f"{indent}{line}\n" if line else "\n" for line in body.strip("\n").splitlines())
    assert stub(label, indent) in text, f"no stub of {label} in the text"
    return text.replace(stub(label, indent), lines, 1)


def reference_body(module, label):
    r"""The body of ``label``'s answer in ``solutions/<module>.py``, unindented: what a reader would type."""
    from exercises.grading.paths import SOLUTIONS
    text = (SOLUTIONS / f"{module}.py").read_text()
    first, last, indent = next((f, la, i) for lab, f, la, i in regions(text) if lab == label)
    return "\n".join(line[len(indent):] for line in text.splitlines()[first + 1:last])


def got_away(result):
    r"""The mutants a weak reader test let through, as the grader's message names them."""
    return set(re.search(r"got away: ([^.]*)\.", result["message"]).group(1).split(", "))


def reader_files(folder, module, label, bodies):
    r"""``{name: path}``: for each ``name: body``, ``folder/name/<module>.py``, the generated exercise file
    with the stub of ``label`` filled in by ``body`` (by the reference's own body where ``body`` is None)."""
    from exercises.grading.generate import generated_text
    out = {}
    for name, body in bodies.items():
        path = folder / name / f"{module}.py"
        path.parent.mkdir(parents=True)
        path.write_text(fill(generated_text(module), label, reference_body(module, label) if body is None else body))
        out[name] = path
    return out


def assert_catches_every_mutant(result, module, test, at_least):
    r"""The reference's own test, graded as a reader's: it passes, and it catches every one of the module's
    mutants of ``test``, of which there are at least ``at_least``."""
    from exercises.grading.modules import reader_tests
    n = len(reader_tests(module)[test].mutants)
    assert (result["status"], result["kind"]) == ("pass", "pass"), result["message"]
    assert result["caught"] == [n, n] and n >= at_least, (result["caught"], n, at_least)
