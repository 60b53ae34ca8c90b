r"""Long-context evaluation, checked on models whose answers are known by hand.

The models are built so the right number can be written down:

- a zero output head makes the logits 0, so every next-token loss is exactly ln V;
- a zero final-norm gain with bias e_0 and a head row c e_j make the logits c e_j
  for every input, so the loss on target j is ln(e^c + V - 1) - c;
- zero query and key weights make every score 0, so causal attention is uniform
  over the prefix: query i puts 1/(i+1) on position 0;
- a hand-written "oracle" reads the passkey exactly when it lies inside a window, and a
  stand-in that always reads the key scores 1 on any task with the passkey signature;
- ``HalvingModel`` (``hand_built.py``) has loss (p + 1) ln 2 at position p, so every
  bucket, slice and boundary shows in the expected numbers.
"""
import contextlib
import functools
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.evaluation import measures as evaluate
from mini_transformer.engine.autograd import Tensor
from mini_transformer.model.corpus import TextCorpus, stdlib_corpus
from mini_transformer.model.tasks import DIGIT_0, KEY_START, QUERY, passkey_task, text_passkey_task
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.engine.nn import Module

from hand_built import LN2, HalvingModel, counting_text, training_flags

V = 16


def config(positional="none", **kw):
    cfg = dict(vocab_size=V, d_model=16, n_layers=2, n_heads=2, max_len=16, positional=positional)
    cfg.update(kw)
    return GPTConfig(**cfg)


def uniform_output(model):
    """Zero head weight: logits are exactly 0, every token has probability 1/V."""
    model.head.weight.data[...] = 0.0
    return model


def fixed_token(model, token, c):
    r"""Logits c e_token at every position, whatever the input.

    norm_f's gain is 0, so it outputs its bias e_0; the head maps e_0 to c e_token.
    """
    model.norm_f.weight.data[...] = 0.0
    model.norm_f.bias.data[...] = 0.0
    model.norm_f.bias.data[0] = 1.0
    model.head.weight.data[...] = 0.0
    model.head.weight.data[0, token] = c
    return model


def zero_query_key(model):
    """Queries and keys are 0, so every score is 0 (plus the scheme's bias, if any)."""
    d = model.cfg.d_model
    for block in model.blocks:
        block.attn.W_qkv.weight.data[:, :2 * d] = 0.0     # columns [0, d) make q, [d, 2d) make k
        block.attn.W_qkv.bias.data[:2 * d] = 0.0
    return model


def harmonic(n):
    return sum(1.0 / i for i in range(1, n + 1))


def random_tokens(n, seed=0):
    return np.random.default_rng(seed).integers(0, V, n)


# ---------------------------------------------------------------------------
# Loss by position, extrapolation, retention
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("positional", ["none", "learned", "rope", "alibi"])
def test_uniform_model_has_loss_ln_V_at_every_position(positional):
    model = uniform_output(TinyGPT(config(positional)))
    result = evaluate.loss_by_position(model, random_tokens(400), T=10, n_batches=2, bucket=4, batch_size=3)
    assert result.starts.tolist() == [0, 4, 8]                 # the last bucket holds positions 8 and 9
    np.testing.assert_allclose(result.loss, math.log(V), rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.per_position, math.log(V), rtol=0, atol=1e-12)
    assert result.per_position.shape == (10,) and result.n_sequences == 6


@pytest.mark.parametrize("target_is_favoured", [True, False])
def test_fixed_token_model_loss_is_known(target_is_favoured):
    j, c = 7, 3.0
    model = fixed_token(TinyGPT(config("rope")), j, c)
    text = np.full(100, j if target_is_favoured else 2)
    expected = math.log(math.exp(c) + V - 1) - (c if target_is_favoured else 0.0)
    result = evaluate.loss_by_position(model, text, T=12, n_batches=1, bucket=5)
    np.testing.assert_allclose(result.loss, expected, rtol=1e-13)


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("bucket, starts, means", [
    # loss (t + 1) ln 2 at t = 0..9: a bucket [a, b) has mean ln 2 (a + b + 1) / 2
    (4, [0, 4, 8], [2.5, 6.5, 9.5]),             # (1+2+3+4)/4, (5+6+7+8)/4, and the short last bucket (9+10)/2
    (3, [0, 3, 6, 9], [2.0, 5.0, 8.0, 10.0]),    # the last bucket holds position 9 alone
    (10, [0], [5.5]),
    (1, list(range(10)), [t + 1.0 for t in range(10)]),
])
def test_loss_by_position_on_a_model_whose_loss_grows_with_position(bucket, starts, means):
    result = evaluate.loss_by_position(HalvingModel(V), counting_text(300, V), T=10, n_batches=2, bucket=bucket,
                                       batch_size=3)
    assert result.starts.tolist() == starts
    # float64 logits of size ~(t + 1) ln 2 and one log-sum-exp: a few ulps. Were x and y cut from the windows
    # any other way than one token apart, the target would not be x + 1 and every loss would be far off
    np.testing.assert_allclose(result.per_position, [(t + 1) * LN2 for t in range(10)], rtol=1e-13)
    np.testing.assert_allclose(result.loss, np.array(means) * LN2, rtol=1e-13)


def test_extrapolation_curve_splits_at_the_training_length():
    # train_len 8; L = floor(m 8 + 1/2): 0.5 -> 4, 1 -> 8, 1.0625 -> 8.5 rounds up to 9, 1.5 -> 12, 2 -> 16 (refused)
    model = HalvingModel(V, limit=12)                          # positions 0..11 only, like a learned table
    curve = evaluate.extrapolation_curve(model, counting_text(300, V), train_len=8,
                                         multiples=(0.5, 1, 1.0625, 1.5, 2), n_batches=1, batch_size=2)
    assert curve.lengths.tolist() == [4, 8, 9, 12, 16]
    # all positions t < L: mean of (t + 1) ln 2 is (L + 1)/2 ln 2
    np.testing.assert_allclose(curve.loss[:4], np.array([2.5, 4.5, 5.0, 6.5]) * LN2, rtol=1e-13)
    # positions t >= 8 only: none at L = 4 or 8; at 9 just t = 8 (loss 9 ln 2); at 12, t = 8..11 (mean of 9..12)
    assert np.isnan(curve.loss_beyond[:2]).all()
    np.testing.assert_allclose(curve.loss_beyond[2:4], np.array([9.0, 10.5]) * LN2, rtol=1e-13)
    assert np.isnan(curve.loss[4]) and np.isnan(curve.loss_beyond[4])
    assert curve.reasons[:4] == [None] * 4 and "position 15 was asked for" in curve.reasons[4]


