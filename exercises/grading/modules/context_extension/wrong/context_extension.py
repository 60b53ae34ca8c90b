"""Wrong critical_dimension, ntk_base, yarn_attention_factor and llama3_inv_freq, as readers write them."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("critical_floor", "context_extension.critical_dimension", "misconception", "floor"),
    ("critical_pairs", "context_extension.critical_dimension", "misconception", "pair_count"),
    ("critical_no_two_pi", "context_extension.critical_dimension", "misconception", "no_two_pi"),
    ("critical_unclipped", "context_extension.critical_dimension", "misconception", "unclipped"),
    ("critical_as_float", "context_extension.critical_dimension", "numbers", None),
    ("ntk_inverted", "context_extension.ntk_base", "misconception", "inverted_exponent"),
    ("ntk_times_factor", "context_extension.ntk_base", "misconception", "plain_factor"),
    ("ntk_precedence", "context_extension.ntk_base", "misconception", "precedence"),
    ("ntk_pairs_exponent", "context_extension.ntk_base", "numbers", None),
    ("yarn_log10", "context_extension.yarn_attention_factor", "misconception", "log10"),
    ("yarn_squared", "context_extension.yarn_attention_factor", "misconception", "squared"),
    ("yarn_no_guard", "context_extension.yarn_attention_factor", "misconception", "no_guard"),
    ("yarn_mscale_ignored", "context_extension.yarn_attention_factor", "misconception", "mscale_ignored"),
    ("llama3_swapped", "context_extension.llama3_inv_freq", "misconception", "bands_swapped"),
    ("llama3_blend_inverted", "context_extension.llama3_inv_freq", "misconception", "blend_inverted"),
    ("llama3_no_two_pi", "context_extension.llama3_inv_freq", "misconception", "no_two_pi"),
    ("llama3_in_place", "context_extension.llama3_inv_freq", "mutated", None),
]


def critical_floor(d_head, base, train_len):
    x = (d_head / 2) * math.log(train_len / (2 * math.pi), base)
    return 2 * min(max(math.floor(x), 0), d_head // 2)  # 45.03 -> 45 pairs


def critical_pairs(d_head, base, train_len):
    x = (d_head / 2) * math.log(train_len / (2 * math.pi), base)
    return min(max(math.ceil(x), 0), d_head // 2)  # pairs, not dimensions


def critical_no_two_pi(d_head, base, train_len):
    x = (d_head / 2) * math.log(train_len, base)  # compares base^(2i/d) with L, not the wavelength
    return 2 * min(max(math.ceil(x), 0), d_head // 2)


def critical_unclipped(d_head, base, train_len):
    return 2 * math.ceil((d_head / 2) * math.log(train_len / (2 * math.pi), base))  # the formula, as printed


def critical_as_float(d_head, base, train_len):
    x = (d_head / 2) * math.log(train_len / (2 * math.pi), base)
    return 2 * min(max(x, 0), d_head // 2)  # no rounding: 90.06 for Llama 2


def ntk_inverted(base, factor, rotary_dim):
    return base * factor ** ((rotary_dim - 2) / rotary_dim)


def ntk_times_factor(base, factor, rotary_dim):
    return base * factor


def ntk_precedence(base, factor, rotary_dim):
    return base * factor ** rotary_dim / (rotary_dim - 2)


def ntk_pairs_exponent(base, factor, rotary_dim):
    pairs = rotary_dim // 2  # the number of pairs where the dimension belongs
    return base * factor ** (pairs / (pairs - 2)) if pairs > 2 else base * factor


def yarn_log10(factor, mscale=1.0):
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log10(factor) + 1.0


def yarn_squared(factor, mscale=1.0):
    return 1.0 if factor <= 1 else (0.1 * mscale * math.log(factor) + 1.0) ** 2


def yarn_no_guard(factor, mscale=1.0):
    return 0.1 * mscale * math.log(factor) + 1.0


def yarn_mscale_ignored(factor, mscale=1.0):
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0


def _bands(inv_freq, L, low, high):
    wavelength = 2 * math.pi / inv_freq
    return wavelength, wavelength < L / high, wavelength > L / low


def llama3_swapped(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    L = original_max_position_embeddings
    wavelength, fast, slow = _bands(inv_freq, L, low_freq_factor, high_freq_factor)
    g = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - g) * inv_freq / factor + g * inv_freq
    return xp.where(fast, inv_freq / factor, xp.where(slow, inv_freq, blended))


def llama3_blend_inverted(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    L = original_max_position_embeddings
    wavelength, fast, slow = _bands(inv_freq, L, low_freq_factor, high_freq_factor)
    g = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    return xp.where(fast, inv_freq, xp.where(slow, inv_freq / factor, g * inv_freq / factor + (1 - g) * inv_freq))


def llama3_no_two_pi(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    L = original_max_position_embeddings
    wavelength = 1.0 / inv_freq
    g = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - g) * inv_freq / factor + g * inv_freq
    return xp.where(wavelength < L / high_freq_factor, inv_freq,
                    xp.where(wavelength > L / low_freq_factor, inv_freq / factor, blended))


def llama3_in_place(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    L = original_max_position_embeddings
    wavelength, fast, slow = _bands(inv_freq, L, low_freq_factor, high_freq_factor)
    g = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - g) * inv_freq / factor + g * inv_freq
    inv_freq[slow] /= factor  # writes into the caller's array
    inv_freq[~fast & ~slow] = blended[~fast & ~slow]
    return inv_freq
