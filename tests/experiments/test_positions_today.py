r"""positions_today: its per-layer scheme and its measures against cases worked by hand, its claims paired by seed,
every arm end to end on a few steps, and the committed result against its own rule."""
import math
import sys
import types
from pathlib import Path

import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.backend import hostnp as np
from mini_transformer.engine.backend import xp
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.evaluation import stats
from mini_transformer.positional.model_configs import layer_rope
from experiments import positions_today as pt
from experiments.common import load_result

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quick_runs  # noqa: E402  (the quick run below, made beside the other tests: quick_runs.py)


def per_layer(L=8, d_head=4):
    config = pt.gemma3_like(L, d_head)
    return pt.PerLayerRoPE(layer_rope(config), config["sliding_window"])


def test_per_layer_rope_turns_each_layer_by_its_own_base():
    # d_head 4: pairs (0, 2) at theta_0 = 1 and (1, 3) at theta_1 = base^(-2/4): 10000^-0.5 = 0.01 in the sliding
    # layer 0, 1e6^-0.5 = 0.001 in the global layer 1; a one-hot x turns into (cos m theta, sin m theta) of its pair
    scheme = per_layer()
    m = 3
    x = xp.asarray([[[[0.0, 1.0, 0.0, 0.0]]]])                                   # (1, 1, 1, 4): pair 1 only
    pos = xp.asarray([m])
    for layer, theta in ((0, 0.01), (1, 0.001)):
        y = backend.to_numpy(scheme.rotate(x, pos, layer))[0, 0, 0]
        np.testing.assert_allclose(y, [0.0, math.cos(m * theta), 0.0, math.sin(m * theta)], atol=1e-15)
    y = backend.to_numpy(scheme.rotate(xp.asarray([[[[1.0, 0.0, 0.0, 0.0]]]]), pos, 1))[0, 0, 0]
    np.testing.assert_allclose(y, [math.cos(3.0), 0.0, math.sin(3.0), 0.0], atol=1e-15)   # pair 0: theta_0 = 1


def test_per_layer_rope_scores_depend_on_the_distance_only():
    scheme = per_layer(d_head=8)
    g = np.random.default_rng(0)
    q, k = (xp.asarray(g.standard_normal((1, 1, 1, 8))) for _ in range(2))
    for layer in (0, 1):
        def score(m, n):
            return float((scheme.rotate(q, xp.asarray([m]), layer) * scheme.rotate(k, xp.asarray([n]), layer)).sum())
        assert score(7, 3) == pytest.approx(score(12, 8), abs=1e-12)
        assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-6)