def test_retention_measures_both_models_at_the_training_length():
    # before: (t + 1) ln 2, after: (t + 2) ln 2, over t = 0..5: means 3.5 ln 2 and 4.5 ln 2, one ln 2 apart
    result = evaluate.retention(HalvingModel(V), HalvingModel(V, shift=1), counting_text(100, V), train_len=6,
                                n_batches=2, batch_size=2)
    assert result.train_len == 6
    assert result.loss_before == pytest.approx(3.5 * LN2, rel=1e-13)
    assert result.loss_after == pytest.approx(4.5 * LN2, rel=1e-13)
    assert result.difference == pytest.approx(LN2, rel=1e-12)


def test_loss_by_position_reads_a_text_corpus(tmp_path):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}(x):\n    return x * {i}\n" * 20)
    corpus = TextCorpus(tmp_path, val_fraction=0.5)
    model = uniform_output(TinyGPT(config(vocab_size=256, max_len=32)))
    result = evaluate.loss_by_position(model, corpus, T=32, n_batches=1, bucket=8)
    np.testing.assert_allclose(result.loss, math.log(256), atol=1e-12)


def test_extrapolation_records_nan_and_reason_past_a_learned_table():
    model = uniform_output(TinyGPT(config("learned", max_len=16)))
    curve = evaluate.extrapolation_curve(model, random_tokens(300), train_len=16, multiples=(0.5, 1, 2),
                                         n_batches=1, batch_size=2)
    assert curve.lengths.tolist() == [8, 16, 32]
    np.testing.assert_allclose(curve.loss[:2], math.log(V), atol=1e-12)
    assert math.isnan(curve.loss[2]) and curve.reasons[:2] == [None, None]
    assert "max_len=16" in curve.reasons[2]
    assert np.isnan(curve.loss_beyond).all()                  # 8 and 16 have no position past 16; 32 refused


def test_extrapolation_of_an_unbounded_scheme_has_every_length():
    model = uniform_output(TinyGPT(config("rope", max_len=16)))
    curve = evaluate.extrapolation_curve(model, random_tokens(300), train_len=16, multiples=(1, 1.5, 4),
                                         n_batches=1, batch_size=2)
    assert curve.lengths.tolist() == [16, 24, 64] and curve.reasons == [None] * 3
    np.testing.assert_allclose(curve.loss, math.log(V), atol=1e-12)
    np.testing.assert_allclose(curve.loss_beyond[1:], math.log(V), atol=1e-12)


def test_retention_compares_the_same_windows():
    j, c = 4, 2.0
    before = uniform_output(TinyGPT(config("rope")))
    after = fixed_token(TinyGPT(config("rope")), j, c)
    result = evaluate.retention(before, after, np.full(50, j), train_len=16, n_batches=1, batch_size=2)
    after_loss = math.log(math.exp(c) + V - 1) - c
    assert result.loss_before == pytest.approx(math.log(V), abs=1e-12)
    assert result.loss_after == pytest.approx(after_loss, rel=1e-13)
    assert result.difference == pytest.approx(after_loss - math.log(V), rel=1e-13)


# ---------------------------------------------------------------------------
# Passkey grid and effective context length
# ---------------------------------------------------------------------------

class WindowOracle(Module):
    """Reads the passkey perfectly when KEY_START lies within the last ``window`` positions, else says PAD (0).

    It has no ``causal`` flag: passkey_grid takes a model without one to be causal.
    """

    def __init__(self, window):
        self.cfg, self.window = GPTConfig(vocab_size=V), window

    def new_cache(self):
        return []                                              # every chunk of ids seen so far

    def forward(self, idx, cache=None):
        cache.append(backend.to_numpy(idx))
        seen = np.concatenate(cache, axis=1)                   # (B, t)
        t = seen.shape[1]
        logits = np.zeros((seen.shape[0], idx.shape[1], V))
        for b, row in enumerate(seen):
            start, query = np.flatnonzero(row == KEY_START)[0], np.flatnonzero(row == QUERY)[0]
            if t - 1 - start < self.window:                    # the current position t-1 still sees the key
                logits[b, -1, row[start + 1 + (t - 1 - query)]] = 1.0   # digit number t-1-query of the key
        return Tensor(backend.asarray(logits))


@pytest.mark.usefixtures("each_backend")
def test_passkey_grid_matches_a_windowed_oracle():
    W, n = 15, 2
    lengths, depths = [8, 12, 16, 24], [0.0, 0.5, 1.0]
    grid = evaluate.passkey_grid(WindowOracle(W), lengths, depths, n_trials=3, n_digits=n)
    for i, L in enumerate(lengths):
        for j, d in enumerate(depths):
            start = passkey_task(3, L, d, V, 0, n).key_pos - 1
            H = L - n                                          # digit i is predicted at position H + i
            seen = [H + i - start < W for i in range(n)]
            assert grid.accuracy[i, j] == float(all(seen)), (L, d)
            assert grid.digit_accuracy[i, j] == sum(seen) / n, (L, d)
    assert grid.digit_accuracy[2, 0] == 0.5                   # L=16, key at 0: digit 1 at 14 sees it, digit 2 at 15 not
    # depth 0 (key at 0) is read only while the last position L - 1 < 15; depth 1 is always 5 back
    assert effective_length(grid) == 12


def effective_length(grid, threshold=None):
    return evaluate.effective_context_length(grid, threshold)


@pytest.mark.usefixtures("each_backend")
def test_a_model_that_never_says_a_digit_scores_zero():
    model = uniform_output(TinyGPT(config("rope")))           # all logits tie, argmax is token 0 (PAD)
    grid = evaluate.passkey_grid(model, [12, 20], depths=(0, 1), n_trials=4, n_digits=3)
    assert (grid.accuracy == 0).all() and (grid.digit_accuracy == 0).all()
    assert effective_length(grid) == 0


