r"""The sink experiments: the Bigram-Backcopy task by its definition, the three other attentions by hand, the
committed control checkpoint, and both experiments end to end on a few steps."""
import math
import os

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.gradcheck import gradcheck
from experiments import sink_control as sc
from mini_transformer.evaluation.measures import attention_mass


def test_bigram_backcopy_follows_its_definition():
    task = sc.BigramBackcopy(seed=3)
    rows = task.sample(200, 64, np.random.default_rng(0))
    assert (rows[:, 0] == sc.BOS).all()                             # BOS first, and only there
    assert (rows[:, 1:] < sc.VOCAB).all()
    assert not task.is_trigger[rows[:, 1]].any()                    # x_1 is never a trigger
    trig = task.is_trigger[rows[:, 1:-1]]                           # x_t a trigger, t >= 1
    copied = rows[:, 2:][trig] == rows[:, :-2][trig]                # x_{t+1} = x_{t-1}
    assert trig.sum() > 1000 and copied.all()
    a, b = rows[:, 1:-1][~trig], rows[:, 2:][~trig]                 # every other step is a bigram step
    assert (task.table[a, b] > 0).all()
    assert np.allclose(task.table.sum(axis=1), 1) and ((task.table > 0).sum(axis=1) == sc.SUCCESSORS).all()


def test_bigram_backcopy_by_hand():
    # one successor a token: the chain is deterministic, so a row can be written out by hand from the table
    task = sc.BigramBackcopy(vocab=5, n_triggers=1, successors=1, seed=2)
    nxt = task.table.argmax(axis=1)
    trigger = int(task.triggers[0])
    rows = task.sample(8, 12, np.random.default_rng(1))
    assert (rows[:, 2:-1] == trigger).any()                     # the trigger does come up, with a token after it
    for row in rows:
        expected = [sc.BOS, row[1]]
        for t in range(1, 11):
            expected.append(expected[t - 1] if expected[t] == trigger else nxt[expected[t]])
        assert row.tolist() == [int(e) for e in expected]


def test_bigram_backcopy_refuses_bad_sizes():
    with pytest.raises(ValueError, match="n_triggers=64"):
        sc.BigramBackcopy(vocab=64, n_triggers=64)


def qkv(seed, shape=(1, 2, 5, 4)):
    g = np.random.default_rng(seed)
    return [g.standard_normal(shape) for _ in range(3)]


def test_relu_attention_by_hand():
    q, k, v = qkv(4)
    mask = np.tril(np.ones((5, 5), dtype=bool))
    y, p = sc.relu_attention(Tensor(q), Tensor(k), Tensor(v), mask=backend.asarray(mask), return_weights=True)
    expected = np.where(mask, np.maximum(q @ np.swapaxes(k, -1, -2) / 2.0, 0.0), 0.0) / sc.T   # 1/sqrt(4), / L
    np.testing.assert_allclose(backend.to_numpy(p), expected, atol=1e-14)
    np.testing.assert_allclose(y.numpy(), expected @ v, atol=1e-14)
    assert (expected.sum(-1) < 0.5).all()                        # far from summing to 1: a row may spend nothing


def test_normalised_sigmoid_rows_sum_to_one_by_hand():
    q, k, v = qkv(5)
    mask = np.tril(np.ones((5, 5), dtype=bool))
    y, p = sc.sigmoid_normalised(Tensor(q), Tensor(k), Tensor(v), mask=backend.asarray(mask), return_weights=True)
    sig = np.where(mask, 1.0 / (1.0 + np.exp(-(q @ np.swapaxes(k, -1, -2) / 2.0 - math.log(sc.T)))), 0.0)
    expected = sig / sig.sum(-1, keepdims=True)
    np.testing.assert_allclose(backend.to_numpy(p), expected, atol=1e-14)
    np.testing.assert_allclose(y.numpy(), expected @ v, atol=1e-14)
    _, unnormalised = sc.sigmoid_fixed(Tensor(q), Tensor(k), Tensor(v), mask=backend.asarray(mask), return_weights=True)
    np.testing.assert_allclose(backend.to_numpy(unnormalised), sig, atol=1e-14)   # the offset is -ln L, fixed


