r"""Real padded and packed batches: ``TinyGPT.forward(idx, attention_mask=..., position_ids=...)`` and ``generate``
on a left-padded batch, in the Hugging Face convention.

The properties, in float64 with O(1) random weights, for every scheme and both kernel sets:

* a **left-padded** row (padding masked, ``position_ids`` counted from its first real token) gives, at its real
  tokens, the logits of the same prompt run alone;
* a **packed** row (documents back to back, ``position_ids`` restarting at 0, the block-diagonal
  ``document_mask``) gives each document's logits as if it ran alone;
* ``generate`` on a left-padded batch continues every row with the tokens it gets alone, with and without the
  cache.

Positive controls show the equalities are not free: without the mask every scheme changes; without the
position ids exactly the absolute schemes change (sinusoidal, learned, and relative_2d, whose 2-D offsets are
read from raster positions), while the relative ones stay equal, as distance-only scores must.
"""
import numpy as np
import pytest

from random_models import model_for

from mini_transformer.engine import functional as F
from mini_transformer.engine import kernels
from mini_transformer.engine.autograd import Tensor
from mini_transformer.model import document_mask, left_padded_positions
from mini_transformer.positional import SCHEMES
from mini_transformer.positional.sinusoidal import SinusoidalPositionalEncoding

ALL = sorted(SCHEMES)
# the logits depend on where the row starts; FIRE's too past its threshold L (model_for draws L = 3.0 and 2.6),
# and the temperature scheme's, whose query scale steps with the absolute position (floor_scale 2 in model_for)
ABSOLUTE = {"sinusoidal", "learned", "relative_2d", "fire", "temperature"}
TOL = 1e-10
MARGIN = 1e-3
KERNELS = ["reference", "fast"]


def prompts(lengths, seed=0):
    draw = np.random.default_rng(seed)
    return [draw.integers(1, 16, n) for n in lengths]


def left_pad(rows, pad_id=0):
    """ids ``(B, T)`` and attention_mask ``(B, T)``: each row's padding first, then its tokens."""
    T = max(len(r) for r in rows)
    ids = np.full((len(rows), T), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, T - len(r):], mask[b, T - len(r):] = r, 1
    return ids, mask


def pack(docs_per_row):
    """ids, position_ids (restarting at 0 per document) and document ids, each ``(B, T)``; rows of equal length."""
    ids = np.stack([np.concatenate(docs) for docs in docs_per_row])
    pos = np.stack([np.concatenate([np.arange(len(d)) for d in docs]) for docs in docs_per_row])
    doc = np.stack([np.concatenate([np.full(len(d), i) for i, d in enumerate(docs)]) for docs in docs_per_row])
    return ids, pos, doc


def alone(model, tokens):
    return model(np.asarray(tokens)[None]).numpy()[0]


def padded_gap(model, rows, **override):
    """Largest difference between each row's real-token logits in the padded batch and the prompt run alone."""
    ids, mask = left_pad(rows)
    kw = dict(attention_mask=mask, position_ids=left_padded_positions(mask))
    kw.update(override)
    kw = {k: v for k, v in kw.items() if v is not None}
    out = model(ids, **kw).numpy()
    assert np.isfinite(out).all()                                  # padding queries too
    T = ids.shape[1]
    return max(float(np.abs(out[b, T - len(r):] - alone(model, r)).max()) for b, r in enumerate(rows))


def packed_gap(model, docs_per_row, **override):
    """Largest difference between each packed document's logits and the document run alone."""
    ids, pos, doc = pack(docs_per_row)
    kw = dict(attention_mask=document_mask(doc), position_ids=pos)
    kw.update(override)
    kw = {k: v for k, v in kw.items() if v is not None}
    out = model(ids, **kw).numpy()
    gaps = []
    for b, docs in enumerate(docs_per_row):
        start = 0
        for d in docs:
            gaps.append(float(np.abs(out[b, start:start + len(d)] - alone(model, d)).max()))
            start += len(d)
    return max(gaps)


