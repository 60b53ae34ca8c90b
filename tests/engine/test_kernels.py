"""Equal by test: every fast kernel gives its reference op's numbers and gradients.

Each case runs an op of ``kernels.REFERENCE`` and the same op of ``kernels.FAST``
on the same float64 inputs, backpropagates the same random output gradient,
and asks for the outputs and every input gradient to agree to 1e-10. The
inputs are the awkward ones: T = 1, odd lengths, queries fewer than keys,
(B, H, T, d) views of (B, T, H, d) memory, biases broadcast over the batch,
masks, partial rotary, ignored targets, repeated ids. Every case runs on NumPy
and on the strict stand-in, and the threaded paths run with two threads and
small blocks. Then a whole TinyGPT trained a few steps in float64 ends with
the same parameters under both settings.
"""
import sys
import threading

import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend, kernels, nn
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.engine.kernels import rope as fast_rope
from mini_transformer.engine.kernels import threads
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.model.train import TrainConfig, train
from mini_transformer.positional.rope import apply_rotary as rope_reference

pytestmark = pytest.mark.usefixtures("each_backend")

RTOL, ATOL = 1e-10, 1e-12   # float64: the two forms differ only in the order of additions


def host(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


def head_view(seed, B, H, T, d):
    """A (B, H, T, d) view of (B, T, H, d) memory, the way attention hands q, k, v over."""
    return host(seed, B, T, H, d).transpose(0, 2, 1, 3)


def causal(T_q, T_k):
    """Queries are the last T_q of T_k positions; True where a query may look."""
    return np.arange(T_k)[None, :] <= np.arange(T_k - T_q, T_k)[:, None]


def rotary(ops):
    """The set's RoPE rotation: the fast kernel, or (None in REFERENCE) the scheme's own op in positional/rope.py."""
    return ops.apply_rotary or rope_reference


def rope_tables(seed, T, r, interleaved=False, factor=1.0):
    """cos and sin of random angles laid out for the pairing, times an attention factor (as YaRN's)."""
    ang = host(seed, T, r // 2)
    ang = np.repeat(ang, 2, axis=-1) if interleaved else np.concatenate([ang, ang], axis=-1)
    return np.cos(ang) * factor, np.sin(ang) * factor


class Inputs:
    """Makes the same inputs for both runs and remembers the Tensors whose gradients are compared."""

    def __init__(self, frozen=()):
        self.tensors, self.frozen = [], frozen

    def t(self, seed, *shape, view=False, scale=1.0):
        """A float64 Tensor of normal draws (a head view of (B, T, H, d) memory with ``view``) that needs a grad,
        unless its place among this case's tensors is in ``frozen`` (a frozen layer's weight, a constant input)."""
        x = Tensor(backend.asarray(head_view(seed, *shape) if view else host(seed, *shape) * scale),
                   requires_grad=len(self.tensors) not in self.frozen, dtype="float64")
        self.tensors.append(x)
        return x

    @staticmethod
    def a(array):
        """A plain backend array: a mask, ids, targets, a table."""
        return backend.asarray(array)

    def tables(self, seed, T, r, interleaved=False, factor=1.0):
        return tuple(self.a(t) for t in rope_tables(seed, T, r, interleaved, factor))


CASES = {
    "attention: T = 1":
        lambda ops, i: [ops.attention(i.t(0, 2, 3, 1, 4), i.t(1, 2, 3, 1, 4), i.t(2, 2, 3, 1, 4))],
    "attention: odd T, causal mask":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 7, 4), i.t(1, 2, 2, 7, 4), i.t(2, 2, 2, 7, 4),
                                      mask=i.a(causal(7, 7)))],
    "attention: fewer queries than keys, d_v != d_head":
        lambda ops, i: [ops.attention(i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 5, 4), i.t(2, 1, 2, 5, 6),
                                      mask=i.a(causal(3, 5)))],
    "attention: head views, a bias broadcast over the batch, a mask":
        lambda ops, i: [ops.attention(i.t(0, 2, 3, 5, 4, view=True), i.t(1, 2, 3, 5, 4, view=True),
                                      i.t(2, 2, 3, 5, 4, view=True), bias=i.t(3, 1, 3, 5, 5),
                                      mask=i.a(causal(5, 5)))],
    "attention: a bias without a batch axis, no mask, a scale":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 4, 3), i.t(1, 2, 2, 4, 3), i.t(2, 2, 2, 4, 3),
                                      bias=i.t(3, 2, 4, 4), scale=0.3)],
    "attention: a constant bias (no gradient), two batch axes":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 2, 3, 4), i.t(1, 2, 2, 2, 3, 4), i.t(2, 2, 2, 2, 3, 4),
                                      bias=i.a(host(3, 2, 2, 2, 3, 3)))],
    "attention: a mask per batch row (the first pads its last key)":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 3, 4), i.t(1, 2, 2, 3, 4), i.t(2, 2, 2, 3, 4),
                                      mask=i.a(np.stack([causal(3, 3) & [True, True, False], causal(3, 3)])[:, None]))],
    "attention: query rows 1000 apart (a bias constant over the keys): each row needs its own max":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 4, 4), i.t(1, 2, 2, 6, 4), i.t(2, 2, 2, 6, 4),
                                      bias=i.a(np.array([0.0, -1000.0, 500.0, -2000.0])[:, None]),
                                      mask=i.a(causal(4, 6)))],
    "attention: a sink logit per head, a bias and a causal mask":
        lambda ops, i: [ops.attention(i.t(0, 2, 3, 5, 4), i.t(1, 2, 3, 5, 4), i.t(2, 2, 3, 5, 4), bias=i.t(3, 1, 3, 5, 5),
                                      mask=i.a(causal(5, 5)), sinks=i.t(4, 3))],
    "attention: sinks, head views, fewer queries than keys, a row masked on every key (all its weight on the sink)":
        lambda ops, i: [ops.attention(i.t(0, 2, 2, 3, 4, view=True), i.t(1, 2, 2, 6, 4, view=True),
                                      i.t(2, 2, 2, 6, 4, view=True),
                                      mask=i.a(causal(3, 6) & np.array([True, False, True])[:, None]),
                                      sinks=i.t(3, 2, scale=3.0))],
    "apply_rotary: rotate-half":
        lambda ops, i: [rotary(ops)(i.t(0, 2, 3, 5, 8), *i.tables(1, 5, 8))],
    "apply_rotary: interleaved":
        lambda ops, i: [rotary(ops)(i.t(0, 2, 3, 5, 8), *i.tables(1, 5, 8, True), interleaved=True)],
    "apply_rotary: partial rotary, T = 1":
        lambda ops, i: [rotary(ops)(i.t(0, 2, 3, 1, 8), *i.tables(1, 1, 4))],
    "apply_rotary: head views, an attention factor":
        lambda ops, i: [rotary(ops)(i.t(0, 2, 3, 5, 8, view=True), *i.tables(1, 5, 8, factor=1.2))],
    "apply_rotary: one key shared by every head (decoupled RoPE)":
        lambda ops, i: [rotary(ops)(i.t(0, 2, 1, 5, 4), *i.tables(1, 5, 4))],
    "gelu: (B, T, 4 d_model)":
        lambda ops, i: [ops.gelu(i.t(0, 2, 3, 16, scale=3.0))],
    "gelu: a transposed view":
        lambda ops, i: [ops.gelu(i.t(0, 2, 4, 5, 3, view=True))],
    "layer_norm: (B, T, d_model)":
        lambda ops, i: [ops.layer_norm(i.t(0, 2, 3, 6), i.t(1, 6), i.t(2, 6))],
    "layer_norm: one row of odd width":
        lambda ops, i: [ops.layer_norm(i.t(0, 1, 5, scale=4.0), i.t(1, 5), i.t(2, 5))],
    "rms_norm: (B, T, d_model)":
        lambda ops, i: [ops.rms_norm(i.t(0, 2, 3, 6), i.t(1, 6))],
    "cross_entropy: every target counted":
        lambda ops, i: [ops.cross_entropy(i.t(0, 2, 3, 5), i.a(np.array([[0, 4, 2], [1, 1, 3]])))],
    "cross_entropy: ignored targets":
        lambda ops, i: [ops.cross_entropy(i.t(0, 2, 3, 5), i.a(np.array([[0, -1, 2], [-1, 1, 3]])), ignore_index=-1)],
    "qkv_projection: with a bias":
        lambda ops, i: list(ops.qkv_projection(i.t(0, 2, 3, 4), i.t(1, 4, 12), i.t(2, 12))),
    "qkv_projection: without a bias":
        lambda ops, i: list(ops.qkv_projection(i.t(0, 1, 5, 4), i.t(1, 4, 6))),
    "linear: (B, T, d_in) with a bias":
        lambda ops, i: [ops.linear(i.t(0, 2, 3, 4), i.t(1, 4, 5), i.t(2, 5))],
    "linear: a transposed view, no bias":
        lambda ops, i: [ops.linear(i.t(0, 2, 4, 3, 5, view=True), i.t(1, 5, 2))],
    "linear: one row":
        lambda ops, i: [ops.linear(i.t(0, 1, 4), i.t(1, 4, 3), i.t(2, 3))],
    "embedding: repeated ids, two axes":
        lambda ops, i: [ops.embedding(i.t(0, 5, 3), i.a(np.array([[2, 0, 2], [4, 2, 2]])))],
    "embedding: one id":
        lambda ops, i: [ops.embedding(i.t(0, 5, 3), i.a(np.array([[3]])))],
}


