r"""The library's positional schemes computed by functions you wrote, so a model trains on your code.

One function a scheme, each named after it and taking the functions of that chapter's exercises:

==============================================================  =========
``sinusoidal(sinusoidal_positional_encoding, base)``             chapter 2
``learned(position_rows, weight)``                               chapter 3
``shaw(clipped_relative_index, like=scheme)``                    chapter 4
``transformer_xl(relative_shift, like=scheme)``                  chapter 4
``t5(relative_position_bucket, like=scheme)``                    chapter 5
``relative_2d(swin_relative_index, like=scheme)``                chapter 5
``rope(rotary, apply_rotary)``                                   chapter 6
``alibi(alibi_slopes, alibi_bias)``                              chapter 7
==============================================================  =========

Each returns a subclass of the library's scheme in which only the reader's part is replaced;
everything else (the gather into the scores, the mask, the parameters) is the library's. A
function written on plain arrays becomes a trainable op here (``rotation``, ``shift_op``), so the
reader writes no backward. ``like=`` copies a built scheme's settings and starting parameters (for a
side-by-side run: ``like=TinyGPT(cfg).positional``); without it the scheme is built from the
constructor's arguments. The checkpoint signature of such a scheme names the reader's function
(``"from_functions": "module.name"``), so its weights never load silently into the library's
scheme, nor the library's into it.
"""
import contextlib
import copy

from mini_transformer.engine import functional as F
from mini_transformer.engine.autograd import Tensor, raw, op
from mini_transformer.engine.backend import asarray, xp
from mini_transformer.engine.nn import Parameter
from mini_transformer.positional.alibi import ALiBi, alibi_bias_at
from mini_transformer.positional.learned import LearnedPositionalEmbedding
from mini_transformer.positional.relative_2d import RelativePositionBias2D
from mini_transformer.positional.rope import RoPE
from mini_transformer.positional.shaw import ShawRelativePosition
from mini_transformer.positional.sinusoidal import SinusoidalPositionalEncoding
from mini_transformer.positional.t5 import RelativePositionBias
from mini_transformer.positional.transformer_xl import TransformerXLRelative


def named(fn):
    """``module.name`` of the reader's function: what a checkpoint records."""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"


# ---------------------------------------------------------------------------
# Chapter 2: the sinusoidal table
# ---------------------------------------------------------------------------

def sinusoidal(sinusoidal_positional_encoding, base=10000.0):
    r"""The sinusoidal scheme computed by a function you wrote.

    ``sinusoidal_positional_encoding(T, d_model, base)`` returns the ``(T, d_model)``
    table of the positions ``0 .. T-1`` (the signature of chapter 2's exercise). The
    scheme asks it for ``offset + T`` rows and adds the last ``T`` to the token
    embeddings, so a cached decoding step gets the rows of its own positions; the
    width is the model's, read from the embeddings.
    """
    return _Sinusoidal(sinusoidal_positional_encoding, base)


class _Sinusoidal(SinusoidalPositionalEncoding):
    """``sinusoidal``: the table comes from the function it was given."""

    def __init__(self, encoding, base):
        self.encoding, self.base = encoding, base

    def signature(self):
        return {**super().signature(), "from_functions": named(self.encoding)}

    def embed(self, x, offset):
        T, d_model = x.shape[1], x.shape[2]
        pe = xp.asarray(self.encoding(offset + T, d_model, self.base))  # (offset + T, d_model)
        if tuple(pe.shape) != (offset + T, d_model):
            raise ValueError(f"from_functions.sinusoidal: the function was asked for "
                             f"T={offset + T} positions of width d_model={d_model} and returned shape "
                             f"{tuple(pe.shape)}; it must return (T, d_model).")
        return x + pe[offset:].astype(x.dtype)


# ---------------------------------------------------------------------------
# Chapter 3: the learned table
# ---------------------------------------------------------------------------

