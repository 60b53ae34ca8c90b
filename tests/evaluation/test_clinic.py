r"""Chapter 12's clinic (``mini_transformer/evaluation/clinic.py``): the healthy patient, and each planted bug is what it
says, worked out by hand from what the bug breaks. That the reference checks diagnose every patient is tested
with the references, in tests/solutions/test_clinic_reference.py.

Expected values are worked by hand here or come from the sources, never from the code under test.
"""
import copy
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from mini_transformer.evaluation import clinic
from mini_transformer.engine.autograd import Tensor, no_grad
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


@pytest.mark.parametrize("make, seed", [(lambda: clinic.make_patient(), 0), (lambda: clinic.make_patient(1), 1),
                                        (lambda: clinic.make_planted("sinks_evicted"), 0)],
                         ids=["make_patient()", "make_patient(1)", "make_planted(bug)"])
def test_a_patient_is_the_library_initialisation_of_its_seed_sharpened_from_seed_1000_plus_seed(make, seed):
    p = make()
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=16, positional="rope",
                    rope_scaling={"rope_type": "linear", "factor": 4.0}, seed=seed)
    assert p.model.cfg == p.source.cfg == cfg
    for model in (p.model, p.source):
        state = model.state_dict()
        assert all(v.dtype == np.float64 for v in state.values())
        # untouched by sharpen: the library's N(0, 0.02^2) initialisation of the config's seed
        np.testing.assert_array_equal(state["tok.weight"], TinyGPT(cfg).state_dict()["tok.weight"])
        # sharpen draws in the state's order from rng(1000 + seed): norm1's bias (0.1), then W_qkv (0.5)
        g = rng(1000 + seed).host
        np.testing.assert_array_equal(state["blocks.0.norm1.bias"], g.normal(0.0, 0.1, size=16))
        np.testing.assert_array_equal(state["blocks.0.attn.W_qkv.weight"], g.normal(0.0, 0.5, size=(16, 48)))


def test_sharpen_draws_attention_weights_at_a_trained_scale():
    model = clinic.sharpen(TinyGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2)), seed=3)
    state = model.state_dict()
    w = np.concatenate([state[f"blocks.{i}.attn.W_qkv.weight"].ravel() for i in range(2)])   # 2 x 32 x 96 draws
    assert abs(w.std() - 0.5) < 0.02 and abs(w.mean()) < 0.02
    biases = np.concatenate([v.ravel() for k, v in state.items() if k.endswith("bias")])
    assert abs(biases.std() - 0.1) < 0.01 and abs(biases.mean()) < 0.01        # 736 draws: mean 0 +- 0.004
    assert state["tok.weight"].std() < 0.03                         # the rest keeps the library's N(0, 0.02^2)
    assert all(p.data.dtype == np.float64 for p in model.parameters())
    again = clinic.sharpen(TinyGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2)))        # the default seed is 0
    assert all(np.array_equal(again.state_dict()[k], v) for k, v in
               clinic.sharpen(TinyGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2)), seed=0).state_dict().items())


def test_position_reset_gives_the_decoded_token_position_zero():
    p = clinic.make_planted("position_reset")
    cache = p.model.new_cache()
    with no_grad():
        p.model(rng(0).integers(0, 16, (1, 5)), cache=cache)
    q_pos, k_pos = cache.query_and_key_positions(1)
    assert to_numpy(q_pos).tolist() == [0] and to_numpy(k_pos).tolist() == [0] * 6
    assert q_pos.dtype == k_pos.dtype == np.int64                          # positions are integers, as in any cache


@pytest.mark.parametrize("make, n_sink", [(clinic.make_patient, 4), (lambda: clinic.make_planted("position_reset"), 4),
                                          (lambda: clinic.make_planted("sinks_evicted"), 0)],
                         ids=["healthy", "position_reset", "sinks_evicted"])
def test_a_planted_cache_keeps_the_policy_it_is_asked_for_but_its_bug(make, n_sink):
    cache = make().model.new_cache(window=8, n_sink=4, positions="slot")
    assert (cache.window, cache.n_sink, cache.positions) == (8, n_sink, "slot")


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


