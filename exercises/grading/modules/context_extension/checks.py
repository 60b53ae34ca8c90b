r"""Checks of ``solutions/context_extension.py`` (chapter 8): cases and known mistakes for every exercise."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target


# ---------------------------------------------------------------------------
# 8.1 critical_dimension
# ---------------------------------------------------------------------------

def _critical_with(slip):
    r"""Liu et al.'s d_extra with one reader's slip in it, keyed by the misconception's name."""
    def critical(d_head, base, train_len):
        length = train_len if slip == "no_two_pi" else train_len / (2 * math.pi)
        log = math.log(length) if slip == "natural_log" else math.log(length) / math.log(base)
        x = (d_head if slip == "full_dimension" else d_head / 2) * log
        pairs = math.floor(x) if slip == "floor" else math.ceil(x)
        if slip != "unclipped":
            pairs = min(max(pairs, 0), d_head // 2)
        return pairs if slip == "pair_count" else 2 * pairs
    return critical


def _critical_cases():
    rows = [("Llama 2: d 128, base 10000, L 4096", 128, 10000.0, 4096),
            ("LLaMA: d 128, base 10000, L 2048", 128, 10000.0, 2048),
            ("this book's model: d 32, base 10000, L 64", 32, 10000.0, 64),
            ("Llama 3: d 128, base 500000, L 8192", 128, 500000.0, 8192),
            ("Phi-3-mini: d 96, base 10000, L 4096", 96, 10000.0, 4096),
            ("L below one turn of pair 0: d 64, L 4", 64, 10000.0, 4),
            ("every pair turns: d 8, L 10^9", 8, 10000.0, 10 ** 9)]
    return [Case(label, (d, base, L), show=f"d_head = {d}, base = {base:g}, train_len = {L}")
            for label, d, base, L in rows]


def _slip(key, title, hint):
    return Misconception(key, title, hint, _critical_with(key))


CRITICAL_DIMENSION = Target("critical_dimension", "float", _critical_cases, [
    _slip("floor", "floor instead of ceiling",
          "d_extra counts the pairs whose wavelength is below L: pair i qualifies when i < (d/2) log_base(L/2 pi), "
          "and there are ceil(...) of them (45.03 for Llama 2 means pairs 0..45, so 46 pairs, d_extra 92)."),
    _slip("pair_count", "the number of pairs, not of dimensions",
          "d_extra is counted in dimensions: two per pair. Multiply the pair count by 2 (Llama 2: 46 pairs, 92)."),
    _slip("no_two_pi", "L compared with base^(2i/d) instead of the wavelength",
          "Pair i turns once every 2 pi base^(2i/d) tokens, so the condition is base^(2i/d) < L / (2 pi): divide "
          "L by 2 pi before the logarithm."),
    _slip("natural_log", "the natural logarithm instead of log base `base`",
          "Solve base^(2i/d) = L/(2 pi) for i: i = (d/2) ln(L/2 pi) / ln(base). Divide by ln(base)."),
    _slip("full_dimension", "d instead of d/2 in front of the logarithm",
          "theta_i = base^(-2i/d): the exponent has 2i over d, so i = (d/2) log_base(L/2 pi), not d log_base(...)."),
    _slip("unclipped", "the count is not clipped to the pairs the head has",
          "The formula can go below 0 (L shorter than one turn of pair 0: no pair turns) or past d/2 (every "
          "pair turns). A head has pairs 0 .. d/2 - 1 only: clip the count to 0 .. d/2, d_extra to 0 .. d_head."),
])


# ---------------------------------------------------------------------------
# 8.2 ntk_base
# ---------------------------------------------------------------------------

def _ntk_cases():
    rows = [(10000.0, 4.0, 128), (10000.0, 8.0, 64), (500000.0, 2.0, 128), (10000.0, 4.0, 4),
            (10000.0, 1.0, 32), (10000.0, 2.5, 32)]
    return [Case(f"base {b:g}, factor {s:g}, rotary_dim {d}", (b, s, d),
                 show=f"base = {b:g}, factor = {s:g}, rotary_dim = {d}") for b, s, d in rows]


NTK_BASE = Target("ntk_base", "float", _ntk_cases, [
    Misconception("inverted_exponent", "the exponent (d - 2)/d instead of d/(d - 2)",
                  "The slowest pair has theta = base^(-(d-2)/d). To slow it by exactly s, base' must satisfy "
                  "base'^((d-2)/d) = s base^((d-2)/d), so base' = base s^(d/(d-2)).",
                  lambda b, s, d: b * s ** ((d - 2) / d)),
    Misconception("plain_factor", "base times the factor",
                  "base * s stretches the slowest pair by s^((d-2)/d), a little less than s. The exponent "
                  "d/(d-2) makes it exactly s.",
                  lambda b, s, d: b * s),
    Misconception("precedence", "s ** d / (d - 2): the power binds before the division",
                  "In Python `factor ** d / (d - 2)` is (factor ** d) / (d - 2). Put the exponent in "
                  "parentheses: factor ** (d / (d - 2)).",
                  lambda b, s, d: b * s ** d / (d - 2)),
    Misconception("divided", "the base divided by the factor",
                  "A smaller base makes every pair turn faster. NTK-aware scaling raises the base, so slow "
                  "pairs turn slower: multiply by s^(d/(d-2)).",
                  lambda b, s, d: b / s ** (d / (d - 2))),
])


# ---------------------------------------------------------------------------
# 8.4 yarn_attention_factor
# ---------------------------------------------------------------------------

def _yarn_cases():
    rows = [(4.0, 1.0), (1.0, 1.0), (0.5, 1.0), (40.0, 1.0), (40.0, 0.707), (16.0, 1.0), (2.5, 2.0)]
    return [Case(f"factor {s:g}, mscale {m:g}", (s, m), show=f"factor = {s:g}, mscale = {m:g}") for s, m in rows]


def _yarn(s, m=1.0, log=math.log, guard=True):
    return 1.0 if guard and s <= 1 else 0.1 * m * log(s) + 1.0


YARN_ATTENTION_FACTOR = Target("yarn_attention_factor", "float", _yarn_cases, [
    Misconception("log10", "log base 10 instead of the natural logarithm",
                  "YaRN's fit is 0.1 ln s + 1 with the natural logarithm: math.log, not math.log10 "
                  "(s = 4 gives 1.1386).",
                  lambda s, m=1.0: _yarn(s, m, log=math.log10)),
    Misconception("squared", "the factor on the logits instead of on each vector",
                  "The function returns sqrt(1/t) = 0.1 ln s + 1, which multiplies cos and sin, so both q and k. "
                  "The logits then scale by its square; do not square it here.",
                  lambda s, m=1.0: _yarn(s, m) ** 2),
    Misconception("inverted", "1 / (0.1 ln s + 1)",
                  "The factor sharpens the softmax: it is above 1 for s > 1 (1.1386 at s = 4). You returned its "
                  "inverse, which flattens the attention.",
                  lambda s, m=1.0: 1.0 / _yarn(s, m)),
    Misconception("no_guard", "no special case for s <= 1",
                  "For s <= 1 there is nothing to extend and the factor is 1; 0.1 ln s + 1 would be below 1 "
                  "(0.93 at s = 0.5).",
                  lambda s, m=1.0: _yarn(s, m, guard=False)),
    Misconception("mscale_ignored", "mscale ignored",
                  "The logarithm is multiplied by mscale: 0.1 * mscale * ln s + 1 (DeepSeek's configs give 0.707).",
                  lambda s, m=1.0: _yarn(s)),
])


# ---------------------------------------------------------------------------
# 8.5 llama3_inv_freq
# ---------------------------------------------------------------------------

def _thetas(d, base):
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def _llama3_cases():
    rows = [("Llama 3.1: d 128, base 500000, s 8, l 1, h 4, L 8192", 128, 500000.0, 8.0, 1.0, 4.0, 8192),
            ("d 32, base 10000, s 4, l 1, h 4, L 64", 32, 10000.0, 4.0, 1.0, 4.0, 64),
            ("d 64, base 10000, s 16, l 2, h 8, L 2048", 64, 10000.0, 16.0, 2.0, 8.0, 2048),
            ("d 8, base 10000, s 2, l 1, h 32, L 4096", 8, 10000.0, 2.0, 1.0, 32.0, 4096)]
    return [Case(label, (_thetas(d, base), s, low, high, L),
                 show=f"inv_freq = base^(-2i/d) for d = {d}, base = {base:g}; factor = {s:g}, "
                      f"low_freq_factor = {low:g}, high_freq_factor = {high:g}, "
                      f"original_max_position_embeddings = {L}")
            for label, d, base, s, low, high, L in rows]


def _llama3_with(slip):
    def llama3(inv_freq, s, low, high, L):
        wavelength = (1.0 if slip == "no_two_pi" else 2 * math.pi) / inv_freq
        g = (L / wavelength - low) / (high - low)
        blended = g * inv_freq / s + (1 - g) * inv_freq if slip == "blend_inverted" else \
            (1 - g) * inv_freq / s + g * inv_freq
        if slip == "bands_swapped":
            return np.where(wavelength < L / high, inv_freq / s, np.where(wavelength > L / low, inv_freq, blended))
        if slip == "no_blend":
            return np.where(wavelength < L / high, inv_freq, inv_freq / s)
        return np.where(wavelength < L / high, inv_freq, np.where(wavelength > L / low, inv_freq / s, blended))
    return llama3


LLAMA3_INV_FREQ = Target("llama3_inv_freq", "array", _llama3_cases, [
    Misconception("bands_swapped", "the fast pairs divided and the slow ones kept",
                  "Short wavelengths (lambda < L/h) are the fast pairs that carry local order: keep them. Long "
                  "wavelengths (lambda > L/l) never turned in training: divide those by the factor.",
                  _llama3_with("bands_swapped")),
    Misconception("blend_inverted", "the blend runs the wrong way",
                  "g = (L/lambda - l)/(h - l) is 1 at the fast edge and 0 at the slow edge, so g weighs the kept "
                  "theta: (1 - g) theta / s + g theta.",
                  _llama3_with("blend_inverted")),
    Misconception("no_two_pi", "wavelength taken as 1/theta",
                  "A pair turns once every 2 pi / theta tokens: that is the wavelength the bands compare with L/h "
                  "and L/l.",
                  _llama3_with("no_two_pi")),
    Misconception("no_blend", "no blend between the two bands",
                  "Between lambda = L/h and lambda = L/l the rule blends the kept and the divided frequency, "
                  "with g = (L/lambda - l)/(h - l); only lambda > L/l is divided outright.",
                  _llama3_with("no_blend")),
])


TARGETS = [CRITICAL_DIMENSION, NTK_BASE, YARN_ATTENTION_FACTOR, LLAMA3_INV_FREQ]


# ---------------------------------------------------------------------------
# Held-out cases: other dimensions, bases, lengths and factors, in the instructor's copy and the Gradescope
# bundle only
# ---------------------------------------------------------------------------

HELD_OUT = {
    "critical_dimension": lambda: [Case(f"held-out {i}", (d, base, L), show="(held out)")
                                   for i, (d, base, L) in enumerate([(64, 10000.0, 1024), (96, 500000.0, 32768),
                                                                     (16, 1000.0, 50)])],
    "ntk_base": lambda: [Case(f"held-out {i}", (b, s, d), show="(held out)")
                         for i, (b, s, d) in enumerate([(10000.0, 16.0, 64), (1000000.0, 3.0, 96)])],
    "yarn_attention_factor": lambda: [Case(f"held-out {i}", (s, m), show="(held out)")
                                      for i, (s, m) in enumerate([(8.0, 1.0), (3.0, 0.5), (1.5, 1.0)])],
    "llama3_inv_freq": lambda: [Case(f"held-out {i}", (_thetas(d, base), s, low, high, L), show="(held out)")
                                for i, (d, base, s, low, high, L) in enumerate([(16, 10000.0, 4.0, 1.0, 4.0, 128),
                                                                                (128, 500000.0, 8.0, 1.0, 4.0, 4096)])],
}
