r"""The one fixture every module's ``test_reader_tests.py`` shares.

``graded``: each reader-style test body of the file's ``READER_TESTS`` (with the reference's own test,
under the name ``reference`` unless the file names it), written into an exercise file of its own and graded once for the whole
file, ``{name: result}`` (a body of None is the reference's own). The file names what it grades in ``MODULE``, ``LABEL`` and ``TEST``; a file
whose bodies need more (chapter 0 and 1's, which import ``math``) defines its own ``graded``.
"""
import pytest

from exercises.grading.modules.exercise_text import grade_reader_tests


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    m = request.module
    bodies = dict(m.READER_TESTS)
    if None not in bodies.values():  # a None body is the reference's own test; a file without one gets it here
        bodies["reference"] = None
    return grade_reader_tests(tmp_path_factory.mktemp("reader_tests"), m.MODULE, m.LABEL, m.TEST, bodies)
