r"""RoPE frequencies and context extension, pinned by hand-worked numbers and published facts.

Expected values are written out here, worked by hand from the papers' formulas (the derivation
sits next to each number), never produced by the code under test. The small case throughout is
d_head 8, base 10000, so theta = (1, 0.1, 0.01, 0.001) and the wavelengths are 2*pi times
(1, 10, 100, 1000).
"""
import math
import re
import warnings

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional.model_configs import MODELS, describe_model, list_models
from mini_transformer.positional.rope_scaling import (
    ROPE_TYPES, by_parts_ramp, base_for_length, critical_dimension, extrapolation_bound,
    longrope_attention_factor, rope_inv_freq, rotations_within, thetas, wavelength_table,
    wavelengths, yarn_mscale,
)

THETA_8 = [1.0, 0.1, 0.01, 0.001]  # 10000^(-2i/8) = 10^(-i)


@pytest.fixture(params=["numpy", "strict"])
def on_backend(request):
    """Run the test under NumPy and under the strict CuPy stand-in, then restore NumPy."""
    backend.set_backend(request.param)
    try:
        yield request.param
    finally:
        backend.set_backend("numpy")


def host(x):
    """A backend array as host NumPy, after checking it really is a float64 backend array."""
    assert backend.is_array(x), f"expected an array of the active backend, got {type(x).__name__}"
    assert str(x.dtype) == "float64"
    return backend.to_numpy(x)


# ---------------------------------------------------------------------------
# Hand-worked small cases, one per method
# ---------------------------------------------------------------------------

# YaRN ramp for d 8, base 10000, L 2048: the pair turning n times in L is
# i(n) = 8 ln(L/(2 pi n)) / (2 ln 10^4) = log10(L / (2 pi n)).
# i(32) = log10(10.19) = 1.008 -> floor 1;  i(1) = log10(325.9) = 2.513 -> ceil 3.
# ramp over i = 0..3: clip((i - 1)/2) = (0, 0, 0.5, 1), so gamma (kept share) = (1, 1, 0.5, 0) and
# theta' = (1, 0.1, 0.5*0.01/2 + 0.5*0.01, 0.001/2) = (1, 0.1, 0.0075, 0.0005).
BY_PARTS_8 = [1.0, 0.1, 0.0075, 0.0005]
YARN_2 = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 2048}

# llama3 with L 1000, low 1, high 4, factor 2: wavelengths 2 pi (1, 10, 100, 1000) = 6.3, 62.8, 628, 6283.
# Below L/4 = 250 kept; above L/1 = 1000 halved; pair 2 (628) blends with
# g = (L / lambda - 1) / (4 - 1) = (5/pi - 1)/3, theta' = (1 - g) 0.01/2 + g 0.01 = 0.005 (1 + g).
LLAMA3_G = (5 / math.pi - 1) / 3

