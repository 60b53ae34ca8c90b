"""The benchmark: its FLOP count by hand, a tiny run's report, the --check decision on hand-made results,
and clear errors for bad options. No test runs the *long* configuration (T 512) for real."""
import json

import pytest

from mini_transformer.evaluation import bench


def test_train_flops_of_the_workbook_config_by_hand():
    # per layer 12 d^2 weights (qkv 3 d^2, out d^2, MLP 8 d^2), 2 layers, d = 64: 98,304; head 64 x 64: 4,096.
    # 6 FLOPs per weight per token, plus attention 12 L T d = 12 * 2 * 64 * 64 = 98,304 per token; 1,024 tokens.
    assert bench.train_flops(bench.CONFIGS["workbook"]) == 1024 * (6 * (98_304 + 4_096) + 98_304)


@pytest.mark.slow
def test_a_one_round_run_reports_every_field():
    out = bench.run(["workbook"], rounds=1, steps_per_round=1, use_torch=False)
    row = out["configs"]["workbook"]
    assert out["matmul_ceiling_flops"] > 0 and out["torch"] is None
    assert set(out["tuning"]) == {"threads", "freed_memory_kept", "governor", "blas_threads",
                                  "openblas_thread_timeout"}
    assert row["steps_per_round"] == 1 and row["ms_per_step"] > 0 and row["peak_bytes"] > 0
    assert row["reference_ms_per_step"] > 0 and row["reference_peak_bytes"] > 0
    assert row["reference_slowdown"] == pytest.approx(row["reference_ms_per_step"] / row["ms_per_step"])
    assert row["tokens_per_s"] == pytest.approx(16 * 64 / (row["ms_per_step"] / 1e3))
    assert "speed_ratio_vs_torch" not in row and "torch_peak_bytes" not in row
    assert row["peak_memory_measure"] == {"fast": "tracemalloc", "reference": "tracemalloc"}


def test_long_is_the_issue_sizes_and_not_run_by_default():
    # issue 23: vocab 64, d_model 128, 2 layers, 4 heads, T 512, batch 4 (RoPE and AdamW as the others)
    assert bench.CONFIGS["long"] == dict(vocab_size=64, d_model=128, n_layers=2, n_heads=4, T=512, batch=4)
    assert tuple(bench.DEFAULT_CONFIGS) == ("workbook", "larger")
    assert bench.run.__defaults__[0] == ("workbook", "larger")


def test_torch_peak_memory_sees_a_step_that_allocates_a_known_buffer():
    torch = pytest.importorskip("torch")
    # one float32 tensor of 250,000 elements, 1,000,000 bytes, alive inside the step and freed at its end
    assert bench.torch_peak_memory(lambda: torch.ones(250_000, dtype=torch.float32).sum()) >= 1_000_000


def _results(**ratios):
    """A hand-made ``run`` result: reference/fast per configuration, ms figures to match, no PyTorch."""
    return {"backend": "numpy", "threads": 2, "matmul_ceiling_flops": 1e11, "torch": None, "settle_seconds": 0.1,
            "tuning": {"threads": 2, "freed_memory_kept": True, "openblas_thread_timeout": 22},
            "configs": {name: {"ms_per_step": 10.0, "tokens_per_s": 1e5, "achieved_flops": 1e10,
                               "fraction_of_matmul_ceiling": 0.1, "peak_bytes": 2**20,
                               "reference_ms_per_step": 10.0 * r, "reference_slowdown": r,
                               "reference_peak_bytes": 2**21,
                               "peak_memory_measure": {"fast": "tracemalloc", "reference": "tracemalloc"}}
                        for name, r in ratios.items()}}


def test_check_passes_when_the_fast_set_is_faster_everywhere():
    assert bench.slower_than_reference(_results(workbook=1.3, larger=1.05, long=2.0)) == []


def test_check_names_the_one_config_where_the_fast_set_is_slower():
    assert bench.slower_than_reference(_results(workbook=1.3, larger=0.97, long=2.0)) == ["larger"]


def test_check_a_tie_at_exactly_one_passes():
    # "fast at least the reference's speed": reference/fast == 1.0 is a tie, and a tie passes
    assert bench.slower_than_reference(_results(workbook=1.0)) == []
    assert bench.slower_than_reference(_results(workbook=0.999999)) == ["workbook"]


