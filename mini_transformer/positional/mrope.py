r"""Multimodal RoPE (M-RoPE, Qwen2-VL): three position ids per token, time, height and width, each turning its own pairs.

RoPE turns pair i at position m by m\theta_i. M-RoPE gives every token three ids
(t, h, w) and splits the d/2 pairs into three sections, ``mrope_section`` =
[s_t, s_h, s_w] with s_t + s_h + s_w = d/2: pair i turns by t\theta_i, h\theta_i or
w\theta_i, the id of the axis its section belongs to.

* **Chunked** (Qwen2-VL, Qwen2.5-VL): pairs 0 .. s_t-1 go to time, the next s_h
  to height, the last s_w to width (the fastest frequencies tell times apart).
* **Interleaved** (Qwen3-VL, ``mrope_interleaved``): pair i goes to height when
  i \equiv 1 (mod 3) and i < 3 s_h, to width when i \equiv 2 (mod 3) and i < 3 s_w,
  and to time otherwise, so every axis gets fast and slow frequencies alike.

The pairing is rotate-half, (i, i + d/2), in all three models.

**Position ids** (``mrope_position_ids``, Qwen2-VL's ``get_rope_index``): a
sequence is a run of segments. Text tokens carry equal ids on all three axes,
so text alone is plain 1-D RoPE. An image grid of t x h x w tokens (after patch
merging), in raster order, gets ids start + (t_idx, h_idx, w_idx). Every
segment starts one past the largest id so far, so text after an image of
grid 1 x 4 x 6 continues from start + 6, not from start + 24: an image costs
max(t, h, w) ids, not t h w. A video (Qwen2.5-VL) ties its time ids to seconds:
frame k of the grid gets the time id floor(k \cdot second\_per\_grid \cdot
tokens\_per\_second).

``GPTConfig.extra`` keys read by the ``"mrope"`` scheme (the sections must leave
a width section of at least 0 pairs):

* ``mrope_section_t`` (int, default \lceil P/3 \rceil of the P = d_head/2 pairs): pairs turned by the time id;
* ``mrope_section_h`` (int, default half the rest, rounded up): pairs turned by the height id; the width
  section takes the remaining pairs;
* ``mrope_interleaved`` (bool, default False): Qwen3-VL's interleaved assignment.

In the model, ``TinyGPT.forward(idx, position_ids=ids)`` takes ids of shape
``(3, B, T)`` (``mrope_position_ids(segments)[:, None]`` for one row); ids of
shape ``(B, T)``, or none, are text ids, equal on all three axes, which makes
the scheme exactly the ``"rope"`` scheme with the same base. A cache continued
without ids continues as text, one past the largest id it holds.
"""
from dataclasses import asdict, dataclass

from ..engine import kernels
from ..engine.backend import asarray, xp
from ..engine.validate import check_int
from .base import PositionalScheme, setting
from .rope import RotaryEmbedding, apply_rotary

AXES = ("time", "height", "width")


# ---------------------------------------------------------------------------
# Position ids
# ---------------------------------------------------------------------------

def mrope_position_ids(segments, tokens_per_second=None):
    r"""The ``(3, T)`` int64 ids (time, height, width) of a sequence given as segments, by Qwen2-VL's rule.

    ``segments`` is a list of ``("text", n)``, ``("image", (t, h, w))`` (the
    grid after patch merging, its t h w tokens in raster order: time, then
    rows, then columns) and ``("video", (t, h, w), second_per_grid)``, which
    needs ``tokens_per_second`` (Qwen2.5-VL). Each segment starts one past the
    largest id so far (0 for the first).
    """
    columns, start = [], 0
    for number, segment in enumerate(segments):
        t_ids, h_ids, w_ids = _segment_ids(number, segment, tokens_per_second)
        columns.append([[start + a for a in t_ids], [start + a for a in h_ids], [start + a for a in w_ids]])
        if t_ids:
            start += max(max(t_ids), max(h_ids), max(w_ids)) + 1
    rows = [sum((c[axis] for c in columns), []) for axis in range(3)]
    return asarray(rows, dtype="int64").reshape(3, len(rows[0]))