HAND_CASES = {
    "default": (dict(rope_scaling=None), THETA_8, 1.0),
    "linear": (dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), [0.5, 0.05, 0.005, 0.0005], 1.0),
    "linear, legacy 'type' key": (dict(rope_scaling={"type": "linear", "factor": 2}), [0.5, 0.05, 0.005, 0.0005], 1.0),
    # base' = 10^4 * 2^(8/6); theta_i' = 10^(-i) * 2^(-i/3)
    "ntk": (dict(rope_scaling={"rope_type": "ntk", "factor": 2.0}),
            [1.0, 0.1 * 2 ** (-1 / 3), 0.01 * 2 ** (-2 / 3), 0.0005], 1.0),
    # seq 4096 at L 2048, factor 2: s = 2 * 4096/2048 - (2 - 1) = 3, theta_i' = 10^(-i) * 3^(-i/3)
    "dynamic, past the trained length": (
        dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}, seq_len=4096, max_position_embeddings=2048),
        [1.0, 0.1 * 3 ** (-1 / 3), 0.01 * 3 ** (-2 / 3), 0.001 / 3], 1.0),
    "dynamic, within the trained length": (
        dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}, seq_len=2048, max_position_embeddings=2048),
        THETA_8, 1.0),
    "ntk_by_parts": (dict(rope_scaling={**YARN_2, "rope_type": "ntk_by_parts"}), BY_PARTS_8, 1.0),
    "yarn": (dict(rope_scaling=YARN_2), BY_PARTS_8, 0.1 * math.log(2) + 1),
    "yarn, trained length from max_position_embeddings": (
        dict(rope_scaling={"rope_type": "yarn", "factor": 2.0}, max_position_embeddings=2048),
        BY_PARTS_8, 0.1 * math.log(2) + 1),
    # long factors once seq_len 8192 > 4096: theta / (1, 2, 4, 8); s = 16384/4096 = 4,
    # attention sqrt(1 + ln 4 / ln 4096) = sqrt(1 + 2/12)
    "longrope, long": (
        dict(rope_scaling={"rope_type": "longrope", "short_factor": [1, 1, 1, 1], "long_factor": [1, 2, 4, 8],
                               "original_max_position_embeddings": 4096}, seq_len=8192, max_position_embeddings=16384),
        [1.0, 0.05, 0.0025, 0.000125], math.sqrt(7 / 6)),
    "longrope, short": (
        dict(rope_scaling={"rope_type": "longrope", "short_factor": [1, 2, 1, 2], "long_factor": [1, 2, 4, 8],
                               "original_max_position_embeddings": 4096}, seq_len=4096, max_position_embeddings=16384),
        [1.0, 0.05, 0.01, 0.0005], math.sqrt(7 / 6)),
    "llama3": (
        dict(rope_scaling={"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 1000}),
        [1.0, 0.1, 0.005 * (1 + LLAMA3_G), 0.0005], 1.0),
    # int(0.5 * 8 // 2) = 2 pairs keep 10^(-i) over the full width 8, the other 2 stop; the factor halves all
    "proportional": (
        dict(rope_scaling={"rope_type": "proportional", "factor": 2.0}, partial_rotary_factor=0.5),
        [0.5, 0.05, 0.0, 0.0], 1.0),
}


@pytest.mark.parametrize("case", list(HAND_CASES))
def test_hand_worked_case(case, on_backend):
    kwargs, expected, expected_attention = HAND_CASES[case]
    inv_freq, attention_factor = rope_inv_freq(8, 10000.0, **kwargs)
    np.testing.assert_allclose(host(inv_freq), expected, rtol=1e-12)
    assert isinstance(attention_factor, float)
    assert attention_factor == pytest.approx(expected_attention, rel=1e-12)


def test_every_rope_type_has_a_hand_worked_case():
    def rope_type(cfg):
        return "default" if not cfg else cfg.get("rope_type", cfg.get("type"))
    assert {rope_type(kwargs["rope_scaling"]) for kwargs, _, _ in HAND_CASES.values()} == set(ROPE_TYPES)


def test_yarn_without_truncation_uses_the_fractional_pair_indices(on_backend):
    # i(32) and i(1) unrounded, from the formula in the comment above BY_PARTS_8.
    low, high = math.log10(2048 / (64 * math.pi)), math.log10(2048 / (2 * math.pi))
    gamma = [1 - min(max((i - low) / (high - low), 0.0), 1.0) for i in range(4)]
    expected = [(1 - g) * t / 2 + g * t for g, t in zip(gamma, THETA_8)]
    inv_freq, _ = rope_inv_freq(8, 10000.0, {**YARN_2, "truncate": False})
    np.testing.assert_allclose(host(inv_freq), expected, rtol=1e-12)


# ---------------------------------------------------------------------------
# The properties that define each method
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("head_dim", [8, 64, 128])
@pytest.mark.parametrize("s", [2.0, 4.0, 8.0])
def test_linear_divides_every_frequency_by_s(head_dim, s):
    scaled, _ = rope_inv_freq(head_dim, 10000.0, {"rope_type": "linear", "factor": s})
    np.testing.assert_allclose(host(scaled) * s, host(thetas(head_dim, 10000.0)), rtol=1e-13)


@pytest.mark.parametrize("head_dim", [8, 64, 128])
@pytest.mark.parametrize("s", [2.0, 4.0, 8.0])
def test_ntk_matches_the_survey_form_and_keeps_pair_zero(head_dim, s):
    # Survey eq. (48): theta_r' = theta_r * s^(-2r/(d-2)); r = 0 unchanged, the last pair divided by s.
    r = np.arange(head_dim // 2)
    expected = 10000.0 ** (-2 * r / head_dim) * s ** (-2 * r / (head_dim - 2))
    scaled = host(rope_inv_freq(head_dim, 10000.0, {"rope_type": "ntk", "factor": s})[0])
    np.testing.assert_allclose(scaled, expected, rtol=1e-12)
    assert scaled[0] == 1.0
    assert scaled[-1] * s == pytest.approx(10000.0 ** (-(head_dim - 2) / head_dim), rel=1e-12)


@pytest.mark.parametrize("seq_len, effective_s", [(1000, 1.0), (4096, 1.0), (8192, 5.0), (16384, 13.0)])
def test_dynamic_is_ntk_with_the_scale_of_the_current_length(seq_len, effective_s):
    # factor 4, L 4096: s(l) = max(1, 4 l / 4096 - 3)
    dynamic, _ = rope_inv_freq(64, 10000.0, {"type": "dynamic", "factor": 4.0}, seq_len=seq_len,
                               max_position_embeddings=4096)
    ntk = rope_inv_freq(64, 10000.0, {"rope_type": "ntk", "factor": effective_s})[0] if effective_s > 1 else thetas(64, 1e4)
    np.testing.assert_allclose(host(dynamic), host(ntk), rtol=1e-12)


@pytest.mark.parametrize("truncate", [True, False])
@pytest.mark.parametrize("head_dim, base, train_len, s", [
    (64, 1e4, 2048, 4.0), (128, 1e4, 4096, 16.0), (128, 5e5, 8192, 8.0), (64, 1e4, 4096, 40.0), (96, 1e6, 32768, 4.0)])
def test_by_parts_keeps_fast_pairs_and_interpolates_slow_ones(head_dim, base, train_len, s, truncate):
    # YaRN: more than beta = 32 turns in L -> kept; fewer than alpha = 1 -> divided by s.
    cfg = {"rope_type": "ntk_by_parts", "factor": s, "original_max_position_embeddings": train_len, "truncate": truncate}
    theta = host(thetas(head_dim, base))
    scaled = host(rope_inv_freq(head_dim, base, cfg)[0])
    rho = host(rotations_within(head_dim, base, train_len))
    assert np.array_equal(scaled[rho >= 32], theta[rho >= 32])
    np.testing.assert_allclose(scaled[rho <= 1], theta[rho <= 1] / s, rtol=1e-13)
    assert np.all(scaled <= theta * (1 + 1e-13)) and np.all(scaled >= theta / s * (1 - 1e-13))


def test_by_parts_ramp_runs_from_kept_to_interpolated():
    gamma = host(by_parts_ramp(128, 1e4, 4096))
    assert gamma[0] == 1.0 and gamma[-1] == 0.0 and np.all(np.diff(gamma) <= 0)


def test_yarn_and_ntk_by_parts_share_frequencies_and_differ_in_temperature():
    cfg = {"factor": 16.0, "original_max_position_embeddings": 4096}
    yarn, t_yarn = rope_inv_freq(128, 1e4, {**cfg, "rope_type": "yarn"})
    parts, t_parts = rope_inv_freq(128, 1e4, {**cfg, "rope_type": "ntk_by_parts"})
    assert np.array_equal(host(yarn), host(parts))
    assert (t_parts, t_yarn) == (1.0, pytest.approx(0.1 * math.log(16) + 1))


@pytest.mark.parametrize("extra, expected", [
    ({}, 0.1 * math.log(40) + 1),                                                  # YaRN's sqrt(1/t)
    ({"mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),                                  # DeepSeek-V3
    ({"mscale": 0.707, "mscale_all_dim": 0.707}, 1.0),                              # DeepSeek-V2-Lite
    ({"mscale": 1.0, "mscale_all_dim": 0.707}, (0.1 * math.log(40) + 1) / (0.0707 * math.log(40) + 1)),
    ({"mscale": 1.0}, 0.1 * math.log(40) + 1),                  # ratio only when both are given, as in the reference
    ({"mscale": 1.0, "mscale_all_dim": 1.0, "attention_factor": 0.9}, 0.9),         # explicit value wins
])
def test_yarn_attention_factor(extra, expected):
    cfg = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}
    assert rope_inv_freq(64, 1e4, {**cfg, **extra})[1] == pytest.approx(expected, rel=1e-12)


def test_yarn_mscale_is_one_without_extension():
    assert yarn_mscale(1.0) == 1.0 and yarn_mscale(0.5, 3.0) == 1.0


def test_llama31_published_config_bands(on_backend):
    """Llama 3.1: factor 8, low 1, high 4, original 8192, theta 500000, head_dim 128."""
    cfg = MODELS["Llama-3.1-8B"]["rope_scaling"]
    theta = host(thetas(128, 500000.0))
    scaled = host(rope_inv_freq(128, 500000.0, cfg)[0])
    lam = 2 * np.pi / theta
    assert scaled[0] == theta[0] == 1.0                          # highest-frequency pair unchanged
    assert scaled[-1] == pytest.approx(theta[-1] / 8, rel=1e-13)  # lowest divided by 8
    assert np.array_equal(scaled[lam < 8192 / 4], theta[lam < 8192 / 4])
    np.testing.assert_allclose(scaled[lam > 8192], theta[lam > 8192] / 8, rtol=1e-13)
    middle = (lam >= 2048) & (lam <= 8192)
    assert middle.any() and np.all(scaled[middle] < theta[middle]) and np.all(scaled[middle] > theta[middle] / 8)


def test_llama3_blend_is_continuous_at_both_edges():
    # Put a wavelength exactly on each edge: with base 10000 and d 8, lambda_2 = 200 pi.
    for train_len, kept in [(200 * math.pi * 4, True), (200 * math.pi, False)]:
        cfg = {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": train_len}
        pair2 = float(rope_inv_freq(8, 1e4, cfg)[0][2])
        assert pair2 == pytest.approx(0.01 if kept else 0.005, rel=1e-12)


def test_longrope_phi3_attention_factor():
    # Phi-3-mini-128k: s = 131072 / 4096 = 32, sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12).
    assert longrope_attention_factor(131072 / 4096, 4096) == pytest.approx(math.sqrt(17 / 12), rel=1e-14)
    cfg = {"type": "longrope", "original_max_position_embeddings": 4096, "short_factor": [1.0] * 48,
           "long_factor": [1.0] * 48}
    assert rope_inv_freq(96, 1e4, cfg, max_position_embeddings=131072)[1] == pytest.approx(math.sqrt(17 / 12))


@pytest.mark.parametrize("head_dim, partial, pairs", [(96, 0.75, 36), (64, 0.5, 16), (128, 1.0, 64)])
def test_partial_rotary_factor_sets_the_rotary_dimension(head_dim, partial, pairs):
    inv_freq, _ = rope_inv_freq(head_dim, 1e4, partial_rotary_factor=partial)
    d = 2 * pairs
    np.testing.assert_allclose(host(inv_freq), 1e4 ** (-2 * np.arange(pairs) / d), rtol=1e-13)


# ---------------------------------------------------------------------------
# Bad input: a ValueError that names the key and the value
# ---------------------------------------------------------------------------

LONGROPE_OK = {"rope_type": "longrope", "original_max_position_embeddings": 4096,
               "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}
LLAMA3_OK = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
             "original_max_position_embeddings": 8192}


@pytest.mark.parametrize("kwargs, message", [
    (dict(rope_scaling={"rope_type": "spline"}), r"Unknown rope_type 'spline'.*default.*ntk_by_parts.*llama3"),
    (dict(rope_scaling={"type": "su"}), r"'su'.*Older Phi-3 configs call LongRoPE 'su'; use 'longrope'\.$"),
    (dict(rope_scaling={}), None),                                              # an empty dict is the default
    (dict(rope_scaling={"rope_type": "yarn", "type": "linear", "factor": 2}), r"disagree"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 0.5}), r"'factor'.*0\.5.*at least 1"),
    (dict(rope_scaling={"rope_type": "linear"}), r"'linear' needs rope_scaling\['factor'\]"),
    (dict(rope_scaling={"rope_type": "linear", "factor": "2"}), r"'factor'.*'2'.*number"),
    (dict(rope_scaling={**LONGROPE_OK, "short_factor": [1.0] * 3}), r"'short_factor'.*3 entries.*needs 4 \(one"),
    (dict(rope_scaling={**LONGROPE_OK, "long_factor": [1.0] * 5}), r"'long_factor'.*5 entries.*needs 4"),
    (dict(rope_scaling={k: v for k, v in LONGROPE_OK.items() if k != "original_max_position_embeddings"}),
     r"'longrope' needs rope_scaling\['original_max_position_embeddings'\]"),
    (dict(rope_scaling={**LLAMA3_OK, "low_freq_factor": 4.0, "high_freq_factor": 1.0}),
     r"low_freq_factor=4\.0.*high_freq_factor=1\.0"),
    (dict(rope_scaling={k: v for k, v in LLAMA3_OK.items() if k != "original_max_position_embeddings"}),
     r"'llama3' needs rope_scaling\['original_max_position_embeddings'\]"),
    (dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), r"'yarn' needs the trained context length"),
    (dict(rope_scaling={**YARN_2, "beta_fast": 1, "beta_slow": 32}), r"beta_fast=1.*beta_slow=32"),
    (dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=2048), r"seq_len is None"),
    (dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}, seq_len=10), r"'dynamic' needs the trained context"),
    (dict(rope_scaling={"rope_type": "default", "rope_theta": 5e5}), r"rope_theta"),
    (dict(rope_scaling="yarn"), r"must be a dict"),
    (dict(partial_rotary_factor=0.625), r"rotary_dim=5.*even"),
    (dict(rope_theta=1.0), r"rope_theta is 1\.0"),
])
def test_bad_input_raises_a_sentence(kwargs, message):
    if message is None:
        np.testing.assert_allclose(host(rope_inv_freq(8, **{"rope_theta": 10000.0, **kwargs})[0]), THETA_8,
                                   rtol=1e-15)
        return
    with pytest.raises(ValueError, match=message):
        rope_inv_freq(8, **{"rope_theta": 10000.0, **kwargs})


