r"""Checks of ``solutions/alibi.py`` (chapter 7, and the alibi drill): ALiBi slopes and biases, and their known mistakes."""
import numpy as np

from exercises.grading.drill_target import Drill
from exercises.grading.targets import Case, Misconception, Target


def _slopes_rule(n, first_power=1, pick=0):
    def pow2(c):
        h = np.arange(first_power, first_power + c, dtype=np.float64)
        return 2.0 ** (-8.0 * h / c)
    c = 1 << (n.bit_length() - 1)
    if c == n:
        return pow2(n)
    return np.concatenate([pow2(c), pow2(2 * c)[pick::2][: n - c]])


def _slope_cases():
    return [Case(f"{n} head{'s' if n > 1 else ''}", (n,), show=f"n_heads = {n}") for n in (8, 1, 2, 16, 6, 3, 12)]


ALIBI_SLOPES = Target("alibi_slopes", "array", _slope_cases, [
    Misconception("non_power_of_two", "the power-of-two formula used for every head count",
                  "2^(-8h/H) is the rule only when H is a power of two. Otherwise take the slopes of the "
                  "largest power of two c below H, then every other slope (the 1st, 3rd, ...) of the 2c "
                  "sequence. For 6 heads: 1/4, 1/16, 1/64, 1/256, 1/2, 1/8.",
                  lambda n: 2.0 ** (-8.0 * np.arange(1, n + 1) / n)),
    Misconception("starts_at_one", "the first slope is 1",
                  "Head h = 1 .. H gets 2^(-8h/H): the first slope is 2^(-8/H) (1/2 for 8 heads), not 2^0.",
                  lambda n: _slopes_rule(n, first_power=0)),
    Misconception("duplicate_slopes", "the extra slopes repeat ones already used",
                  "For H not a power of two, the extra heads take the 1st, 3rd, 5th, ... slope of the 2c "
                  "sequence: those fall between the c slopes you already have. The 2nd, 4th, ... repeat them.",
                  lambda n: _slopes_rule(n, pick=1)),
    Misconception("reversed", "slopes in increasing order",
                  "Head 1 has the steepest slope 2^(-8/H); the slopes shrink from there.",
                  lambda n: _slopes_rule(n)[::-1].copy()),
    Misconception("next_power_of_two", "the first H slopes of the next power of two",
                  "Rounding H up and keeping the first H slopes gives 6 heads 1/2, 1/4, ..., 1/64: the gentle "
                  "slopes (the heads that look far) are cut off. The paper rounds down: the c slopes of the "
                  "largest power of two c below H, then every other slope of the 2c sequence.",
                  lambda n: 2.0 ** (-8.0 * np.arange(1, n + 1) / (1 << (n - 1).bit_length()))),
])


def _bias_cases():
    return [Case(f"H {H}, T_q {tq}, T_k {tk}", (H, tq, tk), show=f"n_heads = {H}, T_q = {tq}, T_k = {tk}")
            for H, tq, tk in [(8, 5, 5), (4, 1, 7), (1, 1, 1), (6, 3, 3), (2, 3, 6)]]


def _bias(H, tq, tk, sign=-1.0, q_start=None, clamp=True, batch=True, absolute=False):
    from solutions.alibi import alibi_slopes
    q = np.arange(tk - tq if q_start is None else q_start, (tk - tq if q_start is None else q_start) + tq)[:, None]
    dist = (q - np.arange(tk)[None, :]).astype(np.float64)
    if absolute:
        dist = np.abs(dist)
    elif clamp:
        dist = np.maximum(dist, 0.0)
    b = sign * np.asarray(alibi_slopes(H))[:, None, None] * dist[None]
    return b[None] if batch else b


ALIBI_BIAS = Target("alibi_bias", "array", _bias_cases, [
    Misconception("positive_sign", "the bias rewards distance",
                  "ALiBi subtracts m_h * (i - j): far keys lose score. Yours adds it.",
                  lambda H, tq, tk: _bias(H, tq, tk, sign=1.0)),
    Misconception("queries_at_start", "queries placed at the first T_q positions",
                  "The queries are the last T_q of the T_k positions (one decode step is a single query at "
                  "position T_k - 1). Start the query positions at T_k - T_q.",
                  lambda H, tq, tk: _bias(H, tq, tk, q_start=0)),
    Misconception("future_not_clamped", "future keys get a bonus",
                  "For j > i, -m_h * (i - j) is positive. Clamp the distance at 0 so future keys get bias 0; "
                  "the causal mask removes them anyway.",
                  lambda H, tq, tk: _bias(H, tq, tk, clamp=False)),
    Misconception("missing_batch_axis", "no leading batch axis",
                  "Return (1, H, T_q, T_k) so the bias broadcasts against scores (B, H, T_q, T_k).",
                  lambda H, tq, tk: _bias(H, tq, tk, batch=False)),
    Misconception("symmetric_in_causal", "future keys penalised like past ones",
                  "-m_h * |i - j| is the encoder's form (Exercise 7.3). The causal bias is -m_h * (i - j) for "
                  "j <= i and 0 for the future keys, which the mask removes.",
                  lambda H, tq, tk: _bias(H, tq, tk, absolute=True)),
])


def _symmetric_cases():
    return [Case(f"H {H}, T {T}", (H, T), show=f"n_heads = {H}, T = {T}")
            for H, T in [(2, 3), (8, 6), (1, 1), (6, 5), (4, 9)]]


ALIBI_BIAS_SYMMETRIC = Target("alibi_bias_symmetric", "array", _symmetric_cases, [
    Misconception("causal_form", "the causal bias used in an encoder",
                  "With no mask, the future keys are real keys: clamping i - j at 0 makes every future key look "
                  "as close as the query itself. Use the distance either way, |i - j|.",
                  lambda H, T: _bias(H, T, T)),
    Misconception("signed_distance", "the signed distance i - j",
                  "-m_h * (i - j) is positive for a future key (j > i): it rewards looking ahead. The encoder's "
                  "penalty is -m_h * |i - j|, the same on both sides.",
                  lambda H, T: _bias(H, T, T, clamp=False)),
    Misconception("positive_sign", "the bias rewards distance",
                  "ALiBi subtracts m_h * |i - j|: far keys lose score. Yours adds it.",
                  lambda H, T: _bias(H, T, T, sign=1.0, absolute=True)),
    Misconception("missing_batch_axis", "no leading batch axis",
                  "Return (1, H, T, T) so the bias broadcasts against scores (B, H, T, T).",
                  lambda H, T: _bias(H, T, T, absolute=True, batch=False)),
])


TARGETS = [ALIBI_SLOPES, ALIBI_BIAS, ALIBI_BIAS_SYMMETRIC]

# the timed drill, `python -m exercises drill alibi`: the target from the chapter's "Retype by hand" table
DRILL = Drill(("alibi_slopes", "alibi_bias"), minutes=8)


# ---------------------------------------------------------------------------
# Held-out cases: other head counts and lengths, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

HELD_OUT = {
    "alibi_slopes": lambda: [Case(f"held-out {i}", (n,), show="(held out)") for i, n in enumerate((4, 5, 24, 32))],
    "alibi_bias": lambda: [Case(f"held-out {i}", (H, tq, tk), show="(held out)")
                           for i, (H, tq, tk) in enumerate([(12, 4, 9), (3, 2, 2), (16, 1, 20)])],
    "alibi_bias_symmetric": lambda: [Case(f"held-out {i}", (H, T), show="(held out)")
                                     for i, (H, T) in enumerate([(12, 7), (5, 2), (16, 11)])],
}
