r"""Chapter 12's clinic (``mini_transformer/evaluation/clinic.py``): the healthy patient, and each planted bug is what it
says, worked out by hand from what the bug breaks. That the reference checks diagnose every patient is tested
with the references, in tests/solutions/test_clinic_reference.py.

Expected values are worked by hand here or come from the sources, never from the code under test.
"""
import numpy as np
import pytest

from mini_transformer.evaluation import clinic
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT


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