def test_odd_head_dim_is_refused():
    with pytest.raises(ValueError, match=r"head_dim=7.*rotary_dim=7.*even"):
        rope_inv_freq(7)


def test_unknown_key_warns_but_a_clean_config_does_not():
    with pytest.warns(UserWarning, match=r"attn_factor"):
        rope_inv_freq(8, 1e4, {**YARN_2, "attn_factor": 0.9})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rope_inv_freq(128, 500000.0, MODELS["Llama-3.1-8B"]["rope_scaling"])


# ---------------------------------------------------------------------------
# Calculators
# ---------------------------------------------------------------------------

def test_wavelengths_and_rotations(on_backend):
    np.testing.assert_allclose(host(wavelengths(8, 1e4)), [2 * math.pi * 10 ** i for i in range(4)], rtol=1e-13)
    # rho_i = L theta_i / (2 pi): at L = 200 pi the four pairs turn 100, 10, 1 and 0.1 times
    np.testing.assert_allclose(host(rotations_within(8, 1e4, 200 * math.pi)), [100.0, 10.0, 1.0, 0.1], rtol=1e-13)


def test_llama2_critical_dimension_is_92(on_backend):
    # Liu et al. and the survey: d_head 128, base 10000, T_train 4096 -> d_extra = 92, 36 dimensions left over.
    crit = critical_dimension(128, 10000.0, 4096)
    assert crit == (46, 92)
    assert 128 - crit.d_extra == 36