def test_a_model_that_always_says_zero_is_right_where_the_key_is_zero():
    n, trials = 1, 40
    model = fixed_token(TinyGPT(config("rope", max_len=16)), DIGIT_0, 5.0)
    grid = evaluate.passkey_grid(model, [8, 16, 32], depths=(0.0, 1.0), n_trials=trials, n_digits=n, seed=3)
    key = backend.to_numpy(passkey_task(trials, 8, 0.0, V, 3, n).y[:, -1])
    expected = np.mean(key == DIGIT_0)                        # the same seed draws the same keys in every cell
    assert 0 < expected < 1
    np.testing.assert_allclose(grid.accuracy, expected, rtol=0, atol=1e-12)


def test_passkey_grid_records_a_refused_length():
    model = uniform_output(TinyGPT(config("learned", max_len=16)))
    grid = evaluate.passkey_grid(model, [24, 12], depths=(0.5,), n_trials=2, n_digits=2)
    assert grid.lengths.tolist() == [12, 24]                  # sorted
    assert grid.accuracy[0, 0] == 0 and math.isnan(grid.accuracy[1, 0])
    assert "max_len=16" in grid.reasons[24]


class KeyReader:
    """A stand-in model that always reads the key: at the position of answer digit i it says digit i."""

    causal = True
    cfg = GPTConfig(vocab_size=256)

    def new_cache(self):
        return []

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    training = False

    def __call__(self, idx, cache=None):
        cache.append(backend.to_numpy(idx))
        seen = np.concatenate(cache, axis=1)
        logits = np.zeros((seen.shape[0], idx.shape[1], 256))
        for b, row in enumerate(seen):
            start, query = np.flatnonzero(row == KEY_START)[0], np.flatnonzero(row == QUERY)[0]
            logits[b, -1, row[start + 1 + (len(row) - 1 - query)]] = 1.0
        return Tensor(backend.asarray(logits))


def test_passkey_grid_runs_any_task_with_the_passkey_signature():
    text = stdlib_corpus(max_bytes=300_000).val
    task = functools.partial(text_passkey_task, text=text)
    grid = evaluate.passkey_grid(KeyReader(), [16, 32], depths=(0.0, 1.0), n_trials=3, n_digits=2, task=task)
    assert (grid.accuracy == 1.0).all()


