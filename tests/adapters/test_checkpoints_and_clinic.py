r"""Chapters 11 and 12: the references against hand-worked numbers, the clinic's planted bugs, and what the
library gained for them (decoupled RoPE's two rotary parts, the published configs, reader tests with
mutants a test need not catch).

Expected values are worked by hand here or come from the sources, never from the code under test.
"""
import math

import numpy as np
import pytest

from exercises.adapters import clinic
from mini_transformer.engine.autograd import Tensor, no_grad
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional.model_configs import MODELS, describe_model
from solutions import checkpoints


# ---------------------------------------------------------------------------
# Chapter 11's references
# ---------------------------------------------------------------------------

def test_port_moves_the_columns_worked_by_hand():
    # 2 heads of 4: P = (0, 2, 1, 3) inside each head of the query and key blocks, values untouched
    row = np.arange(24.0)
    got = to_numpy(checkpoints.port_qk_weights(asarray(row), 2, 4))
    assert got.tolist() == [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15, *range(16, 24)]
    # 1 head of 6 with rotary_dim 4: channels 4 and 5 stay; 2 heads of 8: P = (0, 2, 4, 6, 1, 3, 5, 7)
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(18.0)), 1, 6, 4))
    assert got.tolist() == [0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11, *range(12, 18)]
    got = to_numpy(checkpoints.port_qk_weights(asarray(np.arange(48.0)), 2, 8))
    assert got[:16].tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]


def test_port_keeps_its_input_and_refuses_a_bad_width():
    W = rng(0).normal(size=(8, 24))
    before = W.copy()
    checkpoints.port_qk_weights(W, 2, 4)
    assert xp.array_equal(W, before)
    with pytest.raises(ValueError, match="3 \\* n_heads \\* d_head = 24 expected"):
        checkpoints.port_qk_weights(W[:, :20], 2, 4)
    with pytest.raises(ValueError, match="rotary_dim=3 must be even"):
        checkpoints.port_qk_weights(W, 2, 4, 3)


@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_a_ported_model_computes_what_the_interleaved_one_did(factor):
    """The defining property, on the library's model: RoPE_half(x[P]) = RoPE_interleaved(x)[P] for q and k."""
    cfg = dict(vocab_size=16, d_model=32, n_layers=2, n_heads=2, max_len=16, positional="rope")
    old = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True, "partial_rotary_factor": factor}))
    g = rng(3)
    state = {k: g.host.normal(0, 0.5, size=v.shape) for k, v in old.state_dict().items()}
    old.to_dtype("float64").load_state_dict(state)
    new = TinyGPT(GPTConfig(**cfg, extra={"partial_rotary_factor": factor})).to_dtype("float64")
    r = int(16 * factor)
    new.load_state_dict({k: to_numpy(checkpoints.port_qk_weights(asarray(v), 2, 16, r)) if ".W_qkv." in k else v
                         for k, v in state.items()})
    ids = g.integers(0, 16, (2, 10))
    with no_grad():
        np.testing.assert_allclose(to_numpy(new(ids).data), to_numpy(old(ids).data), atol=1e-10)
        new.load_state_dict(state)  # the weights as they are: a different model
        assert float(xp.abs(new(ids).data - old(ids).data).max()) > 0.1


