r"""The grader: a mutant a reader test need not catch never makes the test weak, and a given parameter does not
wait for the reader's implementation in a student copy (which has no source)."""


def _compiled(mutants):
    from exercises.grading.reader_tests import CompiledTest
    return CompiledTest("m", "check_x", "Exercise 1.1", ["make_patient"], {}, mutants)


def _report(outcomes):
    return {"found": "function", "stubs": {}, "signatures": {}, "outcomes": outcomes}


def test_a_mutant_not_required_never_makes_a_test_weak():
    from exercises.grading.reader_tests import judge
    mutants = [{"key": "own", "wraps": "make_patient", "title": "t", "hint": "h", "required": True},
               {"key": "other", "wraps": "make_patient", "title": "t", "hint": "h", "required": False},
               {"key": "third", "wraps": "make_patient", "title": "t", "hint": "h", "required": False}]
    passed, failed = {"result": "passed"}, {"result": "assertion", "type": "AssertionError", "message": "", "where": ""}
    r = judge(_compiled(mutants), _report({"reference": passed, "own": failed, "other": passed, "third": failed}))
    assert (r["status"], r["caught"], r["also_caught"]) == ("pass", [1, 1], ["third"])
    assert "catches the mutant it must catch, own" in r["message"] and "Also caught, of the 2" in r["message"]
    r = judge(_compiled(mutants), _report({"reference": passed, "own": passed, "other": failed, "third": failed}))
    assert (r["status"], r["kind"], r["caught"]) == ("fail", "weak_test", [0, 1])
    assert "got away: own." in r["message"] and "other, third" in r["message"]
    # an entry without "required" (stored by an older release) counts as required
    old = [{"key": "own", "wraps": "make_patient", "title": "t", "hint": "h"}]
    r = judge(_compiled(old), _report({"reference": passed, "own": passed}))
    assert r["kind"] == "weak_test"


def test_a_given_parameter_does_not_wait_in_a_student_copy():
    from exercises.grading.grader import implementations
    from exercises.grading.knowledge import Knowledge, compile_module
    copy = Knowledge(compile_module("clinic", reference=False))   # no source: as in a student copy
    assert implementations(copy.tests["check_cache"], copy, {}) == {"from": "yours"}
    rope_copy = Knowledge(compile_module("rope", reference=False))
    # its implementations are exercises
    assert implementations(rope_copy.tests["test_rope_properties"], rope_copy, {}) == {"from": "none"}