@pytest.mark.parametrize("head_dim, base, train_len", [
    (128, 1e4, 4096), (128, 1e4, 2048), (128, 5e5, 8192), (64, 1e4, 4096), (96, 1e4, 4096), (128, 1e6, 16384),
    (256, 1e4, 8192)])
def test_critical_dimension_matches_liu_closed_form(head_dim, base, train_len):
    d_extra = 2 * math.ceil(head_dim / 2 * math.log(train_len / (2 * math.pi), base))  # Liu et al.'s formula
    crit = critical_dimension(head_dim, base, train_len)
    assert crit.d_extra == d_extra
    lam = host(wavelengths(head_dim, base))
    assert lam[crit.pair] >= train_len > lam[crit.pair - 1]  # the survey's min{r : T_r >= L}


def test_extrapolation_bound_and_its_inverse():
    # T_extra = 2 pi beta^(92/128) for Llama 2's d_extra.
    assert extrapolation_bound(128, 1e4, 4096) == pytest.approx(2 * math.pi * 1e4 ** (92 / 128))
    assert extrapolation_bound(128, 1e6, 4096) == pytest.approx(2 * math.pi * 1e6 ** (92 / 128))
    assert extrapolation_bound(128, 1e4, 4096) >= 4096  # the unchanged base covers its own training length
    beta = base_for_length(128, 1_000_000, 4096)
    assert extrapolation_bound(128, beta, 4096) == pytest.approx(1_000_000, rel=1e-12)
    paper_beta0 = 1e4 ** math.log(1_000_000 / (2 * math.pi), 4096 / (2 * math.pi))  # eq. (43), no ceiling
    assert beta <= paper_beta0