def test_the_sliding_layer_masks_keys_at_the_window_and_past_it():
    scheme = per_layer(L=4)                                                       # window L/2 = 2
    assert scheme.window == 2 and scheme.sliding == [True, False]
    pos = xp.arange(5)
    q = xp.zeros((1, 1, 5, 4))
    bias = backend.to_numpy(scheme.score_bias(q, q, pos, pos, 0))[0, 0]          # (5, 5)
    # by hand: query i sees key j when i - j < 2; keys 2 or more back get -1e9
    far = [[0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0],
           [1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [1, 1, 1, 0, 0]]
    np.testing.assert_array_equal(bias, np.where(np.array(far, dtype=bool), pt.MASKED, 0.0))
    assert scheme.score_bias(q, q, pos, pos, 1) is None                         # the global layer: no window


def test_without_a_window_no_layer_is_masked():
    config = pt.gemma3_like(4, 4)
    scheme = pt.PerLayerRoPE(layer_rope(config), None)
    pos = xp.arange(5)
    assert scheme.score_bias(xp.zeros((1, 1, 5, 4)), xp.zeros((1, 1, 5, 4)), pos, pos, 0) is None
    # the one-base arm's config: both layers at base 10,000, so both turn pair 1 of d_head 4 at 10000^-0.5
    one = pt.PerLayerRoPE(layer_rope(pt.gemma3_like(4, 4, global_base=10_000.0)), 2)
    np.testing.assert_allclose([float(r.inv_freq[1]) for r in one.rotaries], [0.01, 0.01], rtol=1e-12)


def test_per_layer_rope_refuses_a_nope_layer_and_a_bad_window():
    with pytest.raises(ValueError, match="NoPE layer"):
        pt.PerLayerRoPE([None], 4)
    with pytest.raises(ValueError, match="window=0"):
        pt.PerLayerRoPE(layer_rope(pt.gemma3_like(8, 4)), 0)


def per_layer_model(L=8):
    """A float64 TinyGPT (d_head 8) running the per-layer scheme, its weights drawn at O(1) so every term counts."""
    model = TinyGPT(GPTConfig(vocab_size=11, d_model=16, n_layers=2, n_heads=2, max_len=2 * L)).to_dtype("float64")
    config = pt.gemma3_like(L, model.cfg.d_head)
    model.positional = pt.PerLayerRoPE(layer_rope(config), config["sliding_window"])
    draw = np.random.default_rng(5)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model


def test_a_model_with_per_layer_rope_passes_a_float64_gradcheck():
    model = per_layer_model()
    x = backend.asarray(np.random.default_rng(0).integers(0, 11, size=(2, 12)))   # 12 > the window of 4
    assert_gradcheck(lambda *ps: model(x), model.parameters(), tol=1e-7, max_elements=8)


def test_cached_decoding_with_per_layer_rope_equals_one_full_pass():
    model = per_layer_model().eval()
    x = backend.asarray(np.random.default_rng(1).integers(0, 11, size=(2, 12)))
    with no_grad():
        full = backend.to_numpy(model(x).data)
        cache = model.new_cache()
        steps = [backend.to_numpy(model(x[:, :3], cache=cache).data)]
        steps += [backend.to_numpy(model(x[:, t:t + 1], cache=cache).data) for t in range(3, 12)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12


class _Attention:
    def __init__(self, probs):
        self.probs, self.record_attention, self.last_attention = probs, False, None


class _Model:
    """Stands in for a model: each layer records the probabilities it is given."""

    def __init__(self, *probs):
        self.blocks = [types.SimpleNamespace(attn=_Attention(p)) for p in probs]

    def eval(self):
        return self

    def __call__(self, x):
        for b in self.blocks:
            if b.attn.record_attention:
                b.attn.last_attention = b.attn.probs


def test_attention_entropy_by_hand():
    # uniform causal rows: query i spreads 1/(i+1) over i+1 keys, entropy ln(i+1); from query 2 on: ln 3 and ln 4
    p = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    model = _Model(p[None, None], p[None, None])
    assert pt.attention_entropy(model, np.zeros((1, 4), dtype=np.int64), 2) == pytest.approx(
        (math.log(3) + math.log(4)) / 2, abs=1e-12)
    assert model.blocks[0].attn.record_attention is False                        # the flags are put back


def test_sink_weight_is_what_the_rows_leave_over():
    p = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]                      # rows summing to 1
    model = _Model(0.75 * p[None, None], p[None, None])                          # layer 0 parks 1/4 on the sink
    np.testing.assert_allclose(pt.sink_weight(model, np.zeros((1, 3), dtype=np.int64)), [[0.25], [0.0]], atol=1e-12)


def _seed(s, gap):
    """One seed's measurements, each effect of C2 to C5 equal to ``gap`` and the sink arms as given below."""
    text = {arm: {"loss": [2.0, 2.0, 2.0], "beyond": [float("nan"), 2.2, 2.5], "rise": 0.0,
                  "entropy_past_L": 2.0} for arm in pt.TEXT_ARMS}
    for arm in ("prope", "per_layer", "window_one_base", "bases_no_window", "fire", "temperature"):
        text[arm]["beyond"] = [float("nan"), 2.2 - gap, 2.5 - gap]
        text[arm]["loss"] = [2.0 - gap, 2.0, 2.0]
    text["temperature"]["entropy_past_L"] = 2.0 - gap
    text["fire"]["rise"] = gap
    sink = {"bos": {"sink_heads": 8 + s, "heads": 16, "sink_mass": 0.0, "bos_mass": 0.4, "heldout_loss": 2.5,
                    "backcopy_accuracy": 1.0},
            "learned_sink": {"sink_heads": 0, "heads": 16, "sink_mass": 0.5, "bos_mass": 0.05 * s,
                             "heldout_loss": 2.5 + 0.01 * s, "backcopy_accuracy": 1.0}}
    return {"text": text, "sink": sink}


def test_claims_are_paired_by_seed_and_follow_the_rule():
    per_seed = {0: _seed(0, 0.10), 1: _seed(1, 0.12), 2: _seed(2, 0.11)}
    c = pt.claims(per_seed)
    for key in ("C1_sink", "C2_prope", "C3_per_layer_base", "C4_fire", "C5_temperature"):
        assert {"interval", "verdict", "seeds", "per_seed", "metric", "arms"} <= set(c[key])
    # full RoPE minus p-RoPE past L, seed by seed: 0.10, 0.12, 0.11; mean 0.11, half-width t(2) 0.01 / sqrt 3
    assert c["C2_prope"]["values"] == pytest.approx([0.10, 0.12, 0.11])
    assert c["C2_prope"]["per_seed"] == pytest.approx({"0": 0.10, "1": 0.12, "2": 0.11})
    assert c["C2_prope"]["half_width"] == pytest.approx(4.302653 * 0.01 / math.sqrt(3), rel=1e-5)
    assert c["C2_prope"]["verdict"] == "reproduces" and c["C2_prope"]["arms"] == ["rope", "prope"]
    assert c["C3_per_layer_base"]["values"] == pytest.approx([0.10, 0.12, 0.11])
    # per-layer minus one base at L: -0.10, -0.12, -0.11, all under the 0.05 bar of "costs nothing"
    assert c["C3_per_layer_base_at_L"]["values"] == pytest.approx([-0.10, -0.12, -0.11])
    assert c["C3_per_layer_base_at_L"]["verdict"] == "reproduces"
    for key, arm in (("C3_window_alone", "window_one_base"), ("C3_bases_alone", "bases_no_window")):
        assert c[key]["values"] == pytest.approx([0.10, 0.12, 0.11]) and c[key]["arms"] == ["rope", arm]
    assert c["C4_fire"]["values"] == pytest.approx([0.10, 0.12, 0.11]) and c["C4_fire"]["arms"] == ["alibi", "fire"]
    # a rise of 0.10 to 0.12 is over the 0.05 of "runs long"
    assert c["C4_fire_runs_long"]["verdict"] == "does not reproduce"
    assert c["C5_temperature"]["values"] == pytest.approx([0.10, 0.12, 0.11])
    assert c["C5_temperature_entropy"]["values"] == pytest.approx([0.10, 0.12, 0.11])
    # the sink: 0 of 16 BOS-sink heads with the logit at every seed, 8, 9, 10 of 16 without
    assert c["C1_sink"]["values"] == [0.0, 0.0, 0.0] and c["C1_sink"]["verdict"] == "reproduces"
    assert c["C1_control_bos_sink"]["values"] == pytest.approx([0.5, 9 / 16, 10 / 16])
    assert c["C1_sink"]["positive_control"] == "C1_control_bos_sink"
    assert c["C1_sink_takes_weight"]["values"] == pytest.approx([0.5, 0.45, 0.4])
    assert c["C1_sink_loss"]["values"] == pytest.approx([0.0, 0.01, 0.02])
    for rec in c.values():
        again = stats.recompute(rec)
        assert (again["interval"], again["verdict"]) == (rec["interval"], rec["verdict"])


def test_every_arm_runs_end_to_end_on_a_few_steps():
    size = dict(train_len=8, steps=3, eval_batches=1, eval_batch_size=2, use_windows=2, sink_steps=3, sink_rows=2)
    out = pt.run_seed(0, size)
    assert set(out["text"]) == set(pt.TEXT_ARMS) and set(out["sink"]) == set(pt.SINK_ARMS)
    for arm, r in out["text"].items():
        assert len(r["loss"]) == len(pt.MULTIPLES) and all(math.isfinite(v) for v in r["loss"] + r["beyond"][1:])
        assert ("rise" in r) == (arm in pt.USE_ARMS) and ("entropy_past_L" in r) == (arm in pt.ENTROPY_ARMS)
    assert out["sink"]["bos"]["sink_mass"] == pytest.approx(0.0, abs=1e-6)        # no sink, rows sum to 1
    assert out["sink"]["learned_sink"]["sink_mass"] > 0                           # a logit at 0 takes 1/(n+1)
    assert out["sink"]["bos"]["sink_logits"] is None and len(out["sink"]["learned_sink"]["sink_logits"]) == 2
    assert set(pt.directions({0: out})) == set(pt.EFFECTS)


@pytest.fixture(scope="module")
def positions_today_quick():
    return quick_runs.result("positions_today_quick")   # pt.run(quick=True, seed=0), as its record


@pytest.mark.slow
def test_quick_run_measures_every_direction(positions_today_quick):
    res = positions_today_quick
    assert res["seeds"] == [0] and "claims" not in res                           # one seed settles nothing
    assert all(len(v) == 1 and math.isfinite(v[0]) for v in res["directions"].values())


@pytest.fixture(scope="module")
def result():
    return load_result(pt.NAME)


def test_committed_result_is_the_full_run(result):
    assert result["seeds"] == list(pt.SEEDS) and result["train_len"] == 32 and result["steps"] == 500
    assert result["command"].startswith(pt.COMMAND) and "--quick" not in result["command"]
    assert result["commit"] and result["wall_seconds"] > 0
    for key in ("C1_sink", "C2_prope", "C3_per_layer_base", "C4_fire", "C5_temperature"):
        assert key in result["claims"]


def test_committed_claims_recompute_and_their_controls_reproduce(result):
    for key, rec in result["claims"].items():
        again = stats.recompute(rec)
        assert again["interval"] == pytest.approx(rec["interval"]) and again["verdict"] == rec["verdict"], key
        assert rec["seeds"] == list(pt.SEEDS)
        values, _ = pt.effect_values(result["per_seed"], CLAIM_EFFECT[key])
        assert rec["values"] == pytest.approx(values), key                     # the record is its seeds' effect
        if "positive_control" in rec:
            assert result["claims"][rec["positive_control"]]["verdict"] == "reproduces", key


CLAIM_EFFECT = {key: spec[0] for key, spec in pt.CLAIMS.items()}


# ---------------------------------------------------------------------------
# What the mutation run of issue 38 found untested (bench_results/mutation_2026-12-06/positions_today_experiment.md)
# ---------------------------------------------------------------------------

def test_per_layer_rope_signature_names_each_layers_base_and_the_window():
    assert per_layer().signature() == {"rope_theta": [10_000.0, 1_000_000.0], "sliding": [True, False], "window": 4}


@pytest.mark.parametrize("window", [True, 2.5, 0, -1])
def test_per_layer_rope_refuses_a_window_that_is_no_whole_number_of_keys(window):
    with pytest.raises(ValueError) as e:
        pt.PerLayerRoPE(layer_rope(pt.gemma3_like(8, 4)), window)
    assert str(e.value) == f"PerLayerRoPE: window={window!r} must be a whole number of keys, at least 1."


def test_per_layer_rope_takes_a_window_of_one_key_and_refuses_any_nope_layer():
    assert pt.PerLayerRoPE(layer_rope(pt.gemma3_like(8, 4)), 1).window == 1        # each query sees itself only
    with pytest.raises(ValueError) as e:
        pt.PerLayerRoPE([layer_rope(pt.gemma3_like(8, 4))[0], None], 4)             # one NoPE layer of two
    assert str(e.value) == ("PerLayerRoPE turns every layer; a layer_rope entry of None (a NoPE layer) has no "
                            "frequencies to turn by.")


def test_per_layer_rope_keeps_a_float32_models_dtype():
    scheme, pos = per_layer(L=4), xp.arange(3)
    x = xp.ones((1, 1, 3, 4), dtype=xp.float32)
    assert scheme.rotate(x, pos, 0).dtype == xp.float32 and scheme.score_bias(x, x, pos, pos, 0).dtype == xp.float32


@pytest.mark.parametrize("arm, bases, window", [("per_layer", [10_000.0, 1_000_000.0], 16),
                                                ("window_one_base", [10_000.0, 10_000.0], 16),
                                                ("bases_no_window", [10_000.0, 1_000_000.0], None)])
def test_text_arm_gives_the_per_layer_arms_their_bases_and_window(arm, bases, window):
    model = pt.text_arm(arm, 32, seed=3)
    assert isinstance(model.positional, pt.PerLayerRoPE) and model.cfg.seed == 3 and model.cfg.max_len == 32
    assert model.positional.signature() == {"rope_theta": bases, "sliding": [True, False], "window": window}
    np.testing.assert_allclose([float(r.inv_freq[1]) for r in model.positional.rotaries],
                               [b ** (-2 / 16) for b in bases], rtol=1e-12)     # d_head 16: theta_1 = base^(-1/8)


def test_text_arm_gives_the_other_arms_their_schemes():
    assert pt.text_arm("temperature", 32, 0).cfg.extra == {"floor_scale": 8, "attn_scale": 0.1}     # L/4, Llama 4's
    assert pt.text_arm("temperature", 12, 0).cfg.extra["floor_scale"] == 3
    prope = pt.text_arm("prope", 32, 0)
    assert prope.cfg.rope_scaling == {"rope_type": "proportional", "factor": 1.0}
    assert prope.positional.settings.partial_rotary_factor == 0.25
    assert type(pt.text_arm("rope", 32, 0).positional).__name__ == "RoPE" and pt.text_arm("rope", 32, 0).cfg.extra == {}
    assert type(pt.text_arm("none", 32, 0).positional).__name__ == "NoPositionalEncoding"


def test_sink_model_is_sink_controls_rope_model_with_the_logit_only_in_its_arm():
    for arm, sinks in (("bos", False), ("learned_sink", True)):
        cfg = pt.sink_model(arm, seed=2).cfg
        assert (cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.max_len) == (65, 64, 2, 8, 64)
        assert (cfg.positional, cfg.seed, cfg.kernels, cfg.attention_sinks) == ("rope", 2, "fast", sinks)


def test_the_measures_put_back_what_the_layers_held_and_average_every_layer():
    p = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]                      # entropies 0, ln 2, ln 3
    q = np.eye(3)                                                                 # one-hot rows: entropy 0
    model = _Model(p[None, None], q[None, None])
    for b in model.blocks:
        b.attn.record_attention, b.attn.last_attention = "flag", "held"
    assert pt.attention_entropy(model, np.zeros((1, 3), dtype=np.int64), 1) == pytest.approx(
        (math.log(2) + math.log(3)) / 2 / 2, abs=1e-12)                          # layer 0's mean, layer 1's 0
    assert pt.sink_weight(model, np.zeros((1, 3), dtype=np.int64)) == pytest.approx(np.zeros((2, 1)), abs=1e-12)
    assert all((b.attn.record_attention, b.attn.last_attention) == ("flag", "held") for b in model.blocks)


