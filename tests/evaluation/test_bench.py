"""The benchmark: its FLOP count by hand, a tiny run's report, and clear errors for bad options."""
import pytest

from mini_transformer.evaluation import bench


def test_train_flops_of_the_workbook_config_by_hand():
    # per layer 12 d^2 weights (qkv 3 d^2, out d^2, MLP 8 d^2), 2 layers, d = 64: 98,304; head 64 x 64: 4,096.
    # 6 FLOPs per weight per token, plus attention 12 L T d = 12 * 2 * 64 * 64 = 98,304 per token; 1,024 tokens.
    assert bench.train_flops(bench.CONFIGS["workbook"]) == 1024 * (6 * (98_304 + 4_096) + 98_304)


def test_a_one_round_run_reports_every_field():
    out = bench.run(["workbook"], rounds=1, steps_per_round=1, use_torch=False)
    row = out["configs"]["workbook"]
    assert out["matmul_ceiling_flops"] > 0 and out["torch"] is None
    assert set(out["tuning"]) == {"threads", "freed_memory_kept", "openblas_thread_timeout"}
    assert row["steps_per_round"] == 1 and row["ms_per_step"] > 0 and row["peak_bytes"] > 0
    assert row["reference_ms_per_step"] > 0 and row["reference_peak_bytes"] > 0
    assert row["reference_slowdown"] == pytest.approx(row["reference_ms_per_step"] / row["ms_per_step"])
    assert row["tokens_per_s"] == pytest.approx(16 * 64 / (row["ms_per_step"] / 1e3))
    assert "speed_ratio_vs_torch" not in row


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