def test_rope_frequencies_by_hand():
    small = {"hidden_size": 32, "num_attention_heads": 4, "max_position_embeddings": 64}   # d_head 8, base 10000
    np.testing.assert_allclose(to_numpy(checkpoints.rope_frequencies(small)), [1.0, 0.1, 0.01, 0.001], rtol=1e-12)
    phi2 = MODELS["Phi-2"]   # 80 channels, 0.4 of them turn: r = 32, theta_1 = 10000^(-2/32)
    f = to_numpy(checkpoints.rope_frequencies(phi2))
    assert f.shape == (16,) and math.isclose(f[1], 10000.0 ** (-1 / 16), rel_tol=1e-12)
    gemma = {"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "rope_theta": 10000.0}
    assert checkpoints.rope_frequencies(gemma).shape == (128,)            # head_dim wins over 3072 / 16 = 192
    v3 = {"hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "rope_theta": 10000.0}
    assert checkpoints.rope_frequencies(v3).shape == (32,)
    llama3 = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0}
    assert math.isclose(float(checkpoints.rope_frequencies(llama3)[-1]), 500000.0 ** (-126 / 128), rel_tol=1e-12)


def test_critical_pair_by_hand_and_from_the_survey():
    # survey section 6.2: Llama 2, d_h = 128, T_train = 4096 gives d_extra = 92, so r_crit = 46
    assert checkpoints.critical_pair(MODELS["Llama-2-7B"]) == 46
    # Llama 3.1: 2 pi 500000^(i/64) >= 8192 needs i/64 >= ln(8192 / 2 pi) / ln 500000 = 0.54663, so i = 35
    assert checkpoints.critical_pair(MODELS["Llama-3.1-8B"]) == 35
    # Phi-3: trained at 4096 (top level); 2 pi 10^(i/12) >= 4096 needs i >= 33.77, so 34
    phi3 = {"hidden_size": 3072, "num_attention_heads": 32, "rope_theta": 10000.0, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope"}}
    assert checkpoints.critical_pair(phi3) == 34
    # d 16, L 128: wavelengths 6.3, 19.9, 62.8, 198.7, ...: pair 3
    assert checkpoints.critical_pair({"hidden_size": 64, "num_attention_heads": 4,
                                      "max_position_embeddings": 128}) == 3


def test_reference_port_test_passes_on_the_reference():
    checkpoints.test_port(checkpoints.port_qk_weights)


# ---------------------------------------------------------------------------
# What the library gained: published configs, decoupled RoPE's parts
# ---------------------------------------------------------------------------

def test_new_published_entries():
    phi2 = describe_model("Phi-2")
    assert phi2["rotary_dim"] == 32 and phi2["critical_dimension"].pair == 11   # 2 pi 10^(i/4) >= 2048 at i = 11
    longcat = describe_model("LongCat-Flash")
    assert (longcat["rotary_dim"], longcat["qk_nope_head_dim"], longcat["rope_theta"]) == (64, 128, 1e7)
    kimi = describe_model("Kimi-K3")
    assert kimi["mechanism"] == "nope" and "inv_freq" not in kimi and "NoPE" in kimi["summary"]
    v3 = MODELS["DeepSeek-V3"]
    # MLA's cache per token and layer: the latent plus one shared rotary key, against every head's key and value
    assert v3["kv_lora_rank"] + v3["qk_rope_head_dim"] == 576
    assert v3["num_attention_heads"] * (v3["qk_nope_head_dim"] + v3["qk_rope_head_dim"] + v3["v_head_dim"]) == 40960


def test_decoupled_rope_rotary_parts_make_the_score_bias():
    model = TinyGPT(GPTConfig(d_model=32, n_heads=4, n_layers=2, positional="decoupled_rope")).to_dtype("float64")
    s = model.positional
    g = rng(0)
    q, k = Tensor(g.normal(size=(2, 4, 5, 8))), Tensor(g.normal(size=(2, 4, 7, 8)))
    q_pos, k_pos = xp.arange(2, 7), xp.arange(7)
    key = s.rotary_key(k, k_pos, 1).data
    assert key.shape == (2, 1, 7, s.d_rope)                                   # one key for all heads
    both = s.rotary_query(q, q_pos, 1).data @ xp.swapaxes(key, -1, -2)
    np.testing.assert_allclose(to_numpy(both), to_numpy(s.score_bias(q, k, q_pos, k_pos, 1).data), atol=1e-12)
    # a token's rotary key depends on that token alone: computed alone, it is the same
    alone = s.rotary_key(Tensor(k.data[:, :, 3:4]), k_pos[3:4], 1).data
    np.testing.assert_allclose(to_numpy(alone[:, :, 0]), to_numpy(key[:, :, 3]), atol=1e-12)


# ---------------------------------------------------------------------------
# The clinic: each planted bug is what it says
# ---------------------------------------------------------------------------

def test_the_healthy_patient():
    p = clinic.make_patient()
    assert (p.train_len, p.serve_len, p.window, p.n_sink) == (16, 64, 8, 4)
    assert p.model.cfg.n_layers == 1 and p.model.cfg.d_head == 8
    # PI by 4: theta_i / 4 with theta_i = 10000^(-i/4)
    np.testing.assert_allclose(to_numpy(p.model.positional.rotary.inv_freq), [0.25, 0.025, 0.0025, 0.00025],
                               rtol=1e-12)
    assert p.model is not p.source


def test_sharpen_draws_attention_weights_at_a_trained_scale():
    model = clinic.sharpen(TinyGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2)), seed=3)
    state = model.state_dict()
    w = np.concatenate([state[f"blocks.{i}.attn.W_qkv.weight"].ravel() for i in range(2)])   # 2 x 32 x 96 draws
    assert abs(w.std() - 0.5) < 0.02 and abs(w.mean()) < 0.02
    biases = np.concatenate([v.ravel() for k, v in state.items() if k.endswith("bias")])
    assert abs(biases.std() - 0.1) < 0.01
    assert state["tok.weight"].std() < 0.03                         # the rest keeps the library's N(0, 0.02^2)
    assert all(p.data.dtype == np.float64 for p in model.parameters())