def learned(position_rows, weight):
    r"""A learned table read by a function you wrote.

    ``position_rows(weight, T, offset)`` returns the ``(1, T, d_model)`` rows of the
    positions ``offset .. offset + T - 1`` (chapter 3's exercise). The scheme calls it
    with its table, a ``Parameter``, so the function must slice it
    (``weight[None, offset:offset + T]``): a slice keeps the path back to the table, and
    the gradient of each row lands where the row came from.

    ``weight`` is the starting table ``(T_max, d_model)``, copied. Pass a copy of a
    model's own table (``TinyGPT(cfg).positional.weight.data``) and both models start
    alike. The model refuses positions past ``T_max`` before it calls the function.
    """
    return _Learned(position_rows, weight)


class _Learned(LearnedPositionalEmbedding):
    """``learned``: the rows come from the function it was given."""

    def __init__(self, position_rows, weight):
        self.position_rows = position_rows
        self.weight = Parameter(xp.array(weight, copy=True))   # (T_max, d_model)
        self.T_max = self.max_positions = self.weight.shape[0]

    def signature(self):
        return {**super().signature(), "from_functions": named(self.position_rows)}

    def rows(self, T, offset=0):
        out = self.position_rows(self.weight, T, offset)
        if not isinstance(out, Tensor):
            raise ValueError("from_functions.learned: the function returned a plain "
                             f"{type(out).__name__} when it was given the model's table, a Parameter, so no "
                             "gradient could reach the table; slice the table instead, "
                             "weight[None, offset:offset + T].")
        if tuple(out.shape) != (1, T, self.weight.shape[1]):
            raise ValueError(f"from_functions.learned: the function was asked for T={T} rows "
                             f"from offset={offset} and returned shape {tuple(out.shape)}; it must return "
                             f"(1, T, d_model) = (1, {T}, {self.weight.shape[1]}).")
        return out


# ---------------------------------------------------------------------------
# Chapter 4: Shaw's clipped index, Transformer-XL's relative shift
# ---------------------------------------------------------------------------

def shaw(clipped_relative_index, like=None, **settings):
    r"""Shaw's scheme with the index computed by a function you wrote.

    ``clipped_relative_index(q_pos, k_pos, k)`` returns the ``(T_q, T_k)`` rows
    \mathrm{clip}(j - i, -k, k) + k. The new scheme takes its settings and a copy of
    its starting a^K and a^V from ``like``, or builds them from ``settings``, the
    constructor's arguments. Everything else is the library's: the gather into the
    scores and the scatter of the probabilities, whose checks turn an index outside
    0 .. 2k into a sentence.
    """
    return _Shaw(clipped_relative_index, like if like is not None else ShawRelativePosition(**settings))


class _Shaw(ShawRelativePosition):
    """``shaw``: the index comes from the function it was given."""

    def __init__(self, clipped_relative_index, like):
        self.clipped_relative_index = clipped_relative_index
        self.settings, self.k, self.d_head, self.needs_probs = like.settings, like.k, like.d_head, like.needs_probs
        self.layers = copy.deepcopy(like.layers)          # the same starting vectors, trained on their own

    def signature(self):
        return {**super().signature(), "from_functions": named(self.clipped_relative_index)}

    def index(self, q_pos, k_pos):
        return self.clipped_relative_index(q_pos, k_pos, self.k)           # (T_q, T_k)


def transformer_xl(relative_shift, like=None, **settings):
    r"""Transformer-XL with the relative shift done by a function you wrote.

    ``relative_shift(x)`` takes plain arrays ``(..., T_q, T_q + T_k - 1)``, one column
    per distance from the largest down, and returns ``(..., T_q, T_k)`` with
    y_{..., i, j} = x_{..., i, j + T_q - 1 - i}. ``shift_op`` makes it an op with a
    backward. The causal form computes only the distances down to 0, so its
    ``T_q - 1`` missing columns (future keys, masked anyway) are zeros. The new
    scheme takes its settings and a copy of u, v and W_{k,R} from ``like``, or builds
    them from ``settings``, the constructor's arguments.
    """
    return _TransformerXL(relative_shift, like if like is not None else TransformerXLRelative(**settings))