@pytest.mark.parametrize("rows, threshold, expected", [
    ([[1.0, 1.0], [1.0, 0.9], [0.4, 1.0], [1.0, 1.0]], 0.5, 16),   # 64 passes, but 32 broke first
    ([[1.0, 1.0], [1.0, 0.9], [0.4, 1.0], [1.0, 1.0]], 0.95, 8),
    ([[1.0, 1.0], [1.0, 0.9], [0.4, 1.0], [1.0, 1.0]], 0.3, 64),
    ([[0.2, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], 0.5, 0),    # the shortest length already fails
    ([[0.5, 0.5], [0.6, 0.7], [np.nan, np.nan], [1.0, 1.0]], 0.5, 16),  # at the threshold passes; NaN fails
])
def test_effective_context_length_on_a_hand_written_grid(rows, threshold, expected):
    grid = evaluate.PasskeyGrid(lengths=[8, 16, 32, 64], depths=[0.0, 1.0], accuracy=rows, threshold=threshold)
    assert effective_length(grid) == expected


# ---------------------------------------------------------------------------
# Attention mass
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("k", [1, 3])
def test_uniform_causal_attention_puts_harmonic_mass_on_the_first_tokens(k):
    T = 10
    model = zero_query_key(TinyGPT(config("none")).to_dtype("float64"))
    result = evaluate.attention_mass(model, random_tokens(2 * T).reshape(2, T), first_k=k)
    # query i spreads 1 over i+1 keys: 1/(i+1) on position 0, min(k, i+1)/(i+1) on the first k
    first_k = (k + k * (harmonic(T) - harmonic(k))) / T
    np.testing.assert_allclose(result.position0, np.full((2, 2), harmonic(T) / T), rtol=1e-13)
    np.testing.assert_allclose(result.first_k, np.full((2, 2), first_k), rtol=1e-13)


def test_uniform_bidirectional_attention_puts_1_over_T_on_each_token():
    T, k = 8, 3
    model = zero_query_key(TinyEncoder(config("none")).to_dtype("float64"))
    result = evaluate.attention_mass(model, random_tokens(T)[None], first_k=k)
    np.testing.assert_allclose(result.position0, 1 / T, rtol=1e-13)
    np.testing.assert_allclose(result.first_k, k / T, rtol=1e-13)


def test_alibi_heads_decay_at_their_own_slope():
    T = 12
    model = zero_query_key(TinyGPT(config("alibi")).to_dtype("float64"))
    result = evaluate.attention_mass(model, random_tokens(T)[None])
    for h, m in enumerate([1 / 16, 1 / 256]):                  # 2^{-8h/H} for H = 2
        # query i weights key j by e^{-m (i - j)}: position 0 gets e^{-m i} / sum_{s<=i} e^{-m s}
        expected = np.mean([math.exp(-m * i) / sum(math.exp(-m * s) for s in range(i + 1)) for i in range(T)])
        np.testing.assert_allclose(result.position0[:, h], expected, rtol=1e-13)


def test_attention_mass_restores_the_recording_flags():
    model = TinyGPT(config("rope"))
    first, second = model.blocks[0].attn, model.blocks[1].attn
    first.record_attention, first.last_attention = True, "kept"
    evaluate.attention_mass(model, random_tokens(6)[None])
    assert (first.record_attention, first.last_attention) == (True, "kept")
    assert (second.record_attention, second.last_attention) == (False, None)


# ---------------------------------------------------------------------------
# Decode costs and the permutation probe
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("dtype, itemsize", [("float32", 4), ("float64", 8)])
@pytest.mark.parametrize("B", [1, 3])
def test_cache_bytes_are_linear_in_length(dtype, itemsize, B):
    model = TinyGPT(config("rope", n_layers=3, n_heads=4)).to_dtype(dtype)
    lengths = [1, 5, 20]
    costs = evaluate.decode_costs(model, lengths, batch_size=B, n_decode=2)
    L, H, d_head = 3, 4, 4
    assert costs.cache_bytes.tolist() == [2 * L * B * H * T * d_head * itemsize for T in lengths]
    assert (costs.prefill_s > 0).all() and (costs.decode_s_per_token > 0).all()


def test_decode_costs_record_a_refused_length():
    model = TinyGPT(config("learned", max_len=16))
    costs = evaluate.decode_costs(model, [8, 15], n_decode=2)  # 15 + 2 decoded tokens need position 16
    assert costs.reasons[0] is None and "max_len=16" in costs.reasons[1]
    assert np.isnan([costs.prefill_s[1], costs.decode_s_per_token[1], costs.cache_bytes[1]]).all()


@pytest.mark.parametrize("model_class, positional, equivariant", [
    (TinyEncoder, "none", True),
    (TinyEncoder, "sinusoidal", False),
    (TinyGPT, "none", False),                                   # the causal mask alone breaks the symmetry
])
def test_permutation_probe(model_class, positional, equivariant):
    model = model_class(config(positional)).to_dtype("float64")
    result = evaluate.permutation_sensitivity(model, random_tokens(24).reshape(2, 12), seed=1)
    assert sorted(result.permutation.tolist()) == list(range(12))
    assert (result.permutation != np.arange(12)).any()
    if equivariant:
        assert result.max_abs <= 1e-12
    else:
        assert result.max_abs > 1e-6


# ---------------------------------------------------------------------------
# The model's mode: eval for the measurement, the caller's own afterwards
# ---------------------------------------------------------------------------

#: every measure that runs a model, on a small call
MEASURES = {
    "loss_by_position": lambda m: evaluate.loss_by_position(m, random_tokens(100), 8, n_batches=1, batch_size=2),
    "extrapolation_curve": lambda m: evaluate.extrapolation_curve(m, random_tokens(100), 8, multiples=(1, 2),
                                                                  n_batches=1, batch_size=2),
    "passkey_grid": lambda m: evaluate.passkey_grid(m, [8], depths=(0.5,), n_trials=1, n_digits=2),
    "attention_mass": lambda m: evaluate.attention_mass(m, random_tokens(6)[None]),
    "decode_costs": lambda m: evaluate.decode_costs(m, [4], n_decode=2),
    "permutation_sensitivity": lambda m: evaluate.permutation_sensitivity(m, random_tokens(6)[None]),
}


def spied(model, fail=False):
    """``model`` with its forward recording the training flag of each call in ``model.seen``; with ``fail``, the
    first call raises RuntimeError (no measure catches that: it reaches the caller)."""
    forward, model.seen = model.forward, []

    def spy(*args, **kwargs):
        model.seen.append(model.training)
        if fail:
            raise RuntimeError("the measurement stops here")
        return forward(*args, **kwargs)
    model.forward = spy
    return model


@pytest.mark.parametrize("training", [True, False], ids=["in training mode", "in eval mode"])
@pytest.mark.parametrize("measure", list(MEASURES))
def test_a_measure_runs_in_eval_mode_and_hands_the_model_back_in_its_own(measure, training):
    model = spied(TinyGPT(config("rope")).train(training))
    MEASURES[measure](model)
    assert model.seen and not any(model.seen)                       # every call ran in eval mode
    assert training_flags(model) == {training}                     # every block, layer and scheme too


@pytest.mark.parametrize("training", [True, False], ids=["in training mode", "in eval mode"])
@pytest.mark.parametrize("measure", list(MEASURES))
def test_a_measure_hands_the_model_back_in_its_own_mode_when_it_raises(measure, training):
    model = spied(TinyGPT(config("rope")).train(training), fail=True)
    with pytest.raises(RuntimeError, match="the measurement stops here"):
        MEASURES[measure](model)
    assert model.seen == [False] and training_flags(model) == {training}


@pytest.mark.parametrize("fail", [False, True], ids=["returns", "raises"])
def test_retention_hands_each_model_back_in_its_own_mode(fail):
    before = spied(TinyGPT(config("rope")).train(True), fail=fail)
    after = spied(TinyGPT(config("rope")).train(False), fail=fail)
    with pytest.raises(RuntimeError) if fail else contextlib.nullcontext():
        evaluate.retention(before, after, random_tokens(100), 8, n_batches=1, batch_size=2)
    assert not any(before.seen + after.seen)
    assert training_flags(before) == {True} and training_flags(after) == {False}


# ---------------------------------------------------------------------------
# Bad input and plots
# ---------------------------------------------------------------------------

def _gpt():
    return TinyGPT(config("rope"))


@pytest.mark.parametrize("call, message", [
    (lambda: evaluate.passkey_grid(_gpt(), [16], depths=(0.5, 1.5)), r"depths must lie in \[0, 1\].*1\.5"),
    (lambda: evaluate.passkey_grid(_gpt(), [16], depths=(-0.1,)), r"depths.*-0\.1"),
    (lambda: evaluate.passkey_grid(_gpt(), [], depths=(0.5,)), r"lengths.*empty"),
    (lambda: evaluate.passkey_grid(_gpt(), [16, 0]), r"lengths.*got 0"),
    (lambda: evaluate.decode_costs(_gpt(), [-4]), r"lengths.*got -4"),
    (lambda: evaluate.decode_costs(_gpt(), []), r"lengths.*empty"),
    (lambda: evaluate.loss_by_position(_gpt(), random_tokens(50), T=0), r"T must be an integer >= 1, got 0"),
    (lambda: evaluate.loss_by_position(_gpt(), random_tokens(50), T=-3), r"T must.*got -3"),
    (lambda: evaluate.loss_by_position(_gpt(), random_tokens(50), T=60), r"T=60.*holds 50"),
    (lambda: evaluate.extrapolation_curve(_gpt(), random_tokens(50), 0), r"train_len.*got 0"),
    (lambda: evaluate.extrapolation_curve(_gpt(), random_tokens(50), 8, multiples=(1, 0)), r"multiples.*got 0"),
    (lambda: evaluate.extrapolation_curve(_gpt(), random_tokens(50), 8, multiples=()), r"multiples.*empty"),
    (lambda: evaluate.attention_mass(_gpt(), random_tokens(4)[None], first_k=5), r"first_k=5.*T=4"),
    (lambda: evaluate.permutation_sensitivity(_gpt(), random_tokens(1)[None]), r"T >= 2"),
    (lambda: evaluate.PasskeyGrid([8, 16], [0.5], [[1.0]]), r"accuracy has shape \(1, 1\).*\(2, 1\)"),
    (lambda: evaluate.PasskeyGrid([16, 8], [0.5], [[1.0], [1.0]]), r"strictly increasing.*\[16, 8\]"),
    (lambda: evaluate.PasskeyGrid([8], [0.5], [[1.0]], threshold=1.5), r"threshold.*1\.5"),
])
def test_bad_input_is_a_sentence_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_passkey_needs_a_causal_model():
    with pytest.raises(TypeError, match="causal model"):
        evaluate.passkey_grid(TinyEncoder(config("none")), [16])


def _results():
    model = TinyGPT(config("learned"))
    text = random_tokens(200)
    return [
        (evaluate.plot_loss_by_position, evaluate.loss_by_position(model, text, 16, n_batches=1, bucket=4)),
        (evaluate.plot_extrapolation_curve, evaluate.extrapolation_curve(model, text, 16, (1, 2), n_batches=1)),
        (evaluate.plot_passkey_grid, evaluate.passkey_grid(model, [12, 24], (0, 1), n_trials=2, n_digits=2)),
        (evaluate.plot_retention, evaluate.retention(model, model, text, 16, n_batches=1)),
        (evaluate.plot_attention_mass, evaluate.attention_mass(model, text[:16][None])),
        (evaluate.plot_decode_costs, evaluate.decode_costs(model, [4, 8], n_decode=1)),
        (evaluate.plot_permutation_sensitivity, evaluate.permutation_sensitivity(model, text[:16][None])),
    ]


def test_every_plot_helper_returns_its_axes():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for plot, result in _results():
        fig, ax = plt.subplots()
        assert plot(result, ax=ax) is ax, plot.__name__
        plt.close(fig)
        new_ax = plot(result)                                   # no ax given: a new figure
        assert new_ax is not None and new_ax.figure is not fig, plot.__name__
        plt.close(new_ax.figure)


# ---------------------------------------------------------------------------
# Defaults, boundaries and bookkeeping, on the hand-built model
# ---------------------------------------------------------------------------

def random_text(n=400, seed=5):
    """Random ids: the next token is x + 1 only now and then, so which windows are drawn shows in the loss."""
    return np.random.default_rng(seed).integers(0, V, n)


def test_loss_by_position_defaults_are_4_batches_of_8_buckets_of_8_and_seed_0():
    model = HalvingModel(V)
    result = evaluate.loss_by_position(model, random_text(), T=16)
    assert [c[0].shape for c in model.calls] == [(8, 16)] * 4 and result.n_sequences == 32
    assert result.bucket == 8 and result.starts.tolist() == [0, 8]
    again = evaluate.loss_by_position(HalvingModel(V), random_text(), T=16, n_batches=4, bucket=8, seed=0,
                                      batch_size=8)
    np.testing.assert_array_equal(result.per_position, again.per_position)
    other = evaluate.loss_by_position(HalvingModel(V), random_text(), T=16, seed=1)
    assert np.abs(other.per_position - result.per_position).max() > 1e-3


@pytest.mark.parametrize("T, n, fits", [(10, 11, True), (10, 10, False)])
def test_a_text_of_T_plus_1_tokens_is_exactly_enough(T, n, fits):
    # a window is T inputs and T targets: T + 1 tokens; the only window of an (T + 1)-token text starts at 0
    text = counting_text(n, V)
    if fits:
        result = evaluate.loss_by_position(HalvingModel(V), text, T=T, n_batches=1, bucket=T, batch_size=2)
        assert result.loss[0] == pytest.approx((T + 1) / 2 * LN2, rel=1e-13)
    else:
        with pytest.raises(ValueError, match=rf"T={T} needs windows of T \+ 1 = {T + 1} tokens, but the text holds {n}"):
            evaluate.loss_by_position(HalvingModel(V), text, T=T)


@pytest.mark.parametrize("bad, message", [
    (dict(T=True), r"T must be an integer >= 1, got True"),
    (dict(T=4.0), r"T must be an integer >= 1, got 4\.0"),
    (dict(tokens=b"abcdefghijkl"), r"tokens_or_corpus must be a TextCorpus or a 1-D array of integer token ids"),
    (dict(tokens=np.zeros((3, 20), dtype=np.int64)), r"got an array of shape \(3, 20\) and dtype int64"),
    (dict(tokens=np.zeros(20)), r"got an array of shape \(20,\) and dtype float64"),
])
def test_loss_by_position_refuses_bad_input_by_name(bad, message):
    args = dict(tokens=counting_text(40, V), T=8)
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        evaluate.loss_by_position(HalvingModel(V), args["tokens"], T=args["T"])


def test_every_text_measure_reads_the_val_split_of_a_corpus_by_default(tmp_path):
    # one file per split: the val text counts up (loss (t + 1) ln 2 at t), the train text counts down
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(("".join(chr(32 + k % 64) for k in range(400))) if i % 2 else
                                           ("".join(chr(95 - k % 64) for k in range(400))))
    corpus = TextCorpus(tmp_path, val_fraction=0.5)
    val = corpus.split("val")
    model = HalvingModel(256)
    by_default = evaluate.loss_by_position(model, corpus, T=8, n_batches=1, bucket=8)
    assert by_default.loss[0] == pytest.approx(evaluate.loss_by_position(model, val, T=8, n_batches=1,
                                                                          bucket=8).loss[0], rel=1e-15)
    assert evaluate.extrapolation_curve(model, corpus, 8, (1,), n_batches=1).loss[0] == pytest.approx(
        by_default.loss[0], rel=1e-15)
    assert evaluate.retention(model, model, corpus, 8, n_batches=1).loss_before == pytest.approx(
        by_default.loss[0], rel=1e-15)
    train = evaluate.loss_by_position(model, corpus, T=8, n_batches=1, bucket=8, split="train")
    assert abs(train.loss[0] - by_default.loss[0]) > 0.1


def test_extrapolation_curve_defaults_and_the_shortest_length():
    model = HalvingModel(V)
    curve = evaluate.extrapolation_curve(model, counting_text(300, V), train_len=8)
    assert curve.lengths.tolist() == [8, 12, 16, 32, 64]                     # multiples 1, 1.5, 2, 4, 8
    assert [c[0].shape for c in model.calls][:2] == [(8, 8), (8, 8)]         # 2 batches of 8 per length
    np.testing.assert_allclose(curve.loss, (curve.lengths + 1) / 2 * LN2, rtol=1e-13)
    # m train_len = 0.8 rounds to 1, and a length is at least 1
    tiny = evaluate.extrapolation_curve(HalvingModel(V), counting_text(50, V), 8, multiples=(0.1, 0.05),
                                        n_batches=1, batch_size=1)
    assert tiny.lengths.tolist() == [1, 1] and tiny.loss.tolist() == pytest.approx([LN2, LN2], rel=1e-13)


def test_windows_are_drawn_from_the_seed_the_same_for_every_length_and_model():
    text = random_text()
    first, second = (evaluate.extrapolation_curve(HalvingModel(V), text, 8, (1, 2), n_batches=1) for _ in range(2))
    np.testing.assert_array_equal(first.loss, second.loss)
    assert np.abs(evaluate.extrapolation_curve(HalvingModel(V), text, 8, (1, 2), n_batches=1, seed=3).loss
                  - first.loss).max() > 1e-3
    # retention: 4 batches of 8 at seed 0 by default, the same windows for both models
    before, after = HalvingModel(V), HalvingModel(V, shift=1)
    result = evaluate.retention(before, after, text, train_len=8)
    assert [c[0].shape for c in before.calls] == [(8, 8)] * 4
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(before.calls, after.calls))
    again = evaluate.retention(HalvingModel(V), HalvingModel(V, shift=1), text, 8, n_batches=4, batch_size=8, seed=0)
    assert (result.loss_before, result.loss_after) == (again.loss_before, again.loss_after)
    assert evaluate.retention(HalvingModel(V), HalvingModel(V), text, 8, seed=2).loss_before != result.loss_before