ROWS = prompts([5, 9, 2])                                          # three prompts, padded to 9
PACKED = [prompts([4, 3, 5], seed=1), prompts([7, 5], seed=2)]     # two rows of 12: three documents, then two


@pytest.mark.parametrize("kernel_set", KERNELS)
@pytest.mark.parametrize("positional", ALL)
def test_left_padded_row_equals_the_prompt_alone(positional, kernel_set):
    model = model_for(positional, kernels=kernel_set)
    assert padded_gap(model, ROWS) <= TOL


@pytest.mark.parametrize("kernel_set", KERNELS)
@pytest.mark.parametrize("positional", ALL)
def test_packed_row_equals_its_documents_alone(positional, kernel_set):
    model = model_for(positional, kernels=kernel_set)
    assert packed_gap(model, PACKED) <= TOL


@pytest.mark.parametrize("positional", ALL)
def test_control_without_the_mask_the_padding_is_read(positional):
    # position_ids alone: every real token attends to the padding keys, so every scheme changes
    model = model_for(positional)
    assert padded_gap(model, ROWS, attention_mask=None) > MARGIN
    # a packed row without its document mask: the later documents read the earlier ones
    assert packed_gap(model, PACKED, attention_mask=None) > MARGIN


@pytest.mark.parametrize("positional", ALL)
def test_control_without_position_ids_only_the_absolute_schemes_change(positional):
    model = model_for(positional)
    gap = padded_gap(model, ROWS, position_ids=None)              # positions counted from the padding
    ids, pos, doc = pack(PACKED)
    packed = packed_gap(model, PACKED, position_ids=None)         # positions not reset at each document
    if positional in ABSOLUTE:
        assert gap > MARGIN and packed > MARGIN
    else:                                                          # scores depend on distances only
        assert gap <= TOL and packed <= TOL


@pytest.mark.parametrize("positional", ALL)
def test_cached_steps_of_a_padded_batch_equal_its_full_forward(positional):
    model = model_for(positional)
    ids, mask = left_pad(prompts([3, 6, 4], seed=3) )
    more = np.random.default_rng(4).integers(1, 16, (3, 4))
    full_ids = np.concatenate([ids, more], axis=1)
    full_mask = np.concatenate([mask, np.ones_like(more)], axis=1)
    full = model(full_ids, attention_mask=full_mask, position_ids=left_padded_positions(full_mask)).numpy()
    cache = model.new_cache()
    T = ids.shape[1]
    steps = [model(ids, cache=cache, attention_mask=mask, position_ids=left_padded_positions(mask)).numpy()]
    for t in range(more.shape[1]):
        # the mask covers every token in view, cached ones included; position_ids continue each row
        steps.append(model(full_ids[:, T + t:T + t + 1], cache=cache, attention_mask=full_mask[:, :T + t + 1],
                           position_ids=left_padded_positions(full_mask)[:, T + t:T + t + 1]).numpy())
    real = full_mask.astype(bool)
    assert np.abs(full - np.concatenate(steps, axis=1))[real].max() <= TOL


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("positional", ALL)
def test_generate_on_a_left_padded_batch_matches_each_prompt_alone(positional, use_cache):
    model = model_for(positional)
    rows = prompts([5, 2, 7], seed=5)
    ids, mask = left_pad(rows)
    out = model.generate(ids, 6, greedy=True, attention_mask=mask, use_cache=use_cache)
    out = np.asarray(out)
    for b, r in enumerate(rows):
        single = np.asarray(model.generate(np.asarray(r)[None], 6, greedy=True))[0]
        assert out[b, ids.shape[1] - len(r):].tolist() == single.tolist()
    assert (out[:, :ids.shape[1]] == ids).all()


