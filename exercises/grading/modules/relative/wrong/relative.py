"""Wrong clipped_relative_index and relative_shift, as readers write them."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("index_sign_reversed", "relative.clipped_relative_index", "misconception", "sign_reversed"),
    ("index_no_offset", "relative.clipped_relative_index", "misconception", "no_offset"),
    ("index_2k_minus_1_rows", "relative.clipped_relative_index", "misconception", "clip_off_by_one"),
    ("index_from_zero", "relative.clipped_relative_index", "misconception", "positions_ignored"),
    ("index_float", "relative.clipped_relative_index", "dtype", None),
    ("shift_wrong_way", "relative.relative_shift", "misconception", "wrong_way"),
    ("shift_no_pad", "relative.relative_shift", "shape", "missing_pad"),
    ("shift_flattens_batch", "relative.relative_shift", "misconception", "batch_flattened"),
    ("shift_square", "relative.relative_shift", "shape", "square_only"),
    ("shift_in_place", "relative.relative_shift", "mutated", None),
]


def index_sign_reversed(q_pos, k_pos, k):
    distance = q_pos[:, None] - k_pos[None, :]  # i - j: the past gets the future's rows
    return xp.clip(distance, -k, k) + k


def index_no_offset(q_pos, k_pos, k):
    return xp.clip(k_pos[None, :] - q_pos[:, None], -k, k)  # rows -k .. k


def index_2k_minus_1_rows(q_pos, k_pos, k):
    distance = k_pos[None, :] - q_pos[:, None]
    return xp.minimum(xp.maximum(distance, 1 - k), k - 1) + k - 1  # |d| < k kept: one row short each side


def index_from_zero(q_pos, k_pos, k):
    T_q, T_k = len(q_pos), len(k_pos)
    distance = xp.arange(T_k)[None, :] - xp.arange(T_q)[:, None]  # numbered, not positioned
    return xp.clip(distance, -k, k) + k


def index_float(q_pos, k_pos, k):
    distance = (k_pos[None, :] - q_pos[:, None]).astype(xp.float64)
    return xp.clip(distance, -k, k) + k  # float rows cannot index a table


def shift_wrong_way(x):
    *lead, T_q, L = x.shape
    T_k = L - T_q + 1
    i = xp.arange(T_q)[:, None]
    j = xp.arange(T_k)[None, :]
    return x[..., i, j + i]  # row i starts i columns in


def shift_no_pad(x):
    *lead, T_q, L = x.shape
    flat = x.reshape(*lead, T_q * L)
    rows = flat[..., T_q:].reshape(*lead, T_q, L - 1)  # without the pad only L - 1 columns are left
    return rows[..., :L - T_q + 1]


def shift_flattens_batch(x):
    *lead, T_q, L = x.shape
    padded = xp.concatenate([xp.zeros((*lead, T_q, 1), dtype=x.dtype), x], axis=-1)
    flat = padded.reshape(-1)  # every (batch, head) slice in one row
    rows = flat[T_q:T_q + x.size].reshape(*lead, T_q, L)
    return rows[..., :L - T_q + 1]


def shift_square(x):
    *lead, T_q, L = x.shape
    padded = xp.concatenate([xp.zeros((*lead, T_q, 1), dtype=x.dtype), x], axis=-1)
    rows = padded.reshape(*lead, T_q * (L + 1))[..., T_q:].reshape(*lead, T_q, L)
    return rows[..., :T_q]  # as many keys as queries


def shift_in_place(x):
    *lead, T_q, L = x.shape
    for i in range(T_q):  # slide each row left in place, then read the block
        x[..., i, :L - (T_q - 1 - i)] = x[..., i, T_q - 1 - i:].copy()
    return x[..., :L - T_q + 1].copy()