def test_sink_weight_is_per_layer_and_head_over_rows_and_queries():
    p = np.tril(np.ones((2, 2))) / np.arange(1, 3)[:, None]                      # (2, 2), rows summing to 1
    # layer 0: row b, head h keeps (1 - s) of each row, s = 0.1 (b0 h0), 0.3 (b1 h0), 0.2 (b0 h1), 0.6 (b1 h1)
    keep = np.array([[0.9, 0.8], [0.7, 0.4]])[:, :, None, None]                  # (B, H, 1, 1)
    model = _Model(keep * p, np.ones((2, 2, 1, 1)) * p)
    np.testing.assert_allclose(pt.sink_weight(model, np.zeros((2, 2), dtype=np.int64)),
                               [[0.2, 0.4], [0.0, 0.0]], atol=1e-12)             # (0.1 + 0.3) / 2, (0.2 + 0.6) / 2


class _Stream:
    """Stands in for the corpus: its validation split is the token ids 0, 1, 2, ... so a window shows its start."""

    def __init__(self, n):
        self.val = np.arange(n, dtype=np.int32)

    def split(self, name):
        assert name == "val"
        return self.val


@pytest.fixture
def text_stubs(monkeypatch):
    """run_text with training and every measure replaced by a recorder giving set numbers."""
    calls, stream = {"entropy": []}, _Stream(1000)
    monkeypatch.setattr(pt, "corpus", lambda: stream)
    monkeypatch.setattr(pt.common, "text_batches", lambda T, batch_size: ("batches", T, batch_size))

    def train(model, batches, cfg):
        calls["train"] = (model, batches, cfg)
        return types.SimpleNamespace(losses=[float(i) for i in range(30)])      # the last 20: 10 .. 29, mean 19.5

    def curve(model, corpus, L, multiples, n_batches, batch_size, seed):
        calls["curve"] = (corpus, L, multiples, n_batches, batch_size, seed)
        return types.SimpleNamespace(loss=[1.0, 2.0, 3.0], loss_beyond=[float("nan"), 2.5, 3.5])

    def use(model, stream_, L, length, n_windows, seed):
        calls["use"] = (stream_, L, length, n_windows, seed)
        return {"full_mean": 3.0, "window_mean": 2.75}

    def entropy(model, x, start):
        calls["entropy"].append((np.array(x), start))
        return {(32, 8): 1.25, (8, 0): 1.75}[(x.shape[1], start)]

    for name, fake in (("train", train), ("extrapolation_curve", curve), ("context_use", use),
                       ("attention_entropy", entropy)):
        monkeypatch.setattr(pt, name, fake)
    return calls, stream


