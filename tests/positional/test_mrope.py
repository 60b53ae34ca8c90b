r"""Multimodal RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): the position ids, the sections, and the scheme in the model.

Expected ids are the worked examples of Hugging Face transformers' ``get_rope_index`` docstrings (Qwen2-VL and
Qwen2.5-VL) or worked by hand from its rule (the working sits next to each number); the section layouts are
read off ``apply_multimodal_rotary_pos_emb`` (chunks) and Qwen3-VL's ``apply_interleaved_mrope``. Nothing expected
is produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer import no_grad
from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional import RotaryEmbedding, apply_rotary, mrope_cos_sin, mrope_position_ids
from mini_transformer.positional.mrope import MRoPE, mrope_axis_of_pair

from positional_helpers import A, N, P, T

pytestmark = pytest.mark.usefixtures("each_backend")


# ---------------------------------------------------------------------------
# Position ids
# ---------------------------------------------------------------------------

def test_a_video_then_text_gets_qwen2_vl_s_worked_example():
    # Qwen2-VL's get_rope_index docstring: a video of 3 temporal, 2 height and 2 width patches, then 5 text tokens
    ids = N(mrope_position_ids([("image", (3, 2, 2)), ("text", 5)]))
    assert ids.tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 4, 5, 6, 7],
                            [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 3, 4, 5, 6, 7],
                            [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 3, 4, 5, 6, 7]]
    assert ids.dtype == np.int64


def test_qwen2_5_vl_ties_a_video_s_time_ids_to_seconds():
    # Qwen2.5-VL's docstring: 25 tokens per second, 2 s per temporal patch (2 frames at 1 fps): time ids step by 50;
    # the text after it starts one past the largest id, 100 + 1
    ids = N(mrope_position_ids([("video", (3, 2, 2), 2.0), ("text", 5)], tokens_per_second=25))
    assert ids.tolist() == [[0, 0, 0, 0, 50, 50, 50, 50, 100, 100, 100, 100, 101, 102, 103, 104, 105],
                            [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 101, 102, 103, 104, 105],
                            [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 101, 102, 103, 104, 105]]
    # int() truncates: 0.5 s x 3 tokens/s = 1.5 per frame -> frames at 0, 1 (1.5), 3 (3.0)
    assert N(mrope_position_ids([("video", (3, 1, 1), 0.5)], tokens_per_second=3))[0].tolist() == [0, 1, 3]


def test_text_image_text_by_hand():
    # text 0, 1; the 1 x 2 x 3 image starts at 2: time 2, rows 2 2 2 3 3 3, columns 2 3 4 2 3 4; the text after it
    # starts one past the largest id (4), at 5, although the image took 6 tokens; two images back to back: the
    # second starts one past the first's largest id
    ids = N(mrope_position_ids([("text", 2), ("image", (1, 2, 3)), ("text", 2), ("image", (1, 1, 2))]))
    assert ids.tolist() == [[0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 7],
                            [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 7],
                            [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8]]
    assert N(mrope_position_ids([("text", 3)])).tolist() == [[0, 1, 2]] * 3   # text alone: 1-D RoPE's ids
    assert N(mrope_position_ids([("text", 0), ("image", (1, 1, 1))])).tolist() == [[0]] * 3
    assert N(mrope_position_ids([])).shape == (3, 0) and N(mrope_position_ids([])).dtype == np.int64
    # a tall image: its largest id is on the height axis (0 + 3 - 1 = 2), so the text resumes at 3
    assert N(mrope_position_ids([("image", (1, 3, 1)), ("text", 1)])).tolist() == [[0, 0, 0, 3], [0, 1, 2, 3],
                                                                                   [0, 0, 0, 3]]
    # Qwen2.5-VL's images: second_per_grid 0 puts every frame at time 0
    assert N(mrope_position_ids([("video", (2, 1, 1), 0)], tokens_per_second=2))[0].tolist() == [0, 0]


@pytest.mark.parametrize("segments, kw, message", [
    ([("audio", 3)], {}, r"segment 0 is \('audio', 3\); a segment is \('text', n\), \('image', \(t, h, w\)\)"),
    ([("text", 2), ("image", (1, 2))], {}, r"segment 1 \('image'\) has the grid \(1, 2\); it must be three integers"),
    ([("image", (1, 0, 2))], {}, r"segment 0 \('image'\) grid h must be an integer >= 1, got 0"),
    ([("text", -1)], {}, r"segment 0 \('text', n\): n must be an integer >= 0, got -1"),
    ([5], {}, r"segment 0 is 5; a segment is"),
    ([()], {}, r"segment 0 is \(\); a segment is"),
    ([("image", (1, 2, 3), 1.0)], {}, r"segment 0 is \('image', \(1, 2, 3\), 1.0\); a segment is"),
    ([("video", (2, 1, 1), 1.0)], {}, r"segment 0 is a video, whose time ids are counted in tokens_per_second "
                                      r"\(Qwen2.5-VL\); pass tokens_per_second, e.g. 2 as Qwen2.5-VL's config\."),
    ([("video", (2, 1, 1), 1.0)], {"tokens_per_second": -2}, r"tokens_per_second=-2 \(segment 0\) must be a number"),
    ([("video", (2, 1, 1), "1")], {"tokens_per_second": 2}, r"second_per_grid='1' \(segment 0\) must be a number"),
    ([("video", (2, 1, 1), -1.0)], {"tokens_per_second": 2}, r"second_per_grid=-1.0 \(segment 0\) must be a number"),
])
def test_bad_segments_are_refused_with_a_sentence(segments, kw, message):
    with pytest.raises(ValueError, match=message):
        mrope_position_ids(segments, **kw)


# ---------------------------------------------------------------------------
# Sections: which axis turns which pair
# ---------------------------------------------------------------------------

def test_chunked_and_interleaved_sections_by_hand():
    # Qwen2-VL's [16, 24, 24] over 64 pairs: chunks of 16 time, 24 height, 24 width
    assert N(mrope_axis_of_pair(128, [16, 24, 24])).tolist() == [0] * 16 + [1] * 24 + [2] * 24
    # Qwen3-VL's [24, 20, 20], interleaved: height on pairs 1, 4, ..., 58 (20 of them), width on 2, 5, ..., 59,
    # time on 0, 3, ..., 57 and on 60, 61, 62, 63 (24 in all)
    axis = N(mrope_axis_of_pair(128, [24, 20, 20], interleaved=True))
    assert np.flatnonzero(axis == 1).tolist() == list(range(1, 59, 3))
    assert np.flatnonzero(axis == 2).tolist() == list(range(2, 60, 3))
    assert np.flatnonzero(axis == 0).tolist() == list(range(0, 58, 3)) + [60, 61, 62, 63]


@pytest.mark.parametrize("head_dim, section, interleaved, message", [
    (8, [1, 1, 1], False, r"mrope_section=\[1, 1, 1\] sums to 3, but head_dim=8 has 4 pairs"),
    # height's pairs 1, 4 (s_h = 2) run past the last pair 3; width's 2 (s_w = 1) fits: 3 s_h - 2 = 4, 3 s_w - 1 = 2
    (8, [1, 2, 1], True, r"^mrope: mrope_section=\[1, 2, 1\] cannot be interleaved over 4 pairs: height takes pairs "
                         r"1, 4, \.\.\. up to 4 and width 2, 5, \.\.\. up to 2, but the last pair is 3; move pairs "
                         r"from height or width to time\.$"),
    (8, [2, -1, 3], False, r"mrope_section\[1\] \(height\) must be an integer >= 0, got -1"),
    (8, [4, 0], False, r"mrope_section=\[4, 0\] must be three pair counts"),
    (7, [1, 1, 1], False, r"^mrope: head_dim must be an integer >= 2 and even, got 7 \(RoPE turns pairs of "
                          r"channels\)\.$"),
])
def test_bad_sections_are_refused_with_a_sentence(head_dim, section, interleaved, message):
    with pytest.raises(ValueError, match=message):
        mrope_axis_of_pair(head_dim, section, interleaved)


def test_the_tables_by_hand():
    # head_dim 4, theta 100: theta_0 = 1, theta_1 = 100^(-2/4) = 0.1. Sections [1, 1, 0]: pair 0 turns by the time
    # id 2, pair 1 by the height id 3: angles 2 and 0.3 in channels (0, 2) and (1, 3); the width id 5 is unused
    cos, sin = mrope_cos_sin(P([[2], [3], [5]]), 4, 100.0, [1, 1, 0])
    np.testing.assert_allclose(N(cos), [[math.cos(2), math.cos(0.3), math.cos(2), math.cos(0.3)]], rtol=1e-15)
    np.testing.assert_allclose(N(sin), [[math.sin(2), math.sin(0.3), math.sin(2), math.sin(0.3)]], rtol=1e-15)
    # the same ids through [0, 1, 1]: pair 0 by height (3), pair 1 by width (5 x 0.1 = 0.5)
    cos, _ = mrope_cos_sin(P([[2], [3], [5]]), 4, 100.0, [0, 1, 1])
    np.testing.assert_allclose(N(cos), [[math.cos(3), math.cos(0.5), math.cos(3), math.cos(0.5)]], rtol=1e-15)
    with pytest.raises(ValueError, match=r"position_ids must be integers of shape \(3, \.\.\., T\).*got shape \(2, 1\)"):
        mrope_cos_sin(P([[2], [3]]), 4, 100.0, [1, 1, 0])


@pytest.mark.parametrize("section, interleaved", [([2, 3, 3], False), ([3, 3, 2], True), ([16, 24, 24], False),
                                                  ([24, 20, 20], True)])
def test_text_ids_give_exactly_the_1d_rope_tables(section, interleaved):
    head_dim = 2 * sum(section)
    pos = np.array([0, 1, 7, 100, 4096])
    cos, sin = mrope_cos_sin(P(np.stack([pos] * 3)), head_dim, 10000.0, section, interleaved)
    rope_cos, rope_sin = RotaryEmbedding(head_dim, 10000.0).at(P(pos))
    assert np.array_equal(N(cos), N(rope_cos)) and np.array_equal(N(sin), N(rope_sin))


@pytest.mark.parametrize("section, interleaved", [([2, 3, 3], False), ([3, 3, 2], True)])
def test_moving_one_axis_changes_only_its_own_pairs(section, interleaved):
    head_dim = 2 * sum(section)
    axis = N(mrope_axis_of_pair(head_dim, section, interleaved))
    base = np.array([[3, 9], [4, 2], [5, 6]])                              # (3, T 2): t, h, w ids of two tokens
    cos0, sin0 = (N(a) for a in mrope_cos_sin(P(base), head_dim, 100.0, section, interleaved))
    for moved in range(3):
        ids = base.copy()
        ids[moved] += 7
        cos, sin = (N(a) for a in mrope_cos_sin(P(ids), head_dim, 100.0, section, interleaved))
        changed = np.flatnonzero(np.any((cos != cos0) | (sin != sin0), axis=0))
        mine = np.flatnonzero(np.tile(axis == moved, 2))                   # its pairs, in both halves
        assert changed.tolist() == mine.tolist(), (moved, changed, mine)


@pytest.mark.parametrize("interleaved", [False, True])
def test_scores_depend_only_on_the_difference_of_ids_per_axis(interleaved):
    # <R(p) q, R(p') k> depends on p' - p per axis: shift both tokens by the same (dt, dh, dw) and it stays;
    # change one axis' difference and it moves
    section, head_dim = [3, 3, 2], 16
    draw = np.random.default_rng(0)
    q, k = A(draw.normal(size=(1, 1, 1, head_dim))), A(draw.normal(size=(1, 1, 1, head_dim)))

    def score(p, pk):
        cq, sq = mrope_cos_sin(P(np.array(p)[:, None]), head_dim, 100.0, section, interleaved)
        ck, sk = mrope_cos_sin(P(np.array(pk)[:, None]), head_dim, 100.0, section, interleaved)
        return float(N(apply_rotary(q, cq, sq) * apply_rotary(k, ck, sk)).sum())

    s = score([5, 2, 9], [3, 4, 1])
    assert abs(score([5 + 11, 2 - 1, 9 + 40], [3 + 11, 4 - 1, 1 + 40]) - s) <= 1e-12
    for axis in range(3):
        other = [3, 4, 1]
        other[axis] += 1
        assert abs(score([5, 2, 9], other) - s) > 1e-3, axis


# ---------------------------------------------------------------------------
# The scheme in the model
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kw, angles", [
    # chunked (the default): pairs time, time, height, width turn by 1 x 1, 1 x 0.1, 2 x 0.01, 3 x 0.001
    ({}, [1.0, 0.1, 0.02, 0.003]),
    # interleaved: height on pair 1, width on pair 2, time on 0 and 3: 1 x 1, 2 x 0.1, 3 x 0.01, 1 x 0.001
    ({"interleaved": True}, [1.0, 0.2, 0.03, 0.001]),
])
def test_the_scheme_turns_each_pair_by_the_id_of_its_axis_by_hand(kw, angles):
    # d_head 8 at the default base 10000: theta_i = 10000^(-2i/8) = 10^-i; sections [2, 1, 1]; one token with the
    # ids t 1, h 2, w 3. x = (1, 1, 1, 1, 0, 0, 0, 0): rotate-half turns each pair (x_i, x_{i+4}) = (1, 0) to
    # (cos a_i, sin a_i)
    scheme = MRoPE(8, mrope_section=[2, 1, 1], **kw)
    x = T(np.array([1.0, 1, 1, 1, 0, 0, 0, 0]).reshape(1, 1, 1, 8))              # (B 1, H 1, T 1, d_head)
    y = N(scheme.rotate(x, P(np.array([1, 2, 3]).reshape(3, 1, 1)), 0).data)      # ids (3, B 1, T 1)
    np.testing.assert_allclose(y.ravel(), [math.cos(a) for a in angles] + [math.sin(a) for a in angles], rtol=1e-14)
    assert scheme.signature() == {"mrope_section_t": 2, "mrope_section_h": 1, "mrope_interleaved": bool(kw),
                                  "rope_base": 10000.0, "mrope_section": [2, 1, 1]}


@pytest.mark.parametrize("args, kw, message", [
    ((7,), {}, r"^MRoPE: d_head must be an integer >= 2 and even, got 7 \(RoPE turns pairs of channels\)\.$"),
    ((0,), {}, r"^MRoPE: d_head must be an integer >= 2 and even, got 0 \(RoPE turns pairs of channels\)\.$"),
    ((8, 100.0, [1, 2, 1]), {"interleaved": True}, r"^mrope: mrope_section=\[1, 2, 1\] cannot be interleaved over 4 "
                                                   r"pairs"),
])
def test_the_scheme_refuses_a_bad_head_or_split_as_it_is_built(args, kw, message):
    with pytest.raises(ValueError, match=message):
        MRoPE(*args, **kw)


def model(positional, extra=None, kernels="reference", seed=0, dtype="float64"):
    """A TinyGPT (d_head 16: 8 pairs, float64 unless told) with O(1) weights; schemes without parameters draw the
    same weights."""
    cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=2, max_len=32, positional=positional,
                    rope_base=100.0, extra=dict(extra or {}), kernels=kernels)
    m = TinyGPT(cfg).to_dtype(dtype).eval()
    draw = np.random.default_rng(seed + 1)
    for p in m.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return m


def logits(m, x, **kw):
    with no_grad():
        return N(m(A(x), **kw).data)


SEGMENTS = [("text", 3), ("image", (2, 2, 3)), ("text", 4)]                  # 3 + 12 + 4 = 19 tokens


@pytest.mark.parametrize("kernels", ["reference", "fast"])
@pytest.mark.parametrize("extra", [{}, {"mrope_interleaved": True}, {"mrope_section_t": 4, "mrope_section_h": 0}])
def test_text_alone_gives_the_rope_scheme_s_logits(extra, kernels):
    x = np.random.default_rng(2).integers(0, 16, (2, 9))
    rope = logits(model("rope", kernels=kernels), x)
    m = model("mrope", extra, kernels=kernels)
    text = np.broadcast_to(np.arange(9), (3, 2, 9)).copy()
    assert np.abs(logits(m, x) - rope).max() <= 1e-12
    assert np.abs(logits(m, x, position_ids=text) - rope).max() <= 1e-12           # (3, B, T) equal ids
    assert np.abs(logits(m, x, position_ids=text[0]) - rope).max() <= 1e-12        # (B, T) text ids
    # positive control: an image's ids change the logits
    ids = np.broadcast_to(N(mrope_position_ids([("text", 3), ("image", (1, 2, 3))])), (2, 3, 9)).transpose(1, 0, 2)
    assert np.abs(logits(m, x, position_ids=ids.copy()) - rope).max() > 1e-3


@pytest.mark.parametrize("kernels", ["reference", "fast"])
def test_in_float32_text_alone_is_bitwise_the_rope_scheme(kernels):
    # both schemes build float64 tables and cast them to x's dtype before turning, so float32 logits agree exactly
    x = np.random.default_rng(6).integers(0, 16, (2, 9))
    rope = logits(model("rope", kernels=kernels, dtype="float32"), x)
    assert rope.dtype == np.float32
    assert np.array_equal(logits(model("mrope", kernels=kernels, dtype="float32"), x), rope)


@pytest.mark.parametrize("with_ids", [False, True], ids=["decode continues the ids", "decode given the ids"])
def test_cached_decoding_of_an_image_prompt_equals_the_full_pass(with_ids):
    m = model("mrope")
    ids = np.broadcast_to(N(mrope_position_ids(SEGMENTS))[:, None], (3, 2, 19)).copy()   # (3, B, T)
    x = np.random.default_rng(3).integers(0, 16, (2, 19))
    full = logits(m, x, position_ids=ids)
    cache = m.new_cache()
    prompt = 15                                                      # text and the image; the last 4 text decoded
    steps = [logits(m, x[:, :prompt], cache=cache, position_ids=ids[..., :prompt])]
    for t in range(prompt, 19):
        kw = {"position_ids": ids[..., t:t + 1]} if with_ids else {}
        steps.append(logits(m, x[:, t:t + 1], cache=cache, **kw))
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12
    # the image starts at 3 and its largest id is 3 + max(2, 2, 3) - 1 = 5, so the text resumes at 6
    assert N(cache.row_pos)[:, 0, prompt:].tolist() == [[6, 7, 8, 9]] * 3


def test_a_text_prefill_then_an_image_step_mixes_one_axis_and_three():
    # the cached keys carry one id (text), the new ones three: the text ids hold on all three axes
    m = model("mrope")
    ids = np.broadcast_to(N(mrope_position_ids([("text", 4), ("image", (1, 1, 2))]))[:, None], (3, 1, 6)).copy()
    x = np.random.default_rng(4).integers(0, 16, (1, 6))
    full = logits(m, x, position_ids=ids)
    cache = m.new_cache()
    steps = [logits(m, x[:, :4], cache=cache), logits(m, x[:, 4:], cache=cache, position_ids=ids[..., 4:])]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12


def test_three_axis_ids_are_refused_by_a_one_axis_scheme_and_bad_shapes_are_sentences():
    x = np.zeros((2, 5), dtype=np.int64)
    with pytest.raises(ValueError, match=r"position_ids must be integers of shape \(B, T\) = \(2, 5\) like the ids, "
                                         r"got shape \(3, 2, 5\)"):
        model("rope")(A(x), position_ids=A(np.zeros((3, 2, 5), dtype=np.int64)))
    with pytest.raises(ValueError, match=r"\(B, T\) = \(2, 5\) or \(3, 2, 5\), one row per axis, like the ids, got "
                                         r"shape \(3, 5\)"):
        model("mrope")(A(x), position_ids=A(np.zeros((3, 5), dtype=np.int64)))


def test_the_model_gradient_through_image_ids_in_float64():
    m = model("mrope")
    m.train()
    ids = A(np.broadcast_to(N(mrope_position_ids([("text", 2), ("image", (1, 2, 2))]))[:, None], (3, 2, 6)).copy())
    x = A(np.random.default_rng(5).integers(0, 16, (2, 6)))
    assert_gradcheck(lambda *ps: m(x, position_ids=ids), m.parameters(), tol=1e-7, max_elements=6)


def test_the_settings_reach_the_scheme_and_their_defaults_fit_any_head():
    # d_head 16: 8 pairs; defaults: time ceil(8/3) = 3, height ceil(5/2) = 3, width 2
    assert model("mrope").positional.section == [3, 3, 2]
    assert model("mrope", {"mrope_section_t": 2}).positional.section == [2, 3, 3]
    assert model("mrope", {"mrope_section_t": 2, "mrope_section_h": 1}).positional.section == [2, 1, 5]
    assert model("mrope", {"mrope_interleaved": True}).positional.interleaved
    assert model("mrope").positional.signature()["mrope_section"] == [3, 3, 2]
    # P divisible by 3: a third each (3 pairs: 1, 1, 1; 9 pairs: 3, 3, 3)
    assert MRoPE(6).section == [1, 1, 1] and MRoPE(18).section == [3, 3, 3]
    # the default interleaves for every head size: height's last pair 3 s_h - 2 and width's 3 s_w - 1 fit
    for d_head in range(2, 130, 2):
        MRoPE(d_head, interleaved=True)
    with pytest.raises(ValueError, match=r"mrope_section\[2\] \(width\) must be an integer >= 0, got -1"):
        model("mrope", {"mrope_section_t": 9})