def test_passkey_grid_defaults_and_a_length_at_the_model_limit():
    # a model limited to positions 0..15 decodes a 16-token task: the last digit is predicted at 15, no further
    model = HalvingModel(32, limit=16)
    grid = evaluate.passkey_grid(model, [16, 17], depths=(0.5,), vocab_size=20)
    assert grid.n_trials == 8 and not np.isnan(grid.accuracy[0, 0]) and np.isnan(grid.accuracy[1, 0])
    assert np.isnan(grid.digit_accuracy[1, 0]) and "position 16" in grid.reasons[17]
    # defaults: 5 digits, seed 0, filler drawn below the vocab_size given. Each length: the prompt through QUERY,
    # then the first 4 guesses fed back (the 5th is never fed); at 17 the 4th of them sits at 16 and is refused
    prompts = [ids for ids, cached in model.calls if ids.shape[1] > 1]
    assert prompts[0].shape == (8, 16 - 5 + 1) and len(model.calls) == (1 + 4) + (1 + 4)
    assert prompts[0].max() < 20
    task = passkey_task(8, 16, 0.5, 20, 0, 5)
    np.testing.assert_array_equal(prompts[0], backend.to_numpy(task.x)[:, :12])


@pytest.mark.parametrize("lengths, ok", [([8, 9], True), ([8, 8], False), ([8], True)])
def test_passkey_grid_lengths_must_strictly_increase(lengths, ok):
    make = lambda: evaluate.PasskeyGrid(lengths, [0, 1], [[1, 0]] * len(lengths))   # noqa: E731
    if ok:
        grid = make()
        assert grid.depths.dtype == np.float64 and grid.accuracy.dtype == np.float64
    else:
        with pytest.raises(ValueError, match=r"strictly increasing"):
            make()