@pytest.mark.parametrize("bug", ["recency_bias", "position_ignored"])
def test_a_wrapped_scheme_copies_and_says_it_has_no_inner_scheme_before_it_is_given_one(bug):
    scheme = clinic.make_planted(bug).model.positional
    twin = copy.deepcopy(scheme)             # deepcopy makes the object first, then asks it for __setstate__
    np.testing.assert_array_equal(to_numpy(twin.rotary.inv_freq), [0.25, 0.025, 0.0025, 0.00025])
    bare = object.__new__(type(scheme))
    with pytest.raises(AttributeError, match="^inner$"):
        bare.inner
    with pytest.raises(AttributeError, match="^inner$"):
        bare.rotary


def test_plant_refuses_an_unknown_bug():
    with pytest.raises(ValueError, match=re.escape(
            "plant: unknown bug 'typo'; the planted bugs are position_reset, angles_out_of_range, "
            "pairing_mismatch, recency_bias, sinks_evicted, position_ignored.")):
        clinic.plant(clinic.make_patient(), "typo")


def test_the_ward_holds_every_diagnosis_once():
    makers, key = clinic.ward(0)
    assert list(makers) == list("ABCDEFG") and sorted(key.values()) == sorted(("healthy",) + clinic.BUGS)
    assert clinic.ward(0)[1] == key and clinic.ward(1)[1] != key and clinic.ward()[1] == key   # default seed 0


def test_attention_probe_scales_by_root_d_head_masks_later_keys_and_takes_no_overflow():
    # at position 0 RoPE turns nothing, so the probe is softmax(q . k / sqrt(8)) over keys 0 and 1; key 2 sits at
    # position 1, after the query, and gets 0. Head 0's scores are 1000 + ln 3 and 1000 (exp(1000) overflows),
    # head 1's ln 3 and 0: both give 3 / 4 and 1 / 4.
    model = clinic.make_patient().model
    e0, e1 = np.eye(8)[0], np.eye(8)[1]
    q = np.stack([math.sqrt(8) * ((1000 + math.log(3)) * e0 + 1000 * e1), math.sqrt(8) * math.log(3) * e0])
    k = np.stack([e0, e1, e0])
    probs = to_numpy(clinic.attention_probe(model, asarray(q[None, :, None]), asarray(np.stack([k, k])[None]),
                                            xp.arange(1), asarray([0, 0, 1])))
    assert probs.shape == (1, 2, 1, 3)
    np.testing.assert_allclose(probs[0, :, 0], [[0.75, 0.25, 0.0]] * 2, rtol=1e-10)


class LayerScaled:
    """A scheme whose rotation and bias depend on the layer and the key: rotate scales by layer + 1, the bias adds
    layer times the rotated key's first channel, as a Tensor."""

    def rotate(self, x, pos, layer):
        return Tensor(x.data * (layer + 1))

    def score_bias(self, q, k, q_pos, k_pos, layer):
        return Tensor(layer * k.data[:, :, None, :, 0])                    # (B, H, 1, T_k)


@pytest.mark.parametrize("layer", [None, 0, 1])
def test_attention_probe_runs_the_schemes_hooks_of_its_layer(layer):
    # q = e0, k_0 = (ln 3 / 4) e0, k_1 = 0, d_head 4. Layer 1: both doubled, q . k_0 / 2 = ln 3 / 2, plus the bias
    # 1 * 2 * ln 3 / 4: ln 3 against 0, so 3 / 4 and 1 / 4. Layer 0 (the default): ln 3 / 8 against 0, no bias.
    q = np.eye(4)[0].reshape(1, 1, 1, 4)
    k = np.stack([math.log(3) / 4 * np.eye(4)[0], np.zeros(4)]).reshape(1, 1, 2, 4)
    model = SimpleNamespace(positional=LayerScaled())
    args = (model, asarray(q), asarray(k), asarray([1]), asarray([0, 1]))
    probs = clinic.attention_probe(*args) if layer is None else clinic.attention_probe(*args, layer=layer)
    w = 3 ** 0.125 if layer in (None, 0) else 3.0
    assert isinstance(probs, type(xp.zeros(1)))
    np.testing.assert_allclose(to_numpy(probs)[0, 0, 0], [w / (w + 1), 1 / (w + 1)], rtol=1e-12)
