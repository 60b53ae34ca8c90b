r"""Chapter 12's reader tests, written the ways a reader writes them, and what the grader says.

Chapter 12 asks for six checks, each receiving ``make_patient``, scored against the clinic's
planted bugs (``mutants.py`` beside this file): each must pass on the healthy patient and fail on
the bug of its row; the others it catches are reported and never count against it. Each test
below is one a reader might write.
"""
import pytest

from exercises.grading.generate import labels_of
from exercises.grading.grader import grade_jobs, summary
from exercises.grading.modules.exercise_text import got_away, reader_files

MODULE = "clinic"

READER_TESTS = {
    # checks only the prefill: the decode path never runs
    ("check_cache", "prefill_only"): """
model = make_patient().model
ids = rng(1).integers(0, 16, (1, 10))
with no_grad():
    full = model(ids).data
    cached = model(ids, cache=model.new_cache()).data
assert xp.allclose(full, cached, atol=1e-9)
""",
    # compares the greedy tokens only: on these patients the reset moves the logits but not their argmax
    ("check_cache", "argmax_only"): """
model = make_patient().model
ids = rng(1).integers(0, 16, (1, 10))
with no_grad():
    full = model(ids).data
    cache = model.new_cache()
    steps = [model(ids[:, :4], cache=cache).data] + [model(ids[:, t:t + 1], cache=cache).data for t in range(4, 10)]
assert xp.array_equal(full.argmax(-1), xp.concatenate(steps, axis=1).argmax(-1))
""",
    # a new cache for every token: each decodes alone, at position 0, with nothing before it
    ("check_cache", "fresh_cache_every_step"): """
model = make_patient().model
ids = rng(1).integers(0, 16, (1, 10))
with no_grad():
    full = model(ids).data
    steps = [model(ids[:, t:t + 1], cache=model.new_cache()).data for t in range(10)]
assert xp.allclose(full, xp.concatenate(steps, axis=1), atol=1e-9)
""",
    ("check_cache", "reference_body"): None,
    # the bound of the last trained position, (train_len - 1) theta: position interpolation lands just past it
    ("check_angles", "one_position_too_strict"): """
p = make_patient()
d = p.model.cfg.d_head
trained = p.model.cfg.rope_base ** (-xp.arange(0, d, 2) / d)
served = p.model.positional.rotary.inv_freq
slow = 2 * math.pi / trained > p.train_len
assert xp.all((p.serve_len - 1) * served[slow] <= (p.train_len - 1) * trained[slow])
""",
    # checks the angles at the training length: every model, scaled or not, stays in range there
    ("check_angles", "at_the_training_length"): """
p = make_patient()
d = p.model.cfg.d_head
trained = p.model.cfg.rope_base ** (-xp.arange(0, d, 2) / d)
served = p.model.positional.rotary.inv_freq
slow = 2 * math.pi / trained > p.train_len
assert xp.all((p.train_len - 1) * served[slow] <= p.train_len * trained[slow])
""",
    # asserts the served frequencies are the trained ones: the healthy patient interpolates by 4
    ("check_angles", "served_equals_trained"): """
p = make_patient()
d = p.model.cfg.d_head
trained = p.model.cfg.rope_base ** (-xp.arange(0, d, 2) / d)
assert xp.allclose(p.model.positional.rotary.inv_freq, trained)
""",
    ("check_angles", "reference_body"): None,
    # compares on one token: at position 0 every rotation is the identity
    ("check_port", "one_token"): """
p = make_patient()
ids = rng(2).integers(0, 16, (3, 1))
with no_grad():
    assert xp.allclose(p.model(ids).data, p.source(ids).data, atol=1e-9)
""",
    # a tolerance of 0.5: the logits of an untrained model are smaller than that
    ("check_port", "loose_tolerance"): """
p = make_patient()
ids = rng(2).integers(0, 16, (2, p.train_len))
with no_grad():
    assert xp.allclose(p.model(ids).data, p.source(ids).data, atol=0.5)
""",
    # the reference built from the config but never given the checkpoint's weights
    ("check_port", "reference_without_weights"): """
from mini_transformer.model import TinyGPT
p = make_patient()
ids = rng(2).integers(0, 16, (2, p.train_len))
reference = TinyGPT(p.model.cfg).to_dtype("float64")
with no_grad():
    assert xp.allclose(p.model(ids).data, reference(ids).data, atol=1e-9)
""",
    ("check_port", "reference_body"): None,
    # a needle equal to the query, at the far end: RoPE itself turns the match away at that distance
    ("check_reach", "needle_with_content"): """
p = make_patient()
H, d, T = p.model.cfg.n_heads, p.model.cfg.d_head, p.serve_len
g = rng(3)
needle = 4.0 * g.normal(size=(1, H, 1, d))
keys = 0.3 * g.normal(size=(1, H, T, d))
keys[:, :, :1] = needle
probs = attention_probe(p.model, needle, keys, xp.arange(T - 1, T), xp.arange(T))
assert xp.all(probs[0, :, 0, 0] > 0.5)
""",
    # probes one head, the last: ALiBi's slopes fall with the head index, and the last head's is gentle
    ("check_reach", "last_head_only"): """
p = make_patient()
cfg, T = p.model.cfg, p.serve_len
q, k = xp.zeros((1, cfg.n_heads, 1, cfg.d_head)), xp.zeros((1, cfg.n_heads, T, cfg.d_head))
probs = attention_probe(p.model, q, k, xp.arange(T - 1, T), xp.arange(T))
assert probs[0, -1, 0, 0] >= 0.5 / T
""",
    # probes at the training length: over 16 tokens even the steep head still reaches the first
    ("check_reach", "at_the_training_length"): """
p = make_patient()
cfg, T = p.model.cfg, p.train_len
q, k = xp.zeros((1, cfg.n_heads, 1, cfg.d_head)), xp.zeros((1, cfg.n_heads, T, cfg.d_head))
probs = attention_probe(p.model, q, k, xp.arange(T - 1, T), xp.arange(T))
assert xp.all(probs[0, :, 0, 0] >= 0.5 / T)
""",
    ("check_reach", "reference_body"): None,
    # compares with a fresh forward over the window alone, forgetting the sinks it should keep
    ("check_sinks", "window_without_sinks"): """
p = make_patient()
m, W, S = p.model, p.window, p.n_sink
ids = rng(4).integers(0, 16, (1, S + W + 6))
N = ids.shape[1]
with no_grad():
    cache = m.new_cache(window=W, n_sink=S, positions="slot")
    for t in range(N):
        last = m(ids[:, t:t + 1], cache=cache).data[:, -1]
    fresh = m(ids[:, N - 1 - W:]).data[:, -1]
assert xp.allclose(last, fresh, atol=1e-9)
""",
    # a stream no longer than the window: nothing is ever evicted, sinks or not
    ("check_sinks", "no_eviction_yet"): """
p = make_patient()
m, W, S = p.model, p.window, p.n_sink
ids = rng(4).integers(0, 16, (1, W))
with no_grad():
    cache = m.new_cache(window=W, n_sink=S, positions="slot")
    for t in range(W):
        last = m(ids[:, t:t + 1], cache=cache).data[:, -1]
    fresh = m(ids).data[:, -1]
assert xp.allclose(last, fresh, atol=1e-9)
""",
    # streams with text positions, then compares with a fresh forward, which numbers the kept tokens by slot
    ("check_sinks", "text_positions"): """
p = make_patient()
m, W, S = p.model, p.window, p.n_sink
ids = rng(4).integers(0, 16, (1, S + W + 6))
N = ids.shape[1]
with no_grad():
    cache = m.new_cache(window=W, n_sink=S, positions="text")
    for t in range(N):
        last = m(ids[:, t:t + 1], cache=cache).data[:, -1]
    fresh = m(xp.concatenate([ids[:, :S], ids[:, N - 1 - W:]], axis=1)).data[:, -1]
assert xp.allclose(last, fresh, atol=1e-9)
""",
    ("check_sinks", "reference_body"): None,
    # shuffles every token and looks at every position: the causal mask changes them anyway
    ("check_shuffle", "full_shuffle_any_position"): """
p = make_patient()
ids = rng(5).integers(0, 16, (1, p.train_len))
perm = rng(6).permutation(p.train_len)
with no_grad():
    a, b = p.model(ids).data, p.model(ids[:, perm]).data
assert not xp.allclose(a, b)
""",
    # shuffles the last token too and looks at the last position: it is another token now
    ("check_shuffle", "last_token_moved_too"): """
p = make_patient()
ids = rng(5).integers(0, 16, (1, p.train_len))
perm = rng(6).permutation(p.train_len)
with no_grad():
    a, b = p.model(ids).data[:, -1], p.model(ids[:, perm]).data[:, -1]
assert not xp.allclose(a, b)
""",
    # the right shuffle, the wrong direction: asserts the last logits stay the same
    ("check_shuffle", "asserts_unchanged"): """
p = make_patient()
T = p.train_len
ids = rng(5).integers(0, 16, (1, T))
perm = xp.concatenate([rng(6).permutation(T - 1), [T - 1]])
with no_grad():
    a, b = p.model(ids).data[:, -1], p.model(ids[:, perm]).data[:, -1]
assert xp.allclose(a, b)
""",
    ("check_shuffle", "reference_body"): None,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests")
    jobs, keys = [], []
    for check in dict.fromkeys(check for check, _ in READER_TESTS):
        styles = {style: body for (c, style), body in READER_TESTS.items() if c == check}
        for style, path in reader_files(folder / check, MODULE, labels_of(MODULE)[check], styles).items():
            jobs.append({"target": f"{MODULE}.{check}", "source": path})
            keys.append((check, style))
    return dict(zip(keys, grade_jobs(jobs, timeout=20)))


CLINIC = {"check_cache": "position_reset", "check_angles": "angles_out_of_range", "check_port": "pairing_mismatch",
          "check_reach": "recency_bias", "check_sinks": "sinks_evicted", "check_shuffle": "position_ignored"}


@pytest.mark.slow
@pytest.mark.parametrize("check, also", [
    ("check_cache", []), ("check_angles", []),
    ("check_port", ["angles_out_of_range", "recency_bias", "position_ignored"]),
    ("check_reach", []), ("check_sinks", ["position_reset"]), ("check_shuffle", [])])
def test_each_reference_check_catches_its_bug_and_reports_the_others(graded, check, also):
    r = graded[check, "reference_body"]
    assert (r["status"], r["caught"], r["also_caught"]) == ("pass", [1, 1], also), r["message"]
    assert f"catches the mutant it must catch, {CLINIC[check]}" in r["message"]
    assert f"Also caught, of the 5 it is not meant for: {', '.join(also) or 'none'}." in r["message"]


@pytest.mark.slow
@pytest.mark.parametrize("check, style", [
    ("check_cache", "prefill_only"), ("check_cache", "argmax_only"), ("check_angles", "at_the_training_length"),
    ("check_port", "one_token"), ("check_port", "loose_tolerance"), ("check_reach", "last_head_only"),
    ("check_reach", "at_the_training_length"), ("check_sinks", "no_eviction_yet"),
    ("check_shuffle", "full_shuffle_any_position"), ("check_shuffle", "last_token_moved_too")])
def test_a_check_that_cannot_see_its_bug_is_weak(graded, check, style):
    r = graded[check, style]
    assert (r["status"], r["kind"], r["caught"]) == ("fail", "weak_test", [0, 1]), r["message"]
    assert got_away(r) == {CLINIC[check]}
    assert summary(r) == "fail: weak test (caught 0 of 1)"


@pytest.mark.slow
@pytest.mark.parametrize("check, style", [
    ("check_cache", "fresh_cache_every_step"), ("check_angles", "one_position_too_strict"),
    ("check_angles", "served_equals_trained"), ("check_port", "reference_without_weights"),
    ("check_reach", "needle_with_content"), ("check_sinks", "window_without_sinks"),
    ("check_sinks", "text_positions"), ("check_shuffle", "asserts_unchanged")])
def test_a_check_that_fails_the_healthy_patient_is_told_so(graded, check, style):
    r = graded[check, style]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "fails the reference" in r["message"] and "AssertionError" in r["message"]
