"""experiments.bake_off_seeds: what it reads from each seed's bake-off, its intervals, its kept seeds, its record."""
import json
import math
import os

import pytest

from experiments import bake_off_seeds, train_short_test_long
from experiments.common import RESULTS

NAN = float("nan")
LENGTHS = [64, 128, 256, 512]


def bake_off(rope_shift=0.0):
    """A bake-off result as ``train_short_test_long.run`` returns it, by hand: RoPE climbs, the table refuses."""
    return {
        "train_len": 64, "lengths": LENGTHS, "multiples": [1, 2, 4, 8], "steps": 1500, "seed": 0,
        "environment": {"seconds": 10.0, "d_model": 64},
        "results": {
            "rope": {"final_train_loss": 1.5, "loss": [2.0, 2.1, 2.3, 2.6],
                     "loss_beyond": [NAN, 2.2 + rope_shift, 2.5, 2.9 + rope_shift], "reasons": [None] * 4,
                     "context_use": {"full_mean": 2.9, "window_mean": 2.4}},
            "learned": {"final_train_loss": 1.4, "loss": [1.9, NAN, NAN, NAN], "loss_beyond": [NAN] * 4,
                        "reasons": [None, "no row 64", "no row 64", "no row 64"],
                        "context_use": {"full_mean": NAN, "window_mean": 2.5}},
        },
    }


def test_per_seed_reads_the_rise_the_gap_and_the_refused_lengths():
    got = bake_off_seeds.per_seed(bake_off())
    assert got["rope"]["rise"] == pytest.approx(0.9)              # 2.9 past L at 8L, 2.0 at L
    assert got["rope"]["context_use_gap"] == pytest.approx(0.5)   # 2.9 with the whole prefix, 2.4 with the last L
    assert got["rope"]["refused"] == [] and got["learned"]["refused"] == [128, 256, 512]
    assert math.isnan(got["learned"]["rise"]) and math.isnan(got["learned"]["context_use_gap"])


def test_interval_is_a_t_interval_over_the_finite_values():
    # 1, 2, 3: mean 2, s = 1, t(0.975, 2) = 4.302653 (a t table), half-width 4.302653 / sqrt(3) = 2.484138
    got = bake_off_seeds.interval([1.0, 2.0, 3.0])
    assert got == {"mean": pytest.approx(2.0), "lo": pytest.approx(-0.484138, abs=1e-5),
                   "hi": pytest.approx(4.484138, abs=1e-5), "n": 3}
    # a refused seed drops out: 1 and 3, s = sqrt(2), t(0.975, 1) = 12.706205, half-width 12.706205
    got = bake_off_seeds.interval([1.0, NAN, 3.0, None])
    assert got["n"] == 2 and got["lo"] == pytest.approx(-10.706205, abs=1e-5)
    assert bake_off_seeds.interval([1.0, NAN]) is None and bake_off_seeds.interval([]) is None


def test_over_seeds_gives_each_length_past_L_its_interval_and_counts_the_refusing_seeds():
    runs = {"0": bake_off_seeds.per_seed(bake_off()), "1": bake_off_seeds.per_seed(bake_off(0.2)),
            "2": bake_off_seeds.per_seed(bake_off(0.4))}
    got = bake_off_seeds.over_seeds(runs, LENGTHS)
    assert sorted(got["rope"]["loss_beyond"]) == ["128", "256", "512"]      # none at L itself
    assert got["rope"]["loss_beyond"]["128"]["mean"] == pytest.approx(2.4)   # 2.2, 2.4, 2.6
    assert got["rope"]["loss_beyond"]["256"]["lo"] == pytest.approx(2.5)     # no spread over seeds
    assert got["rope"]["rise"]["mean"] == pytest.approx(1.1)                  # 0.9, 1.1, 1.3
    assert got["rope"]["seeds_refusing"] == 0 and got["learned"]["seeds_refusing"] == 3
    assert got["learned"]["rise"] is None and got["learned"]["loss_beyond"]["512"] is None


