r"""What every scheme shares through the hooks of ``base.py``: relative schemes see only i - j; building a
scheme (generator, initial scale, defaults, dtype); bad arguments refused in a sentence.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional import (
    alibi_bias, make_scheme, relative_position_bucket, RelativePositionBias, RelativePositionBias2D,
    RotaryEmbedding,
)

from positional_helpers import A, N, make, P, logits, qk

pytestmark = pytest.mark.usefixtures("each_backend")


RELATIVE = [
    ("none", {}, True),
    ("shaw", {"shaw_k": 2}, True),
    ("shaw", {"shaw_k": 2, "shaw_values": False}, False),
    ("transformer_xl", {}, True),
    ("transformer_xl", {}, False),
    ("t5", {"num_buckets": 8, "max_distance": 6}, True),
    ("t5", {"num_buckets": 8, "max_distance": 6}, False),
    ("rope", {}, True),
    ("rope", {"rope_interleaved": True, "partial_rotary_factor": 0.5}, True),
    ("alibi", {}, True),
    ("alibi", {}, False),
    ("decoupled_rope", {"d_rope": 4}, True),
]


RELATIVE_IDS = [f"{n}{'-' + '-'.join(f'{k}={v}' for k, v in e.items()) if e else ''}-{'causal' if c else 'encoder'}"
                for n, e, c in RELATIVE]


def _visible(q_pos, k_pos, causal):
    """(T_q, T_k) host mask of the pairs attention keeps: all of them in an encoder, j <= i under the causal mask."""
    q, k = N(q_pos), N(k_pos)
    return np.ones((len(q), len(k)), bool) if not causal else k[None, :] <= q[:, None]


@pytest.mark.parametrize("name,extra,causal", RELATIVE, ids=RELATIVE_IDS)
@pytest.mark.parametrize("shift", [1, 29])
def test_moving_every_position_by_the_same_amount_leaves_the_scores_unchanged(name, extra, causal, shift):
    scheme = make(name, extra, causal)
    q, k = qk(4, 7)
    q_pos, k_pos = np.arange(3, 7), np.arange(0, 7)          # four new tokens after three cached ones
    here = logits(scheme, q, k, P(q_pos), P(k_pos))
    moved = logits(scheme, q, k, P(q_pos + shift), P(k_pos + shift))
    seen = _visible(P(q_pos), P(k_pos), causal)
    # float64; RoPE's angles m theta round to about m eps, so scores agree to ~1e-14
    np.testing.assert_allclose(moved[..., seen], here[..., seen], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name,extra,causal", RELATIVE, ids=RELATIVE_IDS)
def test_with_one_token_everywhere_the_scores_depend_on_the_offset_alone(name, extra, causal):
    # the same query and key at every position: a relative scheme's scores are constant along each diagonal
    # i - j = const (a Toeplitz matrix), and, unless the scheme is NoPE, differ between diagonals
    scheme = make(name, extra, causal)
    q, k = qk(6, 6, same=True)
    pos = P(np.arange(6))
    s = logits(scheme, q, k, pos, pos)                        # (2, H, 6, 6)
    seen = _visible(pos, pos, causal)
    offset = np.arange(6)[:, None] - np.arange(6)[None, :]
    per_offset = {}
    for d in np.unique(offset[seen]):
        on = seen & (offset == d)
        np.testing.assert_allclose(s[..., on], s[..., on][..., :1] * np.ones(on.sum()), rtol=0, atol=1e-12)
        per_offset[d] = s[..., on][..., 0]                    # (2, H)
    spread = max(np.abs(a - b).max() for a in per_offset.values() for b in per_offset.values())
    if name == "none":
        assert spread <= 1e-12                                # no position at all: every pair scores the same
    else:
        assert spread > 1e-2, f"{name}: the scores do not depend on the offset at all"


def _schemes_with_parameters():
    """Constructors of the schemes with parameters, each taking ``rng`` (None: the scheme's own default)."""
    from mini_transformer.positional import (DecoupledRoPE, LearnedPositionalEmbedding, RelativePositionBias,
                                             RelativePositionBias2D, ShawRelativePosition, TransformerXLRelative)
    return {
        "learned": lambda **kw: LearnedPositionalEmbedding(16, 32, **kw),
        "shaw": lambda **kw: ShawRelativePosition(8, 2, **kw),
        "transformer_xl": lambda **kw: TransformerXLRelative(64, 2, 2, **kw),
        "t5": lambda **kw: RelativePositionBias(4, **kw),
        "relative_2d": lambda **kw: RelativePositionBias2D(4, 4, **kw),
        "decoupled_rope": lambda **kw: DecoupledRoPE(32, 2, 2, **kw),
    }


@pytest.mark.parametrize("name", sorted(_schemes_with_parameters()))
def test_a_scheme_built_without_a_generator_is_the_one_built_with_seed_0(name):
    build = _schemes_with_parameters()[name]
    own, seeded, other = build(), build(rng=backend.rng(0)), build(rng=backend.rng(1))
    for a, b, c in zip(own.parameters(), seeded.parameters(), other.parameters()):
        np.testing.assert_array_equal(N(a), N(b))
    assert any(not np.array_equal(N(a), N(c)) for a, c in zip(own.parameters(), other.parameters()))


@pytest.mark.parametrize("name", sorted(_schemes_with_parameters()))
def test_initial_parameters_are_drawn_with_std_0_02(name):
    # GPT-2's init, N(0, 0.02^2): with at least 64 draws per tensor the sample std lies within 25% of 0.02
    # (about 4 standard errors at n = 64)
    for p in _schemes_with_parameters()[name]().parameters():
        values = N(p).ravel()
        assert values.size >= 64 and 0.015 < values.std() < 0.025, (name, p.shape, values.std())


@pytest.mark.parametrize("name", ["learned", "shaw", "transformer_xl", "t5", "relative_2d", "decoupled_rope"])
def test_the_model_generator_decides_a_scheme_s_parameters(name):
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional=name)
    a, b, c = (make_scheme(cfg, backend.rng(seed)) for seed in (3, 3, 4))
    assert all(np.array_equal(N(x), N(y)) for x, y in zip(a.parameters(), b.parameters()))
    assert all(not np.array_equal(N(x), N(z)) for x, z in zip(a.parameters(), c.parameters()))