SIZE_8 = dict(train_len=8, steps=30, eval_batches=3, eval_batch_size=5, use_windows=7)


def test_run_text_trains_at_the_texts_settings_and_keeps_each_measure(text_stubs):
    calls, stream = text_stubs
    out = pt.run_text("none", seed=4, size=SIZE_8)
    model, batches, cfg = calls["train"]
    assert batches == ("batches", 8, 8)                                           # L, and 8 windows a batch
    assert (cfg.steps, cfg.lr, cfg.warmup, cfg.seed, cfg.progress) == (30, 3e-3, 3, 4, False)
    assert type(cfg.warmup) is int and model.cfg.seed == 4                       # the arm's model at the seed
    assert cfg.min_lr == pytest.approx(3e-4, rel=1e-12)                           # a tenth of the peak
    assert calls["curve"] == (stream, 8, (1, 2, 4), 3, 5, 4)
    assert calls["use"] == (stream.val, 8, 32, 7, 4)                              # context_use at 4L
    assert out["final_train_loss"] == 19.5 and out["loss"] == [1.0, 2.0, 3.0]
    assert math.isnan(out["beyond"][0]) and out["beyond"][1:] == [2.5, 3.5]
    assert (out["full"], out["window"], out["rise"]) == (3.0, 2.75, 0.25)
    assert (out["entropy_past_L"], out["entropy_at_L"]) == (1.25, 1.75)
    (x, start), (x_at_L, start_at_L) = calls["entropy"]
    assert x.shape == (5, 32) and x.dtype == np.int64 and (start, start_at_L) == (8, 0)
    assert (np.diff(x, axis=1) == 1).all() and x.min() >= 0 and x.max() < 1000  # each row one run of the stream
    np.testing.assert_array_equal(x_at_L, x[:, :8])                               # the same windows, cut at L
    # the starts: the seed's draw over every start that leaves 4L = 32 tokens of the 1000
    np.testing.assert_array_equal(x[:, 0], np.random.default_rng(4).integers(0, 1000 - 32, size=5))
    pt.run_text("none", seed=4, size=SIZE_8)
    np.testing.assert_array_equal(calls["entropy"][2][0], x)                      # the windows follow the seed