def _run(ops, build):
    """Outputs and input gradients of one case under one kernel set, all as host arrays."""
    inputs = Inputs()
    outs = build(ops, inputs)
    loss = sum((y * backend.asarray(host(99 + n, *y.shape))).sum() for n, y in enumerate(outs))
    loss.backward()       # one backward through all outputs: a graph is spent after its backward
    return [backend.to_numpy(y.data) for y in outs], [backend.to_numpy(t.grad) for t in inputs.tensors]


@pytest.fixture(params=[1, 2], ids=["one thread", "two threads, small blocks"])
def thread_count(request, monkeypatch):
    """The fast kernels on one thread, and on two threads that cut even these small arrays into blocks."""
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
    previous = threads.set_threads(request.param)
    yield request.param
    threads.set_threads(previous)


@pytest.mark.parametrize("case", list(CASES))
def test_fast_kernel_equals_reference(case, thread_count):
    ref_y, ref_g = _run(kernels.REFERENCE, CASES[case])
    fast_y, fast_g = _run(kernels.FAST, CASES[case])
    assert [a.shape for a in fast_y] == [a.shape for a in ref_y]
    for a, b in zip(fast_y, ref_y):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{case}: output")
    assert len(ref_g) == len(fast_g) > 0
    for n, (a, b) in enumerate(zip(fast_g, ref_g)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{case}: gradient of input {n}")


def check_attention_at_large_scores(attention, dtype, score, tol, T):
    r"""``attention`` against the reference and against the output worked by hand, where every score is ``score``
    plus O(1) and e^x overflows (past about 709 in float64 and 88 in float32): values and every gradient finite
    and equal.

    q_i = c e + m_i, k_j = c e + n_j with m, n orthogonal to the unit vector e, so every score is
    s q_i . k_j = s c^2 + s m_i . n_j = `score` + O(1): softmax is blind to the shift, so the output is the one
    the O(1) scores s m_i . n_j give, finite, computed by hand."""
    B, H, d = 2, 2, 4
    e, s = np.ones(d) / np.sqrt(d), 1 / np.sqrt(d)
    m, n = (a - (a @ e)[..., None] * e for a in (host(0, B, H, T, d), host(1, B, H, T, d)))
    c = np.sqrt(score / s)
    q, k, v, gy = c * e + m, c * e + n, host(2, B, H, T, d), host(3, B, H, T, d)
    mask = causal(T, T)
    small = np.where(mask, s * m @ np.swapaxes(n, -1, -2), -np.inf)               # (B, H, T, T) the O(1) scores
    p = np.exp(small - small.max(axis=-1, keepdims=True))
    by_hand = (p / p.sum(axis=-1, keepdims=True)) @ v
    runs = {}
    for name, f in (("reference", kernels.REFERENCE.attention), ("kernel", attention)):
        ts = [Tensor(backend.asarray(a.astype(dtype)), requires_grad=True) for a in (q, k, v)]
        y = f(*ts, mask=backend.asarray(mask))
        (y * Tensor(backend.asarray(gy.astype(dtype)))).sum().backward()
        runs[name] = [backend.to_numpy(y.data)] + [backend.to_numpy(t.grad) for t in ts]
        assert all(np.isfinite(a).all() for a in runs[name]), f"{name}: not finite at scores near {score}"
        np.testing.assert_allclose(runs[name][0], by_hand, rtol=100 * tol, atol=100 * tol, err_msg=name)
    for name, a, b in zip(["output", "gq", "gk", "gv"], runs["kernel"], runs["reference"]):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{dtype}, scores near {score}: {name}")


@pytest.mark.parametrize("dtype, score, tol", [("float64", 1000.0, 1e-10), ("float32", 100.0, 1e-5)])
def test_attention_at_scores_where_exp_overflows_equals_the_reference(dtype, score, tol, thread_count):
    check_attention_at_large_scores(kernels.FAST.attention, dtype, score, tol, T=5)


# Kernels whose backward skips a gradient nobody asked for (``requires_grad``), and the multi-input norms: every
# input frozen in turn, in every combination. A fast linear that computed gx only when W needed a gradient
# stopped backpropagation silently at a frozen layer, and every case above has every input needing one.
FROZEN_CASES = {name: CASES[name] for name in (
    "linear: (B, T, d_in) with a bias", "linear: a transposed view, no bias", "qkv_projection: with a bias",
    "attention: head views, a bias broadcast over the batch, a mask", "layer_norm: (B, T, d_model)",
    "rms_norm: (B, T, d_model)")}
FROZEN_CASES["blocked attention: a bias broadcast over the batch, causal"] = lambda ops, i: [
    (blocked_attention.scaled_dot_product_attention if ops is kernels.FAST else ops.attention)(
        i.t(0, 2, 3, 9, 4, view=True), i.t(1, 2, 3, 9, 4, view=True), i.t(2, 2, 3, 9, 4, view=True),
        bias=i.t(3, 1, 3, 9, 9), mask=i.a(causal(9, 9)))]


def _frozen_sets(case):
    """Every subset of the case's tensors to freeze, the empty one and all of them included."""
    n = _count_tensors(FROZEN_CASES[case])
    return [tuple(i for i in range(n) if bits >> i & 1) for bits in range(2 ** n)]


def _count_tensors(build):
    inputs = Inputs()
    build(kernels.REFERENCE, inputs)
    return len(inputs.tensors)


@pytest.mark.parametrize("case", list(FROZEN_CASES))
def test_fast_kernel_with_frozen_inputs_equals_the_reference(case, monkeypatch):
    monkeypatch.setattr(blocked_attention, "BLOCK", 4)                 # tiles of 4 of the 9 keys, the last short
    for frozen in _frozen_sets(case):
        runs = []
        for ops in (kernels.REFERENCE, kernels.FAST):
            inputs = Inputs(frozen)
            outs = FROZEN_CASES[case](ops, inputs)
            needs = [t.requires_grad for t in inputs.tensors]
            assert [y.requires_grad for y in outs] == [any(needs)] * len(outs), f"{case}, frozen {frozen}"
            if any(needs):
                sum((y * backend.asarray(host(99 + n, *y.shape))).sum() for n, y in enumerate(outs)).backward()
            runs.append(([backend.to_numpy(y.data) for y in outs],
                         [None if t.grad is None else backend.to_numpy(t.grad) for t in inputs.tensors]))
        (ref_y, ref_g), (fast_y, fast_g) = runs
        for a, b in zip(fast_y, ref_y):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{case}, frozen {frozen}: output")
        for n, (a, b) in enumerate(zip(fast_g, ref_g)):
            assert (a is None) == (b is None) == (n in frozen), f"{case}, frozen {frozen}: gradient of input {n}"
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{case}, frozen {frozen}: input {n}")


def test_parallel_rows_covers_every_row_once_in_several_blocks(thread_count):
    seen = []
    threads.parallel_rows(lambda i, j: seen.append((i, j)), 37, work=37)
    assert sorted(r for i, j in seen for r in range(i, j)) == list(range(37))
    assert len(seen) == (1 if thread_count == 1 else 2 * 4)      # 4 blocks a thread when there are threads


def test_set_threads_refuses_fewer_than_one_thread_in_a_sentence():
    previous = threads.threads()
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError) as raised:
            threads.set_threads(bad)
        assert str(raised.value) == (f"set_threads: n must be an integer >= 1, got {bad!r} "
                                     f"(1 runs everything on the calling thread).")
    assert threads.threads() == previous                               # nothing half-changed


def test_set_threads_to_a_new_count_replaces_the_pool_so_that_many_threads_run_at_once(monkeypatch):
    """Blocks wait at a barrier for ``n`` parties: they pass only if ``n`` threads run blocks at the same time.
    A pool made for two threads (one worker beside the caller) and kept after set_threads(3) would leave the
    third party waiting."""
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
    previous = threads.set_threads(1)
    try:
        for n in (2, 3, 2):
            threads.set_threads(n)
            meet, names = threading.Barrier(n, timeout=10), set()

            def kernel(i, j, meet=meet, names=names):
                names.add(threading.current_thread().name)
                meet.wait()
            threads.parallel_rows(kernel, 4 * n, work=1)              # 4 n blocks of one row: rounds of n
            assert len(names) == n, f"{n} threads asked for, {len(names)} ran blocks"
    finally:
        threads.set_threads(previous)