@pytest.mark.parametrize("threshold, ok", [(0.0, True), (1.0, True), (1.5, False), (-0.1, False), ("high", False)])
def test_thresholds_from_0_to_1_are_accepted(threshold, ok):
    rows = [[1.0, 0.9], [0.8, 0.0]]
    if ok:
        grid = evaluate.PasskeyGrid([8, 16], [0.0, 1.0], rows, threshold=threshold)
        # at threshold 0 every cell passes; at 1 only a perfect row: 8 fails (0.9)
        assert evaluate.effective_context_length(grid) == (16 if threshold == 0.0 else 0)
        assert evaluate.effective_context_length(grid, 0.85) == 8                # an explicit threshold wins
    else:
        if not isinstance(threshold, str):
            with pytest.raises(ValueError, match=r"threshold must lie in \[0, 1\]"):
                evaluate.PasskeyGrid([8, 16], [0.0, 1.0], rows, threshold=threshold)
        grid = evaluate.PasskeyGrid([8, 16], [0.0, 1.0], rows)
        with pytest.raises(ValueError, match=r"threshold must lie in \[0, 1\]"):
            evaluate.effective_context_length(grid, threshold)


def test_attention_mass_defaults_to_the_first_token_and_allows_the_whole_sequence():
    model = zero_query_key(TinyGPT(config("none")).to_dtype("float64"))
    x = random_tokens(5)[None]
    assert evaluate.attention_mass(model, x).k == 1
    whole = evaluate.attention_mass(model, x, first_k=5)
    np.testing.assert_allclose(whole.first_k, 1.0, rtol=1e-14)                 # every key: all of the mass


def test_attention_mass_normalised_is_the_share_of_each_row():
    # sigmoid attention with zero queries and keys gives every visible key sigma(-ln T) = 1 / (T + 1), so rows do
    # not sum to 1: query i spends (i + 1) / (T + 1) in all. As mass, key 0 gets 1 / (T + 1) from every query; as
    # a share of each row, 1 / (i + 1), and the first T keys hold the whole row.
    from experiments.attention_sinks import use_sigmoid_attention
    T = 5
    model = use_sigmoid_attention(zero_query_key(TinyGPT(config("none")).to_dtype("float64")))
    x = random_tokens(T)[None]
    mass = evaluate.attention_mass(model, x, first_k=T)
    np.testing.assert_allclose(mass.position0, 1 / (T + 1), rtol=1e-12)
    np.testing.assert_allclose(mass.first_k, np.mean([(i + 1) / (T + 1) for i in range(T)]), rtol=1e-12)
    share = evaluate.attention_mass(model, x, first_k=T, normalise=True)
    np.testing.assert_allclose(share.position0, np.mean([1 / (i + 1) for i in range(T)]), rtol=1e-12)
    np.testing.assert_allclose(share.first_k, 1.0, rtol=1e-14)


