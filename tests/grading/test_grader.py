r"""The grader, graded.

1. The references in ``solutions/`` it trusts are checked against numbers worked by hand or taken
   from the source chapter, never against themselves.
2. Every reference passes every check of the grader.
3. Every known-wrong implementation in ``exercises/grading/modules/<module>/wrong/`` is rejected, with the
   right kind of failure and, for a known misconception, the right hint. Among them: one that
   raises, one that hangs, one that returns the wrong type, one that writes into its input.
"""
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from exercises.grading.modules import all_targets, names as modules, target as target_of
from exercises.grading.generate import regions
from exercises.grading.paths import SOLUTIONS
from exercises.grading.grader import grade_file
from mini_transformer.engine.backend import asarray, to_numpy
from solutions import alibi, rope, sinusoidal, t5

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import known_wrong_runs  # noqa: E402

TIMEOUT = known_wrong_runs.TIMEOUT


# ---------------------------------------------------------------------------
# 1. The references, against hand-worked numbers
# ---------------------------------------------------------------------------

def test_rotate_half_worked_example(each_backend):
    y = rope.rotate_half(asarray([1.0, 2.0, 3.0, 4.0]))
    assert to_numpy(y).tolist() == [-3.0, -4.0, 1.0, 2.0]
    assert to_numpy(rope.rotate_interleaved(asarray([1.0, 2.0, 3.0, 4.0]))).tolist() == [-2.0, 1.0, -4.0, 3.0]


def test_rope_relative_position_property():
    """The source's acceptance test: (3, 1) scores like (103, 101), unlike (3, 2)."""
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    r = rope.RotaryEmbedding(8)
    s = {mn: rope.relative_score(q, k, *mn, r) for mn in [(3, 1), (103, 101), (3, 2)]}
    assert math.isclose(s[3, 1], s[103, 101], rel_tol=1e-9)
    assert not math.isclose(s[3, 1], s[3, 2], rel_tol=1e-3)