@pytest.mark.parametrize("dtype, big", [("float64", 1000.0), ("float32", 100.0)])
def test_fast_cross_entropy_at_logits_past_exps_overflow_is_the_hand_worked_loss_in_the_logits_dtype(dtype, big):
    """Two rows of two equal logits ``big`` (e^big overflows: past 709 in float64, 88 in float32): each row's
    softmax is (1/2, 1/2), so the loss is ln 2 and d loss / d logit = (softmax - onehot) / N = (-1/4, 1/4) on
    the target and the other. Only the row max *subtracted* keeps every exponent at 0."""
    want_grad = np.array([[-0.25, 0.25], [0.25, -0.25]])
    for ops in (kernels.REFERENCE, kernels.FAST):
        logits = Tensor(backend.asarray(np.full((2, 2), big)), requires_grad=True, dtype=dtype)
        loss = ops.cross_entropy(logits, backend.asarray(np.array([0, 1])))
        loss.backward()
        assert loss.dtype == logits.grad.dtype == np.dtype(dtype), ops.name
        np.testing.assert_allclose(float(loss.item()), np.log(2.0), rtol=1e-6, err_msg=ops.name)
        np.testing.assert_allclose(backend.to_numpy(logits.grad), want_grad, rtol=1e-6, err_msg=ops.name)


def test_fast_adamw_defaults_are_the_references():
    """Built with no settings, the fast AdamW takes the reference's lr, betas, eps and weight decay: two steps
    from the same gradients leave the same parameters."""
    finals = []
    for ops in (kernels.REFERENCE, kernels.FAST):
        params = _params(ops)
        opt = ops.AdamW(params)
        for step in range(2):
            _gradients(params, step)
            opt.step()
        finals.append([backend.to_numpy(p.data) for p in params])
        assert (opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay) == (1e-3, 0.9, 0.999, 1e-8, 0.01), ops.name
    for a, b in zip(*finals):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def _params(ops):
    rng = np.random.default_rng(5)
    return [Tensor(backend.asarray(rng.normal(size=s)), requires_grad=True, dtype="float64")
            for s in [(3, 4), (4,), (2, 3, 2), (5,)]]


def _gradients(params, step):
    rng = np.random.default_rng(100 + step)
    for n, p in enumerate(params):
        # the last parameter gets no gradient on odd steps: its moments must still decay
        p.grad = None if (n == 3 and step % 2) else backend.asarray(rng.normal(size=p.shape) * 3)


def test_fast_adamw_and_clipping_equal_the_reference_over_several_steps(thread_count):
    runs = {}
    for ops in (kernels.REFERENCE, kernels.FAST):
        params = _params(ops)
        opt = ops.AdamW(params, lr=0.1, weight_decay=0.3)
        norms = []
        for step in range(5):
            _gradients(params, step)
            norms.append(ops.clip_grad_norm(params, 2.0))
            opt.step()
        runs[ops.name] = [backend.to_numpy(p.data) for p in params], norms, opt.state_dict()
    (p_ref, n_ref, s_ref), (p_fast, n_fast, s_fast) = runs["reference"], runs["fast"]
    np.testing.assert_allclose(n_fast, n_ref, rtol=RTOL)
    for a, b in zip(p_fast, p_ref):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert s_fast.keys() == s_ref.keys() == {"t", *(f"{name}.{i}" for name in "mv" for i in range(len(p_ref)))}
    for key in s_ref.keys() - {"t"}:
        np.testing.assert_allclose(s_fast[key], s_ref[key], rtol=RTOL, atol=ATOL, err_msg=key)
    assert s_fast["t"] == s_ref["t"] == 5


def test_fast_adamw_after_a_dtype_change_keeps_its_moments_cast_as_the_reference_does():
    """Two steps in float64, then every parameter given a float32 array (as model.to_dtype does) and two more:
    the fast AdamW gathers the parameters into a new buffer with the moments kept and cast to float32, so
    parameters and moments follow the reference's (which casts each parameter's moments); moments started
    over from zero would take a different third step."""
    runs = []
    for ops in (kernels.REFERENCE, kernels.FAST):
        params = _params(ops)
        opt = ops.AdamW(params, lr=0.1, weight_decay=0.3)
        for step in range(4):
            if step == 2:
                for p in params:
                    p.data = p.data.astype("float32")
            _gradients(params, step)
            if step >= 2:
                for p in params:
                    p.grad = None if p.grad is None else p.grad.astype("float32")
            opt.step()
        runs.append(([backend.to_numpy(p.data) for p in params], opt.state_dict()))
    (p_ref, s_ref), (p_fast, s_fast) = runs
    for a, b in zip(p_fast, p_ref):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for key in s_ref.keys() - {"t"}:
        assert s_fast[key].dtype == s_ref[key].dtype == np.float32, key
        np.testing.assert_allclose(s_fast[key], s_ref[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_fast_adamw_takes_a_single_parameter_and_refuses_mixed_dtypes_in_a_sentence():
    runs = []
    for ops in (kernels.REFERENCE, kernels.FAST):
        (w,) = _params(ops)[:1]
        opt = ops.AdamW([w], lr=0.1)
        _gradients([w], 0)
        opt.step()
        runs.append(backend.to_numpy(w.data))
    np.testing.assert_allclose(runs[1], runs[0], rtol=RTOL, atol=ATOL)
    mixed = [Tensor(backend.asarray(np.ones(2)), requires_grad=True, dtype=dt) for dt in ("float64", "float32")]
    with pytest.raises(TypeError) as raised:
        kernels.FAST.AdamW(mixed)
    assert str(raised.value) == "All parameters must share one dtype, got ['float32', 'float64']."


def test_fast_adamw_refuses_a_parameter_that_changed_shape_in_a_sentence():
    params = _params(kernels.FAST)
    opt = kernels.FAST.AdamW(params)
    params[1].data = backend.asarray(np.zeros(5))                       # (4,) became (5,): another model
    _gradients(params, 0)
    with pytest.raises(ValueError) as raised:
        opt.step()
    assert str(raised.value) == ("A parameter changed shape after the optimiser was built; build a new optimiser "
                                 "for the changed model.")


@pytest.mark.parametrize("positional", ["rope", "alibi", "t5", "learned", "shaw", "transformer_xl", "decoupled_rope"])
def test_tiny_gpt_trains_to_the_same_parameters_with_either_kernel_set(positional):
    data = np.random.default_rng(0).integers(0, 16, size=(4, 9))
    x, y = backend.asarray(data[:, :-1]), backend.asarray(data[:, 1:])
    finals = {}
    for name in kernels.NAMES:
        model = TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8, positional=positional,
                                  kernels=name)).to_dtype("float64")
        result = train(model, lambda rng: (x, y), TrainConfig(steps=4, lr=1e-2, warmup=1, progress=False))
        finals[name] = result.losses, model.state_dict()
    (loss_ref, p_ref), (loss_fast, p_fast) = finals["reference"], finals["fast"]
    np.testing.assert_allclose(loss_fast, loss_ref, rtol=1e-10)
    assert p_ref.keys() == p_fast.keys()
    for key in p_ref:
        np.testing.assert_allclose(p_fast[key], p_ref[key], rtol=1e-8, atol=1e-10, err_msg=key)
    assert not np.allclose(p_ref["head.weight"], TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2,
                                                                   max_len=8, positional=positional)).state_dict()
                           ["head.weight"])      # training moved the weights: the comparison is not vacuous


@pytest.mark.parametrize("first, then", [("reference", "fast"), ("fast", "reference")])
def test_a_checkpoint_of_either_adamw_resumes_in_the_other_as_if_never_interrupted(first, then, tmp_path):
    data = np.random.default_rng(0).integers(0, 16, size=(4, 9))
    x, y = backend.asarray(data[:, :-1]), backend.asarray(data[:, 1:])

    def model(name):
        return TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8, kernels=name)
                       ).to_dtype("float64")

    # min_lr = lr: after one warmup step the rate is constant, so 3 steps then 3 more follow the 6-step schedule
    settings = dict(lr=1e-2, min_lr=1e-2, warmup=1, progress=False)
    straight = model(then)
    straight_run = train(straight, lambda rng: (x, y), TrainConfig(steps=6, **settings))
    path = str(tmp_path / "ck.npz")
    train(model(first), lambda rng: (x, y), TrainConfig(steps=3, checkpoint_path=path, **settings))
    resumed = model(then)
    resumed_run = train(resumed, lambda rng: (x, y), TrainConfig(steps=6, **settings), resume_from=path)
    np.testing.assert_allclose(resumed_run.losses, straight_run.losses[3:], rtol=1e-10)
    p_straight, p_resumed = straight.state_dict(), resumed.state_dict()
    for key in p_straight:
        np.testing.assert_allclose(p_resumed[key], p_straight[key], rtol=1e-10, atol=1e-10, err_msg=key)
    moved = resumed.state_dict()["head.weight"] - model(then).state_dict()["head.weight"]
    assert np.abs(moved).max() > 1e-3                     # six steps moved the weights: the comparison is not vacuous


def test_fast_linear_widens_to_a_float64_bias_as_the_reference_does():
    x = Tensor(backend.asarray(host(0, 2, 3, 4)), dtype="float32")
    w = Tensor(backend.asarray(host(1, 4, 5)), dtype="float32")
    b = Tensor(backend.asarray(host(2, 5)), dtype="float64")
    ref, fast = kernels.REFERENCE.linear(x, w, b), kernels.FAST.linear(x, w, b)
    assert ref.dtype == fast.dtype == np.float64
    np.testing.assert_array_equal(backend.to_numpy(fast.data), backend.to_numpy(ref.data))


