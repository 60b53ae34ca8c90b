"""train_short_test_long.context_use: the loss past L with the whole prefix against a window of the last L tokens."""
import math

import numpy as np
import pytest

from mini_transformer.evaluation.experiments.train_short_test_long import context_use
from mini_transformer.model import GPTConfig, TinyGPT
from exercises.adapters import from_functions

STREAM = np.random.default_rng(0).integers(0, 16, 400)
L = 8


def model(positional, **kw):
    return TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=L, positional=positional,
                             seed=3, **kw)).to_dtype("float64")


def test_a_model_that_sees_only_the_current_token_scores_the_same_with_a_window():
    # slopes of 1000 nats per token: every key but the query itself gets weight exp(-1000) = 0 exactly
    m = model("alibi")
    m.positional = from_functions.alibi(lambda n_heads: np.full(n_heads, 1000.0))
    u = context_use(m, STREAM, L, 4 * L, n_windows=4, seed=1)
    assert u["positions"] == list(range(L, 4 * L, 1))            # stride L // 8 = 1
    np.testing.assert_allclose(u["full"], u["window"], rtol=0, atol=1e-12)


def test_a_model_that_reads_its_whole_prefix_scores_differently_with_a_window():
    u = context_use(model("none"), STREAM, L, 4 * L, n_windows=4, stride=3, seed=1)
    assert u["positions"] == list(range(L, 4 * L, 3))
    assert abs(u["full_mean"] - u["window_mean"]) > 1e-3        # no position: it averages over all it sees
    assert math.isclose(u["full_mean"], float(np.mean(u["full"])), rel_tol=1e-12)


def test_a_learned_table_refuses_the_whole_prefix_but_runs_every_window():
    u = context_use(model("learned"), STREAM, L, 2 * L, n_windows=2, seed=0)
    assert all(math.isnan(v) for v in u["full"]) and "max_len" in u["reason"]
    assert all(math.isfinite(v) for v in u["window"])


def test_lengths_that_say_nothing_are_refused():
    with pytest.raises(ValueError, match="must exceed train_len"):
        context_use(model("none"), STREAM, L, L)


def test_the_report_lists_only_the_schemes_that_measured_context_use(capsys):
    # the committed result holds context_use for some schemes only (re-trained alone); the report must not stop
    from mini_transformer.evaluation.experiments.train_short_test_long import report
    row = {"final_train_loss": 1.0, "loss": [1.0, 2.0], "loss_beyond": [float("nan"), 2.5], "reasons": [None, None]}
    res = {"train_len": 8, "lengths": [8, 16], "multiples": [1, 2], "context_use_length": 16,
           "results": {"alibi": {**row, "context_use": {"full_mean": 1.25, "window_mean": 1.5}}, "rope": row},
           "environment": {"seeds": [0], "d_model": 16, "n_layers": 2, "n_heads": 2, "batch_size": 4,
                           "train_len": 8, "steps": 1, "eval_windows": 2, "seconds": 0.1, "cores": 2,
                           "backend": "numpy"}}
    report(res)
    tail = capsys.readouterr().out.split("loss with the whole prefix")[1]
    assert "alibi" in tail and "1.250" in tail and "1.500" in tail and "rope" not in tail