def test_run_text_measures_context_use_and_entropy_only_for_their_arms(text_stubs):
    calls, _ = text_stubs
    assert set(pt.run_text("per_layer", 0, dict(SIZE_8, steps=5))) == {"final_train_loss", "loss", "beyond"}
    assert calls["train"][2].warmup == 1 and "use" not in calls and calls["entropy"] == []   # warmup at least 1
    assert set(pt.run_text("temperature", 0, SIZE_8)) == {"final_train_loss", "loss", "beyond", "entropy_past_L",
                                                          "entropy_at_L"}
    assert "use" not in calls
    assert set(pt.run_text("fire", 0, SIZE_8)) == {"final_train_loss", "loss", "beyond", "full", "window", "rise"}


class _SinkModel:
    """Stands in for the sink model: a fixed loss, logits whose argmax is ``predict``, and sink logits a layer."""

    def __init__(self, predict, sinks):
        self.predict, self.evaluated = predict, False
        self.blocks = [types.SimpleNamespace(attn=types.SimpleNamespace(sinks=types.SimpleNamespace(data=s)))
                       for s in sinks]

    def eval(self):
        self.evaluated = True
        return self

    def loss(self, ids, targets):
        self.loss_args = (backend.to_numpy(ids), backend.to_numpy(targets))
        return types.SimpleNamespace(data=xp.asarray(2.5))

    def __call__(self, ids):
        assert self.evaluated
        return types.SimpleNamespace(data=xp.asarray(np.eye(65)[self.predict]))     # (n, T, 65)