@pytest.mark.parametrize("name", kernels.NAMES)
def test_linear_refuses_an_input_that_does_not_fit_its_weight_in_a_sentence(name):
    ops = kernels.select(name)
    x, w = Tensor(backend.asarray(host(0, 2, 3, 5))), Tensor(backend.asarray(host(1, 4, 6)))
    with pytest.raises(ValueError, match=r"linear: input of shape \(2, 3, 5\) does not fit a weight of shape \(4, 6\)"):
        ops.linear(x, w)


def test_each_kernel_set_holds_the_code_it_names():
    fields = [f for f in kernels.Kernels.__dataclass_fields__ if f != "name"]
    for f in fields:
        if f == "apply_rotary":      # None: the RoPE schemes run their own op, beside their frequencies
            assert kernels.REFERENCE.apply_rotary is None and rotary(kernels.REFERENCE).__module__ == \
                "mini_transformer.positional.rope"
        else:
            assert getattr(kernels.REFERENCE, f).__module__ in (
                "mini_transformer.engine.functional", "mini_transformer.engine.autograd",
                "mini_transformer.engine.optim"), f
        assert getattr(kernels.FAST, f).__module__.startswith("mini_transformer.engine.kernels."), f
    assert kernels.select("reference") is kernels.REFERENCE and kernels.select("fast") is kernels.FAST
    with pytest.raises(ValueError, match=r"kernels='quick' is not a kernel set; choose 'reference'"):
        kernels.select("quick")


# ---------------------------------------------------------------------------
# The switch: one set in force, which the model enters and the layers ask for
# ---------------------------------------------------------------------------

FIELDS = [f for f in kernels.Kernels.__dataclass_fields__ if f != "name"]


def _ran(run):
    """The code of every Python function called on this thread while ``run()`` runs."""
    codes = set()

    def profile(frame, event, arg):
        if event == "call":
            codes.add(frame.f_code)
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(previous)
    return codes


def _code(kernel_set, field):
    """The code of one op of a kernel set (None for a class such as AdamW, or an empty entry)."""
    return getattr(getattr(kernel_set, field), "__code__", None)


def _ops_that_ran(kernel_set, codes):
    return {f for f in FIELDS if _code(kernel_set, f) is not None and _code(kernel_set, f) in codes}


def _tiny(name, norm="layer"):
    return TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=8, norm=norm, kernels=name))


def test_using_puts_a_set_in_force_for_its_block_and_restores_the_previous_one_even_on_a_raise():
    assert kernels.active() is kernels.REFERENCE                         # outside any block
    with kernels.using(kernels.FAST) as chosen:
        assert chosen is kernels.active() is kernels.FAST
        with pytest.raises(RuntimeError, match="raised inside"):
            with kernels.using(kernels.REFERENCE):
                assert kernels.active() is kernels.REFERENCE
                raise RuntimeError("raised inside")
        assert kernels.active() is kernels.FAST                          # the inner block's set is gone
    assert kernels.active() is kernels.REFERENCE
    with pytest.raises(TypeError, match=r"kernels.using needs a kernel set .*, got 'fast'"):
        with kernels.using("fast"):
            pass
    with pytest.raises(IndexError, match="id 16 is out of range"):     # raised inside the model's forward ...
        _tiny("fast")(backend.asarray(np.array([[1, 16]])))
    assert kernels.active() is kernels.REFERENCE                         # ... which still restores the set


@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize("name", kernels.NAMES)
def test_a_model_runs_every_op_from_the_set_its_config_names_and_none_from_the_other(name, norm):
    chosen, other = kernels.select(name), kernels.select({"fast": "reference", "reference": "fast"}[name])
    model = _tiny(name, norm)
    data = np.random.default_rng(0).integers(0, 16, size=(2, 6))
    x, y = backend.asarray(data[:, :-1]), backend.asarray(data[:, 1:])
    ran = _ran(lambda: model.loss(x, y).backward())
    used = {"embedding", "qkv_projection", "attention", "gelu", "cross_entropy", f"{norm}_norm", "linear"}
    assert used <= _ops_that_ran(chosen, ran) <= used | {"apply_rotary"}   # and RoPE's rotation, where the set has one
    assert _ops_that_ran(other, ran) == set()
    if _code(chosen, "apply_rotary") is not None:
        assert "apply_rotary" in _ops_that_ran(chosen, ran)
    assert kernels.active() is kernels.REFERENCE                         # the model left no set in force


def test_a_layer_called_outside_any_model_runs_the_reference():
    fast = _tiny("fast")
    x = Tensor(backend.asarray(host(0, 2, 3, 16)), requires_grad=True)
    pos = backend.xp.arange(3)

    def layers():
        fast.blocks[0](x, fast.positional, pos, pos, None, None).sum().backward()   # a fast model's block, alone
        nn.RMSNorm(16)(x)
        nn.Embedding(5, 16, backend.rng(0))(backend.asarray(np.array([[1, 4]])))
    alone = _ran(layers)
    used = {"embedding", "qkv_projection", "attention", "gelu", "layer_norm", "rms_norm", "linear"}
    assert used <= _ops_that_ran(kernels.REFERENCE, alone) and _ops_that_ran(kernels.FAST, alone) == set()
    with kernels.using(kernels.FAST):
        inside = _ran(layers)
    assert used <= _ops_that_ran(kernels.FAST, inside) and _ops_that_ran(kernels.REFERENCE, inside) == set()


# ---------------------------------------------------------------------------
# The fast RoPE kernel: its quarter-turn matrix, and the rotation on a head view
# ---------------------------------------------------------------------------

ROPE_TOL = 1e-9   # the rotation is linear in x: central differences leave only rounding


@pytest.mark.parametrize("interleaved,want", [(False, [-3.0, -4.0, 1.0, 2.0]), (True, [-2.0, 1.0, -4.0, 3.0])])
def test_quarter_turn_matrix_by_hand(interleaved, want):
    # rotate-half: [x1, x2] -> [-x2, x1] with halves (1, 2), (3, 4); interleaved: pairs (1, 2), (3, 4) each turned
    R = fast_rope.quarter_turn_matrix(4, interleaved, dtype="float64")
    x = backend.asarray(np.array([1.0, 2.0, 3.0, 4.0]))
    assert backend.to_numpy(x @ R).tolist() == want
    np.testing.assert_array_equal(backend.to_numpy(R.T), backend.to_numpy(-R))                # R^T = -R
    np.testing.assert_array_equal(backend.to_numpy(R @ R), -np.eye(4))                        # two quarter turns


def test_quarter_turn_matrix_defaults_to_rotate_half_in_float32_and_keeps_a_dtype_it_is_given():
    R = fast_rope.quarter_turn_matrix(4)
    assert R.dtype == np.float32
    assert backend.to_numpy(backend.asarray(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)) @ R).tolist() == \
        [-3.0, -4.0, 1.0, 2.0]                                          # halves (1, 2), (3, 4): [-x2, x1]
    assert fast_rope.quarter_turn_matrix(4, dtype="float32").dtype == np.float32
    assert fast_rope.quarter_turn_matrix(4, True, "float64").dtype == np.float64


