r"""Every scheme inside TinyGPT and TinyEncoder: gradients, cached decoding, permutation symmetry, XL memory.

Models are tiny and in float64 with O(1)-scale random weights (with the 0.02
init a layer norm divides by a tiny spread, and the central difference's own
error would swamp the check).
"""
import copy

import numpy as np
import pytest

from mini_transformer import Tensor, no_grad
from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional import SCHEMES

# small settings so every branch is reached at T = 8: Shaw clips at 3, T5's log buckets start at 2,
# the 2-D window is 4 x 4, XL's memory holds 4 tokens
EXTRA = {
    "shaw": {"shaw_k": 3},
    "t5": {"num_buckets": 8, "max_distance": 6},
    "relative_2d": {"window_size": 4},
    "transformer_xl": {"mem_len": 4},
    "decoupled_rope": {"d_rope": 4},
    "temperature": {"floor_scale": 2, "attn_scale": 0.5},   # tau steps at positions 1, 3, 5, ...
}
VARIANTS = [(name, EXTRA.get(name, {})) for name in SCHEMES] + [
    ("rope", {"rope_interleaved": True, "partial_rotary_factor": 0.5}),
    ("shaw", {"shaw_k": 2, "shaw_values": False}),
]
IDS = [name + ("-" + "-".join(f"{k}={v}" for k, v in extra.items()) if extra else "") for name, extra in VARIANTS]


def build(cls, name, extra=None, seed=0, **cfg):
    if cls is TinyEncoder and SCHEMES[name].causal_only:
        pytest.skip(f"the {name!r} scheme is causal only; its own tests check that TinyEncoder refuses it")
    settings = dict(vocab_size=11, d_model=16, n_layers=2, n_heads=2, max_len=16)
    settings.update(cfg)
    model = cls(GPTConfig(positional=name, extra=dict(extra or {}), **settings)).to_dtype("float64")
    draw = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model


def ids(B=2, T=8, seed=0):
    return backend.asarray(np.random.default_rng(seed).integers(0, 11, size=(B, T)))


def logits(model, x, **kw):
    with no_grad():
        return backend.to_numpy(model(x, **kw).data)


# Measured worst relative error through a whole model with O(1) weights (layer norms give large curvature, and the
# Richardson step leaves O(h^4) of it): 6e-9. GRAD_TOL leaves a factor of 15.
GRAD_TOL = 1e-7


@pytest.mark.slow
@pytest.mark.parametrize("cls", [TinyGPT, TinyEncoder])
@pytest.mark.parametrize("name,extra", VARIANTS, ids=IDS)
def test_whole_model_gradcheck_in_float64(cls, name, extra):
    model = build(cls, name, extra, max_len=8)
    x = ids(T=8)
    # every entry of the scheme's own parameters (what this test is about; rows no pair at T = 8 reaches must get
    # exactly 0), and 8 entries of each of the others, whose ops are checked entry by entry in their own tests
    scheme = {id(p) for p in model.positional.parameters()}
    rest = [p for p in model.parameters() if id(p) not in scheme]
    assert_gradcheck(lambda *ps: model(x), rest, tol=GRAD_TOL, max_elements=8)
    if scheme:
        assert_gradcheck(lambda *ps: model(x), model.positional.parameters(), tol=GRAD_TOL)