def test_alibi_first_k_mass_per_head():
    # one sequence, 2 heads: query i gives key j the weight e^{-m (i - j)} / sum_{s <= i} e^{-m s}; the first 2 keys
    T, k = 7, 2
    model = zero_query_key(TinyGPT(config("alibi")).to_dtype("float64"))
    result = evaluate.attention_mass(model, random_tokens(T)[None], first_k=k)
    for h, m in enumerate([1 / 16, 1 / 256]):
        expected = np.mean([sum(math.exp(-m * (i - j)) for j in range(min(k, i + 1)))
                            / sum(math.exp(-m * s) for s in range(i + 1)) for i in range(T)])
        np.testing.assert_allclose(result.first_k[:, h], expected, rtol=1e-13)


def test_decode_costs_time_each_phase_and_warm_up_first():
    # prefill sleeps 0.1 s, each decoded token 0.01 s: the timings must be at least that, and a token no longer
    # than the prefill; the cache holds no arrays for this model, so its bytes are 0
    model = HalvingModel(V, delay=(0.1, 0.01))
    costs = evaluate.decode_costs(model, [200])
    assert costs.batch_size == 1 and costs.reasons == [None] and costs.cache_bytes.tolist() == [0]
    assert costs.prefill_s[0] >= 0.1 and 0.01 <= costs.decode_s_per_token[0] < costs.prefill_s[0]
    ids, cached = zip(*model.calls)
    assert ids[0].shape == (1, 1) and not cached[0]                            # the untimed warm-up
    assert ids[1].shape == (1, 200) and [i.shape for i in ids[2:]] == [(1, 1)] * 8 and all(cached[1:])
    assert ids[1].min() == 0 and ids[1].max() == V - 1                        # prompt ids span the vocabulary
    again = HalvingModel(V)
    evaluate.decode_costs(again, [200], batch_size=1, n_decode=8, seed=0)
    np.testing.assert_array_equal(again.calls[1][0], ids[1])


def test_permutation_probe_bookkeeping():
    # seed 0 shuffles 2 tokens into the identity, which moves nothing, so the probe rolls it into (1, 0)
    assert np.random.default_rng(0).permutation(2).tolist() == [0, 1]
    model = TinyGPT(config("none")).to_dtype("float64")
    x = random_tokens(6).reshape(3, 2)
    result = evaluate.permutation_sensitivity(model, x)
    assert result.permutation.tolist() == [1, 0] and result.per_position.shape == (2,)
    y = backend.to_numpy(model(x).data)
    y_pi = backend.to_numpy(model(x[:, ::-1].copy()).data)[:, ::-1]
    change = np.abs(y - y_pi)
    assert result.max_abs == change.max() and result.mean_abs == pytest.approx(change.mean(), rel=1e-15)
    assert result.relative == pytest.approx(change.max() / np.abs(y).max(), rel=1e-15)
    np.testing.assert_allclose(result.per_position, change.mean(axis=(0, 2)), rtol=1e-15)
    longer = evaluate.permutation_sensitivity(model, random_tokens(24).reshape(2, 12))
    assert longer.permutation.tolist() == np.random.default_rng(0).permutation(12).tolist()


# ---------------------------------------------------------------------------
# What each plot shows: its numbers, where the training length sits, its labels (cosmetics are not checked)
# ---------------------------------------------------------------------------

@pytest.fixture
def ax():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots()
    yield axes
    plt.close(fig)


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _labels(ax):
    return ax.get_xlabel(), ax.get_ylabel(), ax.get_title()


def test_plot_loss_by_position_draws_each_bucket_over_its_positions(ax):
    result = evaluate.PositionLoss(T=6, bucket=4, starts=np.array([0, 4]), loss=np.array([2.0, 1.0]),
                                   per_position=np.arange(6) / 2, n_sequences=1)
    evaluate.plot_loss_by_position(result, ax)
    values, edges, baseline = ax.patches[0].get_data()
    assert values.tolist() == [2.0, 1.0] and edges.tolist() == [0, 4, 6] and baseline is None
    assert ax.lines[0].get_xdata().tolist() == list(range(6)) and ax.lines[0].get_ydata().tolist() == [0, .5, 1, 1.5, 2, 2.5]
    assert _labels(ax) == ("position t", "loss (nats)", "Loss by position, T = 6")
    assert _legend(ax) == ["bucket mean", "per position"]


def test_plot_extrapolation_curve_marks_the_training_length_and_refusals(ax):
    result = evaluate.ExtrapolationCurve(train_len=8, lengths=np.array([8, 16, 32, 64]),
                                         loss=np.array([1.0, 2.0, np.nan, np.nan]),
                                         loss_beyond=np.array([np.nan, 3.0, np.nan, np.nan]),
                                         reasons=[None, None, "refused", "refused"])
    evaluate.plot_extrapolation_curve(result, ax)
    lines = [(np.asarray(ln.get_xdata()).tolist(), np.asarray(ln.get_ydata()).tolist()) for ln in ax.lines]
    np.testing.assert_array_equal(lines[0][1], [1.0, 2.0, np.nan, np.nan])
    np.testing.assert_array_equal(lines[1][1], [np.nan, 3.0, np.nan, np.nan])
    assert lines[0][0] == lines[1][0] == [8, 16, 32, 64]
    assert [x for x, _ in lines[2:]] == [[8, 8], [32, 32], [64, 64]]              # training length, then refusals
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "16", "32", "64"]
    assert _labels(ax) == ("evaluation length L", "mean loss (nats)", "Extrapolation")
    assert _legend(ax) == ["all positions", "positions >= 8", "training length", "model refused"]


