r"""The text sink experiment: its pieces end to end on two steps, and its claims from counts."""
import math

from experiments import sink_text as st
from experiments.attention_sinks import BOS, held_out
from experiments.common import corpus


def test_text_run_end_to_end_with_bos_first():
    text = corpus()
    x64 = held_out(text, 2, st.MEASURE_AT, bos=True, start=0)
    x256 = held_out(text, 1, st.L, bos=True, start=2_000)
    assert (x64[:, 0] == BOS).all() and x256.shape == (1, st.L)
    r = st.run_one(1e-3, 0, 2, {0}, text, x64, x256, 1)
    assert [c["step"] for c in r["curve"]] == [0, 2] and r["heads"] == 8
    assert set(r["eviction_within_L"]) == {"kept", "token 0 evicted", "token 1 evicted"}
    assert all(math.isfinite(v) for v in r["eviction_within_L"].values())


def test_text_claims_pool_heads_and_read_the_rule():
    runs = [dict(lr=lr, seed=s, steps=st.STEPS, sink_heads=0, heads=8, eviction_within_L={"kept": 1.0, "token 0 evicted": 1.0 + 0.001 * s,
                                                                          "token 1 evicted": 1.0})
            for lr in st.LRS for s in st.SEEDS]
    claims = st.claims_from(runs)
    # every seed 0 of 8: a t interval of width zero, under 0.1; but 614,400 bytes a run is far from the data a sink
    # needs, so every share, per learning rate and over all runs, is "not tested here", its interval's verdict kept
    for key, n in (("C4_lr0.001", 24), ("C4_all", 72)):
        assert claims[key]["pooled_wilson"]["trials"] == n and claims[key]["verdict"] == "not tested here"
        assert claims[key]["interval_verdict"] == "does not reproduce" and "614,400 bytes" in claims[key]["not_tested"]