@pytest.mark.parametrize("name,extra", VARIANTS, ids=IDS)
def test_cached_decoding_equals_the_full_forward_at_every_step(name, extra):
    model = build(TinyGPT, name, extra).eval()
    x = ids(T=10)
    full = logits(model, x)
    cache = model.new_cache()
    steps = [logits(model, x[:, :3], cache=cache)]              # prefill 3 tokens, then one at a time
    steps += [logits(model, x[:, t:t + 1], cache=cache) for t in range(3, 10)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12


def _permutation_gap(model, perm):
    """Largest change when the input is permuted versus when the output is: 0 for an equivariant model."""
    x = ids(T=7, seed=3)
    permuted_input = logits(model, x[:, backend.asarray(np.array(perm))])
    return np.abs(permuted_input - logits(model, x)[:, perm]).max()   # logits are host arrays


PERM = [3, 0, 6, 1, 5, 2, 4]


def test_encoder_without_position_is_exactly_permutation_equivariant():
    assert _permutation_gap(build(TinyEncoder, "none"), PERM) <= 1e-12


@pytest.mark.parametrize("name,extra", [v for v in VARIANTS if v[0] != "none"],
                         ids=[i for i, v in zip(IDS, VARIANTS) if v[0] != "none"])
def test_every_scheme_breaks_permutation_equivariance(name, extra):
    assert _permutation_gap(build(TinyEncoder, name, extra), PERM) > 1e-3


def test_the_causal_mask_alone_leaks_position():
    assert _permutation_gap(build(TinyGPT, "none"), PERM) > 1e-3


def test_t5_and_alibi_take_their_encoder_form_in_tiny_encoder():
    assert build(TinyEncoder, "t5").positional.bidirectional and not build(TinyGPT, "t5").positional.bidirectional
    assert build(TinyEncoder, "alibi").positional.bidirectional
    assert not build(TinyGPT, "alibi").positional.bidirectional
    assert build(TinyGPT, "t5", {"bidirectional": True}).positional.bidirectional   # an explicit key wins


def test_relative_2d_rejects_a_position_outside_the_window():
    model = build(TinyEncoder, "relative_2d", {"window_size": 3})
    with pytest.raises(ValueError, match=r"position 9 lies outside a window of window_size=3"):
        model(ids(T=10))


# ---------------------------------------------------------------------------
# Transformer-XL: segment-level recurrence with a memory the gradient does not enter
# ---------------------------------------------------------------------------

def test_transformer_xl_segments_with_full_memory_equal_one_long_forward():
    model = build(TinyGPT, "transformer_xl", {"mem_len": 16}).eval()
    x = ids(T=12, seed=5)
    cache = model.new_cache(window=model.positional.mem_len)
    segments = [logits(model, x[:, s:s + 4], cache=cache) for s in (0, 4, 8)]
    assert np.abs(np.concatenate(segments, axis=1) - logits(model, x)).max() <= 1e-12


@pytest.mark.slow
def test_transformer_xl_memory_is_a_constant_to_the_gradient():
    model = build(TinyGPT, "transformer_xl", {"mem_len": 4})
    x = ids(T=8, seed=6)
    memory = model.new_cache(window=model.positional.mem_len)
    with no_grad():
        model(x[:, :4], cache=memory)                            # segment 1 fills the memory
    assert len(memory) == 4 and all(backend.is_array(a) for a in memory.k + memory.v)
    # a training step on segment 2 reads the memory; its gradient must be that of a fixed memory, which is
    # what central differences see when every evaluation starts from the same copied memory
    seg2 = x[:, 4:]
    assert_gradcheck(lambda *ps: model(seg2, cache=copy.deepcopy(memory)), model.parameters(), tol=GRAD_TOL,
                     max_elements=8)
    # and the memory does matter: without it segment 2 gives other logits
    assert np.abs(logits(model, seg2, cache=copy.deepcopy(memory)) - logits(model, seg2, offset=4)).max() > 1e-3
    # the real step: backward runs, reaches every XL parameter, writes nothing into the memory it read,
    # and leaves segment 2 as the memory of segment 3
    read = list(memory.k)
    snapshot = [backend.to_numpy(a).copy() for a in read]
    model.zero_grad()
    model(seg2, cache=memory).sum().backward()
    assert all(np.array_equal(backend.to_numpy(a), b) for a, b in zip(read, snapshot))
    assert all(p.grad is not None for p in model.positional.parameters())
    assert backend.to_numpy(memory.pos).tolist() == [4, 5, 6, 7]


def test_transformer_xl_memory_slides_over_the_window():
    model = build(TinyGPT, "transformer_xl", {"mem_len": 4}).eval()
    cache = model.new_cache(window=4)
    x = ids(T=12, seed=7)
    for s in (0, 4, 8):
        logits(model, x[:, s:s + 4], cache=cache)
        assert backend.to_numpy(cache.pos).tolist() == list(range(s, s + 4))


@pytest.mark.parametrize("cls", [TinyGPT, TinyEncoder])
@pytest.mark.parametrize("name,extra", VARIANTS, ids=IDS)
def test_every_scheme_runs_on_the_strict_cupy_stand_in(cls, name, extra):
    # the strict backend refuses host NumPy arrays exactly where CuPy would: a scheme that leaks one fails here
    with backend.using("strict"):
        model = build(cls, name, extra)
        x = ids(T=6)
        model.zero_grad()
        model(x).sum().backward()
        assert all(p.grad is not None for p in model.positional.parameters())
        if cls is TinyGPT:
            cache = model.new_cache(window=4)
            for t in range(6):
                logits(model, x[:, t:t + 1], cache=cache)


def test_bench_positional_runs_and_counts_what_each_scheme_adds():
    from mini_transformer.evaluation.bench_positional import BOOKKEEPING, run, table
    res = run(["none", "learned", "alibi", "t5", "rope"], Ts=(8, 16), repeats=1)
    rows = {r["scheme"]: r for r in res["rows"]}
    # extra parameters by hand: a learned table max_len x d_model = 16 x 64; T5 num_buckets x H = 32 x 4
    assert rows["learned"]["extra_params"] == 16 * 64 and rows["t5"]["extra_params"] == 32 * 4
    assert rows["alibi"]["extra_params"] == 0 and rows["none"]["T"][16]["hook_bytes"] == 0
    # ALiBi materialises a (1, H, T, T) float32 bias in each of the 2 layers: at least 2 * 4 * 16 * 16 * 4 bytes
    assert rows["alibi"]["T"][16]["hook_bytes"] >= 2 * 4 * 16 * 16 * 4
    assert "learned" in table(res)
    # nothing costs less memory than no position at all (RoPE once printed a negative peak), to the column's
    # resolution: at T = 16 no scheme's arrays are alive at the forward's peak, and what differs is a few Python
    # objects (CI, 2026-12-06: -16 B and -32 B, from a collection inside the trace, before the collector was paused)
    assert all(r["T"][T]["peak_extra_bytes"] >= -BOOKKEEPING for r in rows.values() for T in (8, 16)), table(res)


def test_learned_table_refuses_a_position_past_max_len_in_the_model():
    model = build(TinyGPT, "learned", max_len=8)
    with pytest.raises(ValueError, match=r"positions 0\.\.7, but position 8 was asked for.*max_len=8"):
        model(ids(T=9))


@pytest.mark.parametrize("rope_scaling", [
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8},
    {"rope_type": "dynamic", "factor": 2.0},
])
def test_gpt_config_rope_scaling_reaches_the_rope_scheme(rope_scaling):
    # trained length 8, run at 12: dynamic NTK's s = max(1, 2 * 12 / 8 - 1) = 2 kicks in
    model = build(TinyGPT, "rope", rope_scaling=rope_scaling, max_len=8)
    plain = build(TinyGPT, "rope", max_len=8)
    x = ids(T=12)
    assert np.abs(logits(model, x) - logits(plain, x)).max() > 1e-6
    if rope_scaling["rope_type"] == "linear":   # theta_i / 2, by hand from theta_i = 10000^(-2i/8)
        np.testing.assert_allclose(backend.to_numpy(model.positional.rotary.inv_freq),
                                   [0.5, 0.05, 0.005, 0.0005], rtol=1e-12)


