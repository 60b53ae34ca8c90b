r"""The one fixture every module's ``test_reader_tests.py`` shares.

``graded``: each reader-style test body of the file's ``READER_TESTS`` (with the reference's own test,
under the name ``reference`` unless the file names it), written into an exercise file of its own and graded once for the whole
file, ``{name: result}`` (a body of None is the reference's own). The file names what it grades in ``MODULE``, ``LABEL`` and ``TEST``; a file
whose bodies need more (chapter 0 and 1's, which import ``math``) names it in ``PREAMBLE``, put above every body.
The grader is driven from here, test code, so that ``modules/`` itself never imports the grader that reads it.
"""
import pytest

from exercises.grading.grader import grade_jobs
from exercises.grading.modules.exercise_text import reader_files, reference_body


def grade_reader_tests(folder, module, label, test, bodies, timeout=20):
    r"""``{name: result}``: each body of ``bodies`` written as the reader's test ``test`` (exercise ``label``)
    into its own file under ``folder`` (``reader_files``), all graded in one call of the grader."""
    files = reader_files(folder, module, label, bodies)
    jobs = [{"target": f"{module}.{test}", "source": p} for p in files.values()]
    return dict(zip(files, grade_jobs(jobs, timeout=timeout)))


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    m = request.module
    bodies = dict(m.READER_TESTS)
    if None not in bodies.values():  # a None body is the reference's own test; a file without one gets it here
        bodies["reference"] = None
    preamble = getattr(m, "PREAMBLE", "")
    if preamble:  # the reference's body is written out here, so that the preamble goes above it too
        bodies = {name: preamble + (reference_body(m.MODULE, m.LABEL) if body is None else body)
                  for name, body in bodies.items()}
    return grade_reader_tests(tmp_path_factory.mktemp("reader_tests"), m.MODULE, m.LABEL, m.TEST, bodies)