def test_generate_refuses_right_padding_a_window_and_an_empty_row():
    model = model_for("rope")
    ids, mask = left_pad(prompts([3, 5]))
    with pytest.raises(ValueError, match="left padding"):
        model.generate(ids, 2, greedy=True, attention_mask=mask[:, ::-1])
    with pytest.raises(ValueError, match="full cache"):
        model.generate(ids, 2, greedy=True, attention_mask=mask, window=4)
    empty = mask.copy()
    empty[0] = 0
    with pytest.raises(ValueError, match="all padding"):
        model.generate(ids, 2, greedy=True, attention_mask=empty)


def test_a_subclass_that_does_not_declare_per_row_positions_is_refused():
    class OneDimensional(SinusoidalPositionalEncoding):           # overrides embed for an int offset only
        def embed(self, x, offset):
            return super().embed(x, offset)

    model = model_for("sinusoidal")
    model.positional = OneDimensional(16)
    ids, mask = left_pad(prompts([3, 5]))
    with pytest.raises(ValueError, match="per_row_positions"):
        model(ids, attention_mask=mask, position_ids=left_padded_positions(mask))
    with pytest.raises(ValueError, match="per-row"):
        model.generate(ids, 2, greedy=True, attention_mask=mask)
    model(ids, attention_mask=mask)                                 # shared positions still work


def test_bad_mask_and_position_shapes_are_sentences():
    model = model_for("rope")
    ids, mask = left_pad(prompts([3, 5]))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(ids, attention_mask=mask[:, 1:])
    with pytest.raises(ValueError, match="position_ids must be integers of shape"):
        model(ids, position_ids=left_padded_positions(mask)[:, 1:])
    with pytest.raises(ValueError, match="at least 0"):
        model(ids, position_ids=left_padded_positions(mask) - 1)
    with pytest.raises(ValueError, match="full cache"):
        model(ids, cache=model.new_cache(window=3), attention_mask=mask)


def test_the_default_path_is_untouched_by_an_all_ones_mask():
    # no padding, shared positions: the batch path computes what the plain forward computes
    model = model_for("alibi")
    x = np.random.default_rng(6).integers(0, 16, (2, 7))
    plain = model(x).numpy()
    assert np.abs(model(x, attention_mask=np.ones_like(x)).numpy() - plain).max() <= TOL
    pos = np.broadcast_to(np.arange(7), (2, 7)).copy()
    assert np.abs(model(x, position_ids=pos).numpy() - plain).max() <= TOL


@pytest.mark.parametrize("mask_shape", [(2, 1, 5, 5), (2, 3, 5, 5)])
def test_fast_attention_takes_a_per_row_mask(mask_shape):
    # the mask shapes a padded batch sends: (B, 1, T, T) from the model, (B, H, T, T) for a per-head one
    draw = np.random.default_rng(7)
    q, k, v = (Tensor(draw.normal(size=(2, 3, 5, 4)), requires_grad=True) for _ in range(3))
    mask = draw.random(mask_shape) < 0.7
    mask |= np.eye(5, dtype=bool)                                   # every query sees at least itself
    ref = F.scaled_dot_product_attention(q, k, v, mask=mask)
    fast = kernels.FAST.attention(q, k, v, mask=mask)
    assert np.abs(ref.numpy() - fast.numpy()).max() <= TOL
    g = draw.normal(size=ref.shape)
    grads = []
    for y in (ref, fast):
        for t in (q, k, v):
            t.grad = None
        (y * Tensor(g)).sum().backward()
        grads.append([t.grad.copy() for t in (q, k, v)])
    assert max(float(np.abs(a - b).max()) for a, b in zip(*grads)) <= TOL


def test_document_mask_reads_runs_of_ids():
    # worked by hand: [7, 7, 2, 7] is three documents, the last 7 a new one
    got = np.asarray(document_mask(np.array([[7, 7, 2, 7]])))[0].tolist()
    assert got == [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("positional", ["rope", "t5", "shaw"])
def test_padded_and_packed_rows_on_each_backend(positional):
    # the strict stand-in for CuPy (or CuPy itself, with a GPU): no silent host round trips in the batch path
    model = model_for(positional)
    assert padded_gap(model, ROWS) <= TOL
    assert packed_gap(model, PACKED) <= TOL