@pytest.mark.parametrize("attention", [sc.relu_attention, sc.sigmoid_normalised])
def test_new_attentions_gradients(attention):
    g = np.random.default_rng(6)
    q, k, v = (Tensor(g.standard_normal((1, 2, 4, 3)), requires_grad=True) for _ in range(3))
    mask = backend.asarray(np.tril(np.ones((4, 4), dtype=bool)))
    assert gradcheck(lambda q, k, v: (attention(q, k, v, mask=mask) ** 2).sum(), [q, k, v]) < 1e-6


@pytest.mark.skipif(not os.path.exists(sc.CHECKPOINT), reason="the control checkpoint is written by the full run")
def test_committed_control_has_a_sink_that_attention_mass_sees():
    model = sc.load_control()                                     # a plain TinyGPT: softmax, no code from the experiment
    assert model.kernels.attention.__module__.startswith("mini_transformer.engine")
    x = sc.held_out(sc.BigramBackcopy(seed=0))
    mass = attention_mass(model, x).position0                     # (n_layers, H)
    uniform = sum(1.0 / (i + 1) for i in range(sc.T)) / sc.T
    assert (mass > sc.SINK_THRESHOLD).sum() >= 4                  # at least a quarter of the 16 heads
    assert mass.min() > 0.5 * uniform
    by_query = sc.by_query_position(model, x)                      # (n_layers, T)
    np.testing.assert_allclose(by_query[:, 0], 1.0, atol=1e-6)   # query 0 can only look at position 0


def test_control_runs_end_to_end_and_the_probe_measures():
    task = sc.BigramBackcopy(seed=0)
    x = sc.held_out(task, n_rows=4)
    r = sc.run_one("relu", 0, 4, {0, 2}, task, x, W=8, stream_len=80, n_stream_rows=1)
    assert [c["step"] for c in r["curve"]] == [0, 2, 4]
    assert r["heads"] == 16 and len(r["by_query_position"]) == 2 and len(r["by_query_position"][0]) == sc.T
    assert set(r["stream_past_L"]) == set(sc.POLICIES)
    assert all(math.isfinite(v) for v in list(r["stream_past_L"].values()) + list(r["eviction_within_L"].values()))
    for layer in r["mechanism"]:
        assert all(math.isfinite(v) for v in layer.values())