def test_dynamic_ntk_rope_asks_the_cache_to_re_turn_its_keys():
    # the angles depend on the current length, so the cache keeps keys unrotated and turns them afresh each step.
    # With one layer that makes decoding exact; with more, the cached values of deeper layers were computed at
    # older scales, which is dynamic NTK's own inconsistency (not tested here)
    model = build(TinyGPT, "rope", rope_scaling={"rope_type": "dynamic", "factor": 2.0}, max_len=4,
                  n_layers=1).eval()
    assert model.positional.rerotate_keys
    x = ids(T=9)
    cache = model.new_cache()
    logits(model, x[:, :2], cache=cache)
    for t in range(2, 9):
        step = logits(model, x[:, t:t + 1], cache=cache)
        assert np.abs(step[:, 0] - logits(model, x[:, :t + 1])[:, -1]).max() <= 1e-12


@pytest.mark.parametrize("inflated", [
    lambda call, n: call == 0,                  # the first trace of the run: 'none' at T=8
    lambda call, n: call < 2,                   # the first two, which were both of 'none''s traces before
    lambda call, n: call % n == 0,              # the first trace of every round
], ids=["first trace", "first two traces", "first of each round"])
def test_bench_positional_peak_ignores_a_one_time_allocation(monkeypatch, inflated):
    # the baseline's traced forwards once held a one-time 4.9 KiB (CI, 2026-12-06), and every scheme's peak+
    # came out negative: a one-off landing in one round's trace must not reach the table
    from mini_transformer.evaluation import bench_positional
    schemes, real, calls = ["none", "alibi", "rope"], bench_positional.forward_memory, []

    def some_calls_inflated(model, idx):
        hook_bytes, peak = real(model, idx)
        calls.append(model)
        return hook_bytes, peak + (5000 if inflated(len(calls) - 1, len(schemes)) else 0)

    monkeypatch.setattr(bench_positional, "forward_memory", some_calls_inflated)
    res = bench_positional.run(schemes, Ts=(8,), repeats=1)
    assert len(calls) == 2 * len(schemes)       # two rounds of one trace per scheme
    assert all(r["T"][8]["peak_extra_bytes"] >= -bench_positional.BOOKKEEPING for r in res["rows"]), \
        bench_positional.table(res)


@pytest.mark.parametrize("was_enabled", [True, False])
def test_bench_positional_traces_with_the_collector_paused_and_restores_it(was_enabled):
    # a collection inside one scheme's trace frees objects made before it and moves its peak (CI, 2026-12-06)
    import gc
    from mini_transformer.evaluation import bench_positional
    model, seen = bench_positional.build("alibi", 8), []
    real = model.positional.score_bias
    model.positional.score_bias = lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k)
    (gc.enable if was_enabled else gc.disable)()
    try:
        bench_positional.forward_memory(model, ids(T=8))
        assert gc.isenabled() is was_enabled
    finally:
        gc.enable()
    assert seen and not any(seen)