class _TransformerXL(TransformerXLRelative):
    """``transformer_xl``: the shift comes from the function it was given."""

    def __init__(self, relative_shift, like):
        self.relative_shift = relative_shift
        self.settings = like.settings
        self.d_model, self.n_heads, self.d_head = like.d_model, like.n_heads, like.d_head
        self.causal, self.base, self.mem_len = like.causal, like.base, like.mem_len
        self.u, self.v, self.layers = copy.deepcopy((like.u, like.v, like.layers))  # same start, trained apart

    def signature(self):
        return {**super().signature(), "from_functions": named(self.relative_shift)}

    def shift(self, bd, T_k):
        T_q, L = bd.shape[-2:]
        if L < T_q + T_k - 1:                                                # causal: no future distances
            bd = F.pad(bd, [(0, 0)] * (bd.ndim - 1) + [(0, T_q + T_k - 1 - L)])  # (B, H, T_q, T_q + T_k - 1)
        return shift_op(self.relative_shift, bd)                             # (B, H, T_q, T_k)


def shift_op(shift, x):
    r"""The op y = shift(x), for a function ``shift`` on plain arrays that only moves entries within each row.

    ``x`` is ``(..., T_q, L)``; ``shift`` returns ``(..., T_q, T_k)`` in which every entry
    is one entry of the same row of x, or a zero pad. Such a map is linear, and its
    transpose is a scatter: if y_{i,j} = x_{i, c_{ij}}, then
    gx_{..., i, r} = \sum_j gy_{..., i, j} [c_{ij} = r] (``scatter_distance``), with nothing
    for a pad. To learn the columns c_{ij} the op runs ``shift`` once more, on a probe: the
    ``(T_q, L)`` array of the numbers 1 .. T_q L, where 0 can only be a pad. So the forward
    is your function on the data, and the backward needs nothing from you but where each
    entry went. A function that adds, scales or mixes rows is refused in a sentence.
    """
    *lead, T_q, L = x.shape
    probe = xp.arange(1, T_q * L + 1, dtype="float64").reshape(T_q, L)     # (T_q, L) entry numbers, 0 for a pad
    source = xp.asarray(shift(probe))                                     # (T_q, T_k) which entry lands where
    y = shift(x.data)                                                      # (..., T_q, T_k)
    if source.ndim != 2 or source.shape[0] != T_q or y.shape != tuple(lead) + source.shape:
        raise ValueError(f"shift_op: the shift turned x of shape {x.shape} into {y.shape} (and a ({T_q}, {L}) "
                         f"array into {source.shape}); it must keep every axis but the last, (..., T_q, T_k).")
    number = xp.rint(source).astype("int64")
    rows = (number - 1) // L                                               # (T_q, T_k) the row each entry came from
    moved = (number > 0) & (rows != xp.arange(T_q)[:, None])
    if not bool(xp.all(source == number)) or int(number.min()) < 0 or int(number.max()) > T_q * L \
            or bool(xp.any(moved)):
        raise ValueError("shift_op: the shift does more than move entries within their row (it adds, scales or "
                         "mixes rows), so its backward cannot be read from where the entries went; a relative "
                         "shift only moves them.")
    keep = (number > 0).astype(x.dtype)                                    # (T_q, T_k) 0 where a pad landed
    column = xp.where(number > 0, (number - 1) % L, 0)                     # (T_q, T_k) c_ij

    def backward(gy):
        return (F.scatter_distance(F.as_tensor(gy * keep), column, L).data,)
    return op(y.astype(x.dtype, copy=False), (x,), backward)


# ---------------------------------------------------------------------------
# Chapter 5: T5's buckets, the 2-D window's rows
# ---------------------------------------------------------------------------

def t5(relative_position_bucket, like=None, **settings):
    r"""T5's bias with the buckets computed by a function you wrote.

    ``relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)``
    maps an integer array of ``key_pos - query_pos`` to bucket ids. The new scheme
    takes its settings and a copy of its starting table from ``like``, or builds them
    from ``settings``, the constructor's arguments. A bucket outside
    0 .. num_buckets - 1 is refused in a sentence (NumPy would read bucket -1 as
    the last row, silently).
    """
    return _T5(relative_position_bucket, like if like is not None else RelativePositionBias(**settings))