def _rotary_by_formula(a, cos, sin, interleaved):
    """x cos + rot(x) sin on the first r channels with the quarter turn written out pair by pair (NumPy)."""
    r = cos.shape[-1]
    x = a[..., :r]
    if interleaved:
        turned = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    else:
        turned = np.concatenate([-x[..., r // 2:], x[..., :r // 2]], axis=-1)
    return np.concatenate([x * cos + turned * sin, a[..., r:]], axis=-1)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("r", [6, 4])
def test_fast_apply_rotary_on_a_head_view_keeps_its_layout_and_its_numbers(interleaved, r):
    # attention hands RoPE q as a (B, H, T, d) view of a (B, T, H, d) array; the fast kernel works in that memory
    # order, and its backward is the exact transpose for any tables (the reference's needs one angle per pair)
    B, T, H, d = 2, 5, 3, 6
    rng = np.random.default_rng(4)
    a = rng.normal(size=(B, T, H, d)).transpose(0, 2, 1, 3)           # (B, H, T, d) view
    cos, sin = rng.normal(size=(T, r)), rng.normal(size=(T, r))        # any tables: the op is linear in them
    x = Tensor(backend.asarray(a), requires_grad=True)
    y = fast_rope.apply_rotary(x, backend.asarray(cos), backend.asarray(sin), interleaved=interleaved)
    np.testing.assert_allclose(y.numpy(), _rotary_by_formula(a, cos, sin, interleaved), rtol=1e-13, atol=1e-13)
    assert y.data.strides == x.data.strides                            # no transposing copy on the way out
    gy = rng.normal(size=a.shape)
    y.backward(backend.asarray(gy))
    assert x.grad.strides == x.data.strides
    # the backward is the transpose: <gy, J e> = <J^T gy, e> for any direction e
    e = rng.normal(size=a.shape)
    np.testing.assert_allclose((gy * _rotary_by_formula(e, cos, sin, interleaved)).sum(),
                               (backend.to_numpy(x.grad) * e).sum(), rtol=1e-12)
    assert_gradcheck(lambda t: fast_rope.apply_rotary(t, backend.asarray(cos), backend.asarray(sin),
                                                      interleaved=interleaved),
                     [Tensor(backend.asarray(a), requires_grad=True)], tol=ROPE_TOL)


# ---------------------------------------------------------------------------
# Attention in blocks of keys: the reference's numbers in T x block memory
# ---------------------------------------------------------------------------

from mini_transformer.engine import functional  # noqa: E402
from mini_transformer.engine.kernels import attention as whole_attention  # noqa: E402
from mini_transformer.engine.kernels import blocked_attention  # noqa: E402

ATTENTION_PATHS = {
    "reference": functional.scaled_dot_product_attention,
    "whole-matrix kernel": whole_attention.scaled_dot_product_attention,
    "blocked kernel": blocked_attention.scaled_dot_product_attention,
}

BLOCKED_CASES = {
    "T_q = T_k = 1":
        lambda f, i: f(i.t(0, 2, 3, 1, 4), i.t(1, 2, 3, 1, 4), i.t(2, 2, 3, 1, 4)),
    "odd T, causal mask, tiles split the keys unevenly":
        lambda f, i: f(i.t(0, 2, 2, 11, 4), i.t(1, 2, 2, 11, 4), i.t(2, 2, 2, 11, 4), mask=i.a(causal(11, 11))),
    "a cache: the last 3 of 13 positions query, d_v != d_head":
        lambda f, i: f(i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 13, 4), i.t(2, 1, 2, 13, 6), mask=i.a(causal(3, 13))),
    "head views, a bias broadcast over the batch (1, H, T_q, T_k), causal":
        lambda f, i: f(i.t(0, 2, 3, 9, 4, view=True), i.t(1, 2, 3, 9, 4, view=True), i.t(2, 2, 3, 9, 4, view=True),
                       bias=i.t(3, 1, 3, 9, 9), mask=i.a(causal(9, 9))),
    "a full (B, H, T_q, T_k) bias, a scale":
        lambda f, i: f(i.t(0, 2, 2, 6, 3), i.t(1, 2, 2, 10, 3), i.t(2, 2, 2, 10, 3), bias=i.t(3, 2, 2, 6, 10),
                       scale=0.3),
    "a bias broadcast over the keys (B, 1, T_q, 1) and a (B, 1, T_q, T_k) boolean mask":
        lambda f, i: f(i.t(0, 2, 2, 5, 4), i.t(1, 2, 2, 9, 4), i.t(2, 2, 2, 9, 4), bias=i.t(3, 2, 1, 5, 1),
                       mask=i.a(np.random.default_rng(7).random((2, 1, 5, 9)) < 0.6) | i.a(causal(5, 9))),
    "scores near -1000: every e^S underflows unless the running max is subtracted":
        lambda f, i: f(i.t(0, 2, 2, 5, 4), i.t(1, 2, 2, 9, 4), i.t(2, 2, 2, 9, 4),
                       bias=i.a(host(3, 2, 2, 5, 9) - 1000.0), mask=i.a(causal(5, 9))),
    "a bias broadcast over the queries (1, H, 1, T_k) and the batch, causal":
        lambda f, i: f(i.t(0, 2, 3, 9, 4), i.t(1, 2, 3, 9, 4), i.t(2, 2, 3, 9, 4), bias=i.t(3, 1, 3, 1, 9),
                       mask=i.a(causal(9, 9))),
    "keys 4 to 7 that no query may see (a whole tile of block 4 skipped), a full bias":
        lambda f, i: f(i.t(0, 1, 2, 6, 4), i.t(1, 1, 2, 10, 4), i.t(2, 1, 2, 10, 4), bias=i.t(3, 1, 2, 6, 10),
                       mask=i.a(causal(6, 10) & ((np.arange(10) < 4) | (np.arange(10) >= 8))[None, :])),
    "a row masked on every key of its first tile": lambda f, i: f(
        i.t(0, 1, 2, 4, 4), i.t(1, 1, 2, 10, 4), i.t(2, 1, 2, 10, 4), bias=i.a(host(3, 2, 4, 10)),
        mask=i.a(np.arange(10)[None, :] >= np.array([0, 4, 5, 9])[:, None])),
    # the row above is left out of the tiles it cannot see; here batch row 0 sees the first tile, so the queries of
    # batch row 1 run it with every score -inf (a left-padded row): the rescaling must not take -inf - (-inf)
    "key padding broadcast over the queries (B, 1, 1, T_k), row 1's first tiles all padding": lambda f, i: f(
        i.t(0, 2, 2, 5, 4), i.t(1, 2, 2, 11, 4), i.t(2, 2, 2, 11, 4), bias=i.t(3, 1, 2, 5, 11),
        mask=i.a(key_padding(11, [0, 8]))),
    "two batch axes, a bias (2, 1, 1, T_q, T_k) broadcast over the second and the heads, causal": lambda f, i: f(
        i.t(0, 2, 2, 2, 9, 4), i.t(1, 2, 2, 2, 9, 4), i.t(2, 2, 2, 2, 9, 3), bias=i.t(3, 2, 1, 1, 9, 9),
        mask=i.a(causal(9, 9))),
    "two batch axes, no mask, fewer heads than queries: every tile runs all T_q queries": lambda f, i: f(
        i.t(0, 2, 2, 2, 9, 4), i.t(1, 2, 2, 2, 9, 4), i.t(2, 2, 2, 2, 9, 3)),
    "query rows 1000 apart (a bias constant over the keys): each row needs its own running max": lambda f, i: f(
        i.t(0, 1, 2, 4, 4), i.t(1, 1, 2, 9, 4), i.t(2, 1, 2, 9, 4),
        bias=i.a(np.array([0.0, -1000.0, 500.0, -2000.0])[:, None]), mask=i.a(causal(4, 9))),
    "a bias without a batch axis (H, T_q, T_k), needing a gradient, causal": lambda f, i: f(
        i.t(0, 2, 2, 5, 4), i.t(1, 2, 2, 9, 4), i.t(2, 2, 2, 9, 4), bias=i.t(3, 2, 5, 9), mask=i.a(causal(5, 9))),
    "the same padding under a causal mask, (B, 1, T_q, T_k)": lambda f, i: f(
        i.t(0, 2, 2, 11, 4), i.t(1, 2, 2, 11, 4), i.t(2, 2, 2, 11, 4),
        mask=i.a(key_padding(11, [0, 8]) & causal(11, 11) | padding_queries(11, [0, 8]))),
    "sinks: odd T, causal, tiles split the keys unevenly": lambda f, i: f(
        i.t(0, 2, 2, 11, 4), i.t(1, 2, 2, 11, 4), i.t(2, 2, 2, 11, 4), mask=i.a(causal(11, 11)), sinks=i.t(3, 2)),
    "sinks, a bias, keys 4 to 7 that no query may see, a row masked on every key": lambda f, i: f(
        i.t(0, 1, 2, 6, 4), i.t(1, 1, 2, 10, 4), i.t(2, 1, 2, 10, 4), bias=i.t(3, 1, 2, 6, 10),
        mask=i.a(causal(6, 10) & ((np.arange(10) < 4) | (np.arange(10) >= 8))[None, :]
                 & (np.arange(6) != 3)[:, None]), sinks=i.t(4, 2, scale=3.0)),
    "sinks, key padding past the first tile, two batch axes": lambda f, i: f(
        i.t(0, 2, 2, 2, 5, 4), i.t(1, 2, 2, 2, 11, 4), i.t(2, 2, 2, 2, 11, 3),
        mask=i.a(key_padding(11, [0, 8])[:, None]), sinks=i.t(3, 2)),
}


def key_padding(T_k, pads):
    """``(B, 1, 1, T_k)`` booleans: row b's first ``pads[b]`` keys hidden, the keys of a left-padded batch."""
    return (np.arange(T_k)[None, :] >= np.array(pads)[:, None])[:, None, None, :]


def padding_queries(T, pads):
    """``(B, 1, T, 1)``: True on row b's first ``pads[b]`` queries, which the model lets see every key (finite, unread)."""
    return (np.arange(T)[None, :] < np.array(pads)[:, None])[:, None, :, None]


def test_tiles_run_only_the_queries_that_see_their_keys():
    """Worked by hand: under causal(8, 8) the queries before key 4 see none of keys 4 to 7; a block under the
    diagonal is seen whole by every query after it, so it needs no mask; a block no query sees is left out."""
    tiles = blocked_attention._tiles
    assert tiles(None, 8, 8, 4) == [(0, 4, 0, 8, True), (4, 8, 0, 8, True)]
    assert tiles(backend.asarray(causal(8, 8)), 8, 8, 4) == [(0, 4, 0, 8, False), (4, 8, 4, 8, False)]
    assert tiles(backend.asarray(causal(8, 8)), 8, 8, 2) == [(0, 2, 0, 8, False), (2, 4, 2, 8, False),
                                                              (4, 6, 4, 8, False), (6, 8, 6, 8, False)]
    # a cache: the last 3 of 12 positions query; keys 0 to 8 are seen whole by all three
    assert tiles(backend.asarray(causal(3, 12)), 3, 12, 4) == [(0, 4, 0, 3, True), (4, 8, 0, 3, True),
                                                                (8, 12, 0, 3, False)]
    hidden = causal(8, 8) & (np.arange(8) < 4)[None, :]              # keys 4 to 7 seen by no query
    assert tiles(backend.asarray(hidden), 8, 8, 4) == [(0, 4, 0, 8, False)]
    per_batch = np.stack([causal(4, 4), np.ones((4, 4), dtype=bool)])[:, None]   # (B, 1, T_q, T_k)
    assert tiles(backend.asarray(per_batch), 4, 4, 2) == [(0, 2, 0, 4, False), (2, 4, 0, 4, False)]
    # the kernel hands the mask over with (B, H) axes in front: the same tiles as the (T_q, T_k) mask
    assert tiles(backend.asarray(causal(8, 8)[None, None]), 8, 8, 4) == [(0, 4, 0, 8, False), (4, 8, 4, 8, False)]
    # two documents of 4 packed in a row: each block is seen whole by its own document's queries and by no other
    documents = (np.arange(8)[:, None] // 4 == np.arange(8)[None, :] // 4)[None, None]
    assert tiles(backend.asarray(documents), 8, 8, 4) == [(0, 4, 0, 4, True), (4, 8, 4, 8, True)]


@pytest.fixture(params=[4, 8], ids=["block 4", "block 8"])
def small_block(request, monkeypatch):
    monkeypatch.setattr(blocked_attention, "BLOCK", request.param)
    return request.param


def _run_attention(f, build):
    """Output and input gradients of one attention call, as host arrays."""
    inputs = Inputs()
    y = build(f, inputs)
    (y * backend.asarray(host(99, *y.shape))).sum().backward()
    return backend.to_numpy(y.data), [backend.to_numpy(t.grad) for t in inputs.tensors]


@pytest.mark.parametrize("case", list(BLOCKED_CASES))
def test_blocked_attention_equals_the_reference(case, small_block):
    ref_y, ref_g = _run_attention(functional.scaled_dot_product_attention, BLOCKED_CASES[case])
    y, g = _run_attention(blocked_attention.scaled_dot_product_attention, BLOCKED_CASES[case])
    assert y.shape == ref_y.shape and np.isfinite(y).all()
    np.testing.assert_allclose(y, ref_y, rtol=RTOL, atol=ATOL, err_msg=f"{case}: output")
    assert len(g) == len(ref_g) >= 3
    for n, (a, b) in enumerate(zip(g, ref_g)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{case}: gradient of input {n}")


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # 0/0, in both forms
def test_blocked_attention_of_a_row_masked_on_every_key_is_nan_where_the_reference_is(small_block):
    # the reference's softmax of a row of -inf is 0/0: NaN in that row, and only there
    mask = np.ones((3, 10), dtype=bool)
    mask[1] = False
    runs = []
    for f in (functional.scaled_dot_product_attention, blocked_attention.scaled_dot_product_attention):
        i = Inputs()
        y = backend.to_numpy(f(i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 10, 4), i.t(2, 1, 2, 10, 4),
                               mask=i.a(mask)).data)
        runs.append(y)
    ref, blocked = runs
    assert np.isnan(ref[:, :, 1]).all() and np.isfinite(ref[:, :, [0, 2]]).all()
    assert (np.isnan(blocked) == np.isnan(ref)).all()
    np.testing.assert_allclose(blocked[:, :, [0, 2]], ref[:, :, [0, 2]], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("dtype, score, tol", [("float64", 1000.0, 1e-10), ("float32", 100.0, 1e-5)])
def test_blocked_attention_at_scores_where_exp_overflows_equals_the_reference(dtype, score, tol, small_block):
    check_attention_at_large_scores(blocked_attention.scaled_dot_product_attention, dtype, score, tol, T=11)


def test_blocked_attention_in_float32_gives_a_float32_bias_its_gradient_in_float32(small_block):
    """A bias that needs a gradient, all inputs float32: the gradient has the bias's dtype, as the reference's
    (sum_to of a float32 gS) has; accumulated in float64 it would come back float64 and widen the bias's update."""
    runs = {}
    for name, f in (("reference", functional.scaled_dot_product_attention),
                    ("blocked", blocked_attention.scaled_dot_product_attention)):
        q, k, v, bias = (Tensor(backend.asarray(host(n, *shape)), requires_grad=True, dtype="float32")
                         for n, shape in enumerate([(2, 2, 5, 4), (2, 2, 9, 4), (2, 2, 9, 4), (1, 2, 5, 9)]))
        y = f(q, k, v, bias=bias, mask=backend.asarray(causal(5, 9)))
        (y * Tensor(backend.asarray(host(9, *y.shape)), dtype="float32")).sum().backward()
        runs[name] = [backend.to_numpy(t.grad) for t in (q, k, v, bias)]
    for n, (a, b) in enumerate(zip(runs["blocked"], runs["reference"])):
        assert a.dtype == b.dtype == np.float32, f"gradient of input {n}: {a.dtype}, the reference's {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"gradient of input {n}")


@pytest.mark.parametrize("causal_too", [False, True], ids=["key padding alone", "and causal"])
def test_the_fast_set_at_blocked_length_with_key_padding_equals_the_reference(causal_too):
    """300 keys, tiles of ``BLOCK`` = 128 as the fast set runs them: a key-padding mask ``(B, 1, 1, T_k)`` (every
    query of a row shares it) with row 1 padded past the first tile, values and every gradient. A ``_tiles`` that
    ran only query 0 of such a mask left 1196 of 1200 rows NaN; a rescaling by the raw running max gave
    -inf - (-inf) = NaN in row 1, whose every query sees no key of the first tile."""
    T = 300
    assert T >= blocked_attention.BLOCKED_FROM and 160 > blocked_attention.BLOCK      # blocked, padding > a tile
    mask = key_padding(T, [0, 160])                                    # (2, 1, 1, T)
    if causal_too:
        mask = mask & causal(T, T) | padding_queries(T, [0, 160])     # as the model's batch_mask makes it

    def build(f, i):
        return f(i.t(0, 2, 2, T, 4), i.t(1, 2, 2, T, 4), i.t(2, 2, 2, T, 4), bias=i.t(3, 1, 2, 1, T),
                 mask=i.a(mask))
    ref_y, ref_g = _run_attention(functional.scaled_dot_product_attention, build)
    y, g = _run_attention(kernels.FAST.attention, build)
    assert np.isfinite(y).all() and all(np.isfinite(a).all() for a in g)
    np.testing.assert_allclose(y, ref_y, rtol=RTOL, atol=ATOL, err_msg="output")
    assert len(g) == len(ref_g) == 4
    for n, (a, b) in enumerate(zip(g, ref_g)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"gradient of input {n}")


@pytest.mark.parametrize("extras", [False, True], ids=["plain", "bias, mask and scale"])
def test_blocked_attention_with_return_weights_gives_the_whole_kernels_weights(extras):
    i = Inputs()
    q, k, v = i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 5, 4), i.t(2, 1, 2, 5, 4)
    more = (i.t(3, 1, 2, 3, 5), i.a(causal(3, 5)), 0.3) if extras else ()    # bias, mask, scale, by position
    y, p = blocked_attention.scaled_dot_product_attention(q, k, v, *more, return_weights=True)
    y_ref, p_ref = functional.scaled_dot_product_attention(q, k, v, *more, return_weights=True)
    if extras:
        assert (backend.to_numpy(p)[..., ~causal(3, 5)] == 0).all()          # the mask reached the weights
    np.testing.assert_allclose(backend.to_numpy(p), backend.to_numpy(p_ref), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(backend.to_numpy(y.data), backend.to_numpy(y_ref.data), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("path", list(ATTENTION_PATHS))
def test_every_attention_path_refuses_values_whose_length_is_not_the_keys_in_the_same_sentence(path):
    i = Inputs()
    q, k, v = i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 5, 4), i.t(2, 1, 2, 6, 4)
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention: q \(1, 2, 3, 4\), k \(1, 2, 5, 4\), "
                                         r"v \(1, 2, 6, 4\) do not fit the \(B, H, T, d_head\) layout"):
        ATTENTION_PATHS[path](q, k, v)


def _record_attention_paths(monkeypatch):
    r"""Blocks from 6 keys on, and the list that each fast attention call appends its path to ("blocked", "whole")."""
    calls = []
    for name, module in (("blocked", blocked_attention), ("whole", whole_attention)):
        run = module.scaled_dot_product_attention
        monkeypatch.setattr(module, "scaled_dot_product_attention",
                            lambda *a, _run=run, _name=name, **kw: calls.append(_name) or _run(*a, **kw))
    monkeypatch.setattr(blocked_attention, "BLOCKED_FROM", 6)
    return calls


def test_the_fast_set_blocks_the_keys_from_blocked_from_on(monkeypatch):
    calls = _record_attention_paths(monkeypatch)
    i = Inputs()
    for T_k, weights in ((5, False), (6, False), (9, False), (9, True)):
        kernels.FAST.attention(i.t(0, 1, 1, 2, 4), i.t(1, 1, 1, T_k, 4), i.t(2, 1, 1, T_k, 4), return_weights=weights)
    assert calls == ["whole", "blocked", "blocked", "whole"]


def _peak_bytes(f, T, block=None):
    """tracemalloc's peak over one forward and backward of ``f`` at B = H = 1, d = 16, float64."""
    import tracemalloc
    q, k, v = (Tensor(backend.asarray(host(n, 1, 1, T, 16)), requires_grad=True, dtype="float64") for n in range(3))
    gy, mask = Tensor(backend.asarray(host(3, 1, 1, T, 16))), backend.asarray(causal(T, T))   # the mask: 1 MiB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        (f(q, k, v, mask=mask) * gy).sum().backward()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_blocked_attention_memory_grows_as_t_times_block_not_t_squared(monkeypatch):
    if backend.get_backend() != "numpy":
        pytest.skip("tracemalloc counts host memory: NumPy's arrays")
    monkeypatch.setattr(blocked_attention, "BLOCK", 128)
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 10 ** 12)      # one thread: tracemalloc sees every buffer
    T = 1024
    square = T * T * 8                                                # the (T, T) float64 matrix: 8 MiB
    whole = _peak_bytes(whole_attention.scaled_dot_product_attention, T)
    blocked = _peak_bytes(blocked_attention.scaled_dot_product_attention, T)
    assert whole > square, f"positive control: the whole-matrix kernel peaked at {whole} bytes"
    # the backward holds two (T, block) tiles, P_J and gS_J (2 MiB), beside a dozen (T, d) arrays (1.5 MiB)
    assert blocked < square / 2, f"blocked attention peaked at {blocked} bytes, the T^2 matrix is {square}"
    twice = _peak_bytes(blocked_attention.scaled_dot_product_attention, 2 * T)
    assert twice < 2.5 * blocked, f"T = {2 * T} peaked at {twice} bytes, T = {T} at {blocked}: not linear in T"


# ---------------------------------------------------------------------------
# One rule for masks on every attention path: boolean, or refused in one sentence
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "float64"])
@pytest.mark.parametrize("path", list(ATTENTION_PATHS))
def test_every_attention_path_refuses_a_mask_that_is_not_boolean_in_the_same_sentence(path, dtype):
    # an int64 0/1 mask once gave NaN everywhere in the reference (~1 = -2 hides every score), the right numbers
    # in the whole kernel and a TypeError deep in the blocked one; a float 0/-inf mask means the opposite of 0/1
    i = Inputs()
    q, k, v = i.t(0, 1, 2, 3, 4), i.t(1, 1, 2, 5, 4), i.t(2, 1, 2, 5, 4)
    mask = i.a(causal(3, 5).astype(dtype))
    want = (rf"scaled_dot_product_attention: mask must be a boolean array, True where a query may look, got dtype "
            rf"{dtype}; for a 0/1 mask pass mask != 0")
    with pytest.raises(TypeError, match=want):
        ATTENTION_PATHS[path](q, k, v, mask=mask)
    y = ATTENTION_PATHS[path](q, k, v, mask=mask != 0)                    # the conversion the sentence asks for
    ref = functional.scaled_dot_product_attention(q, k, v, mask=i.a(causal(3, 5)))
    np.testing.assert_allclose(backend.to_numpy(y.data), backend.to_numpy(ref.data), rtol=RTOL, atol=ATOL)