def test_book_exercise_2_wavelength_table():
    """Exercise 2: d_head 128, base 10000, pairs 0, 16, 32, 48, 63; where does lambda pass 8192?"""
    rows = {r["pair"]: r for r in wavelength_table()}
    # theta_i = 10000^(-i/64): lambda = 2 pi, 2 pi 10, 2 pi 100, 2 pi 1000, 2 pi 10^(63/16).
    for pair, lam in [(0, 2 * math.pi), (16, 20 * math.pi), (32, 200 * math.pi), (48, 2000 * math.pi),
                      (63, 2 * math.pi * 10 ** (63 / 16))]:
        assert rows[pair]["wavelength"] == pytest.approx(lam, rel=1e-12)
    # The book rounds pair 63 to "about 57000"; the formula gives 54,410.
    assert rows[63]["wavelength"] == pytest.approx(54410.14, abs=0.01)
    # lambda_i > 8192 <=> i > 64 log10(8192 / 2 pi) = 49.84, so the first pair is 50 (the book says "around 51").
    first = [p for p, r in rows.items() if r["first_above_threshold"]]
    assert first == [50]
    assert rows[50]["wavelength"] > 8192 > 2 * math.pi * 10 ** (49 / 16)


def test_wavelength_table_refuses_a_pair_out_of_range():
    with pytest.raises(ValueError, match=r"pairs contains 64.*0\.\.63"):
        wavelength_table(pairs=(0, 64))


