r"""Chapter 12's references (``solutions/clinic.py``): each reference check passes on the healthy patient and fails
on the bugs it is there to find, the whole matrix worked out from what each planted bug breaks.
"""
import pytest

from mini_transformer.evaluation import clinic


def _makers(how):
    """{diagnosis: make} as the tests build patients, or as the chapter's ward hands them out under letters."""
    if how == "make_planted":
        return {d: clinic.make_patient if d == "healthy" else (lambda d=d: clinic.make_planted(d))
                for d in ("healthy",) + clinic.BUGS}
    makers, key = clinic.ward(0)
    return {key[letter]: make for letter, make in makers.items()}


@pytest.mark.parametrize("how", ["make_planted", "ward"])
def test_reference_checks_diagnose_every_patient(how):
    """Each reference check passes on the healthy patient and fails on its own bug (the grader's own verdict is in
    test_grader's test_solutions_pass_every_check); here, the whole matrix, worked out from what each bug breaks,
    for the patients as make_planted builds them and as the ward's letters do (its key says which is which)."""
    from solutions import clinic as checks
    expected_failures = {
        "healthy": set(),
        "position_reset": {"check_cache", "check_sinks"},      # any cache, text or slot positions
        "angles_out_of_range": {"check_angles", "check_port"},  # and so it differs from its checkpoint's code
        "pairing_mismatch": {"check_port"},
        "recency_bias": {"check_reach", "check_port"},
        "sinks_evicted": {"check_sinks"},
        "position_ignored": {"check_shuffle", "check_port"},
    }
    names = ["check_cache", "check_angles", "check_port", "check_reach", "check_sinks", "check_shuffle"]
    makers = _makers(how)
    assert sorted(makers) == sorted(expected_failures)
    for diagnosis, fails in expected_failures.items():
        make = makers[diagnosis]
        failed = set()
        for name in names:
            try:
                getattr(checks, name)(make)
            except AssertionError:
                failed.add(name)
        assert failed == fails, diagnosis
