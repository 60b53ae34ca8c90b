"""Wrong RotaryEmbedding classes."""
import os

from mini_transformer.engine.backend import xp


# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("OffsetIgnored", "rope.RotaryEmbedding", "misconception", "offset_ignored"),
    ("AnglesNotDuplicated", "rope.RotaryEmbedding", "misconception", "angles_not_duplicated"),
    ("StackedTables", "rope.RotaryEmbedding", "type", None),
    ("DividesByPosition", "rope.RotaryEmbedding", "nan", None),
    ("CallNotWritten", "rope.RotaryEmbedding", "unfinished", None),
    ("ExitsTheProcess", "rope.RotaryEmbedding", "crashed", None),
    ("Float32Frequencies", "rope.RotaryEmbedding", "misconception", "float32_tables"),
    ("Float32Tables", "rope.RotaryEmbedding", "dtype", "float32_tables"),
    ("PositionsFromOne", "rope.RotaryEmbedding", "misconception", "positions_from_one"),
]


class _Base:
    def __init__(self, d_head, base=10000.0):
        self.d_head, self.base = d_head, base
        self.inv_freq = base ** (-xp.arange(0, d_head, 2, dtype=xp.float64) / d_head)

    def positions(self, T, offset):
        return xp.arange(offset, offset + T, dtype=xp.float64)

    def __call__(self, T, offset=0):
        angles = self.positions(T, offset)[:, None] * self.inv_freq[None, :]
        angles = xp.concatenate([angles, angles], axis=-1)
        return xp.cos(angles), xp.sin(angles)


class OffsetIgnored(_Base):
    def __call__(self, T, offset=0):
        pos = xp.arange(T, dtype=xp.float64)  # forgot the offset
        angles = pos[:, None] * self.inv_freq[None, :]
        angles = xp.concatenate([angles, angles], axis=-1)
        return xp.cos(angles), xp.sin(angles)


class AnglesNotDuplicated(_Base):
    def __call__(self, T, offset=0):
        angles = self.positions(T, offset)[:, None] * self.inv_freq[None, :]
        angles = xp.repeat(angles, 2, axis=-1)  # [a0, a0, a1, a1, ...]: the interleaved layout
        return xp.cos(angles), xp.sin(angles)


class StackedTables(_Base):
    def __call__(self, T, offset=0):
        cos, sin = super().__call__(T, offset)
        return xp.stack([cos, sin])  # one (2, T, d_head) array, not a tuple


class DividesByPosition(_Base):
    def __call__(self, T, offset=0):
        pos = self.positions(T, offset)
        angles = (pos[:, None] / pos[:, None]) * pos[:, None] * self.inv_freq[None, :]  # 0/0 at position 0
        angles = xp.concatenate([angles, angles], axis=-1)
        return xp.cos(angles), xp.sin(angles)


class CallNotWritten:
    def __init__(self, d_head, base=10000.0):
        self.d_head, self.base = d_head, base

    def __call__(self, T, offset=0):
        """Still the stub."""
        raise NotImplementedError("Exercise 6.3")


class ExitsTheProcess(_Base):
    def __call__(self, T, offset=0):
        os._exit(3)


class Float32Frequencies(_Base):
    def __init__(self, d_head, base=10000.0):
        super().__init__(d_head, base)
        self.inv_freq = self.inv_freq.astype(xp.float32)  # the tables come out float64, a little off


class Float32Tables(_Base):
    def __call__(self, T, offset=0):
        angles = self.positions(T, offset).astype(xp.float32)[:, None] * self.inv_freq.astype(xp.float32)[None, :]
        angles = xp.concatenate([angles, angles], axis=-1)
        return xp.cos(angles), xp.sin(angles)  # float32 tables


class PositionsFromOne(_Base):
    def positions(self, T, offset):
        return super().positions(T, offset + 1)