class _T5(RelativePositionBias):
    """``t5``: the buckets come from the function it was given."""

    def __init__(self, relative_position_bucket, like):
        self.relative_position_bucket = relative_position_bucket
        self.settings, self.n_heads, self.num_buckets = like.settings, like.n_heads, like.num_buckets
        self.max_distance, self.bidirectional = like.max_distance, like.bidirectional
        self.table = copy.deepcopy(like.table)              # the same starting table, trained on its own

    def signature(self):
        return {**super().signature(), "from_functions": named(self.relative_position_bucket)}

    def bucket(self, relative_position):
        buckets = self.relative_position_bucket(relative_position, self.bidirectional, self.num_buckets,
                                                self.max_distance)
        return check_table_index("relative_position_bucket", buckets, relative_position.shape, self.num_buckets)


def relative_2d(swin_relative_index, like=None, **settings):
    r"""The 2-D bias with the table rows computed by a function you wrote.

    ``swin_relative_index(window)`` returns the ``(w^2, w^2)`` rows
    (\Delta y + w - 1)(2w - 1) + (\Delta x + w - 1) of every pair of tokens in raster
    order; the scheme picks the pairs it needs from it. It takes its settings and a
    copy of its starting table from ``like``, or builds them from ``settings``, the
    constructor's arguments.
    """
    return _Relative2D(swin_relative_index, like if like is not None else RelativePositionBias2D(**settings))


class _Relative2D(RelativePositionBias2D):
    """``relative_2d``: the rows come from the function it was given."""

    def __init__(self, swin_relative_index, like):
        self.swin_relative_index = swin_relative_index
        self.settings, self.n_heads = like.settings, like.n_heads
        self.window_size, self.max_positions = like.window_size, like.max_positions
        self.table = copy.deepcopy(like.table)              # the same starting table, trained on its own

    def signature(self):
        return {**super().signature(), "from_functions": named(self.swin_relative_index)}

    def index(self, q_pos, k_pos):
        w = self.window_size
        full = check_table_index("swin_relative_index", self.swin_relative_index(w), (w * w, w * w),
                                 (2 * w - 1) ** 2)                          # (w^2, w^2)
        return full[q_pos[:, None], k_pos[None, :]]                         # (T_q, T_k)


def check_table_index(who, index, shape, rows):
    """``index`` as it is, after checking it is an integer array of ``shape`` with entries in 0 .. rows - 1."""
    index = xp.asarray(index)
    if index.shape != tuple(shape) or index.dtype.kind not in "iu":
        raise ValueError(f"{who} returned an array of shape {index.shape} and dtype {index.dtype}; the table "
                         f"lookup needs integers of shape {tuple(shape)}.")
    if index.size and (int(index.min()) < 0 or int(index.max()) >= rows):
        raise ValueError(f"{who} returned rows from {int(index.min())} to {int(index.max())}, but the table has "
                         f"rows 0 .. {rows - 1}; a negative row would silently read from the end.")
    return index


# ---------------------------------------------------------------------------
# Chapter 6: RoPE's tables and rotation
# ---------------------------------------------------------------------------

def rope(rotary, apply_rotary):
    r"""RoPE computed by two functions you wrote.

    ``rotary(T, offset)`` returns the ``(T, d_head)`` cos and sin tables of the
    positions ``offset .. offset + T - 1`` (a ``RotaryEmbedding`` instance), and
    ``apply_rotary(x, cos, sin)`` rotates plain arrays ``(..., T, d_head)``.
    The op's backward is ``apply_rotary`` again with -\sin, the rotation back
    (``rotation``). Positions must be consecutive, as in training and in a
    text-position cache.
    """
    return _RoPE(rotary, apply_rotary)


class _RoPE(RoPE):
    """``rope``: the tables and the rotation come from the functions it was given."""

    def __init__(self, rotary, apply_rotary):
        self.rotary_tables, self.turn = rotary, apply_rotary
        self.rerotate_keys = False

    def signature(self):
        return {"from_functions": named(self.turn)}   # the function's name only: it has no RotaryEmbedding to read

    @contextlib.contextmanager
    def planned_length(self, n):
        yield

    def rotate(self, x, pos, layer):
        T = pos.shape[0]
        offset = int(pos[0]) if T else 0
        if T > 1 and not bool(xp.all(pos[1:] - pos[:-1] == 1)):
            raise ValueError("from_functions.rope takes consecutive positions (offset .. offset + T - 1); this "
                             "call asked for a gap, as a slot-position cache or an evicting window would.")
        cos, sin = self.rotary_tables(T, offset)                               # (T, d_head) each
        return rotation(self.turn, x, cos.astype(x.dtype), sin.astype(x.dtype))


