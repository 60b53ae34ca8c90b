r"""Chapter 12's references (``solutions/clinic.py``): each reference check passes on the healthy patient and fails
on the bugs it is there to find, the whole matrix worked out from what each planted bug breaks.
"""
from mini_transformer.evaluation import clinic


def test_reference_checks_diagnose_every_patient():
    """Each reference check passes on the healthy patient and fails on its own bug (the grader's own verdict is in
    test_grader's test_solutions_pass_every_check); here, the whole matrix, worked out from what each bug breaks."""
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
    for diagnosis, fails in expected_failures.items():
        make = clinic.make_patient if diagnosis == "healthy" else (lambda d=diagnosis: clinic.make_planted(d))
        failed = set()
        for name in names:
            try:
                getattr(checks, name)(make)
            except AssertionError:
                failed.add(name)
        assert failed == fails, diagnosis