def test_position_reset_gives_the_decoded_token_position_zero():
    p = clinic.make_planted("position_reset")
    cache = p.model.new_cache()
    with no_grad():
        p.model(rng(0).integers(0, 16, (1, 5)), cache=cache)
    q_pos, k_pos = cache.query_and_key_positions(1)
    assert to_numpy(q_pos).tolist() == [0] and len(k_pos) == 6


def test_angles_out_of_range_has_lost_its_scaling():
    p = clinic.make_planted("angles_out_of_range")
    assert p.model.cfg.rope_scaling is None and p.source.cfg.rope_scaling == {"rope_type": "linear", "factor": 4.0}
    np.testing.assert_allclose(to_numpy(p.model.positional.rotary.inv_freq), [1.0, 0.1, 0.01, 0.001], rtol=1e-12)


def test_pairing_mismatch_runs_the_weights_interleaved():
    p = clinic.make_planted("pairing_mismatch")
    assert p.model.cfg.extra == {"rope_interleaved": True} and p.source.cfg.extra == {}
    assert all(xp.array_equal(a, b) for a, b in zip(p.model.state_dict().values(), p.source.state_dict().values()))


def test_recency_bias_is_alibis_penalty_by_hand():
    p = clinic.make_planted("recency_bias")
    z = xp.zeros((1, 2, 64, 8))
    probs = to_numpy(clinic.attention_probe(p.model, z[:, :, -1:], z, xp.arange(63, 64), xp.arange(64)))
    # two heads: slopes 2^-4 and 2^-8; with no content the weight of key j is e^{-m (63 - j)} / sum
    for h, m in enumerate([1 / 16, 1 / 256]):
        w = np.exp(-m * (63 - np.arange(64)))
        np.testing.assert_allclose(probs[0, h, 0], w / w.sum(), rtol=1e-12)
    healthy = to_numpy(clinic.attention_probe(clinic.make_patient().model, z[:, :, -1:], z, xp.arange(63, 64),
                                              xp.arange(64)))
    np.testing.assert_allclose(healthy, 1 / 64, rtol=1e-12)   # rotations of zero are zero: uniform


def test_sinks_evicted_keeps_the_window_only():
    p = clinic.make_planted("sinks_evicted")
    cache = p.model.new_cache(window=p.window, n_sink=p.n_sink, positions="slot")
    with no_grad():
        for t in range(20):
            p.model(asarray([[t % 16]]), cache=cache)
    assert to_numpy(cache.pos).tolist() == list(range(12, 20))               # the last 8, no sink
    healthy = clinic.make_patient()
    cache = healthy.model.new_cache(window=8, n_sink=4, positions="slot")
    with no_grad():
        for t in range(20):
            healthy.model(asarray([[t % 16]]), cache=cache)
    assert to_numpy(cache.pos).tolist() == [0, 1, 2, 3] + list(range(12, 20))


def test_position_ignored_is_blind_to_the_order_of_the_prefix():
    p = clinic.make_planted("position_ignored")
    ids = rng(1).integers(0, 16, (1, 9))
    shuffled = xp.concatenate([ids[:, :-1][:, ::-1], ids[:, -1:]], axis=1)
    with no_grad():
        a, b = p.model(ids).data[:, -1], p.model(shuffled).data[:, -1]
    assert float(xp.abs(a - b).max()) < 1e-12


def test_plant_refuses_an_unknown_bug():
    with pytest.raises(ValueError, match="unknown bug 'typo'"):
        clinic.plant(clinic.make_patient(), "typo")


def test_the_ward_holds_every_diagnosis_once():
    makers, key = clinic.ward(0)
    assert list(makers) == list("ABCDEFG") and sorted(key.values()) == sorted(("healthy",) + clinic.BUGS)
    assert clinic.ward(0)[1] == key and clinic.ward(1)[1] != key


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


# ---------------------------------------------------------------------------
# The grader: mutants a test need not catch; given parameters in a student copy
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