def test_constructor_defaults_are_the_papers():
    from mini_transformer.positional import (ALiBi, DecoupledRoPE, RelativePositionBias, RotaryEmbedding,
                                             ShawRelativePosition, SinusoidalPositionalEncoding,
                                             TransformerXLRelative)
    assert ShawRelativePosition(4, 1).signature() == {"shaw_k": 16, "shaw_values": True}
    assert RelativePositionBias(2).signature() == {"num_buckets": 32, "max_distance": 128, "bidirectional": True}
    assert TransformerXLRelative(8, 2, 1).signature() == {"mem_len": None, "sinusoidal_base": 10000.0, "causal": True}
    assert DecoupledRoPE(8, 2, 1).signature() == {"d_rope": 2, "rope_base": 10000.0, "rope_scaling": None,
                                                  "max_len": None}
    assert SinusoidalPositionalEncoding(4).signature() == {"sinusoidal_base": 10000.0}
    assert ALiBi(2).signature() == {"bidirectional": False}
    # the chapter's front: linear scaling with the default factor is factor 1, no scaling; "none" is no scaling
    for rope in (RotaryEmbedding(8, scaling="linear"), RotaryEmbedding(8, scaling="none")):
        np.testing.assert_array_equal(N(rope.inv_freq), [1.0, 0.1, 0.01, 0.001])
    # tables start at position 0 unless told otherwise
    cos, _ = RotaryEmbedding(8)(3)
    np.testing.assert_allclose(N(cos)[:, 0], [1.0, math.cos(1.0), math.cos(2.0)], rtol=0, atol=1e-15)


FLOAT32_CASES = [("none", {}), ("sinusoidal", {}), ("learned", {}), ("shaw", {"shaw_k": 2}),
                 ("transformer_xl", {}), ("t5", {"num_buckets": 8, "max_distance": 6}), ("rope", {}),
                 ("rope", {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}), ("alibi", {}),
                 ("relative_2d", {"window_size": 3}), ("decoupled_rope", {"d_rope": 2})]


@pytest.mark.parametrize("name,extra", FLOAT32_CASES, ids=[f"{n}{'-' + str(e) if e else ''}" for n, e in FLOAT32_CASES])
def test_a_float32_model_stays_float32_through_every_hook(name, extra):
    # the tables are built in float64; each hook must hand back the dtype of what it was given
    extra = dict(extra)
    scaling = extra.pop("rope_scaling", None)
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional=name, extra=extra,
                    rope_scaling=scaling)
    scheme = make_scheme(cfg, backend.rng(0))
    x32 = Tensor(backend.asarray(np.ones((1, 3, 8), dtype=np.float32)))
    q32 = Tensor(backend.asarray(np.random.default_rng(0).normal(size=(1, 2, 3, 4)).astype(np.float32)))
    pos = P([0, 1, 2])
    assert str(scheme.embed(x32, 0).dtype) == "float32"
    assert str(scheme.rotate(q32, pos, 0).dtype) == "float32"
    bias = scheme.score_bias(q32, q32, pos, pos, 0)
    assert bias is None or str(bias.dtype) == "float32"
    assert str(TinyGPT(cfg)(np.zeros((1, 3), dtype=np.int64)).dtype) == "float32"