@pytest.fixture
def fake_run(monkeypatch):
    """Replace the timed run and the process tuning by a hand-made result, so main's own logic is what runs."""
    state = {}

    def fake(names, rounds, steps, use_torch):
        state["names"], state["rounds"] = list(names), rounds
        return state["result"]
    monkeypatch.setattr(bench, "run", fake)
    monkeypatch.setattr(bench.kernels, "tune", lambda threads=None, adaptive=True: None)
    return state


@pytest.mark.parametrize("as_json", [False, True])
def test_check_exits_one_and_names_the_slower_config(as_json, fake_run, capsys):
    fake_run["result"] = _results(workbook=1.2, larger=0.9)
    assert bench.main(["--check", "--no-torch"] + (["--json"] if as_json else [])) == 1
    out, err = capsys.readouterr()
    assert "on larger the fast set was slower than the reference (reference/fast 0.90x" in err
    assert "workbook" not in err
    if as_json:   # stdout stays machine-readable: the verdict goes to stderr
        assert json.loads(out)["configs"]["larger"]["reference_slowdown"] == 0.9
    else:
        assert "larger" in out and "0.90x" in out


def test_check_exits_zero_when_every_config_passes_and_without_check_always(fake_run, capsys):
    fake_run["result"] = _results(workbook=1.2, larger=1.0)
    assert bench.main(["--check", "--no-torch"]) == 0
    assert "check passed" in capsys.readouterr().err
    fake_run["result"] = _results(workbook=0.5)
    assert bench.main(["--no-torch"]) == 0        # without --check a slower fast set is reported, not failed
    assert "check" not in capsys.readouterr().err


def test_the_default_configs_and_long_by_name_reach_run(fake_run):
    fake_run["result"] = _results(workbook=1.2)
    bench.main(["--no-torch"])
    assert fake_run["names"] == ["workbook", "larger"] and fake_run["rounds"] == 11
    bench.main(["--no-torch", "--rounds", "3"])
    assert fake_run["rounds"] == 3
    bench.main(["--configs", "workbook", "larger", "long", "--json", "--no-torch"])
    assert fake_run["names"] == ["workbook", "larger", "long"]


@pytest.mark.parametrize("argv", [["--check=yes"], ["--configs", "huge"]])
def test_check_takes_no_value_and_unknown_configs_are_refused(argv, fake_run, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv + ["--no-torch"])
    assert e.value.code == 2 and "names" not in fake_run   # refused before anything runs
    err = capsys.readouterr().err
    assert "ignored explicit argument 'yes'" in err or "invalid choice: 'huge'" in err


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--steps", "0"]])
def test_bad_round_counts_are_refused_by_name(argv, capsys):
    with pytest.raises(SystemExit):
        bench.main(argv + ["--no-torch"])
    assert "--rounds and --steps must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("value,n", [("24", 24), (None, 28), ("40", 30), ("1", 4), ("spin", 28)])
def test_settle_waits_out_openblas_spin_of_two_to_the_n_cycles_at_one_ghz(value, n, monkeypatch):
    # OpenBLAS spins 2^n cycles, n = OPENBLAS_THREAD_TIMEOUT clamped to [4, 30], 28 when unset or unreadable
    if value is None:
        monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", value)
    assert bench.settle_seconds() == pytest.approx(2 ** n / 1e9 + 0.02)


def _load_result(*ratios):
    rounds = [{"ratio": r} for r in ratios]
    return {"configs": {"workbook": {"rounds": rounds, "max_ratio": max(ratios)}}}


def test_under_load_runs_four_rounds_unless_told_and_checks_its_own_limit(monkeypatch, capsys):
    seen = {}

    def fake(names, steps, rounds):
        seen.update(names=list(names), steps=steps, rounds=rounds)
        return _load_result(1.0, 1.3)
    monkeypatch.setattr(bench, "under_load", fake)
    assert bench.main(["--under-load", "--configs", "workbook", "--check", "--json"]) == 1
    assert seen == {"names": ["workbook"], "steps": 150, "rounds": 4}
    assert "1.30x the one-thread time" in capsys.readouterr().err
    bench.main(["--under-load", "--rounds", "2", "--json"])
    assert seen["rounds"] == 2


def test_under_load_check_fails_above_one_point_two_five_in_any_round(capsys):
    assert bench.check_under_load(_load_result(1.03, 1.12, 1.25, 1.10)) == 0     # 1.25 itself is within
    assert bench.check_under_load(_load_result(1.03, 1.26, 1.05, 1.10)) == 1
    assert "workbook" in capsys.readouterr().err