def test_plot_passkey_grid_shows_each_cell_and_the_effective_length(ax):
    grid = evaluate.PasskeyGrid([8, 16], [0.0, 1.0], [[1.0, 0.5], [np.nan, 0.0]])
    evaluate.plot_passkey_grid(grid, ax)
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), [[1.0, np.nan], [0.5, 0.0]])    # lengths across, depths down
    assert image.get_clim() == (0.0, 1.0)
    assert [(t.get_position(), t.get_text()) for t in ax.texts] == [((0, 0), "1.00"), ((0, 1), "0.50"),
                                                                    ((1, 0), "-"), ((1, 1), "0.00")]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "16"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.00", "1.00"]
    # 8 passes at the grid's threshold 0.5 (0.5 counts); 16 fails. An explicit threshold of 0.6 fails 8 too
    assert _labels(ax) == ("context length", "depth of the key", "Passkey accuracy (effective length 8)")
    assert len(ax.figure.axes) == 2                                                # the colour bar
    ax.cla()
    evaluate.plot_passkey_grid(grid, ax, threshold=0.6)
    assert ax.get_title() == "Passkey accuracy (effective length 0)"


def test_plot_retention_attention_mass_decode_costs_and_permutation_draw_their_numbers(ax):
    evaluate.plot_retention(evaluate.Retention(8, 2.0, 2.5, 0.5), ax)
    assert [p.get_height() for p in ax.patches] == [2.0, 2.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["before", "after"]
    assert _labels(ax) == ("", "loss (nats)", "Retention at T = 8 (diff +0.500)")
    ax.figure.clf()
    ax = ax.figure.add_subplot()
    mass = np.array([[0.1, 0.9], [0.5, 0.2]])
    evaluate.plot_attention_mass(evaluate.AttentionMass(mass, mass, 1), ax)
    np.testing.assert_array_equal(ax.images[0].get_array(), mass)                  # layers down, heads across
    assert ax.images[0].get_clim() == (0.0, 1.0) and len(ax.figure.axes) == 2
    assert _labels(ax) == ("head", "layer", "Mean attention on position 0")
    ax.figure.clf()
    ax = ax.figure.add_subplot()
    costs = evaluate.DecodeCosts(np.array([4, 8]), np.array([0.002, 0.004]), np.array([0.001, 0.003]),
                                 np.array([2 ** 20, 2 ** 21]), 2, [None, None])
    evaluate.plot_decode_costs(costs, ax)
    assert [ln.get_ydata().tolist() for ln in ax.lines] == [[2.0, 4.0], [1.0, 3.0]]   # milliseconds
    right = [a for a in ax.figure.axes if a is not ax][0]
    assert right.lines[0].get_ydata().tolist() == [1.0, 2.0] and right.get_ylabel() == "KV cache (MiB)"   # MiB
    assert _labels(ax) == ("prompt length L", "milliseconds", "Decode costs, batch 2")
    assert _legend(ax) == ["prefill", "decode, per token"] and _legend(right) == ["KV cache"]
    for max_abs, scale in [(1e-3, "log"), (0.0, "linear")]:
        ax.figure.clf()
        ax = ax.figure.add_subplot()
        probe = evaluate.PermutationSensitivity(np.array([1, 0]), max_abs, 0.0, 0.0, np.array([max_abs, max_abs / 2]))
        evaluate.plot_permutation_sensitivity(probe, ax)
        assert [p.get_height() for p in ax.patches] == [max_abs, max_abs / 2] and ax.get_yscale() == scale
        assert _labels(ax) == ("position t", "mean |change|", f"Permutation probe (max {max_abs:.2e})")


@pytest.mark.parametrize("env, backend_after", [({}, "agg"), ({"MPLBACKEND": "svg"}, "svg")])
def test_a_plot_without_axes_picks_a_headless_backend_only_when_none_was_chosen(env, backend_after):
    # a fresh process: no pyplot yet. Without MPLBACKEND the helper chooses Agg; with it, it leaves the choice alone
    import os
    import subprocess
    import sys
    code = ("import numpy as np, matplotlib\n"
            "from mini_transformer.evaluation import measures as evaluate\n"
            "r = evaluate.Retention(8, 1.0, 1.0, 0.0)\n"
            "ax = evaluate.plot_retention(r)\n"
            "print(matplotlib.get_backend().lower(), ax.figure.get_size_inches().tolist(), "
            "ax.figure.get_layout_engine().__class__.__name__)\n")
    clean = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == backend_after and " ".join(out[1:]) == "[3.5, 3.5] ConstrainedLayoutEngine"


_COUNTS = [  # (function, its other arguments, the integer argument, its name in the sentence)
    ("loss_by_position", dict(T=8), "n_batches", "n_batches"),
    ("loss_by_position", dict(T=8), "batch_size", "batch_size"),
    ("loss_by_position", dict(T=8), "bucket", "bucket"),
    ("extrapolation_curve", dict(train_len=8), "n_batches", "n_batches"),
    ("extrapolation_curve", dict(train_len=8), "batch_size", "batch_size"),
    ("extrapolation_curve", dict(), "train_len", "train_len"),
    ("retention", dict(train_len=8), "n_batches", "n_batches"),
    ("retention", dict(train_len=8), "batch_size", "batch_size"),
    ("retention", dict(), "train_len", "train_len"),
    ("passkey_grid", dict(lengths=[16]), "n_trials", "n_trials"),
    ("attention_mass", dict(), "first_k", "first_k"),
    ("decode_costs", dict(lengths=[4]), "batch_size", "batch_size"),
    ("decode_costs", dict(lengths=[4]), "n_decode", "n_decode"),
]


@pytest.mark.parametrize("fn, others, arg, name", _COUNTS, ids=[f"{f}-{a}" for f, _, a, _ in _COUNTS])
@pytest.mark.parametrize("bad", [0, 2.5, True])
def test_every_count_is_refused_by_name_below_one_or_not_an_integer(fn, others, arg, name, bad):
    # the sentence of validate.check_int, with the argument's own name and the limit of 1 (worked out by hand)
    model = TinyGPT(GPTConfig(vocab_size=16, d_model=8, n_layers=1, n_heads=2, max_len=64, positional="rope"))
    corpus = counting_text(300, 16)
    first = {"retention": (model, model, corpus), "attention_mass": (model, backend.asarray([[1, 2, 3]])),
             "passkey_grid": (model,), "decode_costs": (model,)}.get(fn, (model, corpus))
    kwargs = {"train_len": 8, **others, arg: bad} if fn in ("extrapolation_curve", "retention") else {**others, arg: bad}
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= 1, got {bad!r}\.$"):
        getattr(evaluate, fn)(*first, **kwargs)