@pytest.mark.parametrize("make_it, message", [
    ("ShawRelativePosition(4, 1, k=0)", "ShawRelativePosition: shaw_k must be an integer >= 1, got 0 (the clipping distance)."),
    ("RelativePositionBias2D(2, 0)", "RelativePositionBias2D: window_size must be an integer >= 1, got 0."),
    ("DecoupledRoPE(8, 2, 1, d_rope=3)", "DecoupledRoPE: d_rope must be an integer >= 2 and even, got 3 (RoPE turns pairs of channels)."),
    ("DecoupledRoPE(8, 2, 1, d_rope=0)", "DecoupledRoPE: d_rope must be an integer >= 2 and even, got 0 (RoPE turns pairs of channels)."),
    ("alibi_slopes(0)", "alibi_slopes: n_heads must be an integer >= 1, got 0."),
    ("TransformerXLRelative(8, 2, 1, mem_len=0)", "transformer_xl: mem_len must be an integer >= 1, got 0."),
    ("RotaryEmbedding(3)", "RotaryEmbedding: d_head must be an integer >= 2 and even, got 3 (RoPE turns pairs of channels)."),
    ("RotaryEmbedding(8, partial_rotary_factor=0)", "RotaryEmbedding: partial_rotary_factor=0 must lie in (0, 1]."),
    ("RotaryEmbedding(8, partial_rotary_factor=1.5)", "RotaryEmbedding: partial_rotary_factor=1.5 must lie in (0, 1]."),
    ("rope_channel_permutation(8, rotary_dim=0)", "rope_channel_permutation: rotary_dim=0 must be even and in (0, d_head=8]."),
    ("rope_channel_permutation(8, rotary_dim=3)", "rope_channel_permutation: rotary_dim=3 must be even and in (0, d_head=8]."),
    ("rope_channel_permutation(8, rotary_dim=10)", "rope_channel_permutation: rotary_dim=10 must be even and in (0, d_head=8]."),
    ("RelativePositionBias(2, num_buckets=2, bidirectional=True)",
     "relative_position_bucket: num_buckets=2 leaves 1 bucket per direction; T5's rule needs at least 2 (exact ones "
     "and log-spaced ones)."),
    ("RelativePositionBias(2, num_buckets=8, max_distance=2)",
     "relative_position_bucket: max_distance=2 must exceed the 2 exact distances, or the log-spaced buckets have no "
     "range to cover."),
    ("RelativePositionBias(2, num_buckets=1, bidirectional=False)",
     "relative_position_bucket: num_buckets must be an integer >= 2, got 1."),
])
def test_bad_arguments_are_refused_in_one_exact_sentence(make_it, message):
    from mini_transformer import positional
    from mini_transformer.positional import transformer_xl
    names = {**vars(positional), "TransformerXLRelative": transformer_xl.TransformerXLRelative}
    with pytest.raises(ValueError) as info:
        eval(make_it, names)
    assert str(info.value) == message


@pytest.mark.parametrize("make,message", [
    (lambda: RotaryEmbedding(7), r"d_head must be an integer >= 2 and even, got 7 \(RoPE turns pairs"),
    (lambda: RotaryEmbedding(10, partial_rotary_factor=0.5),
     r"partial_rotary_factor=0.5 of d_head=10 leaves rotary_dim=5 channels, which must be even"),
    (lambda: RotaryEmbedding(8, scaling="yarn"), r"scaling='yarn' must be None, 'linear' or 'ntk'"),
    (lambda: relative_position_bucket(A(np.arange(3)), True, num_buckets=31),
     r"num_buckets=31 is odd, but bidirectional=True"),
    (lambda: RelativePositionBias(4, num_buckets=31, bidirectional=True), r"num_buckets=31 is odd"),
    (lambda: RelativePositionBias(4).bias(5, 3), r"T_q=5 queries cannot be the last positions of T_k=3 keys"),
    (lambda: alibi_bias(4, 5, 3), r"T_q=5 queries cannot be the last positions of T_k=3 keys"),
    (lambda: RelativePositionBias2D(2, 4).bias(9), r"got T=9 tokens, but window_size=4 holds w\*w=16 tokens"),
    (lambda: RelativePositionBias2D(2, 4, table=A(np.zeros((25, 2)))),
     r"a table of shape \(25, 2\) does not fit window_size=4 and n_heads=2, which need .*\(49, 2\)"),
])
def test_bad_input_is_a_sentence_naming_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_smallest_legal_arguments_work():
    from mini_transformer.positional import (RelativePositionBias, RelativePositionBias2D, TransformerXLRelative,
                                             alibi_slopes, relative_position_bucket)
    assert N(alibi_slopes(1)).tolist() == [2.0 ** -8]                         # H 1: 2^(-8 * 1/1)
    assert N(RelativePositionBias2D(1, 1, rng=backend.rng(0)).bias(1)).shape == (1, 1, 1, 1)   # a 1 x 1 window
    assert N(RelativePositionBias(2, num_buckets=4, max_distance=3).bias(2, 2)).shape == (1, 2, 2, 2)  # 2 a side
    assert RelativePositionBias(2, num_buckets=2, max_distance=2, bidirectional=False).num_buckets == 2
    TransformerXLRelative(8, 2, 1, mem_len=None)                              # no memory limit is allowed
    assert N(relative_position_bucket(P([3, -3]))).tolist() == [19, 3]        # both directions, 32 buckets