def rotation(turn, x, cos, sin):
    r"""The op y = turn(x, \cos, \sin), for a function ``turn`` that rotates every pair of x by its angle.

    A rotation's transpose is the rotation by the opposite angle, so the
    backward is the same function with -\sin: gx = turn(gy, \cos, -\sin). (With
    an attention factor \alpha in both tables the map is \alpha R, its transpose
    \alpha R^\top: the same rule.) This needs tables that hold one angle per pair,
    the same number in both channels of a pair, as ``RotaryEmbedding`` makes
    them. ``turn`` works on plain arrays, so any implementation of RoPE's
    formula, a reader's included, becomes a trainable op.
    """
    cos, sin = raw(cos), raw(sin)

    def backward(gy):
        return (turn(gy, cos, -sin),)
    return op(turn(x.data, cos, sin), (x,), backward)


# ---------------------------------------------------------------------------
# Chapter 7: ALiBi's slopes and bias
# ---------------------------------------------------------------------------

def alibi(alibi_slopes, alibi_bias=None, bidirectional=False):
    r"""ALiBi computed by functions you wrote.

    ``alibi_slopes(n_heads)`` returns the ``(H,)`` slopes m_h; the number of
    heads is read from the queries at every call. ``alibi_bias(n_heads, T_q, T_k)``,
    when given, returns the whole causal bias ``(1, H, T_q, T_k)`` for queries
    that are the last T_q of T_k consecutive keys, as in training and in a
    text-position cache; without it the bias is -m_h (i - j) built here from
    your slopes, at any positions. ``bidirectional=True`` (an encoder) uses
    -m_h |i - j| from your slopes, so it takes no ``alibi_bias``.
    """
    if bidirectional and alibi_bias is not None:
        raise ValueError("from_functions.alibi: alibi_bias(n_heads, T_q, T_k) is the causal form, but "
                         "bidirectional=True asks for -m_h |i - j|; pass only alibi_slopes for an encoder.")
    return _ALiBi(alibi_slopes, alibi_bias, bidirectional)


class _ALiBi(ALiBi):
    """``alibi``: the slopes (and the causal bias) come from the functions it was given."""

    def __init__(self, slopes_fn, bias_fn, bidirectional):
        self.slopes_fn, self.bias_fn, self.bidirectional = slopes_fn, bias_fn, bidirectional

    def signature(self):
        return {**super().signature(), "from_functions": named(self.slopes_fn if self.bias_fn is None else self.bias_fn)}

    def score_bias(self, q, k, q_pos, k_pos, layer):
        H, T_q, T_k = q.shape[1], q_pos.shape[0], k_pos.shape[0]
        if self.bias_fn is None:
            return alibi_bias_at(asarray(self.slopes_fn(H)), q_pos, k_pos, self.bidirectional, q.dtype)   # (1, H, T_q, T_k)
        consecutive = T_k < 2 or bool(xp.all(k_pos[1:] - k_pos[:-1] == 1))
        if not consecutive or not bool(xp.all(q_pos == k_pos[T_k - T_q:])):
            raise ValueError("from_functions.alibi with alibi_bias takes consecutive keys whose last T_q are the "
                             "queries (alibi_bias(n_heads, T_q, T_k)'s convention); this call has a gap, as a cache "
                             "that keeps sink tokens would. Pass only alibi_slopes to run at any positions.")
        bias = asarray(self.bias_fn(H, T_q, T_k))
        if tuple(bias.shape) != (1, H, T_q, T_k):
            raise ValueError(f"from_functions.alibi: alibi_bias({H}, {T_q}, {T_k}) returned shape "
                             f"{tuple(bias.shape)}; the scores need (1, H, T_q, T_k) = (1, {H}, {T_q}, {T_k}).")
        return bias.astype(q.dtype)                                             # (1, H, T_q, T_k)