def test_run_keeps_each_seed_and_a_rerun_trains_none_again(tmp_path, monkeypatch):
    trained = []

    def fake_run(quick, seed, progress=True):
        trained.append(seed)
        return dict(bake_off(0.2 * seed), seed=seed)

    monkeypatch.setattr(train_short_test_long, "run", fake_run)
    res = bake_off_seeds.run(seeds=(0, 1, 2), progress=False, parts=str(tmp_path))
    assert trained == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == [f"bake_off_seeds_seed{s}.json" for s in (0, 1, 2)]
    assert res["seeds"] == [0, 1, 2] and res["train_len"] == 64 and res["lengths"] == LENGTHS
    assert res["per_seed"]["1"]["rope"]["rise"] == pytest.approx(1.1)
    assert res["environment"]["seeds"] == [0, 1, 2] and res["environment"]["d_model"] == 64
    again = bake_off_seeds.run(seeds=(0, 1, 2), progress=False, parts=str(tmp_path))
    assert trained == [0, 1, 2]                                              # every seed read back
    assert again["over_seeds"] == json.loads(json.dumps(res["over_seeds"]))
    # the seconds are the seeds' own as each part saved them, summed
    saved = sum(json.loads((tmp_path / f"bake_off_seeds_seed{s}.json").read_text())["seconds"] for s in (0, 1, 2))
    assert again["environment"]["seconds"] == pytest.approx(saved, abs=0.1)


def test_the_command_refuses_a_seed_twice(capsys):
    with pytest.raises(SystemExit) as refused:
        bake_off_seeds.main(["--seeds", "0", "0", "--quick"])
    assert refused.value.code == 2
    assert "--seeds is [0, 0]; each seed once" in capsys.readouterr().err


def test_the_committed_record_at_seed_0_is_the_committed_bake_off():
    """Seed 0 here and ``train_short_test_long``'s record are two runs of one function at one seed: a remake of one
    without the other shows here."""
    path = os.path.join(RESULTS, "bake_off_seeds.json")
    if not os.path.exists(path):
        pytest.skip("no committed bake_off_seeds record")
    with open(path) as f:
        seeds = json.load(f)
    with open(os.path.join(RESULTS, "train_short_test_long.json")) as f:
        once = bake_off_seeds.per_seed(json.load(f))
    here = seeds["per_seed"]["0"]
    assert sorted(here) == sorted(once)
    for name in once:
        for key in ("loss", "loss_beyond", "rise", "context_use_gap"):
            assert here[name][key] == pytest.approx(once[name][key], rel=1e-9, nan_ok=True), (name, key)
        assert here[name]["refused"] == once[name]["refused"]


def test_the_plot_draws_a_scheme_that_runs_and_skips_one_refused_everywhere():
    runs = {"0": bake_off_seeds.per_seed(bake_off()), "1": bake_off_seeds.per_seed(bake_off(0.2))}
    res = {"seeds": [0, 1], "train_len": 64, "lengths": LENGTHS, "per_seed": runs,
           "over_seeds": bake_off_seeds.over_seeds(runs, LENGTHS)}
    fig = bake_off_seeds.plot(res)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["rope"]                                                # learned refused every length past L
    assert fig.axes[0].get_xlabel() == "evaluation length\nlearned: no value past L at two seeds or more"


def test_the_command_saves_the_record_and_its_plot_with_the_command_that_made_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(train_short_test_long, "run", lambda quick, seed, progress=True: bake_off(0.2 * seed))
    argv = ["--seeds", "0", "1", "--out", str(tmp_path), "--no-progress"]
    bake_off_seeds.main(argv)
    assert sorted(os.listdir(tmp_path)) == ["bake_off_seeds.json", "bake_off_seeds.png"]
    record = json.loads((tmp_path / "bake_off_seeds.json").read_text())
    assert record["command"] == "python -m experiments.bake_off_seeds " + " ".join(argv)
    assert record["seeds"] == [0, 1] and record["over_seeds"]["rope"]["rise"]["mean"] == pytest.approx(1.0)
    out = capsys.readouterr().out
    assert "rope" in out and "2 of 2 seeds" in out                             # the learned table, refused at both
    monkeypatch.chdir(tmp_path)
    bake_off_seeds.main(["--quick", "--seeds", "0", "1", "--no-progress", "--out", str(tmp_path / "quick")])
    assert not (tmp_path / "quick").exists()                                    # a quick run saves nothing
