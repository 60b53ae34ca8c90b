"""experiments.bake_off_seeds: what it reads from each seed's bake-off, its intervals, its kept seeds, its record."""
import json
import math
import os
import sys

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
    assert sorted(got["rope"]) == ["context_use_gap", "loss", "loss_beyond", "refused", "rise"]
    assert got["rope"]["loss"] == [2.0, 2.1, 2.3, 2.6] and got["rope"]["loss_beyond"][1:] == [2.2, 2.5, 2.9]
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


def test_run_reads_kept_seeds_of_the_size_asked_and_sums_the_seconds_they_state(tmp_path, monkeypatch):
    quick = train_short_test_long.SIZES[True]
    for seed, seconds in ((0, 10.0), (1, 20.5), (2, 30.0)):              # kept by hand, at the quick size
        values = dict(bake_off(0.2 * seed), steps=300 + seed, environment={"seconds": seconds, "load": seed})
        (tmp_path / f"bake_off_seeds_seed{seed}.json").write_text(
            json.dumps({"seed": seed, "size": quick, "seconds": seconds, "values": values}))
    trained = []

    def fake_run(quick, seed, progress=True):
        trained.append((quick, seed, progress))
        return bake_off(0.2 * seed)

    monkeypatch.setattr(train_short_test_long, "run", fake_run)
    res = bake_off_seeds.run(quick=True, seeds=(0, 1, 2), progress=False, parts=str(tmp_path))
    assert trained == []                                                      # all three read back
    assert res["environment"]["seconds"] == 60.5                              # 10.0 + 20.5 + 30.0
    assert res["environment"]["load"] == 0 and res["steps"] == 300            # the first seed's own
    assert res["multiples"] == [1, 2, 4, 8] and list(res["per_seed"]) == ["0", "1", "2"]
    # the full size is another size: seed 1 trains, with the bar as asked, and its part is kept at that size
    res = bake_off_seeds.run(seeds=(1,), parts=str(tmp_path))
    assert trained == [(False, 1, True)] and res["steps"] == 1500
    kept = json.loads((tmp_path / "bake_off_seeds_seed1.json").read_text())
    assert kept["size"] == train_short_test_long.SIZES[False]


def test_the_command_refuses_a_seed_twice(capsys, monkeypatch):
    monkeypatch.setattr(train_short_test_long, "run", lambda quick, seed, progress=True: bake_off())   # never trains
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
    assert fig.axes[0].get_xlabel() == "evaluation length\nlearned: not drawn (refused past L at 2 of 2 seeds; an interval needs two seeds with a value)"


def drawn():
    """A record by hand for the plot (intervals lopsided, so a swapped side shows): the learned table refuses
    every length past L and comes first, T5 refuses 256 only, and a second table refuses every length."""
    return {"seeds": [0, 1], "train_len": 64, "lengths": [64, 128, 256],
            "per_seed": {"0": {"learned": {"loss_beyond": [NAN, NAN, NAN]}, "rope": {"loss_beyond": [NAN, 2.2, 2.5]},
                               "t5": {"loss_beyond": [NAN, 2.0, NAN]}, "table": {"loss_beyond": [NAN, NAN, NAN]}},
                         "1": {"learned": {"loss_beyond": [NAN, NAN, NAN]}, "rope": {"loss_beyond": [NAN, 2.4, 2.5]},
                               "t5": {"loss_beyond": [NAN, 2.2, 3.0]}, "table": {"loss_beyond": [NAN, NAN, NAN]}}},
            "over_seeds": {"learned": {"loss_beyond": {"128": None, "256": None}, "seeds_refusing": 2},
                           "rope": {"loss_beyond": {"128": {"mean": 2.3, "lo": 2.0, "hi": 2.7},
                                                    "256": {"mean": 2.5, "lo": 2.5, "hi": 2.5}}},
                           "t5": {"loss_beyond": {"128": {"mean": 2.1, "lo": 1.9, "hi": 2.4}, "256": None}},
                           "table": {"loss_beyond": {"128": None, "256": None}, "seeds_refusing": 2}}}