# ---------------------------------------------------------------------------
# Published configurations
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list_models())
def test_every_model_describes_itself_with_a_source(name, on_backend):
    info = describe_model(name)
    assert info["source"] and info["summary"] and info["mechanism"] == MODELS[name]["mechanism"]
    if info["mechanism"].startswith("rope"):
        # unscaled, from the formula: theta_i = base^(-2i/r), lambda_i = 2 pi base^(2i/r), r the rotary width
        r, base = info["rotary_dim"], MODELS[name]["rope_theta"]
        two_i_over_r = 2 * np.arange(r // 2) / r
        theta, lam = base ** -two_i_over_r, 2 * np.pi * base ** two_i_over_r
        np.testing.assert_allclose(host(info["base_wavelengths"]), lam, rtol=1e-13)
        inv_freq, scaled_lam = host(info["inv_freq"]), host(info["wavelengths"])
        if not info["frequencies_scaled"]:
            np.testing.assert_allclose(inv_freq, theta, rtol=1e-13)
            np.testing.assert_allclose(scaled_lam, lam, rtol=1e-13)
        else:
            # every stored method keeps the fastest pair and slows the others by at most the factor
            s = info["rope_scaling"]["factor"]
            assert inv_freq[0] == 1.0 and scaled_lam[0] == pytest.approx(2 * np.pi, rel=1e-15)
            assert np.all(inv_freq <= theta * (1 + 1e-13)) and np.all(inv_freq >= theta / s * (1 - 1e-13))
            assert np.all(scaled_lam >= lam * (1 - 1e-13)) and np.all(scaled_lam <= lam * s * (1 + 1e-13))
            assert inv_freq[-1] == pytest.approx(theta[-1] / s, rel=1e-12)   # and the slowest by all of it
        assert 0 <= info["critical_dimension"].pair <= info["rotary_dim"] // 2


def test_survey_numbers_are_the_stored_ones():
    assert MODELS["Code-Llama-7B"]["rope_theta"] == 1e6
    assert MODELS["Llama-3-8B"]["rope_theta"] == MODELS["Llama-3.1-8B"]["rope_theta"] == 500000.0
    assert MODELS["Qwen2-7B-Instruct"]["rope_theta"] == MODELS["Qwen3-0.6B"]["rope_theta"] == 1e6
    assert (MODELS["LLaMA-7B"]["max_position_embeddings"], MODELS["Llama-2-7B"]["max_position_embeddings"]) == (2048, 4096)
    assert MODELS["GPT-2"]["n_positions"] == 1024
    assert (MODELS["T5"]["relative_attention_num_buckets"], MODELS["T5"]["relative_attention_max_distance"]) == (32, 128)
    assert MODELS["BLOOM"]["mechanism"] == MODELS["Falcon-RW-1B"]["mechanism"] == "alibi"
    assert MODELS["Falcon-7B"]["mechanism"] == "rope"  # the survey says ALiBi; the release config says otherwise


def test_deepseek_v3_decoupled_rope():
    info = describe_model("DeepSeek-V3")
    assert info["rotary_dim"] == 64 and info["qk_nope_head_dim"] == 128
    assert info["rope_scaling"] == {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                                    "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
    assert info["attention_factor"] == 1.0  # mscale / mscale_all_dim
    theta = host(thetas(64, 1e4))
    assert float(info["inv_freq"][0]) == 1.0 and float(info["inv_freq"][-1]) == pytest.approx(theta[-1] / 40)


def test_phi3_entry_leaves_the_factor_lists_out():
    info = describe_model("Phi-3-mini-128k-instruct")
    assert "short_factor" not in info["rope_scaling"] and set(info["absent"]) == {"short_factor", "long_factor"}
    assert info["frequencies_scaled"] is False and info["rotary_dim"] == 96
    assert info["attention_factor"] == pytest.approx(math.sqrt(17 / 12))


def test_non_rope_entry_says_what_it_is():
    info = describe_model("GPT-2")
    assert info["mechanism"] == "learned_absolute" and "inv_freq" not in info and "Learned" in info["summary"]


def test_unknown_model_suggests_close_names():
    with pytest.raises(ValueError, match=r"No stored model named 'Llama-3.1'.*Did you mean.*Llama-3.1-8B"):
        describe_model("Llama-3.1")


# ---------------------------------------------------------------------------
# Boundaries and defaults, each a number worked by hand (found by mutation testing)
# ---------------------------------------------------------------------------

def test_defaults_are_the_papers():
    # base 10000; linear by 1 is no scaling at all; a factor of exactly 1 is allowed
    np.testing.assert_allclose(host(rope_inv_freq(8)[0]), THETA_8, rtol=1e-15)
    np.testing.assert_allclose(host(rope_inv_freq(8, 1e4, {"rope_type": "linear", "factor": 1.0})[0]), THETA_8,
                               rtol=1e-15)
    # a base of 1.5 is unusual but legal: theta_i = 1.5^(-2i/8)
    np.testing.assert_allclose(host(rope_inv_freq(8, 1.5)[0]), [1.5 ** (-i / 4) for i in range(4)], rtol=1e-15)
    # YaRN's ramp: beta_fast 32, beta_slow 1, truncated to whole pairs, as in BY_PARTS_8: kept share (1, 1, .5, 0)
    np.testing.assert_allclose(host(by_parts_ramp(8, 1e4, 2048)), [1.0, 1.0, 0.5, 0.0], rtol=1e-15)


@pytest.mark.parametrize("train_len, base, gamma", [
    # i(n) = d ln(L / (2 pi n)) / (2 ln base), low = max(floor i(32), 0), high = min(ceil i(1), d - 1); the kept
    # share is 1 - clip((i - low) / (high - low), 0, 1)
    # L 200: i(32) = log10(0.995) < 0 -> low 0; i(1) = log10(31.8) = 1.50 -> high 2: ramp (0, .5, 1, 1)
    (200.0, 1e4, [1.0, 0.5, 0.0, 0.0]),
    # base 10, L 630: i(n) = 4 log10(L / (2 pi n)): i(32) = 1.98 -> low 1; i(1) = 8.005 -> 9, capped at d - 1 = 7:
    # ramp (i - 1) / 6 = (0, 0, 1/6, 2/6)
    (630.0, 10.0, [1.0, 1.0, 5 / 6, 4 / 6]),
    # L 5: i(1) = log10(0.80) = -0.1 -> high 0 = low: the zero-width ramp gets high = 0.001, so only pair 0 is kept
    (5.0, 1e4, [1.0, 0.0, 0.0, 0.0]),
    # L 4e9: i(32) = log10(1.99e7) = 7.3 -> low 7; i(1) = 8.8 -> 9, capped at 7: again zero width, high = 7.001, and
    # every pair (i <= 3) lies below the ramp, so all are kept
    (4e9, 1e4, [1.0, 1.0, 1.0, 1.0]),
    # L 789 (= 2 pi 10^2.1): i(1) = 2.1 -> high 3, while beta_slow = 2 would give i(2) = 1.8 -> 2; i(32) = 0.59 ->
    # low 0: ramp i / 3 = (0, 1/3, 2/3, 1)
    (789.0, 1e4, [1.0, 2 / 3, 1 / 3, 0.0]),
])
def test_by_parts_ramp_edges_by_hand(train_len, base, gamma):
    np.testing.assert_allclose(host(by_parts_ramp(8, base, train_len)), gamma, rtol=1e-12, atol=1e-15)


def test_a_wavelength_equal_to_the_training_length_counts_as_reaching_it():
    # lambda_2 = 2 pi / 0.01 = 200 pi exactly as computed; pairs 0 and 1 fall short of L = 200 pi, pair 2 reaches it
    assert float(host(wavelengths(8, 1e4))[2]) == 2 * math.pi * 100
    assert critical_dimension(8, 1e4, 2 * math.pi * 100) == (2, 4)


def test_the_pretraining_base_defaults_to_10000():
    # L = 628.33 lies between lambda_2 = 2 pi 100 = 628.319 (base 10^4) and 2 pi 10001^(1/2) = 628.350, so only
    # base 10^4 gives d_extra = 6: T_extra = 2 pi 10^4^(6/8) = 2000 pi, and beta = (T / 2 pi)^(8/6)
    assert extrapolation_bound(8, 1e4, 628.33) == pytest.approx(2000 * math.pi, rel=1e-14)
    assert base_for_length(8, 1e5, 628.33) == pytest.approx((1e5 / (2 * math.pi)) ** (8 / 6), rel=1e-12)
    with pytest.raises(ValueError, match=r"With train_len=6 no pair completes a turn"):
        base_for_length(8, 100, 6)
    assert base_for_length(8, 100, 7) == pytest.approx((100 / (2 * math.pi)) ** (8 / 2), rel=1e-12)   # d_extra 2


def test_wavelength_table_marks_pairs_strictly_above_the_threshold():
    # head_dim 8, base 10^4: lambda = 2 pi (1, 10); a wavelength equal to the threshold is not above it
    rows = wavelength_table(head_dim=8, pairs=(0, 1), threshold=2 * math.pi)
    assert [(r["pair"], r["theta"], r["above_threshold"], r["first_above_threshold"]) for r in rows] == [
        (0, 1.0, False, False), (1, 0.1, True, True)]
    assert not any(r["first_above_threshold"] for r in wavelength_table(threshold=1e9))     # none above: no extra row
    # the default threshold is 8192: a base that puts lambda_1 = 2 pi b^(1/2) at 8192.5 marks pair 1
    b = (8192.5 / (2 * math.pi)) ** 2
    assert [r["above_threshold"] for r in wavelength_table(head_dim=4, base=b, pairs=(0, 1))] == [False, True]


def test_longrope_attention_factor_edges_and_explicit_values():
    assert longrope_attention_factor(1.0, 4096) == 1.0
    assert longrope_attention_factor(1.5, 4096) == pytest.approx(math.sqrt(1 + math.log(1.5) / math.log(4096)),
                                                                  rel=1e-15)
    cfg = {**LONGROPE_OK, "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}
    assert rope_inv_freq(8, 1e4, {**cfg, "attention_factor": 0.9}, max_position_embeddings=16384)[1] == 0.9
    # an explicit factor 8 beats max_position_embeddings / L = 4: sqrt(1 + ln 8 / ln 4096) = sqrt(1 + 3/12)
    assert rope_inv_freq(8, 1e4, {**cfg, "factor": 8.0}, max_position_embeddings=16384)[1] == pytest.approx(
        math.sqrt(1.25), rel=1e-15)


def test_llama3_with_a_low_factor_other_than_1():
    # L 1000, low 2, high 4, factor 2: lambda = 2 pi (1, 10, 100, 1000) = 6.3, 62.8, 628, 6283. Kept below
    # L / 4 = 250 (pairs 0, 1), divided by 2 above L / 2 = 500 (pairs 2, 3)
    cfg = {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 2.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 1000}
    np.testing.assert_allclose(host(rope_inv_freq(8, 1e4, cfg)[0]), [1.0, 0.1, 0.005, 0.0005], rtol=1e-15)


def test_ntk_by_parts_reads_the_trained_length_from_max_position_embeddings():
    cfg = {"rope_type": "ntk_by_parts", "factor": 2.0}
    np.testing.assert_allclose(host(rope_inv_freq(8, 1e4, cfg, max_position_embeddings=2048)[0]), BY_PARTS_8,
                               rtol=1e-12)


LLAMA3_NEEDS = {"rope_type": "llama3", "factor": 2.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8}


@pytest.mark.parametrize("cfg, extra, message", [
    ({"rope_type": t}, dict(seq_len=10, max_position_embeddings=8),
     rf"^rope_type '{t}' needs rope_scaling\['factor'\], which is missing\. Copy it from the model's config\.json\.$")
    for t in ("ntk", "dynamic", "ntk_by_parts", "yarn", "llama3")
] + [
    (LLAMA3_NEEDS, {}, r"^rope_type 'llama3' needs rope_scaling\['low_freq_factor'\], which is missing"),
    ({**LLAMA3_NEEDS, "low_freq_factor": 0.0}, {}, r"low_freq_factor=0\.0 and high_freq_factor=4\.0; llama3 needs 0 <"),
    ({**LLAMA3_NEEDS, "low_freq_factor": 5.0}, {}, r"low_freq_factor=5\.0 and high_freq_factor=4\.0; llama3 needs"),
    ({**YARN_2, "beta_fast": 4, "beta_slow": 4}, {}, r"beta_fast=4\.0 and beta_slow=4\.0; beta_fast counts"),
    ({**LONGROPE_OK, "short_factor": [True, 1, 1, 1]}, {}, r"'short_factor'\] must hold positive numbers"),
    ({**LONGROPE_OK, "short_factor": ["2", 1, 1, 1]}, {}, r"'short_factor'\] must hold positive numbers"),
    ({**LONGROPE_OK, "long_factor": [0, 1, 1, 1]}, {}, r"'long_factor'\] must hold positive numbers"),
    ({"rope_type": "default", "partial_rotary_factor": 0.5}, {}, r"carries rope_theta or partial_rotary_factor"),
    ({"rope_type": "ntk", "factor": 2.0}, dict(head_dim=2),
     r"^rope_type 'ntk' rescales the base by s\^\(d/\(d-2\)\), which needs a rotary dimension above 2; got 2\.$"),
    ({"rope_type": "dynamic", "factor": 2.0}, dict(head_dim=2, seq_len=4, max_position_embeddings=2),
     r"^rope_type 'dynamic' rescales the base"),
    (None, dict(head_dim=True), r"^head_dim must be an integer >= 1, got True\.$"),
    (None, dict(head_dim=8.0), r"^head_dim must be an integer >= 1, got 8\.0\.$"),
    (None, dict(head_dim=0), r"^head_dim must be an integer >= 1, got 0\.$"),
    (None, dict(partial_rotary_factor=0), r"partial_rotary_factor must be in \(0, 1\], got 0\.$"),
    (None, dict(partial_rotary_factor=1.5), r"partial_rotary_factor must be in \(0, 1\], got 1\.5\.$"),
    (None, dict(head_dim=2, partial_rotary_factor=0.4), r"head_dim=2 with partial_rotary_factor=0\.4 gives rotary_dim=0"),
], ids=lambda v: re.sub(r"\W+", "_", v).strip("_") if isinstance(v, str) else None)   # plain ids: mutmut
def test_each_refusal_names_the_method_and_the_setting(cfg, extra, message):
    kwargs = {"head_dim": 8, **extra}
    with pytest.raises(ValueError, match=message):
        rope_inv_freq(kwargs.pop("head_dim"), 1e4, cfg, **kwargs)


def test_ntk_needs_more_than_one_pair_but_two_are_enough():
    # d 4: base' = 10^4 2^(4/2), theta_1 = base'^(-1/2) = 0.01 / 2
    np.testing.assert_allclose(host(rope_inv_freq(4, 1e4, {"rope_type": "ntk", "factor": 2.0})[0]), [1.0, 0.005],
                               rtol=1e-15)


@pytest.mark.parametrize("head_dim", [0, True, 8.0, 7])
def test_thetas_refuse_a_head_that_is_not_a_positive_even_integer(head_dim):
    with pytest.raises(ValueError, match=rf"^head_dim must be an integer >= 2 and even, got {head_dim!r} \(RoPE "
                                         r"rotates pairs of channels\)\.$"):
        thetas(head_dim, 1e4)


def test_proportional_rope_reports_the_whole_head_as_its_rotary_width():
    """p-RoPE rotates every channel pair, the slow ones at frequency 0: its tables and its rotary_dim are the head's
    width (16 here), not d_head * partial_rotary_factor (4), which is what NeoX's partial rotary turns."""
    from mini_transformer.positional.rope import RotaryEmbedding
    r = RotaryEmbedding(16, 10000.0, rope_scaling={"rope_type": "proportional", "factor": 1.0}, partial_rotary_factor=0.25)
    cos, sin = r.at(backend.xp.arange(3))
    assert r.rotary_dim == 16 and cos.shape == (3, 16) and sin.shape == (3, 16)
    # pairs 0 and 1 turn (theta_0 = 1, theta_1 = 10000^(-2/16)); pairs 2..7 stand still: cos 1, sin 0 at every position
    assert float(cos[2, 0]) == math.cos(2.0) and abs(float(sin[2, 1]) - math.sin(2 * 10000.0 ** (-2 / 16))) < 1e-15
    assert bool((cos[:, 2:8] == 1.0).all()) and bool((sin[:, 2:8] == 0.0).all())
    neox = RotaryEmbedding(16, 10000.0, partial_rotary_factor=0.25)
    assert neox.rotary_dim == 4 and neox.at(backend.xp.arange(3))[0].shape == (3, 4)