def test_rope_matches_complex_multiplication(each_backend):
    """Pair (x_i, x_{i+d/2}) as x_i + i x_{i+d/2}, times e^{i m theta_i}, theta_i = 10000^(-2i/d) by hand."""
    d, T, offset = 8, 4, 6
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, T, d))
    cos, sin = rope.RotaryEmbedding(d)(T, offset=offset)
    y = to_numpy(rope.apply_rotary(asarray(x), cos, sin))
    theta = np.array([10000.0 ** (-2 * i / d) for i in range(d // 2)])
    z = (x[..., :4] + 1j * x[..., 4:]) * np.exp(1j * np.arange(offset, offset + T)[:, None] * theta)
    np.testing.assert_allclose(y, np.concatenate([z.real, z.imag], axis=-1), atol=1e-12)


def test_apply_rotary_preserves_norm_dtype_and_position_zero(each_backend):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 5, 16))
    cos, sin = rope.RotaryEmbedding(16)(5)
    y = to_numpy(rope.apply_rotary(asarray(x), cos, sin))
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(y[..., 0, :], x[..., 0, :], atol=1e-15)  # angle 0 does not rotate
    y32 = rope.apply_rotary(asarray(x.astype(np.float32)), cos, sin)
    assert y32.dtype == np.float32


def test_rotary_tables_by_hand():
    r = rope.RotaryEmbedding(8)
    np.testing.assert_allclose(to_numpy(r.inv_freq), [1.0, 0.1, 0.01, 0.001], rtol=1e-12)  # 10000^(-i/4)
    cos, sin = (to_numpy(t) for t in r(10))
    assert math.isclose(cos[1, 0], math.cos(1.0)) and math.isclose(sin[1, 4], math.sin(1.0))
    assert math.isclose(cos[7, 1], math.cos(0.7)) and math.isclose(cos[7, 5], math.cos(0.7))
    c, s = (to_numpy(t) for t in r(3, offset=5))
    np.testing.assert_array_equal(c, cos[5:8])
    np.testing.assert_array_equal(s, sin[5:8])


def test_decode_equals_the_full_causal_attention_by_hand():
    """One query, two keys, d_head 2: the decoded second output is the softmax average worked out by hand."""
    # q = k = (1, 0) at both positions, v = (1, 0) then (0, 1); theta_0 = 1 for d_head 2.
    # Position 1 query R(1)(1, 0) = (cos 1, sin 1); keys (1, 0) and (cos 1, sin 1): scores cos 1 and 1, / sqrt 2.
    q = np.array([[[[1.0, 0.0], [1.0, 0.0]]]])
    v = np.array([[[[1.0, 0.0], [0.0, 1.0]]]])
    s0, s1 = math.cos(1.0) / math.sqrt(2), 1.0 / math.sqrt(2)
    w1 = math.exp(s1) / (math.exp(s0) + math.exp(s1))
    for prefill in (1, 2):
        out = to_numpy(rope.decode(q, q, v, prefill, rope.RotaryEmbedding(2)))
        np.testing.assert_allclose(out[0, 0, 0], [1.0, 0.0], atol=1e-15)     # the first token sees only itself
        np.testing.assert_allclose(out[0, 0, 1], [1 - w1, w1], rtol=1e-12)


def test_wavelength_table_by_hand():
    lam = to_numpy(rope.wavelength_table(128, 10000.0))
    assert lam.shape == (64,)
    np.testing.assert_allclose(lam[[0, 16, 32, 48]], [2 * math.pi * 10 ** j for j in range(4)], rtol=1e-12)
    # 2 pi 10^(i/16) > 8192 first at i = 50: 2 pi 10^(49/16) = 7256 and 2 pi 10^(50/16) = 8378.
    assert int(np.argmax(lam > 8192)) == 50


def test_permutation_by_hand_and_its_defining_property():
    assert to_numpy(rope.interleaved_to_half_permutation(4)).tolist() == [0, 2, 1, 3]
    assert to_numpy(rope.interleaved_to_half_permutation(8)).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    d, T = 16, 7
    perm = rope.interleaved_to_half_permutation(d)
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((1, 2, T, d)), rng.standard_normal((1, 2, T, d))  # interleaved layout
    cos, sin = rope.RotaryEmbedding(d)(T)  # rotate-half tables
    back = np.argsort(perm)  # 0, d/2, 1, d/2+1, ...: rotate-half tables into repeat-interleave ones
    cos_i, sin_i = cos[:, back], sin[:, back]
    np.testing.assert_allclose(cos_i[:, 0::2], cos_i[:, 1::2])  # pair i's angle in columns 2i and 2i + 1
    qi, ki = rope.apply_rotary_interleaved(q, cos_i, sin_i), rope.apply_rotary_interleaved(k, cos_i, sin_i)
    interleaved = qi @ np.swapaxes(ki, -1, -2)
    qh, kh = rope.apply_rotary(q[..., perm], cos, sin), rope.apply_rotary(k[..., perm], cos, sin)
    np.testing.assert_allclose(qh, qi[..., perm], atol=1e-12)  # the same rotation, channels relabelled
    np.testing.assert_allclose(qh @ np.swapaxes(kh, -1, -2), interleaved, atol=1e-12)


def test_sinusoidal_values_and_offset_property(each_backend):
    pe = to_numpy(sinusoidal.sinusoidal_positional_encoding(50, 4))
    np.testing.assert_allclose(pe[0], [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(pe[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])  # 10000^(-1/2)
    pe = to_numpy(sinusoidal.sinusoidal_positional_encoding(40, 16))
    k = 7
    for i in range(8):
        w = 10000.0 ** (-2 * i / 16)
        rot = np.array([[math.cos(w * k), math.sin(w * k)], [-math.sin(w * k), math.cos(w * k)]])
        np.testing.assert_allclose(pe[k:, 2 * i:2 * i + 2], pe[:-k, 2 * i:2 * i + 2] @ rot.T, atol=1e-12)


def test_alibi_slopes_from_the_paper(each_backend):
    # to 1e-15, not exactly: CuPy's 2.0 ** array is one ulp off some powers of two (0.0625 - 2^-57 seen on an H200)
    close = lambda got, want: np.testing.assert_allclose(to_numpy(got), want, rtol=1e-15, atol=0)
    close(alibi.alibi_slopes(8), [1 / 2 ** h for h in range(1, 9)])
    close(alibi.alibi_slopes(1), [1 / 256])
    # 6 heads: the 4 slopes of H = 4 (2^-2, 2^-4, 2^-6, 2^-8), then the 1st and 3rd of H = 8 (2^-1, 2^-3).
    close(alibi.alibi_slopes(6), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8])


def test_alibi_bias_by_hand(each_backend):
    b = to_numpy(alibi.alibi_bias(2, 2, 4))  # slopes 1/16, 1/256; queries at positions 2 and 3
    assert b.shape == (1, 2, 2, 4)
    np.testing.assert_allclose(b[0, 0], [[-2 / 16, -1 / 16, 0, 0], [-3 / 16, -2 / 16, -1 / 16, 0]])
    np.testing.assert_allclose(b[0, 1], [[-2 / 256, -1 / 256, 0, 0], [-3 / 256, -2 / 256, -1 / 256, 0]])
    full, step = to_numpy(alibi.alibi_bias(8, 9, 9)), to_numpy(alibi.alibi_bias(8, 1, 9))
    np.testing.assert_array_equal(step[0, :, 0], full[0, :, -1])  # one decode step is the last row


def test_t5_buckets_by_hand(each_backend):
    rel = asarray(np.array([0, -1, 1, -7, -8, -16, -32, -64, -127, -128, -1000, 128]))
    # max_exact 8: -16 -> 8 + floor(log(2)/log(16) * 8) = 10, -32 -> 12, -64 -> 14, -128 -> 16 capped at 15.
    assert to_numpy(t5.relative_position_bucket(rel)).tolist() == [0, 1, 17, 7, 8, 10, 12, 14, 15, 15, 15, 31]
    causal = asarray(np.array([5, -1, -15, -16, -32, -64, -128]))
    # causal: 32 buckets, max_exact 16; -32 -> 16 + floor(log(2)/log(8) * 16) = 21, -64 -> 26, -128 -> 31.
    assert to_numpy(t5.relative_position_bucket(causal, bidirectional=False)).tolist() == [0, 1, 15, 16, 21, 26, 31]


def test_t5_bias_is_translation_invariant():
    pos = np.arange(40)
    b = t5.relative_position_bucket(pos[None, :] - pos[:, None])
    assert b[2, 5] == b[6, 9] and np.all(b[:-1, :-1] == b[1:, 1:])
    assert b.min() >= 0 and b.max() <= 31


# ---------------------------------------------------------------------------
# 2. The references pass every check
# ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("module", modules())
def test_solutions_pass_every_check(module):
    results = grade_file(SOLUTIONS / f"{module}.py", module)
    assert results and all(r["status"] == "pass" for r in results), [(r["target"], r["message"]) for r in results]


# ---------------------------------------------------------------------------
# 3. Known-wrong implementations are all rejected, with the right hint
# ---------------------------------------------------------------------------

KNOWN_WRONG = known_wrong_runs.rows()


@pytest.fixture(scope="module")
def wrong_results():
    """``({name: result}, seconds)``: every known-wrong implementation graded in one subprocess, beside the other
    tests from the end of collection (conftest.py, known_wrong_runs.py)."""
    return background.result("known wrong", known_wrong_runs.job(background.snapshot(), TIMEOUT))


@pytest.mark.slow
@pytest.mark.parametrize("file, attr, target, kind, misconception", KNOWN_WRONG, ids=[r[1] for r in KNOWN_WRONG])
def test_known_wrong_is_rejected_with_the_right_hint(wrong_results, file, attr, target, kind, misconception):
    r = wrong_results[0][attr]
    expected_status = "not attempted" if kind == "not attempted" else "fail"
    assert (r["status"], r["kind"], r["misconception"]) == (expected_status, kind, misconception), r["message"]
    if misconception:
        title = next(m.title for m in target_of(target).misconceptions if m.key == misconception)
        assert title in r["message"]


def test_every_exercise_has_three_known_wrong_implementations_and_every_failure_mode():
    per_target = {t: sum(row[2] == t for row in KNOWN_WRONG) for t in all_targets()}
    assert min(per_target.values()) >= 3, per_target
    kinds = {row[3] for row in KNOWN_WRONG}
    assert {"raised", "timeout", "type", "mutated", "misconception", "numbers", "nan"} <= kinds


@pytest.mark.slow
def test_a_hang_costs_one_timeout_and_nothing_else(wrong_results):
    # Each job runs in a process of its own, so a hang can cost only its own job: exactly the implementations
    # that hang time out, and the job after one still runs. (How long the whole batch takes depends on the
    # machine's load; that is the benches' to measure, not a test's.)
    results, _ = wrong_results
    assert results["apply_rotary_hangs"]["kind"] == "timeout"
    assert results["apply_rotary_slightly_off"]["kind"] == "numbers"  # the job after the hang still ran
    hung = [attr for _, attr, _, kind, _ in KNOWN_WRONG if kind == "timeout"]
    assert [attr for attr, r in results.items() if r["kind"] == "timeout"] == hung


@pytest.mark.slow
def test_numbers_feedback_names_fraction_error_index_and_input(wrong_results):
    msg = wrong_results[0]["apply_rotary_slightly_off"]["message"]
    assert re.search(r"\d+ of \d+ entries \([\d.]+%\) are wrong", msg)
    assert "max abs error 0.001" in msg
    assert re.search(r"First bad entry \[\d+, \d+, \d+, \d+\]: yours [-\d.]+, expected [-\d.]+", msg)
    assert "Input: x: shape (2, 3, 5, 8)" in msg


@pytest.mark.slow
def test_feedback_never_shows_the_reference_code(wrong_results):
    code = set()
    for module in modules():
        text = (SOLUTIONS / f"{module}.py").read_text()
        lines = text.splitlines()
        code |= {lines[n].strip() for _, first, last, _ in regions(text) for n in range(first + 1, last)
                 if len(lines[n].strip()) > 20}
    messages = "\n".join(r["message"] for r in wrong_results[0].values())
    assert not [line for line in code if line in messages]


@pytest.mark.slow
def test_numbers_show_every_digit_that_differs(wrong_results):
    """A float32 slip used to read 'yours 0.921061, expected 0.921061'; now the digits and the gap show."""
    msg = wrong_results[0]["apply_rotary_in_float32"]["message"]
    m = re.search(r"yours (\S+), expected (\S+) \(off by (\S+)\)", msg)
    assert m, msg
    yours, expected, off = m.groups()
    assert yours != expected and float(yours) != float(expected) and 0 < abs(float(off)) < 1e-5, msg


# ---------------------------------------------------------------------------
# 4. Every exercise is graded, and every mutant of a reader test is wrong in the way it says
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("module", modules())
def test_every_marked_exercise_is_graded(module):
    from exercises.grading.knowledge import knowledge
    marked = {q.split(".")[0] for q in gen_labels(module)}
    k = knowledge(module)
    assert marked == set(k.compiled) | set(k.tests), (
        f"solutions/{module}.py marks {sorted(marked)}; the grader checks {sorted(set(k.compiled) | set(k.tests))}")


def gen_labels(module):
    from exercises.grading.generate import labels_of
    return labels_of(module)


def _mutants():
    """Every mutant that wraps an exercise; one that wraps a given function (the clinic's make_patient) has no
    checks of its own to be graded by."""
    from exercises.grading.modules import mutant_modules, reader_tests, targets
    return [(m, t.name, mutant) for m in mutant_modules() for t in reader_tests(m).values() for mutant in t.mutants
            if mutant.wraps in targets(m)]


@pytest.mark.parametrize("module, test, mutant", _mutants(), ids=[f"{t}-{m.key}" for _, t, m in _mutants()])
def test_every_mutant_is_wrong_in_the_way_it_says(module, test, mutant):
    """Wrap the reference, grade the result with the wrapped exercise's own checks: it must fail, as named."""
    import importlib

    from exercises.grading.judging import judge
    from exercises.grading.knowledge import knowledge
    from exercises.grading.worker import describe, run_cases
    reference = importlib.import_module(f"solutions.{module}")
    wrong = mutant.make(getattr(reference, mutant.wraps))
    check = knowledge(module).compiled[mutant.wraps]
    report = dict(describe(wrong, check.name, check.methods),
                  **run_cases(wrong, check.methods, check.cases))
    r = judge(check, report)
    assert r["status"] == "fail", f"mutant {mutant.key} passes the checks of {mutant.wraps}"
    assert r["kind"] not in ("signature", "missing", "type", "raised"), r["message"]  # right signature, one slip
    if mutant.misconception:
        assert r["misconception"] == mutant.misconception, r["message"]


# ---------------------------------------------------------------------------
# 5. One grading path: the stored form compiled here and the one a release writes grade alike
# ---------------------------------------------------------------------------

def _rope_file(tmp_path, name, text):
    path = tmp_path / name / "rope.py"
    path.parent.mkdir()
    path.write_text(text)
    return path


@pytest.mark.slow
def test_a_release_grades_like_the_workbook_but_where_the_reference_source_stands_in(tmp_path):
    r"""Grade the same reader files from the stored form compiled here and from the one a release writes.

    The release stores no reference source (README.md, "How a grade is reached"), so verdicts may differ
    in two places only, worked out by hand from solutions/rope.py: an exercise whose reference calls
    a sibling the reader got wrong (apply_rotary calls rotate_half; relative_score and decode call
    apply_rotary), and a reader test, which in a release runs on the reader's own implementations
    once they pass, and waits before.
    """
    from exercises.grading.modules.exercise_text import fill, reference_body, stub
    from exercises.grading import stored, wire
    from exercises.grading.generate import generated_text
    from exercises.grading.grader import summary
    from exercises.grading.knowledge import Knowledge, compile_module, knowledge
    stored.write(tmp_path, "rope", compile_module("rope", reference=False))  # what `release --repo` writes
    release = Knowledge(wire.loads((tmp_path / "rope.npz").read_bytes()))
    here = knowledge("rope")
    assert all(c.siblings for c in here.compiled.values()) and all(t.reference for t in here.tests.values())
    assert not any(c.siblings for c in release.compiled.values())
    assert not any(t.reference for t in release.tests.values())

    reference = (SOLUTIONS / "rope.py").read_text()
    labels = {n: here.labels[n] for n in here.names()}
    lines = reference.splitlines(keepends=True)
    [(first, last, indent)] = [(f, l, i) for label, f, l, i in regions(reference) if label == labels["rotate_half"]]
    lines[first + 1:last] = [f"{indent}h = x.shape[-1] // 2\n",  # the sign error, the rest of the file the reference
                             f"{indent}return xp.concatenate([x[..., h:], -x[..., :h]], axis=-1)\n"]
    wrong_half = "".join(lines)
    test_only = fill(generated_text("rope"), labels["test_rope_properties"],
                     reference_body("rope", labels["test_rope_properties"]))
    assert stub(labels["apply_rotary"]) in test_only
    cases = [  # (reader file, the exercises graded, those whose verdicts differ in a release)
        (reference, None, set()),
        (wrong_half, None, {"apply_rotary", "relative_score", "decode", "test_rope_properties"}),
        (test_only, ["test_rope_properties", "apply_rotary", "RotaryEmbedding"], {"test_rope_properties"}),
    ]
    for n, (text, names, differ) in enumerate(cases):
        path = _rope_file(tmp_path, f"reader{n}", text)
        ours = grade_file(path, "rope", names=names, timeout=TIMEOUT)
        theirs = grade_file(path, "rope", names=names, timeout=TIMEOUT, known={"rope": release})
        assert [r["target"] for r in ours] == [r["target"] for r in theirs]
        changed = {a["target"].split(".")[1] for a, b in zip(ours, theirs) if summary(a) != summary(b)}
        assert changed == differ, [(a["target"], summary(a), summary(b)) for a, b in zip(ours, theirs)]
        assert all(r["status"] == "pass" for r in ours if r["target"].split(".")[1] in differ)
    rotate = next(r for r in theirs if r["target"] == "rope.test_rope_properties")
    assert rotate["kind"] == "waiting"


# ---------------------------------------------------------------------------
# A mutant a reader test need not catch never makes the test weak, and a given parameter does not wait for the
# reader's implementation in a student copy (which has no source)
# ---------------------------------------------------------------------------


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