def test_the_plot_draws_each_scheme_s_means_its_intervals_and_each_seed_dotted():
    ax = bake_off_seeds.plot(drawn()).axes[0]
    assert ax.get_legend_handles_labels()[1] == ["rope", "t5"]               # learned skipped, the others drawn
    means = [c.lines[0] for c in ax.containers]
    assert [list(m.get_xdata()) for m in means] == [[128, 256], [128]]      # t5 has no mean at 256
    assert [list(m.get_ydata()) for m in means] == [[2.3, 2.5], [2.1]]
    ends = [[float(v) for seg in c.lines[2][0].get_segments() for v in seg.ravel()] for c in ax.containers]
    assert ends[0] == pytest.approx([128, 2.0, 128, 2.7, 256, 2.5, 256, 2.5])   # (x, lo), (x, hi) at each length
    assert ends[1] == pytest.approx([128, 1.9, 128, 2.4])
    dotted = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert [list(line.get_xdata()) for line in dotted] == [[128, 256]] * 4
    assert [y for line in dotted for y in line.get_ydata()] == pytest.approx(
        [2.2, 2.5, 2.4, 2.5, 2.0, NAN, 2.2, 3.0], nan_ok=True)               # rope at seeds 0, 1, then t5
    colour = [m.get_color() for m in means]
    assert colour[0] != colour[1] and [line.get_color() for line in dotted] == [colour[0]] * 2 + [colour[1]] * 2
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert list(ax.get_xticks()) == [128, 256] and [t.get_text() for t in ax.get_xticklabels()] == ["128", "256"]
    assert ax.get_xlabel() == ("evaluation length\nlearned: not drawn (refused past L at 2 of 2 seeds; an interval needs two seeds with a value)"   # not t5
                               "\ntable: not drawn (refused past L at 2 of 2 seeds; an interval needs two seeds with a value)")
    assert ax.get_ylabel() == "loss past L (nats/byte)"
    assert ax.get_title() == "Trained at L = 64, seeds [0, 1]: mean, 95% t-interval, each seed dotted"


def test_the_plot_gives_each_scheme_a_marker_and_wraps_after_eight():
    names = [f"s{k}" for k in range(9)]
    res = {"seeds": [0, 1], "train_len": 64, "lengths": [64, 128],
           "per_seed": {"0": {n: {"loss_beyond": [NAN, 2.0]} for n in names}},
           "over_seeds": {n: {"loss_beyond": {"128": {"mean": 2.0, "lo": 1.9, "hi": 2.1}}} for n in names}}
    ax = bake_off_seeds.plot(res).axes[0]
    assert ax.get_legend_handles_labels()[1] == names
    assert [c.lines[0].get_marker() for c in ax.containers] == ["o", "s", "^", "v", "D", "P", "*", "X", "o"]


def test_the_report_prints_one_row_a_scheme_with_its_intervals(capsys):
    res = {"seeds": [0, 1], "train_len": 64, "lengths": [64, 128, 256], "steps": 1500,
           "environment": {"seconds": 12.5},
           "over_seeds": {"rope": {"loss_beyond": {"128": {"mean": 2.3, "lo": 2.25, "hi": 2.35, "n": 2}, "256": None},
                                   "rise": {"mean": 0.9, "lo": 0.8, "hi": 1.0, "n": 2},
                                   "context_use_gap": {"mean": 0.5, "lo": -0.125, "hi": 1.125, "n": 2},
                                   "seeds_refusing": 1}}}
    bake_off_seeds.report(res)
    # each column 26 wide, right-aligned: "2.300 [2.250, 2.350]" is 20 characters, "0.500 [-0.125, 1.125]" 21,
    # "   -   " 7
    assert capsys.readouterr().out == "".join(line + "\n" for line in [
        "the bake-off at seeds [0, 1] (L = 64, 1500 steps): mean [95% t-interval] over seeds",
        "scheme" + " " * 9 + " " * 13 + "past L at 128" + " " * 13 + "past L at 256" + " " * 13 + "rise (8L - L)"
        + " " * 11 + "context-use gap" + "  refused",
        "rope" + " " * 11 + " " * 6 + "2.300 [2.250, 2.350]" + " " * 19 + "   -   " + " " * 6 + "0.900 [0.800, 1.000]"
        + " " * 5 + "0.500 [-0.125, 1.125]" + "  1 of 2 seeds",
        "12.5 s of training and evaluation, summed over seeds"])


