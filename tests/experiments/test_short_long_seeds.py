r"""short_long_seeds: its pieces against cases worked by hand, and its committed result against its own rule.

Nothing here trains a model: the committed result is checked for what a reader of chapters 4, 5 and 7
relies on (every cited claim recomputes from its per-seed values, the positive controls reproduce, the
configuration the chapters state is the one that ran).
"""
import math

import pytest

from mini_transformer.engine.backend import hostnp as np
from mini_transformer.engine.backend import xp
from mini_transformer.evaluation import stats
from experiments import short_long_seeds as sls
from experiments.common import load_result


def test_doubled_writes_every_chunk_twice():
    # stream 0..9, gap 3: chunks [0 1 2] [3 4 5] [6 7 8], the 9 dropped; each chunk twice
    out = sls.doubled(np.arange(10), gap=3)
    assert out.tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 6, 7, 8]
    # every token of a second copy equals the token `gap` back
    second = [i for i in range(len(out)) if (i // 3) % 2 == 1]
    assert all(out[i] == out[i - 3] for i in second)


def test_scaled_sinusoidal_has_the_token_rows_rms():
    # sin and cos have rms 1/sqrt(2) over a full period; times 0.02 sqrt(2) that is 0.02, the token rows' std
    assert sls.SCALE == pytest.approx(0.02 * math.sqrt(2))
    x = xp.zeros((1, 2000, 2), dtype="float64")            # d_model 2: one (sin, cos) pair at omega = 1
    pe = sls.ScaledSinusoidal(2).embed(x, 0)
    assert float(xp.sqrt((pe ** 2).mean())) == pytest.approx(0.02, rel=1e-3)
    assert float(pe[0, 1, 0]) == pytest.approx(sls.SCALE * math.sin(1.0))   # position 1: scale * sin(1)


def test_build_sets_max_distance_to_L_and_the_scaled_table():
    model, T = sls.build("t5_max_L", 32, seed=0)
    assert T == 32 and model.positional.max_distance == 32
    model, T = sls.build("alibi_long", 32, seed=0)
    assert T == 128
    model, _ = sls.build("sinusoidal_scaled", 32, seed=0)
    assert isinstance(model.positional, sls.ScaledSinusoidal)


def _rec(seed, **kw):
    base = dict(seed=seed, loss_L=2.0, loss_4L=1.9, beyond_4L=1.8, full=1.8, window=1.8, rise=0.0, gain=0.0)
    base.update(kw)
    return base


def test_claims_are_paired_by_seed_and_name_their_control():
    per_seed = {
        "alibi": [_rec(0, gain=0.001), _rec(1, gain=-0.002), _rec(2, gain=0.0)],
        "transformer_xl": [_rec(0, gain=0.004), _rec(1, gain=0.002), _rec(2, gain=0.003), _rec(3, gain=9.0)],
        "rope_long_copy": [_rec(0, gain=0.5), _rec(1, gain=0.6), _rec(2, gain=0.55)],
    }
    c = sls.claims(per_seed)
    # XL minus ALiBi over the seeds both ran (0, 1, 2): 0.003, 0.004, 0.003 (seed 3 of XL has no partner)
    assert c["penalty_is_cause"]["values"] == pytest.approx([0.003, 0.004, 0.003])
    assert c["penalty_is_cause"]["seeds"] == [0, 1, 2]
    assert c["copy_control_uses_far"]["verdict"] == "reproduces"
    assert c["uses_far_alibi"]["positive_control"] == "copy_control_uses_far"
    # 0.001, -0.002, 0.0: mean -0.000333, well under the 0.005 threshold of "uses far context"; the interval says
    # so, but a gain on text is not the far retrieval the book's claim is about: not tested here, the reason kept
    assert c["uses_far_alibi"]["interval_verdict"] == "reproduces"
    assert c["uses_far_alibi"]["verdict"] == "not tested here" and "retrieval" in c["uses_far_alibi"]["not_tested"]
    assert c["penalty_is_cause"]["verdict"] == "not tested here"
    assert "t5_max_L_helps" not in c                        # an arm that did not run gives no claim
    # the short-context cost of one 4L window: 4 * (loss_4L - beyond_4L) = 4 * 0.1
    assert c["short_context_costs_alibi"]["values"] == pytest.approx([0.4, 0.4, 0.4])


@pytest.fixture(scope="module")
def result():
    return load_result("short_long_seeds")


def test_committed_result_states_its_configuration(result):
    env = result["environment"]
    assert (result["train_len"], result["steps"], result["multiple"]) == (32, 500, 4)
    assert env["batch_size"] == 8 and env["cores"] >= 1 and env["seconds"] > 0
    assert result["commands"] and all("short_long_seeds" in c for c in result["commands"])
    for arm in sls.DEFAULT_ARMS:
        assert len(result["per_seed"][arm]) >= 3, f"{arm} has fewer than 3 seeds"
    assert all(r["steps"] == 1000 for r in result["per_seed"]["rope_long_copy"])


def test_committed_claims_recompute_and_controls_reproduce(result):
    for key, rec in result["claims"].items():
        again = stats.recompute(rec)
        assert again["interval"] == pytest.approx(rec["interval"]) and again["verdict"] == rec["verdict"], key
        control = rec.get("positive_control")
        if control is not None:
            assert result["claims"][control]["verdict"] == "reproduces", f"{key}: its control {control} does not"


def test_committed_claims_use_the_stored_per_seed_values(result):
    # a claim is the per-seed values it says: recompute two from per_seed by hand
    rise = [r["rise"] for r in result["per_seed"]["alibi"]]
    assert result["claims"]["runs_long_alibi"]["values"] == pytest.approx(rise)
    xl = {r["seed"]: r["gain"] for r in result["per_seed"]["transformer_xl"]}
    al = {r["seed"]: r["gain"] for r in result["per_seed"]["alibi"]}
    seeds = sorted(set(xl) & set(al))
    assert result["claims"]["penalty_is_cause"]["values"] == pytest.approx([xl[s] - al[s] for s in seeds])


def test_explodes_and_generalises_have_their_bars():
    # rises by hand: rope 0.45, 0.5, 0.55 (mean 0.5, sd 0.05, 95% t half-width 4.303 x 0.05 / sqrt 3 = 0.124); t5 0.2, 0.25, 0.1; none 0.1, 0.1, 0.15
    per_seed = {"rope": [_rec(s, rise=r) for s, r in enumerate((0.45, 0.5, 0.55))],
                "t5": [_rec(s, rise=r) for s, r in enumerate((0.2, 0.25, 0.1))],
                "none": [_rec(s, rise=r) for s, r in enumerate((0.1, 0.1, 0.15))]}
    c = sls.claims(per_seed)
    # "perplexity explodes" is a rise over ln 2 = 0.693, the perplexity doubled: [0.376, 0.624] lies wholly under it
    assert c["explodes_rope"]["threshold"] == pytest.approx(math.log(2))
    assert c["explodes_rope"]["verdict"] == "does not reproduce"
    assert c["breaks_rope"]["verdict"] == "reproduces"          # the same rises clear 0.05
    # "generalises": T5's rise minus no position's, below 0; here 0.1, 0.15, -0.05 (mean 0.067): not established
    assert c["t5_generalises_vs_none"]["values"] == pytest.approx([0.1, 0.15, -0.05])
    assert c["t5_generalises_vs_none"]["claimed"] == "below"
    assert c["t5_rises_less_than_rope"]["values"] == pytest.approx([0.25, 0.25, 0.45])   # rope minus t5