def test_the_fast_set_refuses_a_non_boolean_mask_at_any_length():
    i = Inputs()
    for T_k in (5, blocked_attention.BLOCKED_FROM):                      # the whole kernel, then the blocked one
        q, k, v = i.t(0, 1, 1, 2, 4), i.t(1, 1, 1, T_k, 4), i.t(2, 1, 1, T_k, 4)
        with pytest.raises(TypeError, match=r"mask must be a boolean array.*got dtype int64"):
            kernels.FAST.attention(q, k, v, mask=i.a(np.ones((2, T_k), dtype=np.int64)))


def test_document_mask_is_boolean_and_every_attention_path_takes_it():
    from mini_transformer.model import document_mask
    m = document_mask(backend.asarray(np.array([[7, 7, 2, 7]])))         # (1, 4, 4): documents {0, 1}, {2}, {3}
    assert m.dtype == bool
    assert backend.to_numpy(m)[0].tolist() == [[True, True, False, False], [True, True, False, False],
                                               [False, False, True, False], [False, False, False, True]]
    i = Inputs()
    q, k, v = i.t(0, 1, 2, 4, 4), i.t(1, 1, 2, 4, 4), i.t(2, 1, 2, 4, 4)
    runs = [backend.to_numpy(f(q, k, v, mask=m[:, None]).data) for f in ATTENTION_PATHS.values()]
    assert all(np.isfinite(y).all() for y in runs)
    # key 3 alone in its document: query 3's output is v_3, worked by hand (softmax over one key is 1)
    np.testing.assert_allclose(runs[0][0, :, 3], backend.to_numpy(v.data)[0, :, 3], rtol=RTOL, atol=ATOL)
    for y in runs[1:]:
        np.testing.assert_allclose(y, runs[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("x, want", [
    ([0.0, 1.0, -1.0], [0.0, 0.8411919906082768, -0.15880800939172324]),   # one axis of odd length
    (1.0, 0.8411919906082768),                                               # a 0-d input
], ids=["one axis of odd length", "0-d"])
def test_fast_gelu_on_fewer_than_two_axes_is_the_tanh_form_worked_by_hand(x, want, thread_count):
    r"""x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) by hand: 0 at 0; 0.84119... at 1; and GELU(-x) = GELU(x) - x,
    so -0.15880... at -1. The gradient at 0 is 1/2: s(0) = 1/2 and 2u' vanishes there."""
    t = Tensor(backend.asarray(np.array(x)), requires_grad=True, dtype="float64")
    y = kernels.FAST.gelu(t)
    assert y.shape == t.shape
    np.testing.assert_allclose(backend.to_numpy(y.data), want, rtol=1e-15, atol=1e-16)
    y.sum().backward()
    ref = Tensor(backend.asarray(np.array(x)), requires_grad=True, dtype="float64")
    kernels.REFERENCE.gelu(ref).sum().backward()
    np.testing.assert_allclose(backend.to_numpy(t.grad), backend.to_numpy(ref.grad), rtol=RTOL, atol=ATOL)
    if np.ndim(x):
        assert backend.to_numpy(t.grad)[0] == 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_linear_gradients_of_a_sum_are_column_and_row_sums_in_the_inputs_dtype(dtype):
    r"""L = \sum y: gy is all ones, so gb = \mathbf{1}^\top gy counts the rows (6), gW = x^\top \mathbf{1} holds each
    input feature's sum over the rows, gx = \mathbf{1} W^\top each weight row's sum; all in the inputs' dtype."""
    x, w, b = (Tensor(backend.asarray(host(n, *shape)), requires_grad=True, dtype=dtype.__name__)
               for n, shape in enumerate([(2, 3, 4), (4, 5), (5,)]))
    kernels.FAST.linear(x, w, b).sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    xs, ws = backend.to_numpy(x.data).astype(np.float64), backend.to_numpy(w.data).astype(np.float64)
    np.testing.assert_array_equal(backend.to_numpy(b.grad), np.full(5, 6.0))
    np.testing.assert_allclose(backend.to_numpy(w.grad), np.repeat(xs.sum(axis=(0, 1))[:, None], 5, axis=1),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(backend.to_numpy(x.grad), np.broadcast_to(ws.sum(axis=1), (2, 3, 4)),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("path", ["whole-matrix kernel", "blocked kernel"])
def test_attention_weights_of_float32_inputs_are_float32_rows_summing_to_one_as_the_references(path, thread_count):
    """The weights P a kernel returns are the reference's, in the inputs' dtype: each row sums to 1, a masked key
    gets exactly 0, and the gradients come back float32 too."""
    ts = [Tensor(backend.asarray(host(n, 2, 2, T, 4)), requires_grad=True, dtype="float32")
          for n, T in enumerate([3, 5, 5])]
    mask = backend.asarray(causal(3, 5))
    y, p = ATTENTION_PATHS[path](*ts, mask=mask, return_weights=True)
    y_ref, p_ref = functional.scaled_dot_product_attention(*ts, mask=mask, return_weights=True)
    p, p_ref = backend.to_numpy(p), backend.to_numpy(p_ref)
    assert p.dtype == p_ref.dtype == y.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-6)
    assert (p[..., ~causal(3, 5)] == 0).all()
    np.testing.assert_allclose(p, p_ref, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert all(t.grad.dtype == np.float32 for t in ts)


@pytest.mark.parametrize("gpu", [False, True], ids=["einsum", "product then sum (the CuPy path)"])
def test_sum_of_products_by_hand_on_either_path_and_a_wrong_axis_refused_in_a_sentence(gpu, monkeypatch):
    """[[1, 2], [3, 4]] and [[5, 6], [7, 8]]: rows 1*5 + 2*6 = 17 and 3*7 + 4*8 = 53, columns 1*5 + 3*7 = 26 and
    2*6 + 4*8 = 44. Under CuPy (its name patched in, NumPy standing for it) the kernel must not plan an einsum."""
    from types import SimpleNamespace
    from mini_transformer.engine.kernels import layout
    if gpu:
        def no_einsum(*args):
            raise AssertionError("sum_of_products planned an einsum under CuPy")
        monkeypatch.setattr(layout.backend, "get_backend", lambda: "cupy")
        monkeypatch.setattr(layout, "xp", SimpleNamespace(einsum=no_einsum))
    a, b = backend.asarray(np.array([[1.0, 2.0], [3.0, 4.0]])), backend.asarray(np.array([[5.0, 6.0], [7.0, 8.0]]))
    assert backend.to_numpy(layout.sum_of_products(a, b)).tolist() == [17.0, 53.0]
    assert backend.to_numpy(layout.sum_of_products(a, b, axis=0)).tolist() == [26.0, 44.0]
    with pytest.raises(ValueError, match=r"^sum_of_products: axis must be -1 \(rows\) or 0 \(columns\), got 1\.$"):
        layout.sum_of_products(a, b, axis=1)


def test_contiguous_and_memory_order_by_hand():
    """``contiguous`` copies a transposed view into C order and hands a C array back as itself; ``memory_order``
    finds (0, 2, 1, 3) for a (B, H, T, d) view of (B, T, H, d) memory, and the identity for a strided slice, which
    has no C order with the last axis last."""
    from mini_transformer.engine.kernels import layout
    a = backend.asarray(np.arange(6.0).reshape(2, 3))
    assert layout.contiguous(a) is a
    t = layout.contiguous(a.T)
    assert t.flags.c_contiguous and backend.to_numpy(t).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    heads = backend.asarray(np.zeros((2, 5, 3, 4))).transpose(0, 2, 1, 3)       # (B, H, T, d) of (B, T, H, d)
    assert layout.memory_order(heads) == ((0, 2, 1, 3), (0, 2, 1, 3))
    assert layout.memory_order(backend.asarray(np.zeros((4, 6, 2)))[:, ::2]) == ((0, 1, 2), (0, 1, 2))


def test_fast_clip_grad_norm_by_hand():
    """Gradients (3, 0) and (4,): norm 5. At max_norm 5 nothing moves (clipping starts above it); at 1 each
    becomes g / (5 + 1e-6), keeping its shape and float32; with no gradient at all the norm is 0."""
    def params():
        a, b = Tensor(np.zeros((1, 2)), dtype="float32"), Tensor(np.zeros(1), dtype="float32")
        a.grad, b.grad = (backend.asarray(np.array(g, dtype=np.float32)) for g in ([[3.0, 0.0]], [4.0]))
        return a, b
    assert kernels.FAST.clip_grad_norm([Tensor(np.zeros(2))], 1.0) == 0.0
    a, b = params()
    assert kernels.FAST.clip_grad_norm([a, b], 5.0) == 5.0
    assert backend.to_numpy(a.grad).tolist() == [[3.0, 0.0]] and backend.to_numpy(b.grad).tolist() == [4.0]
    a, b = params()
    assert kernels.FAST.clip_grad_norm([a, b], 1.0) == 5.0
    assert a.grad.shape == (1, 2) and a.grad.dtype == b.grad.dtype == np.float32
    np.testing.assert_allclose(backend.to_numpy(a.grad), [[3 / (5 + 1e-6), 0.0]], rtol=1e-7)
    np.testing.assert_allclose(backend.to_numpy(b.grad), [4 / (5 + 1e-6)], rtol=1e-7)


def test_fast_apply_rotary_of_float64_inputs_with_float32_tables_keeps_float64_products():
    """x in float64 with cos and sin tables in float32: every product promotes to float64, as the reference's do,
    so output and gradient agree with it to 1e-10 (a product rounded to the tables' float32 is off by ~1e-8)."""
    cos, sin = (t.astype(np.float32) for t in rope_tables(1, 5, 8))
    runs = []
    for f in (fast_rope.apply_rotary, rope_reference):
        x = Tensor(backend.asarray(host(0, 2, 3, 5, 8)), requires_grad=True, dtype="float64")
        y = f(x, backend.asarray(cos), backend.asarray(sin))
        y.backward(backend.asarray(host(2, 2, 3, 5, 8)))
        runs.append((backend.to_numpy(y.data), backend.to_numpy(x.grad)))
    for a, b in zip(*runs):
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_fast_rope_and_embedding_keep_float32_outputs_and_gradients_float32():
    """float32 in, float32 out, as the reference ops: RoPE's output and input gradient (float32 tables), and the
    embedding table's gradient (rows 2 and 0 of a 3-row table of ones: gradient rows [1, 1], [0, 0], [2, 2] by hand
    for ids [[2, 0, 2]] and an all-ones output gradient)."""
    cos, sin = (t.astype(np.float32) for t in rope_tables(1, 5, 8))
    x = Tensor(backend.asarray(host(0, 2, 3, 5, 8)), requires_grad=True, dtype="float32")
    y = fast_rope.apply_rotary(x, backend.asarray(cos), backend.asarray(sin))
    y.backward(backend.asarray(host(2, 2, 3, 5, 8).astype(np.float32)))
    assert y.dtype == x.grad.dtype == np.float32
    w = Tensor(np.ones((3, 2)), requires_grad=True, dtype="float32")
    e = kernels.FAST.embedding(w, backend.asarray(np.array([[2, 0, 2]])))
    e.sum().backward()
    assert e.dtype == w.grad.dtype == np.float32
    assert backend.to_numpy(w.grad).tolist() == [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]


def test_the_fast_sets_attention_passes_scale_and_weights_on_and_counts_keys_on_two_batch_axes(monkeypatch):
    """From BLOCKED_FROM keys on (6 here), the fast set's attention blocks the keys: on (2, 1, 2, T, 4) inputs too,
    whose axis 2 is not the keys'. Either path gets the scale, and return_weights gives the reference's (y, P)."""
    calls = _record_attention_paths(monkeypatch)
    i = Inputs()
    for T_k in (5, 9):
        q, k, v = i.t(0, 2, 1, 2, 3, 4), i.t(1, 2, 1, 2, T_k, 4), i.t(2, 2, 1, 2, T_k, 4)
        y = kernels.FAST.attention(q, k, v, scale=0.3)
        ref = functional.scaled_dot_product_attention(q, k, v, scale=0.3)
        np.testing.assert_allclose(backend.to_numpy(y.data), backend.to_numpy(ref.data), rtol=RTOL, atol=ATOL)
    y, p = kernels.FAST.attention(q, k, v, scale=0.3, return_weights=True)
    y_ref, p_ref = functional.scaled_dot_product_attention(q, k, v, scale=0.3, return_weights=True)
    np.testing.assert_allclose(backend.to_numpy(p), backend.to_numpy(p_ref), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(backend.to_numpy(y.data), backend.to_numpy(y_ref.data), rtol=RTOL, atol=ATOL)
    assert calls == ["whole", "blocked", "whole"]


def test_parallel_rows_makes_one_plain_call_below_its_limits_and_on_a_gpu(monkeypatch):
    """Two threads: from MIN_PARALLEL_WORK elements and two rows on, the rows go out in blocks, the calling thread
    and pool threads named mt-rows taking them; below either limit, or under CuPy, one call kernel(0, n_rows)."""
    previous = threads.set_threads(2)
    try:
        monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 37)

        def blocks(n_rows, work):
            seen, names = [], set()

            def kernel(i, j):
                seen.append((i, j))
                names.add(threading.current_thread().name)
                threading.Event().wait(0.01)          # long enough that the pool thread takes a block too
            threads.parallel_rows(kernel, n_rows, work)
            return sorted(seen), names
        seen, names = blocks(8, 37)
        assert len(seen) > 1 and sorted(r for i, j in seen for r in range(i, j)) == list(range(8))
        assert names - {threading.current_thread().name} and all(
            n.startswith("mt-rows") for n in names - {threading.current_thread().name})
        assert len(blocks(2, 37)[0]) == 2
        assert blocks(8, 36)[0] == [(0, 8)] and blocks(1, 37)[0] == [(0, 1)]
        monkeypatch.setattr(threads.backend, "get_backend", lambda: "cupy")
        assert blocks(8, 37)[0] == [(0, 8)]
    finally:
        threads.set_threads(previous)


def test_fast_layer_norm_of_float32_gives_float32_gradients_and_a_bias_gradient_of_row_counts():
    r"""L = \sum y: the bias's gradient counts the rows (6 in each column), in float32 like every other gradient."""
    x, w, b = (Tensor(backend.asarray(host(n, *shape)), requires_grad=True, dtype="float32")
               for n, shape in enumerate([(2, 3, 4), (4,), (4,)]))
    kernels.FAST.layer_norm(x, w, b).sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == np.float32
    assert backend.to_numpy(b.grad).tolist() == [6.0] * 4