def test_the_command_saves_the_record_and_its_plot_with_the_command_that_made_it(tmp_path, monkeypatch, capsys):
    trained = []

    def fake_run(quick, seed, progress=True):
        trained.append((quick, seed, progress))
        return bake_off(0.2 * seed)

    monkeypatch.setattr(train_short_test_long, "run", fake_run)
    argv = ["--seeds", "0", "1", "--out", str(tmp_path), "--no-progress"]
    bake_off_seeds.main(argv)
    assert trained == [(False, 0, False), (False, 1, False)]
    assert sorted(os.listdir(tmp_path)) == ["bake_off_seeds.json", "bake_off_seeds.png"]
    record = json.loads((tmp_path / "bake_off_seeds.json").read_text())
    assert record["command"] == "python -m experiments.bake_off_seeds " + " ".join(argv)
    assert record["seeds"] == [0, 1] and record["over_seeds"]["rope"]["rise"]["mean"] == pytest.approx(1.0)
    out = capsys.readouterr().out
    assert "rope" in out and "2 of 2 seeds" in out                             # the learned table, refused at both
    # from the shell (argv None): the command is the process's own arguments; a quick run saves nothing
    monkeypatch.chdir(tmp_path)
    shell = ["--quick", "--no-progress", "--out", str(tmp_path / "quick")]
    monkeypatch.setattr(sys, "argv", ["bake_off_seeds.py", *shell])
    res = bake_off_seeds.main()
    assert res["command"] == "python -m experiments.bake_off_seeds " + " ".join(shell)
    assert trained[2:] == [(True, 0, False), (True, 1, False), (True, 2, False)]    # the default seeds, 0 1 2
    assert not (tmp_path / "quick").exists()
    saved = []
    monkeypatch.setattr(bake_off_seeds.common, "save", lambda name, res, fig, out: saved.append((name, out)))
    bake_off_seeds.main(["--seeds", "3", "4", "--parts", str(tmp_path / "parts")])
    assert trained[-2:] == [(False, 3, True), (False, 4, True)]   # the bars, unless --no-progress
    assert saved == [("bake_off_seeds", RESULTS)]                 # the committed folder, unless --out
    assert sorted(os.listdir(tmp_path / "parts")) == ["bake_off_seeds_seed3.json", "bake_off_seeds_seed4.json"]


def test_the_help_says_what_each_option_does(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")                     # one line per option
    with pytest.raises(SystemExit) as shown:
        bake_off_seeds.main(["--help"])
    assert shown.value.code == 0
    out = capsys.readouterr().out
    for text in ["\nThe full-size bake-off over seeds: ``train_short_test_long`` as it is, at seeds 0, 1 and 2.\n",
                 "  --quick ", " the bake-off's quick size (four schemes, L = 32)\n",
                 "  --seeds SEEDS [SEEDS ...]", " seeds (default 0 1 2)\n",
                 "  --out OUT ", " folder for bake_off_seeds.json (full mode only)\n",
                 "  --no-progress ", " hide progress bars\n", "  --parts PARTS ",
                 " folder that keeps each finished seed (bake_off_seeds_seedN.json), so a stopped run resumes\n"]:
        assert text in out, text


def test_the_plot_of_one_seed_draws_nothing_and_says_why_without_calling_it_a_refusal():
    runs = {"0": bake_off_seeds.per_seed(bake_off())}
    res = {"seeds": [0], "train_len": 64, "lengths": LENGTHS, "per_seed": runs,
           "over_seeds": bake_off_seeds.over_seeds(runs, LENGTHS)}
    ax = bake_off_seeds.plot(res).axes[0]
    assert ax.containers == [] and ax.get_legend() is None
    assert ax.get_xlabel() == ("evaluation length\nrope: not drawn (refused past L at 0 of 1 seeds; an interval needs two seeds with a value)"
                               "\nlearned: not drawn (refused past L at 1 of 1 seeds; an interval needs two seeds with a value)")