def _segment_ids(number, segment, tokens_per_second):
    """The ids of one segment from 0: three lists (time, height, width), after checking the segment."""
    kind = segment[0] if isinstance(segment, (tuple, list)) and segment else None
    if kind == "text" and len(segment) == 2:
        n = check_int(f"mrope_position_ids: segment {number} ('text', n): n", segment[1], minimum=0)
        return list(range(n)), list(range(n)), list(range(n))
    if kind in ("image", "video") and len(segment) == (2 if kind == "image" else 3):
        grid = segment[1]
        if not isinstance(grid, (tuple, list)) or len(grid) != 3:
            raise ValueError(f"mrope_position_ids: segment {number} ({kind!r}) has the grid {grid!r}; it must be "
                             "three integers (t, h, w), the grid after patch merging.")
        t, h, w = (check_int(f"mrope_position_ids: segment {number} ({kind!r}) grid {axis}", n, minimum=1)
                   for axis, n in zip("thw", grid))
        frames = list(range(t))
        if kind == "video":
            frames = _video_time_ids(number, t, segment[2], tokens_per_second)
        t_ids = [frames[k] for k in range(t) for _ in range(h * w)]
        h_ids = [r for _ in range(t) for r in range(h) for _ in range(w)]
        w_ids = [c for _ in range(t) for _ in range(h) for c in range(w)]
        return t_ids, h_ids, w_ids
    raise ValueError(f"mrope_position_ids: segment {number} is {segment!r}; a segment is ('text', n), "
                     "('image', (t, h, w)) or ('video', (t, h, w), second_per_grid).")


def _video_time_ids(number, t, second_per_grid, tokens_per_second):
    """Qwen2.5-VL's time ids of a video's t frames: int(k * second_per_grid * tokens_per_second)."""
    if tokens_per_second is None:
        raise ValueError(f"mrope_position_ids: segment {number} is a video, whose time ids are counted in "
                         "tokens_per_second (Qwen2.5-VL); pass tokens_per_second, e.g. 2 as Qwen2.5-VL's config.")
    for name, value in (("second_per_grid", second_per_grid), ("tokens_per_second", tokens_per_second)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"mrope_position_ids: {name}={value!r} (segment {number}) must be a number >= 0.")
    # int() truncates as the reference's .long() does; the product is never negative
    return [int(k * second_per_grid * tokens_per_second) for k in range(t)]


# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------

def mrope_axis_of_pair(head_dim, mrope_section, interleaved=False):
    r"""Which axis (0 time, 1 height, 2 width) turns each of the head_dim/2 pairs: an int64 array ``(head_dim/2,)``."""
    P = check_int("mrope: head_dim", head_dim, minimum=2, even=True, why="RoPE turns pairs of channels") // 2
    section = [check_int(f"mrope: mrope_section[{a}] ({AXES[a]})", s, minimum=0)
               for a, s in enumerate(_three(mrope_section))]
    if sum(section) != P:
        raise ValueError(f"mrope: mrope_section={list(mrope_section)!r} sums to {sum(section)}, but head_dim="
                         f"{head_dim} has {P} pairs; the three sections must share them all.")
    if not interleaved:
        return xp.repeat(xp.arange(3), asarray(section, dtype="int64"))
    axis = xp.zeros(P, dtype="int64")
    axis[1:3 * section[1]:3] = 1                       # height takes pairs 1, 4, 7, ... (s_h of them)
    axis[2:3 * section[2]:3] = 2                       # width takes 2, 5, 8, ...; time keeps the rest
    counts = [int((axis == a).sum()) for a in range(3)]
    if counts != section:
        raise ValueError(f"mrope: mrope_section={list(mrope_section)!r} cannot be interleaved over {P} pairs: "
                         f"height takes pairs 1, 4, ... up to {3 * section[1] - 2} and width 2, 5, ... up to "
                         f"{3 * section[2] - 1}, but the last pair is {P - 1}; move pairs from height or width to time.")
    return axis


def _three(mrope_section):
    if not isinstance(mrope_section, (tuple, list)) or len(mrope_section) != 3:
        raise ValueError(f"mrope: mrope_section={mrope_section!r} must be three pair counts [time, height, width].")
    return mrope_section