def test_claims_follow_the_counts():
    runs = [dict(arm=a, seed=s, sink_heads=k, heads=16, window=32, position0=[[0.5] * 8, [0.1 + 0.01 * s] * 8],
                 stream_past_L={p: 1.0 for p in sc.POLICIES}, eviction_within_L={"kept": 1.0, "token 0 evicted": 1.2,
                                                                                 "token 1 evicted": 1.0 + 0.01 * s})
            for a, k in (("softmax", 8), ("sigmoid, normalised", 8), ("sigmoid", 0), ("relu", 0)) for s in (0, 1, 2)]
    claims = sc.claims_from(runs)
    assert claims["C4_softmax"]["pooled_wilson"]["successes"] == 24 and claims["C4_softmax"]["pooled_wilson"]["trials"] == 48
    assert claims["C4_softmax"]["verdict"] == "reproduces"              # 24/48: Wilson [0.36, 0.64], above 0.1
    assert claims["C7_relu"]["verdict"] == "reproduces"                 # 0/48: [0, 0.074], below 0.1
    assert claims["C7_relu"]["positive_control"] == "C4_softmax"
    # last layer minus first: -0.40, -0.39, -0.38, a t interval of -0.39 ± 0.025 (t_0.975,2 = 4.303, s = 0.01)
    assert claims["C4_depth_softmax"]["mean"] == pytest.approx(-0.39)
    assert claims["C4_depth_softmax"]["half_width"] == pytest.approx(4.303 * 0.01 / math.sqrt(3), abs=1e-4)
    # wholly below 0, but 2 layers have no mid-to-late layers, where the book puts the mass: not tested here
    assert claims["C4_depth_softmax"]["interval_verdict"] == "does not reproduce"
    assert claims["C4_depth_softmax"]["verdict"] == "not tested here"
    assert "2 layers" in claims["C4_depth_softmax"]["not_tested"]
    # every policy 1.0: the window without sinks loses 0, under the 0.05 of "breaks", but no positive control: no
    # arm in which evicting the first tokens is known to cost more than the bar
    assert claims["C5_breaks_softmax"]["interval_verdict"] == "does not reproduce" and claims["C5_breaks_softmax"]["threshold"] == 0.05
    assert claims["C5_breaks_softmax"]["verdict"] == "not tested here"
    assert claims["C5b_restores_softmax"]["verdict"] == "not tested here"
    assert "C5_softmax" not in claims and "C5b_softmax" not in claims      # one record a source sentence, one verdict
    # full attention minus recomputing the window: 0 for every seed, so the model does not fail past L, and
    # neither numbering of the window (C1d, C3b) has a failure to cause or prevent
    assert claims["C3_fails_past_L_softmax"]["values"] == [0.0] * 3
    assert claims["C3_fails_past_L_softmax"]["verdict"] == "not established"
    assert claims["C1_window_logical_softmax"]["values"] == [0.0] * 3
    assert claims["C1_window_logical_softmax"]["verdict"] == "not tested here"
    assert claims["C3_softmax"]["verdict"] == "not tested here"
    assert claims["C3_sigmoid_normalised"]["verdict"] == "not established"      # the same zeros, with no reason to set aside
    # the survey's rule asks for one position id on every path; which numbering costs less past L it does not say
    assert claims["C1_window_logical_sigmoid_normalised"]["interval_verdict"] == "not established"
    assert claims["C1_window_logical_sigmoid_normalised"]["verdict"] == "not tested here"
    assert claims["C1_window_logical_sigmoid_normalised"]["not_tested"] == sc.SURVEY_RULE
    assert claims["C1_window_logical_sigmoid_normalised"]["positive_control"] == "C3_fails_past_L_sigmoid_normalised"
    # C5b reads the book's four sinks: a window + 1 sink 0.1 nats worse than recomputing changes nothing
    for r in runs:
        r["stream_past_L"]["window + 1 sink (slot)"] = 1.1
    assert sc.claims_from(runs)["C5b_restores_softmax"]["values"] == [0.0] * 3
    # exercise 6's setting, from the committed first runs: the 2-layer model alone, 0 of its 8 heads; the Wilson
    # interval of 0/8 is [0, z^2/(8 + z^2)] = [0, 0.3244], which holds 0.1
    ex = claims["C4_exercise_setting"]
    assert ex["kind"] == "wilson" and (ex["successes"], ex["trials"]) == (0, 8) and ex["seeds"] == [0]
    assert ex["interval"][1] == pytest.approx(1.959964 ** 2 / (8 + 1.959964 ** 2), abs=1e-6)
    assert ex["verdict"] == "not established"


def test_normalised_sigmoid_of_a_row_that_underflows_is_zero_not_nan():
    # every score far below -17: each sigma is 0 in float32, and the row is 0/0 without the guard
    q = np.full((1, 1, 1, 4), 10.0, dtype="float32")
    k = np.full((1, 1, 3, 4), -10.0, dtype="float32")
    v = np.ones((1, 1, 3, 4), dtype="float32")
    y = sc.sigmoid_normalised(Tensor(q), Tensor(k), Tensor(v)).numpy()
    assert np.isfinite(y).all() and np.abs(y).max() == 0.0


def test_the_checkpoint_goes_beside_the_result(tmp_path, monkeypatch):
    """A full run writes its softmax checkpoint into --out, so a run made elsewhere (experiments.remake --check)
    leaves the committed one in results/ alone; without --out it is the committed path."""
    seen = []

    class Stop(Exception):
        pass

    def run(quick, seed, progress, arms=None, checkpoint=None):
        seen.append(checkpoint)
        raise Stop

    monkeypatch.setattr(sc, "run", run)
    for argv in (["--out", str(tmp_path)], ["--out", str(tmp_path), "--arms", "softmax"], []):
        with pytest.raises(Stop):
            sc.main(argv)
    beside = str(tmp_path / os.path.basename(sc.CHECKPOINT))
    assert seen == [beside, beside, sc.CHECKPOINT]