@pytest.mark.parametrize("steps, warmup", [(100, 10), (600, 50)])               # a tenth, at most 50
def test_run_sink_trains_at_sink_controls_settings_and_scores_the_copies_by_hand(monkeypatch, steps, warmup):
    task = pt.BigramBackcopy(seed=0)
    trigger, plain = int(task.triggers[0]), int(np.flatnonzero(~task.is_trigger)[0])
    rows = np.full((1, 65), plain)
    rows[0, 0] = pt.VOCAB                                                         # BOS
    rows[0, [3, 10, 20]] = trigger                                                # targets 4, 11, 21 are copies
    predict = rows[:, 1:].copy()
    predict[0, 10] = (plain + 1) % 64                                             # one copy of three missed
    predict[0, 5] = (plain + 1) % 64                                              # a miss that is no copy
    model, calls = _SinkModel(predict, [np.array([0.5, -0.5]), np.array([1.0, 2.0])]), {}
    x = np.zeros((2, 64), dtype=np.int64)

    def held_out(task_, n_rows=None, length=None, seed=None):
        calls.setdefault("held_out", []).append((n_rows, length, seed))
        return x if length is None else rows

    def train(model_, batches, cfg):
        calls["train"] = cfg
        calls["batch"] = batches(types.SimpleNamespace(host=np.random.default_rng(0)))[0].shape
        return types.SimpleNamespace(losses=[float(i) for i in range(30)])

    def mass(model_, x_):
        assert x_ is x
        return types.SimpleNamespace(position0=np.array([[0.5, 0.3], [0.2, 0.1]]))   # one head over 0.3

    def parked(model_, x_):
        assert x_ is x
        return np.array([[0.1, 0.2], [0.3, 0.4]])

    monkeypatch.setattr(pt, "sink_model", lambda arm, seed: calls.setdefault("models", []).append((arm, seed)) or model)
    for name, fake in (("held_out", held_out), ("train", train), ("attention_mass", mass), ("sink_weight", parked)):
        monkeypatch.setattr(pt, name, fake)
    out = pt.run_sink("learned_sink", seed=2, size={"sink_steps": steps, "sink_rows": 6})
    cfg = calls["train"]
    assert (cfg.steps, cfg.warmup, cfg.lr, cfg.min_lr, cfg.weight_decay, cfg.seed, cfg.progress) == (
        steps, warmup, 1e-2, 1e-2, 0.1, 2, False)                                 # constant after warmup
    assert type(cfg.warmup) is int and calls["models"] == [("learned_sink", 2)]
    assert calls["batch"] == (16, 64)
    assert calls["held_out"] == [(6, None, None), (6, 65, 1003)]
    np.testing.assert_array_equal(model.loss_args[0], rows[:, :-1])
    np.testing.assert_array_equal(model.loss_args[1], rows[:, 1:])
    assert out["final_train_loss"] == 19.5 and out["heldout_loss"] == 2.5
    assert out["backcopy_accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert (out["sink_heads"], out["heads"], out["bos_mass"]) == (1, 4, pytest.approx(0.275, abs=1e-12))
    assert out["position0"] == [[0.5, 0.3], [0.2, 0.1]] and out["sink_weight"] == [[0.1, 0.2], [0.3, 0.4]]
    assert out["sink_mass"] == pytest.approx(0.25, abs=1e-12)
    assert out["sink_logits"] == [[0.5, -0.5], [1.0, 2.0]]
    assert pt.run_sink("bos", seed=2, size={"sink_steps": steps, "sink_rows": 6})["sink_logits"] is None


def test_run_seed_runs_every_arm_once_at_its_seed_and_counts_each_on_the_bar(monkeypatch):
    seen = []
    monkeypatch.setattr(pt, "run_text", lambda arm, seed, size: seen.append(("text", arm, seed, size)) or arm)
    monkeypatch.setattr(pt, "run_sink", lambda arm, seed, size: seen.append(("sink", arm, seed, size)) or arm)
    bar = types.SimpleNamespace(steps=[])
    bar.update = bar.steps.append
    out = pt.run_seed(7, "size", bar=bar)
    assert out == {"text": {arm: arm for arm in pt.TEXT_ARMS}, "sink": {"bos": "bos", "learned_sink": "learned_sink"}}
    assert seen == [("text", arm, 7, "size") for arm in pt.TEXT_ARMS] + [("sink", "bos", 7, "size"),
                                                                          ("sink", "learned_sink", 7, "size")]
    assert bar.steps == [1] * 11                                                  # 9 text arms and 2 sink arms
    assert pt.run_seed(7, "size") == out                                          # no bar: nothing to count


@pytest.fixture
def run_stubs(monkeypatch):
    """run() with each seed's arms replaced by _seed's numbers (gap 0.10 + s / 100), each seed taking 1.04 s and
    the whole process 3.14159 s, and a recorder for the rest."""
    calls = {"parts": [], "bar": [], "run_seed": []}

    def seed_part(parts, name, seed, size, make):
        calls["parts"].append((parts, name, seed, size))
        return make(), 1.04

    def run_seed(s, size, progress, bar):
        calls["run_seed"].append((s, size, progress, bar))
        return _seed(s, 0.10 + s / 100)

    class Bar:
        def __init__(self, total, desc, disable):
            calls["bar"].append((total, desc, disable))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Clock(Bar):
        seconds = 3.14159

        def __init__(self):
            pass

    monkeypatch.setattr(pt, "run_seed", run_seed)
    monkeypatch.setattr(pt, "Timer", Clock)
    monkeypatch.setattr(pt, "seed_part", seed_part)
    monkeypatch.setattr(pt, "tqdm", Bar)
    monkeypatch.setattr(pt, "_commit", lambda: "c0ffee")
    monkeypatch.setattr(pt, "environment", lambda seconds, **sizes: dict(sizes, seconds=seconds))
    return calls


def test_the_quick_run_records_its_sizes_settings_and_command_and_claims_nothing(run_stubs, capsys):
    res = pt.run(quick=True, seed=3, progress=True, parts="/tmp/parts")
    assert run_stubs["parts"] == [("/tmp/parts", "positions_today", 3, pt.SIZES[True])]
    assert run_stubs["bar"] == [(11, "arms", False)]                              # 9 text arms + 2 sink arms
    (s, size, progress, bar), = run_stubs["run_seed"]
    assert (s, size, progress, bar.__class__.__name__) == (3, pt.SIZES[True], True, "Bar")
    assert capsys.readouterr().err == "seed 3: 1.04 s\n"
    assert (res["train_len"], res["multiples"], res["lengths"], res["steps"], res["sink_steps"]) == (
        16, [1, 2, 4], [16, 32, 64], 60, 60)
    assert res["seeds"] == [3] and set(res["per_seed"]) == {"3"} and res["seed_seconds"] == {"3": 1.04}
    assert res["arms"] == {"text": ["rope", "prope", "per_layer", "window_one_base", "bases_no_window", "fire",
                                    "alibi", "none", "temperature"], "sink": ["bos", "learned_sink"]}
    assert res["settings"] == {
        "p_rope": 0.25, "floor_scale": 4, "attn_scale": 0.1,
        "per_layer_config": {"num_hidden_layers": 2, "head_dim": 16, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
                             "sliding_window_pattern": 2, "sliding_window": 8},
        "sink_train_len": 64, "sink_threshold": 0.3, "sink_size": 0.1, "text_batch": 8, "text_lr": 3e-3,
        "sink_batch": 16, "sink_lr": 1e-2, "sink_weight_decay": 0.1}
    assert res["thresholds"] == {"rise": 0.05, "same": 0.05, "copy_same": 0.05}
    assert res["command"] == ("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.positions_today --quick "
                              "--parts /tmp/parts")
    assert type(res["settings"]["floor_scale"]) is int                           # L // 4, as the JSON keeps it
    assert res["commit"] == "c0ffee" and res["wall_seconds"] == 1.0 and res["process_seconds"] == 3.1
    env = res["environment"]
    assert (env["seconds"], env["seeds"], env["d_model"], env["n_layers"], env["n_heads"], env["sink_n_heads"]) == (
        1.04, [3], 64, 2, 4, 8)
    assert len(env["load_average"]) == 3 and env["threads"] == "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"
    assert res["directions"]["prope_past_L"] == pytest.approx([0.13]) and "claims" not in res
    assert pt.run(quick=True)["seeds"] == [0] and run_stubs["bar"][-1] == (11, "arms", False)   # the defaults


def test_the_full_run_claims_from_two_seeds_on(run_stubs, monkeypatch, capsys):
    monkeypatch.setattr(pt, "SEEDS", (0, 1))
    res = pt.run(progress=False)
    assert [p[2:] for p in run_stubs["parts"]] == [(0, pt.SIZES[False]), (1, pt.SIZES[False])]
    assert run_stubs["parts"][0][0] is None and run_stubs["bar"] == [(22, "arms", True)]
    assert capsys.readouterr().err == ""
    assert res["command"] == "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m experiments.positions_today"
    assert (res["train_len"], res["lengths"], res["settings"]["floor_scale"], res["wall_seconds"]) == (
        32, [32, 64, 128], 8, 2.1)
    assert res["settings"]["per_layer_config"]["sliding_window"] == 16
    assert res["claims"]["C2_prope"]["values"] == pytest.approx([0.10, 0.11])     # the gaps _seed was given


def test_recompute_claims_rewrites_only_the_claims_of_the_saved_run(monkeypatch):
    saved, kept = {"per_seed": {"0": _seed(0, 0.10), "1": _seed(1, 0.12), "2": _seed(2, 0.11)},
                   "command": "as run", "claims": "stale"}, []
    monkeypatch.setattr(pt.common, "load_result", lambda name: saved if name == "positions_today" else None)
    monkeypatch.setattr(pt.common, "save", lambda name, res, fig: kept.append((name, res, fig)))
    monkeypatch.setattr(pt, "plot", lambda res: ("figure of", res["claims_recomputed_by"][:9]))
    res = pt.recompute_claims()
    assert kept == [("positions_today", res, ("figure of", "python -c"))] and res["command"] == "as run"
    assert res["claims"]["C2_prope"]["values"] == pytest.approx([0.10, 0.12, 0.11])
    assert res["claims_recomputed_by"] == ("python -c 'from experiments import positions_today; "
                                           "positions_today.recompute_claims()'")


def test_commit_asks_git_beside_the_module_and_is_none_without_a_checkout(monkeypatch):
    import subprocess
    asked = []

    def git(args, **kw):
        asked.append((args, kw))
        return types.SimpleNamespace(stdout="0123abcd\n")

    monkeypatch.setattr(subprocess, "run", git)
    assert pt._commit() == "0123abcd"
    assert asked == [(["git", "rev-parse", "HEAD"], {"capture_output": True, "text": True, "check": True,
                                                      "cwd": str(__import__("pathlib").Path(pt.__file__).parent)})]
    for error in (OSError("no git"), subprocess.CalledProcessError(128, "git")):
        def fails(args, error=error, **kw):
            raise error
        monkeypatch.setattr(subprocess, "run", fails)
        assert pt._commit() is None


def test_each_claim_names_the_arms_it_reads_and_its_metric():
    c = pt.claims({"10": _seed(0, 0.10), "9": _seed(1, 0.12), "2": _seed(2, 0.11)})
    arms = {"C1_sink": ["learned_sink"], "C1_control_bos_sink": ["bos"], "C1_sink_gap": ["bos", "learned_sink"],
            "C1_sink_takes_weight": ["learned_sink"], "C1_sink_loss": ["bos", "learned_sink"],
            "C1_sink_copy": ["bos", "learned_sink"], "C2_prope": ["rope", "prope"], "C2_prope_2L": ["rope", "prope"],
            "C2_prope_at_L": ["rope", "prope"], "C3_per_layer_base": ["rope", "per_layer"],
            "C3_per_layer_base_2L": ["rope", "per_layer"], "C3_per_layer_base_at_L": ["rope", "per_layer"],
            "C3_window_alone": ["rope", "window_one_base"], "C3_bases_alone": ["rope", "bases_no_window"],
            "C4_fire": ["alibi", "fire"], "C4_fire_vs_rope": ["rope", "fire"], "C4_fire_vs_none": ["none", "fire"],
            "C4_fire_runs_long": ["fire"], "C4_fire_at_L": ["alibi", "fire"], "C5_temperature": ["none", "temperature"],
            "C5_temperature_entropy": ["none", "temperature"]}
    assert {key: rec["arms"] for key, rec in c.items()} == arms
    assert c["C4_fire_runs_long"]["metric"] == ("FIRE's rise past L at 4L (nats): loss at t >= L with the whole prefix "
                                                "minus with the last L tokens only (chapter 7's context_use)")
    # the seeds in number order, 2, 9, 10 (as text "10" < "2" < "9"): the gaps 0.11, 0.12, 0.10
    assert c["C2_prope"]["seeds"] == [2, 9, 10] and c["C2_prope"]["values"] == pytest.approx([0.11, 0.12, 0.10])
    assert c["C2_prope"]["per_seed"] == pytest.approx({"2": 0.11, "9": 0.12, "10": 0.10})
    assert all(type(v) is float for v in c["C1_sink"]["values"])                 # from the int counts of heads
    assert [k for k, rec in c.items() if "positive_control" in rec] == ["C1_sink"]
    assert c["C2_prope_2L"]["effect"] == "loss at positions t >= L of 2L windows, full RoPE minus p-RoPE (p = 0.25) (nats)"
    assert c["C2_prope_2L"]["note"] == "the same at 2L"