def mrope_cos_sin(position_ids, head_dim, rope_theta, mrope_section, interleaved=False):
    r"""The rotate-half ``(cos, sin)`` of M-RoPE, each ``(..., T, head_dim)``, float64.

    ``position_ids`` ``(3, ..., T)`` are the time, height and width ids. Pair i
    turns by the id of its axis times \theta_i = \mathrm{rope\_theta}^{-2i/d},
    written into channels i and i + d/2 as RoPE's rotate-half tables are.
    """
    pos = asarray(position_ids)
    if pos.ndim < 2 or pos.shape[0] != 3 or pos.dtype.kind not in "iu":
        raise ValueError(f"mrope_cos_sin: position_ids must be integers of shape (3, ..., T), one row per axis "
                         f"(time, height, width), got shape {tuple(pos.shape)} and dtype {pos.dtype}.")
    axis = mrope_axis_of_pair(head_dim, mrope_section, interleaved)                 # (d/2,)
    inv_freq = RotaryEmbedding(head_dim, rope_theta).inv_freq                      # (d/2,) theta_i, as 1-D RoPE
    ids = xp.moveaxis(pos, 0, -1)                                                  # (..., T, 3)
    angles = ids[..., axis].astype("float64") * inv_freq                           # (..., T, d/2) id_axis(i) theta_i
    angles = xp.concatenate([angles, angles], axis=-1)                             # (..., T, d) channels i, i + d/2
    return xp.cos(angles), xp.sin(angles)


# ---------------------------------------------------------------------------
# The scheme
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MRoPESettings:
    """The ``GPTConfig.extra`` keys of the ``"mrope"`` scheme (None: the model decides)."""
    mrope_section_t: int = setting(None, "pairs turned by the time id; default: a third of the pairs, rounded up")
    mrope_section_h: int = setting(None, "pairs turned by the height id; default: half of the rest, rounded up; "
                                         "width takes the remaining pairs")
    mrope_interleaved: bool = setting(False, "Qwen3-VL's interleaved assignment of pairs to axes instead of chunks")


class MRoPE(PositionalScheme):
    """Rotates q and k by three ids per token, one per section of pairs; adds nothing to the input or the scores."""

    Settings = MRoPESettings
    config_fields = ("rope_base",)
    per_row_positions = True
    position_axes = 3

    def __init__(self, d_head, base=10000.0, mrope_section=None, interleaved=False):
        P = check_int("MRoPE: d_head", d_head, minimum=2, even=True, why="RoPE turns pairs of channels") // 2
        section = list(mrope_section) if mrope_section is not None else default_section(P)
        mrope_axis_of_pair(d_head, section, interleaved)                           # refuse a bad split now
        self.d_head, self.base, self.section, self.interleaved = d_head, base, section, interleaved
        self.settings = MRoPESettings(section[0], section[1], interleaved)

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg)
        P = cfg.d_head // 2
        t = default_section(P)[0] if s.mrope_section_t is None else s.mrope_section_t
        h = (P - t + 1) // 2 if s.mrope_section_h is None else s.mrope_section_h
        return cls(cfg.d_head, cfg.rope_base, [t, h, P - t - h], s.mrope_interleaved)

    def signature(self):
        return {**asdict(self.settings), "rope_base": self.base, "mrope_section": list(self.section)}

    def rotate(self, x, pos, layer):
        if pos.ndim < 3:                                          # text ids: equal on all three axes
            pos = xp.broadcast_to(pos, (3,) + pos.shape)
        cos, sin = mrope_cos_sin(pos, self.d_head, self.base, self.section, self.interleaved)   # ([B,] T, d_head)
        if cos.ndim == 3:                                         # per-row ids: (B, 1, T, d_head)
            cos, sin = cos[:, None], sin[:, None]
        rotary = kernels.active().apply_rotary or apply_rotary    # the fast kernel, or the op
        return rotary(x, cos.astype(x.dtype), sin.astype(x.dtype), interleaved=False)


def default_section(P):
    """[s_t, s_h, s_w] for P pairs: a third each, time rounded up, then height; interleaving always fits."""
    t = (P + 2) // 3
    h = (P - t + 1) // 2
    return [t, h, P - t - h]
