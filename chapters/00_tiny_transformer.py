# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 0. The tiny Transformer you will train
#
# The chapters after this one put positional schemes into the same small model and measure what they
# do. This chapter opens that model up: an array that remembers how it was
# made, one operation whose backward you write right under its forward and check against the
# definition of a derivative, the attention every scheme plugs into, one training step, and the
# lines of code where position can enter. Nothing here is about position yet; everything after
# stands on it.
#
# **By the end you can**
#
# * write a masked softmax that cannot overflow, derive its backward, and check any backward against
#   central differences;
# * write a test that catches wrong versions of a backward, and say why its weights must be random;
# * read a loss in nats against the $\ln V$ of a model that knows nothing;
# * run a training step of `TinyGPT`, say which kernels ran it, and show the fast ones agree;
# * point at the four hooks where a positional scheme can act, and at the mask, a fifth place.
#
# You write four functions in [`exercises/engine.py`](../exercises/engine.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 0.1 | `softmax(x, mask)` | attention weights from scores, masked, without overflow |
# | 0.2 | `softmax_backward(y, gy)` | the gradient of the softmax, from its output |
# | 0.3 | `test_softmax_and_its_gradient(softmax, softmax_backward)` | a test that catches wrong versions of both |
# | 0.4 | `cross_entropy(logits, targets)` | the training loss, in nats |
#
# Their labels add up to 55 minutes for a first attempt; reading the sections comes on top.
#
# ### How to work
#
# Every chapter works the same way. Read a section, write its function in `exercises/<module>.py`,
# grade it alone (`python -m exercises grade engine --exercise 0.N`; every exercise of this chapter is
# in the module `engine`, and its number is in its heading), then rerun the section here. Each section loads its function with
# `use(...)`, which prints whether the chapter runs **yours** or the **reference**. Until you write a
# function the reference stands in, so the chapter always runs top to bottom. Hints open one at a
# time; the reference sits in the box after them. Grade a whole module with
# `python -m exercises grade engine`.
#
# The first code cell of every chapter but the cards appendix calls `chapter_threads()`, which puts NumPy's
# matrix products (BLAS) and the library's fast kernels (see the appendix) on one thread and prints what they
# had; where it finds no OpenBLAS to set (it looks on Linux only) it leaves BLAS as it is and says so. Beside another busy program
# threads wait for each other, which made some chapters several times slower (`bench_results/reader_clock/` has
# the runs, each with its load). Delete the line to run on your machine's defaults.

# %% [markdown]
# ## The claims this chapter tests
#
# Before you run anything, write down whether you expect each claim to hold. The last section
# settles every row with the numbers the chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | A softmax row sums to 1 whatever the scores (book, §2.6 attention sinks; interview question 6) | yes / no | §2 |
# | C2a | Central differences are accurate to $O(h^2)$ (this workbook, §4's Taylor expansions) | yes / no | §4 |
# | C2b | One-sided differences are accurate only to $O(h)$ (this workbook, §4's Taylor expansions) | yes / no | §4 |
# | C2c | Both errors rise again as $h$ shrinks past their best (this workbook, §4) | yes / no | §4 |
# | C3 | On average over initialisations, this chapter's untrained `TinyGPT` ($V = 16$, $d_{model} = 16$) starts within $0.02$ nats of $\ln V$ nats per token (the loss of a model that knows nothing) (this workbook) | yes / no | §7 |
# | C4 | In float64, the fast kernels give the reference's numbers and gradients to $10^{-10}$ (this workbook, README "Reference and fast") | yes / no | §13 (appendix) |
# | C5a | Position can enter in four places: added to the input, added to the scores, rotating $q$ and $k$, or through the causal mask (book, TL;DR; survey §8 names the first three) | yes / no | §8 |
# | C5b | ... and only there (the same list, read as complete) | yes / no | §8 |

# %%
import inspect
import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.backend import rng, to_numpy, xp
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

g = rng(0)  # one seeded generator for the whole chapter


def randn(*shape):
    """Standard normal float64 numbers on the active backend."""
    return g.normal(size=shape, dtype="float64")


# %% [markdown]
# ## 1. A `Tensor` remembers how it was made
#
# `mini_transformer.engine.autograd.Tensor` wraps an array. Every operation on tensors records its inputs
# and a small function, `backward`, that turns the gradient of the loss with respect to the output,
# `gy`, into gradients with respect to the inputs, `gx`. Calling `.backward()` on the loss walks the
# recorded graph from the end to the start and hands each tensor its `.grad`.
#
# Try it on $y = a b + a$ with $a = 2$, $b = 3$. By hand, $\partial y/\partial a = b + 1 = 4$ and
# $\partial y/\partial b = a = 2$. The $+1$ comes from the second use of $a$: a tensor used twice
# receives both gradients, added up.

# %%
from mini_transformer.engine.autograd import Tensor

a = Tensor(xp.asarray(2.0), requires_grad=True)
b = Tensor(xp.asarray(3.0), requires_grad=True)
y = a * b + a
y.backward()

# %% tags=["nbval-check-output"]
print(f"y = {float(y.data):g}, dy/da = {float(a.grad):g}, dy/db = {float(b.grad):g}")
assert float(a.grad) == 4.0 and float(b.grad) == 2.0

# %% [markdown]
# Every op in the engine is written the same way: the forward computes the output, and right under
# it a closure `backward(gy)` returns one `gx` per input. The docstring states the local derivative.
# Here is the whole of `exp`:

# %%
from mini_transformer.engine import autograd

print(inspect.getsource(autograd.exp))

# %% [markdown]
# `op(data, parents, backward)` wraps the output and records the parents and the closure. That is
# all an op needs. You now write the op that attention is built on.
#
# ## 2. The softmax
#
# Attention turns a row of scores $x_1, \dots, x_T$, one per key, into weights that are positive and
# sum to 1:
#
# $$y_j = \frac{e^{x_j}}{\sum_k e^{x_k}} = \frac{e^{x_j - c}}{\sum_k e^{x_k - c}} \quad\text{for any } c.$$
#
# The two forms are equal, because $e^{-c}$ cancels. On a computer they are not: $e^{1000}$ is
# `inf` in float64, and `inf / inf` is `NaN`. With $c = \max_k x_k$ the largest exponent is $e^0 = 1$
# and nothing overflows.
#
# A **mask** says which keys a query may look at (True) and which it may not (False). A causal
# model masks the future: query $i$ may look at keys $j \le i$. A masked score becomes $-\infty$
# before the exponential, so its weight is $e^{-\infty} = 0$ exactly.
#
# First, the formula as written, on scores near 1000:

# %% tags=["nbval-check-output"]
big = xp.asarray([1000.0, 1001.0, 1002.0])
with xp.errstate(over="ignore", invalid="ignore"):
    naive = xp.exp(big) / xp.exp(big).sum()
print("exp(x) / sum(exp(x)) on [1000, 1001, 1002]:", [float(v) for v in naive])
assert bool(xp.isnan(naive).all())

# %% [markdown]
# ### Exercise 0.1: `softmax`   ★☆☆ · 10 min
#
# *Why it matters:* every attention layer in this workbook calls it, and its mask is how a decoder keeps
# each query from seeing the future (chapter 1).
#
# Write `softmax(x, mask=None)` in [`exercises/engine.py`](../exercises/engine.py): the softmax over
# the last axis of `x` `(..., T_k)`. `mask` is `None` or a boolean array that broadcasts to `x`'s
# shape, True where a query may look; every row keeps at least one key. Return the shape and dtype of
# `x`, with masked entries exactly 0. Do not write into `x`.

# %%
softmax = use("engine", "softmax")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Do it in three steps: put $-\infty$ where the mask is False (`xp.where`), subtract each row's
# maximum, then exponentiate and divide by the row's sum. Keep the reduced axis (`keepdims=True`) so
# the row statistics broadcast back.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Take the maximum *after* masking. Every row keeps one key, so its maximum is finite, the kept
# exponents are at most $e^0 = 1$, and the masked ones are $e^{-\infty} = 0$.
# </details>

# %% tags=["answer"]
reveal("engine", "softmax")

# %% [markdown]
# Grade it alone with `python -m exercises grade engine --exercise 0.1`. Then check it here: the
# worked example from the docstring, the same scores near 1000, and a causal mask.

# %% tags=["nbval-check-output"]
print("softmax([0, ln 2, ln 3]) =", [round(float(v), 6) for v in softmax(xp.asarray([0.0, math.log(2), math.log(3)]))])
print("softmax([1000, 1001, 1002]) =", [round(float(v), 6) for v in softmax(big)])
T = 6
causal = xp.tril(xp.ones((T, T), dtype=bool))  # (T, T) key j <= query i
scores = randn(2, 3, T, T)  # (B, H, T, T)
weights = softmax(scores, causal)  # (B, H, T, T)
row_sum_gap = float(xp.abs(weights.sum(axis=-1) - 1.0).max())
print(f"largest |row sum - 1|: {'below 1e-15' if row_sum_gap < 1e-15 else row_sum_gap}")
print(f"largest weight on a future key: {float(weights[..., ~causal].max())}")
print("first query, one key: its weight is", float(weights[0, 0, 0, 0]))
assert xp.allclose(softmax(xp.asarray([0.0, math.log(2), math.log(3)])), xp.asarray([1 / 6, 2 / 6, 3 / 6]))
assert xp.allclose(weights.sum(axis=-1), 1.0) and (weights[..., ~causal] == 0).all()

# %% [markdown]
# The same weights as a picture: one head's $T \times T$ matrix, queries down, keys across. The upper
# triangle is exactly 0, and every row, however short, sums to 1. Row 0 has a single key, so all
# of its weight, 1.0, sits there: a softmax cannot say "none of these". That is claim C1. The sources
# build on it: a head with nothing to look at must still put its weight somewhere, so trained models
# park it on the first tokens, the *attention sinks* that a later chapter tests on this model.

# %%
fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
for ax, w, title in [(axes[0], softmax(scores[0, 0]), "no mask"), (axes[1], weights[0, 0], "causal mask")]:
    im = ax.imshow(to_numpy(w), cmap="viridis", vmin=0, vmax=1)
    ax.set(xlabel="key j", ylabel="query i", title=f"softmax weights, {title}")
fig.colorbar(im, ax=axes, shrink=0.8, label="weight")
plt.show()

# %% [markdown]
# ## 3. The backward of the softmax
#
# Every output of a row depends on every input of that row. Differentiate $y_i = e^{x_i} / S$ with
# $S = \sum_k e^{x_k}$:
#
# $$\frac{\partial y_i}{\partial x_j} = \frac{\delta_{ij} e^{x_i}}{S} - \frac{e^{x_i} e^{x_j}}{S^2} = y_i(\delta_{ij} - y_j).$$
#
# The backward receives $gy = \partial L / \partial y$ and returns $gx = \partial L/\partial x$, a sum
# over every output the input fed:
#
# $$gx_j = \sum_i gy_i\, y_i(\delta_{ij} - y_j) = y_j\Big(gy_j - \sum_i gy_i\, y_i\Big).$$
#
# It needs only the output $y$, which the forward already computed. A masked entry has $y_j = 0$ and
# so gets no gradient, as it must: its score was thrown away.
#
# ### Exercise 0.2: `softmax_backward`   ★★☆ · 15 min
#
# *Why it matters:* the one-line formula hides the classic mistake, keeping only the diagonal
# $y_j(1 - y_j)$ of the Jacobian, and you are about to build a check that catches it.
#
# Write `softmax_backward(y, gy)`: `y` is the softmax's output `(..., T_k)`, `gy` the gradient with
# respect to it, same shape; return `gx` with the shape and dtype of `y`. Do not write into `gy`.

# %%
softmax_backward = use("engine", "softmax_backward")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# $\sum_i gy_i\, y_i$ is one number per row: a sum over the last axis, kept as a column
# (`keepdims=True`), so it broadcasts against the row.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Check the worked example by hand before you trust the code: $y = (0.5, 0.5)$, $gy = (1, 0)$ gives
# $\sum_i gy_i y_i = 0.5$ and $gx = (0.5 \cdot 0.5, 0.5 \cdot (-0.5)) = (0.25, -0.25)$.
# </details>

# %% tags=["answer"]
reveal("engine", "softmax_backward")

# %% [markdown]
# Grade it alone with `python -m exercises grade engine --exercise 0.2`. Now put the two halves
# together into one op of the engine, forward and backward side by side, exactly as `exp` is written
# above (and as `mini_transformer/engine/functional.py` writes its own `softmax`):

# %%
from mini_transformer.engine.autograd import op


def softmax_op(x, mask=None):
    r"""Your softmax as an op of the engine: y = softmax(x), gx = softmax_backward(y, gy)."""
    y = softmax(x.data, mask)

    def backward(gy):
        return (softmax_backward(y, gy),)
    return op(y, (x,), backward)


# %% tags=["nbval-check-output"]
hand = softmax_backward(xp.asarray([0.5, 0.5]), xp.asarray([1.0, 0.0]))
print("softmax_backward(y=[0.5, 0.5], gy=[1, 0]) =", [float(v) for v in hand])
assert xp.allclose(hand, xp.asarray([0.25, -0.25]))

# %% [markdown]
# ## 4. Checking a backward: central differences
#
# A backward is easy to get subtly wrong and hard to see wrong: the shapes come out right either way.
# The definition of a derivative gives an independent answer. Nudge one input by $\pm h$ and watch
# the loss:
#
# $$D_{\mathrm{central}}(h) = \frac{L(x + h e_j) - L(x - h e_j)}{2h} = \frac{\partial L}{\partial x_j} + \frac{h^2}{6} L''' + O(h^4),
# \qquad D_{\mathrm{forward}}(h) = \frac{L(x + h e_j) - L(x)}{h} = \frac{\partial L}{\partial x_j} + \frac{h}{2} L'' + O(h^2).$$
#
# The symmetric form cancels the $h$ term, so it is accurate to $O(h^2)$. Smaller $h$ is not always
# better: $L$ is known only to about $10^{-16}$ relative, so the difference quotient carries a
# rounding error of about $10^{-16}/h$ (the standard explanation, not tested here). The best $h$ balances the two.
#
# For the loss take $L(x) = \sum_j w_j\,\mathrm{softmax}(x)_j$ with **random** weights $w$. (Why not
# plain $\sum_j \mathrm{softmax}(x)_j$? It is 1 for every $x$, so its gradient is 0, and a backward
# that returns zeros would pass. Keep that in mind for Exercise 0.3.)

# %%
x_row = randn(5)  # one row of scores
w_row = randn(5)  # random weights, so every output matters


def L(x):
    return float((w_row * softmax(x)).sum())


def difference_quotient(x, j, h, central=True):
    """The derivative of L along input j by differences, central or forward."""
    up, down = x.copy(), x.copy()
    up[j] += h
    down[j] -= h
    return (L(up) - L(down)) / (2 * h) if central else (L(up) - L(x)) / h


exact = softmax_backward(softmax(x_row), w_row)  # (5,) the analytic gradient of L
steps = [10.0 ** -e for e in range(1, 14)]
errors = {kind: [max(abs(difference_quotient(x_row, j, h, kind == "central") - float(exact[j])) for j in range(5))
                 for h in steps] for kind in ("central", "forward")}

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
for kind, marker in [("central", "o"), ("forward", "s")]:
    ax.loglog(steps, errors[kind], marker=marker, label=f"{kind} difference")
ax.set(xlabel="step h", ylabel="largest error against softmax_backward",
       title="Difference quotients: small h (left) and large h (right)")
ax.legend()
plt.show()
for kind in errors:
    at = min(range(len(steps)), key=lambda n: errors[kind][n])
    print(f"{kind:>8}: smallest error {errors[kind][at]:.1e}, at h = {steps[at]:.0e}")

# %% tags=["nbval-check-output"]
best = {kind: min(errors[kind]) for kind in errors}
print(f"at h = 1e-5: forward error {errors['forward'][4]:.0e}, central error "
      f"{'below 1e-9' if errors['central'][4] < 1e-9 else errors['central'][4]}")
print(f"the best central error is {'at least 100' if best['central'] * 100 < best['forward'] else 'not 100'} "
      "times below the best forward one")
slopes = {kind: [math.log10(errors[kind][n] / errors[kind][n + 1]) for n in (0, 1)] for kind in errors}  # h = 1e-1 to 1e-3
print("decades of error per decade of h, from h = 1e-1 to 1e-3: "
      + "; ".join(f"{kind} {a:.1f}, {b:.1f}" for kind, (a, b) in slopes.items()))
rise = all(errors[kind][-1] > 1000 * best[kind] for kind in errors)
print(f"at h = 1e-13 each error is {'over 1000' if rise else 'not 1000'} times its smallest")
assert errors["central"][4] < 1e-9 < 1e-7 < errors["forward"][4] and best["central"] * 100 < best["forward"]
assert all(abs(v - 2) < 0.05 for v in slopes["central"]) and all(abs(v - 1) < 0.05 for v in slopes["forward"]) and rise

# %% [markdown]
# Read the plot from the right. At large $h$ the forward error falls by one decade per decade of $h$
# and the central error by two: slopes 1 and 2, the $O(h)$ and $O(h^2)$ of the formulas. Further left
# both errors climb again (rounding is the explanation, not tested here). The central quotient bottoms out
# near $h = 10^{-5}$, with an error of a few times $10^{-12}$ on this row; the forward one bottoms out
# near $h = 10^{-7}$ and cannot do better than a few times $10^{-9}$. Those are claims C2a to C2c.
#
# The library's `mini_transformer.engine.gradcheck.assert_gradcheck` does this for every input of any
# function of tensors, with one more trick (a Richardson step that also cancels the $h^2$ term). Run
# it on your op, with a causal mask, in float64:

# %% tags=["nbval-check-output"]
from mini_transformer.engine.gradcheck import assert_gradcheck

x = Tensor(randn(2, 4, 4), requires_grad=True)  # (B, T, T) scores
err = assert_gradcheck(lambda t: softmax_op(t, xp.tril(xp.ones((4, 4), dtype=bool))), [x], tol=1e-7)
print(f"your softmax op against gradcheck: relative error {'below 1e-9' if err < 1e-9 else err} (the limit: 1e-7)")

# %% [markdown]
# ## 5. A test that catches a wrong softmax
#
# ### Exercise 0.3: `test_softmax_and_its_gradient`   ★★★ · 20 min
#
# *Why it matters:* "how would you test it?" follows every implementation question, and a test is
# only as good as the wrong versions it catches.
#
# Write `test_softmax_and_its_gradient(softmax, softmax_backward)`. It receives two implementations
# with the signatures of Exercises 0.1 and 0.2 and must raise `AssertionError` (a plain `assert`) when
# either is wrong, and pass when both are right. The grader runs your test on the reference (it must
# pass) and on a set of **mutants**, versions that are wrong in one realistic way each: it reports how
# many your test catches and which get away. Decide for yourself what to check; the hints list what a
# good test looks at.

# %%
test_softmax_and_its_gradient = use("engine", "test_softmax_and_its_gradient")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Check the forward by its defining properties (rows sum to 1, masked entries are 0, adding a
# constant to every score changes nothing, even a constant of 1000), and the backward against central
# differences, entry by entry.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Make the test hard to fool: several rows at once (a batch, not a single row), a mask, scores that
# are not square, and random weights `gy`. With `gy` all ones the true gradient is 0, and a backward
# that returns zeros would pass.
# </details>

# %% tags=["answer"]
reveal("engine", "test_softmax_and_its_gradient")

# %% [markdown]
# Grade it with `python -m exercises grade engine --exercise 0.3`. Here it runs on the `softmax` and
# `softmax_backward` this chapter uses (yours once you have written them, the reference until then),
# where it must pass, and on one wrong backward written the classic way, keeping only the diagonal of
# the Jacobian, where it must fail:

# %% tags=["nbval-check-output"]
test_softmax_and_its_gradient(softmax=softmax, softmax_backward=softmax_backward)
print("on the chapter's softmax and softmax_backward: passes")


def diagonal_only(y, gy):
    return gy * y * (1 - y)  # dy_j/dx_j alone


try:
    test_softmax_and_its_gradient(softmax=softmax, softmax_backward=diagonal_only)
    caught = None
except AssertionError as e:
    caught = str(e) or "AssertionError"
print("on a backward that keeps only the diagonal: fails with", repr(caught[:80]))
assert caught is not None

# %% [markdown]
# ## 6. Attention, the reference
#
# With the softmax in hand, attention is three steps. For queries $Q$, keys $K$ and values $V$ of one
# head, in the workbook's layout `(B, H, T, d_head)`,
#
# $$S = \frac{Q K^\top}{\sqrt{d_{head}}} + \text{bias}, \qquad P = \mathrm{softmax}(S \text{ masked}), \qquad Y = P V.$$
#
# `mini_transformer.engine.functional.scaled_dot_product_attention` is exactly that; its weights come from
# `attention_weights`. Its `sinks` branch is GPT-OSS's learned sink: one extra logit a head that takes no value,
# so a row of weights can sum to less than 1. Chapter 13 builds it; every model before chapter 13 runs without
# it, so their rows sum to 1:

# %%
from mini_transformer.engine import functional as F

print(inspect.getsource(F.attention_weights))

# %% [markdown]
# Two checks you can do in your head. If every key is the same vector, every score in a row is the
# same, the weights are uniform, and each output is the mean of the values it may see: the mean of
# all of them without a mask, and under a causal mask the mean of values $0..i$ for query $i$ (so the
# first query returns $v_0$ itself). Then gradcheck the whole op.

# %% tags=["nbval-check-output"]
B, H, T, d_head = 1, 2, 5, 4
q = Tensor(randn(B, H, T, d_head))
k = Tensor(xp.broadcast_to(randn(1, 1, 1, d_head), (B, H, T, d_head)).copy())  # one key, repeated
v = Tensor(randn(B, H, T, d_head))
mask = xp.tril(xp.ones((T, T), dtype=bool))
y_full = F.scaled_dot_product_attention(q, k, v).data
y_causal = F.scaled_dot_product_attention(q, k, v, mask=mask).data
running_mean = xp.cumsum(v.data, axis=2) / xp.arange(1, T + 1)[:, None]  # (B, H, T, d_head)
full_gap = float(xp.abs(y_full - v.data.mean(axis=2, keepdims=True)).max())
causal_gap = float(xp.abs(y_causal - running_mean).max())
print(f"identical keys, no mask: largest distance of an output from the mean of all values: "
      f"{'below 1e-14' if full_gap < 1e-14 else full_gap}")
print(f"identical keys, causal: largest distance of output i from the mean of values 0..i: "
      f"{'below 1e-14' if causal_gap < 1e-14 else causal_gap}")
qkv = [Tensor(randn(1, 2, 3, 4), requires_grad=True) for _ in range(3)]
err = assert_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask=xp.tril(xp.ones((3, 3), dtype=bool))),
                       qkv, tol=1e-7)
print(f"attention against gradcheck: relative error {'below 1e-9' if err < 1e-9 else err} (the limit: 1e-7)")
assert xp.allclose(y_full, v.data.mean(axis=2, keepdims=True)) and xp.allclose(y_causal, running_mean)

# %% [markdown]
# The causal check has a consequence that chapter 1 turns into a whole argument: under the mask,
# query $i$ averages over exactly $i + 1$ keys, so the mask alone already tells a token something
# about where it sits.
#
# ## 7. Reading a loss in nats
#
# A language model outputs, for every position, a row of *logits* $z_1, \dots, z_V$, one per token of
# the vocabulary; the softmax turns them into probabilities. The training loss is the average
# negative log-probability of the token that actually came next,
#
# $$L = -\frac{1}{N}\sum_{n=1}^{N} \ln p_n(t_n), \qquad \ln \mathrm{softmax}(z)_t = z_t - c - \ln \sum_v e^{z_v - c}.$$
#
# With the natural logarithm the unit is the **nat**. Three numbers make a loss readable:
#
# * **The baseline.** A model that knows nothing spreads probability $1/V$ over the vocabulary and
#   scores exactly $-\ln(1/V) = \ln V$: 2.77 for $V = 16$, 5.55 for the 256 byte values. Its accuracy is
#   $1/V$.
# * **Perplexity**, $e^{L}$: the number of equally likely tokens the model is, on average, hesitating
#   between. At the baseline it is $V$ itself.
# * **Bits**: $L / \ln 2$. A byte-level model at $2 \ln 2 = 1.39$ nats per byte needs 2 bits per byte,
#   against 8 for the baseline.
#
# ### Exercise 0.4: `cross_entropy`   ★☆☆ · 10 min
#
# *Why it matters:* every number in this workbook's tables is this function, in these units.
#
# Write `cross_entropy(logits, targets)`: `logits` `(..., V)`, integer `targets` `(...)`; return the
# mean loss in nats as a Python float. Use the log-sum-exp form, never `log(softmax(...))`: a
# probability of $e^{-800}$ is 0 in float64, and $\ln 0 = -\infty$.

# %%
cross_entropy = use("engine", "cross_entropy")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Compute the log-softmax of every row first, `(..., V)`, in the log-sum-exp form, then pick from each
# row the entry of its target: an index along the last axis, one per row.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The worked example: logits $(0, \ln 3)$ give probabilities $(1/4, 3/4)$, so target 1 costs
# $\ln(4/3) = 0.288$ nats and target 0 costs $\ln 4 = 1.386$. Their mean is 0.837.
# </details>

# %% tags=["answer"]
reveal("engine", "cross_entropy")

# %% [markdown]
# Grade it alone with `python -m exercises grade engine --exercise 0.4`. Check it against the
# baseline and against the library's `F.cross_entropy`, the op the model trains with:

# %% tags=["nbval-check-output"]
V = 16
uniform = xp.zeros((4, V))
targets = g.integers(0, V, (4,))
print(f"uniform logits, V = {V}: {cross_entropy(uniform, targets):.4f} nats; ln V = {math.log(V):.4f}")
print(f"worked example: {cross_entropy(xp.asarray([[0.0, math.log(3)], [0.0, math.log(3)]]), xp.asarray([1, 0])):.4f} nats")
z = randn(2, 5, V)
t = g.integers(0, V, (2, 5))
ce_gap = abs(cross_entropy(z, t) - float(F.cross_entropy(Tensor(z), t).data))
print(f"|yours - F.cross_entropy| on random logits: {'below 1e-14' if ce_gap < 1e-14 else ce_gap} nats")
agrees = math.isclose(cross_entropy(z, t), float(F.cross_entropy(Tensor(z), t).data), rel_tol=1e-12)
assert math.isclose(cross_entropy(uniform, targets), math.log(V), rel_tol=1e-12) and agrees

# %% [markdown]
# Now the model. `TinyGPT` is a decoder-only Transformer: token embeddings, `n_layers` pre-norm blocks
# (attention, then an MLP, each added back to a residual stream), a final norm and a linear head to
# `vocab_size` logits. `GPTConfig` holds its sizes, and two fields you will meet again:
# `positional`, the scheme (here the default, `"rope"`), and `kernels`, which set of ops runs it. The
# default, `kernels="reference"`, runs the textbook code of `functional.py`, the code this chapter
# shows; `GPTConfig(kernels="fast")` runs the same ops, faster. The model keeps its set as
# `model.kernels` and runs every forward pass inside `kernels.using(model.kernels)`; each layer asks
# `kernels.active()` for the op it calls, except that a scheme which needs the attention
# probabilities (Shaw with its value term) takes the reference attention under either set. The fast set, and the check that it computes the same
# numbers, are in the [appendix at the end of this chapter](#Appendix:-the-fast-kernels).
#
# Its weights start small (the head's are drawn with standard deviation `0.02`), so every logit starts
# near 0 and every row of probabilities near uniform: the untrained model should sit on the baseline.
# Measure it on a batch of the *copy* task (a row of random symbols, a separator, the same symbols
# again; only the copy is scored), then take one step of AdamW on that batch.

# %%
import dataclasses

from mini_transformer.model import tasks
from mini_transformer.model import GPTConfig, TinyGPT

cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=16)  # small: a step takes milliseconds
model = TinyGPT(cfg)
batch = tasks.copy_task(16, 8, vocab_size=16, seed=0)  # x, y: (16, 16); y is -1 where nothing is scored
print(f"positional = {cfg.positional!r}, kernels = {cfg.kernels!r}; the model runs the {model.kernels.name} set")

# %% tags=["nbval-check-output"]
optimiser = model.kernels.AdamW(model.parameters(), lr=3e-3)
before = model.loss(batch.x, batch.y)  # a Tensor holding one number
model.zero_grad()
before.backward()  # every parameter gets its .grad
optimiser.step()  # and moves against it
after = float(model.loss(batch.x, batch.y).item())
print(f"untrained: {float(before.item()):.3f} nats; ln 16 = {math.log(16):.3f}; one step later: {after:.2f}")
print(f"parameters: {model.num_parameters()}")
at_init = [float(TinyGPT(dataclasses.replace(cfg, seed=s)).loss(batch.x, batch.y).item()) for s in range(5)]
print("untrained, seeds 0..4:", " ".join(f"{v:.3f}" for v in at_init))
from mini_transformer.evaluation import stats  # the interval over seeds that settles C3 (chapters/README.md)

at_ln_v = stats.claim_record("|loss at initialisation - ln 16| (nats)", "below", 0.02,
                             values=[abs(v - math.log(16)) for v in at_init], seeds=range(5))
print("|untrained - ln 16|:", stats.format_record(at_ln_v, 3))
assert abs(float(before.item()) - math.log(16)) < 0.05 and after < float(before.item())
assert max(abs(v - math.log(16)) for v in at_init) < 0.02 and at_ln_v["verdict"] == "reproduces"

# %% [markdown]
# Claim C3 holds: 2.772 against $\ln 16 = 2.773$, about a thousandth of a nat below knowing nothing (the
# random weights already tilt the probabilities a little, and on this batch the tilt happens to help),
# and each of the five initialisations drawn here starts within two hundredths of $\ln 16$ (2.772 to 2.785):
# over the five seeds, the mean distance from $\ln 16$ is 0.005 ± 0.007 nats, its whole interval under $0.02$.
# That interval settles the mean over initialisations, not where any one new initialisation starts.
# The bar of $0.02$ nats reads "starts there" as closer to $\ln V$ than one step of training moves
# the loss: the first step of AdamW takes it from 2.772 to 2.71. A hundred and fifty steps on fresh
# batches, with the workbook's training loop (`mini_transformer.model.train.train`: AdamW, warmup and cosine decay, clipping),
# and the loss falls below $\ln 11 = 2.40$, the best a model can do on this task without attention (it
# knows only which 11 symbols appear; section 9 comes back to it). The cell asserts it; run it for the curve:

# %%
from mini_transformer.model.train import TrainConfig, train


def copy_batches(gen):
    b = tasks.copy_task(16, 8, vocab_size=16, seed=int(gen.host.integers(2**31)))
    return b.x, b.y


run = train(TinyGPT(cfg), copy_batches, TrainConfig(steps=150, lr=1e-2, warmup=10, seed=0, progress=False))
assert run.losses[-1] < math.log(11) < run.losses[0]

# %%
fig, ax = plt.subplots(figsize=(6, 3.4))
ax.plot(run.losses, label="training loss")
ax.axhline(math.log(16), color="grey", linestyle="--", label="ln V: a model that knows nothing")
ax.set(xlabel="step", ylabel="loss (nats per token)", title="TinyGPT (rope) on the copy task, V = 16")
ax.legend()
plt.show()
print(f"step 0: {run.losses[0]:.2f} nats, perplexity {math.exp(run.losses[0]):.1f};"
      f" step {len(run.losses) - 1}: {run.losses[-1]:.2f} nats, perplexity {math.exp(run.losses[-1]):.2f}")

# %% [markdown]
# The workbook's text experiments train byte-level models ($V = 256$) on the Python standard library
# and report held-out losses in nats per byte. One of them trains four input schemes (`none`;
# `sinusoidal`, the table as the formula gives it; `sinusoidal_scaled`, the same table scaled to the
# token rows' size; `learned`, a learned table) at $L = 64$, three seeds each; chapters 1 to 3
# compare them. Here is only the range of its losses at the training length, against the baseline
# $\ln 256$:

# %% tags=["nbval-check-output"]
import os

from experiments.common import load_result

text_runs = load_result("input_schemes_at_train_len")
at_L = [r["loss_at_L"] for runs in text_runs["per_seed"].values() for r in runs]  # one per scheme and seed
print(f"baseline ln 256 = {math.log(256):.2f} nats per byte = 8.00 bits per byte")
print(f"{len(text_runs['per_seed'])} schemes x {len(text_runs['seeds'])} seeds, {text_runs['steps']} steps "
      f"at L = {text_runs['train_len']}; the {len(at_L)} losses at L:")
print(f"  {min(at_L):.2f} to {max(at_L):.2f} nats per byte = {min(at_L) / math.log(2):.2f} to "
      f"{max(at_L) / math.log(2):.2f} bits, perplexity {math.exp(min(at_L)):.1f} to {math.exp(max(at_L)):.1f}")
assert len(text_runs["seeds"]) >= 3 and len(at_L) == 12 and all(v < math.log(256) / 2 for v in at_L)

# %% [markdown]
# Every one of the twelve runs ends below half the baseline, at 1.93 to 2.24 nats per byte. The
# differences between schemes are what the later chapters are about; chapter 7, §7 trains eight of
# them side by side.
#
# ## 8. Where position can enter
#
# The model never asks which positional scheme it has. It calls four hooks of one object,
# `model.positional`, and each scheme overrides the ones it uses
# (`mini_transformer/positional/base.py`; the defaults do nothing). These are the lines that call
# them, and the line that builds the causal mask, printed from the source. Two lines rotate the keys:
# which one runs depends on how a KV cache stores them.

# %%
from mini_transformer.model.attention import MultiHeadAttention
from mini_transformer.model import Transformer


def lines_calling(fn, needles):
    """(file, line number, text) of every line of fn's source that contains one of the needles."""
    source, first = inspect.getsourcelines(fn)
    name = os.path.basename(inspect.getsourcefile(fn))
    return [(name, first + n, line.strip()) for n, line in enumerate(source) if any(s in line for s in needles)]


places = lines_calling(Transformer._stack, ["positional.embed"]) + lines_calling(Transformer._run, ["self.causal else"]) + \
    lines_calling(MultiHeadAttention.forward, ["scheme.rotate(q", "scheme.rotate(k", "scheme.score_bias"]) + \
    lines_calling(MultiHeadAttention._attend_with_output_term, ["scheme.output_term"])
for name, number, text in places:
    print(f"{name}:{number:<4} {text}")
found = " ".join(text for _, _, text in places)
assert all(h in found for h in ("embed(", "rotate(q", "rotate(k", "score_bias(", "output_term(", "k_pos[None, :] <= q_pos"))

# %% [markdown]
# In the order a token meets them:
#
# 1. **the input**, `embed`: add a vector to each token embedding before the first block (sinusoidal,
#    learned);
# 2. **a rotation of $q$ and $k$**, `rotate`: turn queries and keys by angles that depend on their
#    positions (RoPE);
# 3. **the scores**, `score_bias`: add a term to $Q K^\top / \sqrt{d_{head}}$ before the softmax
#    (T5, ALiBi, Transformer-XL, Shaw's keys);
# 4. **the output**, `output_term`: add a term computed from the attention weights (Shaw's values);
#
# and, not a hook but always there in `TinyGPT`, **the causal mask** (`k_pos <= q_pos`).
#
# Which scheme uses which hook? Ask each class which of them it overrides:

# %%
from mini_transformer.positional import SCHEMES, PositionalScheme

HOOKS = ("embed", "rotate", "score_bias", "output_term")


def overrides(cls, hook):
    """True if cls (or a parent other than the base) defines the hook itself."""
    return any(hook in vars(c) for c in cls.__mro__ if issubclass(c, PositionalScheme) and c is not PositionalScheme)


table = [[overrides(cls, h) for h in HOOKS] for cls in SCHEMES.values()]

# %% tags=["nbval-check-output"]
print(f"{'scheme':<16}" + "".join(f"{h:>13}" for h in HOOKS))
for name, row in zip(SCHEMES, table):
    print(f"{name:<16}" + "".join(f"{'yes' if used else '.':>13}" for used in row))
assert not any(table[list(SCHEMES).index("none")])  # no position at all
assert all(any(row) for name, row in zip(SCHEMES, table) if name != "none")

# %%
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.imshow([[float(u) for u in row] for row in table], cmap="Greens", vmin=0, vmax=1.4, aspect="auto")
ax.set_xticks(range(len(HOOKS)), HOOKS)
ax.set_yticks(range(len(SCHEMES)), list(SCHEMES))
ax.set(xlabel="hook", ylabel="scheme (GPTConfig.positional)", title="Where each scheme puts position")
plt.show()

# %% [markdown]
# Claim C5a holds: the model uses every place on the book's list. Claim C5b, that the list is
# complete, does not reproduce: Shaw's relative *values* are added to the attention's output, through
# a fourth hook. Transformer-XL, T5, ALiBi, the 2-D bias
# and MLA-style decoupled RoPE all act on the scores (in MLA decoupled RoPE is a rotation of part of $q$ and $k$, computed here as a
# score term), and `none` touches nothing. Chapter 13's schemes fit the same hooks: `mrope` rotates
# like `rope`, and `fire` and `temperature` (Llama 4's query scaling, written as a score term) act on
# the scores. With `none`, what is left is the mask, and chapter 1 measures what the mask alone can do.
#
# ## 9. Your softmax inside the model
#
# The reference attention calls `functional.softmax`. Swap in yours: build an attention function whose
# softmax is your forward with a backward you choose, give it to every layer of a `TinyGPT` through its
# kernel set (`dataclasses.replace` copies the model's set with one entry changed), and train it
# beside the library's model on the same batches, from the same weights, in float64. With your
# `softmax_backward` the two loss curves must be the same curve; with `diagonal_only` from section 5
# they must part.

# %%
import dataclasses

from mini_transformer.engine import kernels


def attention_using(backward_of_softmax):
    """The reference attention, normalised by your softmax, differentiated by backward_of_softmax."""
    def softmax_op_with(x, mask):
        y = softmax(x.data, mask)
        return op(y, (x,), lambda gy: (backward_of_softmax(y, gy),))

    def attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
        s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        scores = (q @ k.transpose(0, 1, 3, 2)) * s  # (B, H, T, T_k)
        if bias is not None:
            scores = scores + bias
        p = softmax_op_with(scores, mask)  # (B, H, T, T_k)
        y_ = p @ v  # (B, H, T, d_head)
        return (y_, p.data) if return_weights else y_
    return attention


def train_with(attention, steps=30):
    m = TinyGPT(cfg).to_dtype("float64")
    m.kernels = dataclasses.replace(m.kernels, name="yours", attention=attention)  # every layer asks the model's set
    return train(m, copy_batches, TrainConfig(steps=steps, lr=1e-2, warmup=3, seed=0, progress=False)).losses


curves = {"library": train_with(kernels.REFERENCE.attention),
          "your softmax_backward": train_with(attention_using(softmax_backward)),
          "diagonal_only": train_with(attention_using(diagonal_only))}
gaps = {name: [abs(a_ - b_) for a_, b_ in zip(curves["library"], c)] for name, c in curves.items()}
parts = next((step for step, gap in enumerate(gaps["diagonal_only"]) if gap > 1e-6), None)

# %% tags=["nbval-check-output"]
print(f"{len(curves['library'])} steps; with your softmax_backward the largest loss difference is "
      f"{max(gaps['your softmax_backward']):.0e}")
print(f"with diagonal_only, the same forward: difference {gaps['diagonal_only'][0]:.0e} at step 0; "
      f"the curves part at step {parts}")
largest = max(range(len(gaps["diagonal_only"])), key=lambda step: gaps["diagonal_only"][step])
print(f"diagonal_only: {gaps['diagonal_only'][1]:.0e} from the library at step 1, "
      f"{gaps['diagonal_only'][largest]:.0e} at most (step {largest})")
print(f"diagonal_only's loss: {curves['diagonal_only'][0]:.2f} nats at step 0, {curves['diagonal_only'][-1]:.2f} "
      f"at step {len(curves['diagonal_only']) - 1}; the library's at step {len(curves['library']) - 1}: "
      f"{curves['library'][-1]:.2f}")
n_symbols = cfg.vocab_size - tasks.FIRST_SYMBOL  # the copy task draws its symbols from ids FIRST_SYMBOL..V-1
print(f"ln {n_symbols} = {math.log(n_symbols):.2f}: the loss of a model that knows only which {n_symbols} symbols "
      f"appear (ids {tasks.FIRST_SYMBOL} to {cfg.vocab_size - 1})")
assert max(gaps["your softmax_backward"]) < 1e-10 and parts == 1 and gaps["diagonal_only"][largest] < 1e-3
assert curves["diagonal_only"][-1] < curves["diagonal_only"][0]
assert n_symbols == 11 and all(curve[-1] > math.log(n_symbols) for curve in curves.values())

# %%
fig, (ax_loss, ax_gap) = plt.subplots(1, 2, figsize=(11, 3.4))
for (name, curve), style, color in zip(curves.items(), ["-", "--", ":"], ["C0", "C1", "C2"]):
    ax_loss.plot(curve, style, color=color, label=name, linewidth=3 if name == "library" else 1.5,
                 alpha=0.5 if name == "library" else 1)
    if name != "library":
        ax_gap.semilogy(range(len(curve)), [max(gap, 1e-17) for gap in gaps[name]], style, color=color, marker=".",
                        label=name)
ax_loss.set(xlabel="step", ylabel="training loss (nats)", title="Three softmax ops: the loss curves")
ax_gap.set(xlabel="step", ylabel="|loss - library's loss|", title="...and how far each is from the library's")
ax_loss.legend(fontsize=8)
ax_gap.legend(fontsize=8)
plt.show()

# %% [markdown]
# The three loss curves look like one. Only the differences tell them apart: yours is the library's to
# rounding (here exactly 0, drawn at the floor of the plot), while the diagonal-only backward leaves
# the library's curve at step 1 by a few millionths of a nat, and the gap is larger later, up and
# down, at most $9\cdot 10^{-4}$. The loss falls with the wrong backward (2.78 nats at step 0, 2.42 at
# step 29) as with the right one (2.42 at step 29): a loss curve hides a wrong backward;
# central differences catch it. Both runs end just above $\ln 11 = 2.40$, the loss of a model that knows
# only which 11 symbols appear (ids 5 to 15) and uses no attention.
#
# Why are the curves so close? Not because the dropped terms are small next to the gradient they belong to. At uniform weights
# $y_j = 1/T$ the diagonal-only backward keeps $gy_j\,y_j(1 - y_j)$ and drops $-y_j\sum_{i \ne j} gy_i y_i$,
# and with random $gy$ that is a large part of the answer. Measure it, then measure how much the
# loss of the untrained model depends on its attention scores at all: train nothing, replace every
# attention weight by the uniform weights of the causal mask (scale 0: the scores are ignored), and
# record the gradient that reaches the scores.

# %%
def relative_error_of_diagonal_only(y, gy):
    """|diagonal_only - softmax_backward| / |softmax_backward| over whole arrays."""
    right = softmax_backward(y, gy)
    return float(xp.linalg.norm(diagonal_only(y, gy) - right) / xp.linalg.norm(right))


at_uniform = {n: sum(relative_error_of_diagonal_only(xp.full(n, 1 / n), randn(n)) for _ in range(200)) / 200
              for n in (4, 8, 16)}
seen = []  # (y, gy) of every softmax in one backward pass of the untrained model


def recording(y, gy):
    seen.append((y, gy))
    return softmax_backward(y, gy)


probe = TinyGPT(cfg).to_dtype("float64")
probe.kernels = dataclasses.replace(probe.kernels, name="recording", attention=attention_using(recording))
probe_loss = probe.loss(batch.x, batch.y)
probe.zero_grad()
probe_loss.backward()
score_grad = math.sqrt(sum(float((softmax_backward(y_, gy_) ** 2).sum()) for y_, gy_ in seen))
param_grad = math.sqrt(sum(float((p.grad ** 2).sum()) for p in probe.parameters()))
in_model = relative_error_of_diagonal_only(xp.stack([y_ for y_, _ in seen]), xp.stack([gy_ for _, gy_ in seen]))


def uniform_attention(q, k, v, bias=None, mask=None, scale=None, return_weights=False):
    """The reference attention with scale 0 and no bias: every allowed key gets the same weight."""
    return kernels.REFERENCE.attention(q, k, v, mask=mask, scale=0.0, return_weights=return_weights)


flat = TinyGPT(cfg).to_dtype("float64")  # the same weights (same seed), attention flattened
flat.kernels = dataclasses.replace(flat.kernels, name="uniform", attention=uniform_attention)
flat_gap = abs(float(flat.loss(batch.x, batch.y).item()) - float(probe_loss.item()))

# %% tags=["nbval-check-output"]
print("diagonal_only against softmax_backward, relative error at uniform weights with random gy: "
      + ", ".join(f"T = {n}: {e:.2f}" for n, e in at_uniform.items()))
print(f"...and on the untrained model's own softmaxes: {in_model:.2f}")
print(f"gradient reaching the attention scores: norm {score_grad:.0e}; on all the parameters: {param_grad:.1f}")
print(f"loss of the untrained model {float(probe_loss.item()):.4f}; with uniform attention it changes by {flat_gap:.0e} nats")
assert min(at_uniform.values()) > 0.1 and in_model > 0.1
assert score_grad < 1e-3 * param_grad and flat_gap < 1e-5

# %% [markdown]
# The diagonal-only backward is wrong by a fifth to two thirds of the gradient it replaces, on the
# model's own softmaxes as on uniform ones. But at initialisation the loss barely depends on the
# attention weights: it changes by less than a millionth of a nat ($2\cdot 10^{-7}$) when attention is made
# exactly uniform, and the gradient reaching the scores has norm $4\cdot 10^{-4}$, against 1.9 on all
# the parameters. A wrong answer to a question that barely matters yet moves the loss by little. Both
# are measured at step 0 only. That the loss goes on barely depending on attention through the 30
# steps, so that the curves stay close, and that the gap grows when attention starts to matter, are
# explanations not tested here: no run measures how much the loss depends on attention after step 0.
#
# ## 10. Check yourself
#
# Answer out loud, or on paper, before you open an answer.
#
# **1.** The first row of a causal attention matrix has a single nonzero weight. What is it, and what
# would change if the softmax could return weights that sum to less than 1?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# It is 1.0, on key 0 (section 2): the first query may see only itself, and the weights of a row
# must sum to 1. A softmax cannot say "nothing here". If it could, a head with nothing useful in view
# would put no mass anywhere; as it is, the sources report that trained models park the mass on early
# tokens (attention sinks). Whether this workbook's tiny model does is measured in a later chapter, not
# here.
# </details>

# %% [markdown]
# **2.** On the plot of section 4, why does the error of the central difference rise again to the
# left of $h \approx 10^{-5}$, and why does the forward error get no lower than a few times $10^{-9}$?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The explanation, not tested here, is rounding: $L$ is computed with a relative error of about $10^{-16}$, and dividing the difference of two such
# numbers by $h$ magnifies that to about $10^{-16}/h$. Truncation falls as $h^2$ (central) or $h$
# (forward) while rounding grows as $1/h$: the forward sum $h + 10^{-16}/h$ is smallest near
# $h = 10^{-8}$, where it is about $10^{-8}$ (section 4 measured a few times $10^{-9}$ at $h = 10^{-7}$);
# the central sum $h^2 + 10^{-16}/h$ is smallest at $h$ of order $10^{-5}$ to $10^{-6}$, where it is a
# few times $10^{-11}$ (section 4 measured a few times $10^{-12}$ at $h = 10^{-5}$). The constants in
# front of each term, left out of both sums, move each minimum and its value. `gradcheck.py` adds a
# Richardson step that cancels the $h^2$ term, so its truncation is $O(h^4)$ and $h^4 + 10^{-16}/h$ is
# smallest near $h = 10^{-3}$ to $10^{-4}$: that is why it uses $h = 10^{-4}$, in float64.
# </details>

# %% [markdown]
# **3.** An untrained `TinyGPT` with `vocab_size = 16` reports a loss of 2.78. Is it broken? What
# would a loss of $4.5$ at step 0 tell you?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# It is fine: the baseline is $\ln 16 = 2.77$ nats, and small initial weights give near-uniform
# probabilities (section 7 measured 2.772). A loss well above $\ln V$ at step 0 means the model is
# confidently wrong before it has learned anything: logits far too large at initialisation (a head
# initialised with standard deviation 1, say). Wrong targets alone cannot do it: near-uniform
# probabilities score about $\ln V$ whatever the targets (section 7's uniform logits with random
# targets: 2.7726). Reading it as bits does not explain it either: in bits the baseline is
# $\log_2 16 = 4$, so $4.5$ is too large in bits as well.
# </details>

# %% [markdown]
# **4.** A colleague's model with `positional="none"` is said to "use no position at all". Using the
# list of section 8, where can order still reach its outputs?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Through the causal mask, the one place in section 8's list that no scheme controls: query $i$ sees keys
# $0..i$ and nothing else (section 6's running means). In a `TinyEncoder`, which has no mask,
# `none` really does leave no trace of order; chapter 1 measures both: the encoder is blind to order
# to rounding, the decoder is not.
# </details>

# %% [markdown]
# **5.** In section 9 the model with the diagonal-only backward trains for 30 steps within $10^{-3}$
# nats of the correct one. Why is that no comfort, and what would have caught the bug first?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The loss falls with the wrong backward (2.78 to 2.42 nats in section 9) as with the right one, so
# the curve does not flag the bug. Why the curves stay close is not that the dropped terms are
# small: those terms are a fifth to two thirds of the score gradient at near-uniform weights
# (section 9 measured 0.63, 0.31 and 0.22 at $T = 4$, 8 and 16, and 0.52 on the untrained model's own
# softmaxes). What section 9 measured, at step 0 only, is that the loss barely depends on the attention weights:
# uniform attention changes it by less than $10^{-6}$ nats. Both runs end at 2.42, just above
# $\ln 11 = 2.40$, the loss of a model that knows only which symbols appear and uses no attention.
# That attention still barely matters through the 30 steps, and so the curves stay close, is an
# explanation not tested here. The runs part at step 1 by $3\cdot 10^{-6}$ nats, and the gap is larger
# later (at most $9\cdot 10^{-4}$). A bug that costs little on a toy run can cost a great deal on a
# long one, and nothing in the curve says which.
# Central differences catch it at once: section 5's test fails on it, and so would
# `assert_gradcheck` on the op.
# </details>

# %% [markdown]
# ## 11. The claims, settled
#
# Every claim of this chapter but C3 is settled by a computation without sampling, so its
# row cites the section that asserts it (`exact §N`). C3 is about a random draw, the initialisation,
# so it is settled by an interval over five seeds drawn in §7 (`seeds §7`); the rule, with its
# intervals, is in [`chapters/README.md`](README.md) ("Evidence and the verdict rule").
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1 | A softmax row sums to 1 whatever the scores (book, §2.6 and interview question 6) | every row of a causal $6 \times 6$ softmax sums to 1 to below $10^{-15}$; the one-key row puts 1.0 on its only key (§2) | exact §2 | reproduces |
# | C2a | Central differences are $O(h^2)$ (this workbook, §4) | from $h = 10^{-1}$ to $10^{-3}$ the central error falls 2.0 decades per decade of $h$ (§4) | exact §4 | reproduces |
# | C2b | One-sided differences are $O(h)$ (this workbook, §4) | from $h = 10^{-1}$ to $10^{-3}$ the forward error falls 1.0 decade per decade of $h$ (§4) | exact §4 | reproduces |
# | C2c | Both errors rise again as $h$ shrinks past their best (this workbook, §4; rounding is the explanation, not tested here) | at $h = 10^{-13}$ each error is over 1000 times its smallest (§4) | exact §4 | reproduces |
# | C3 | On average over initialisations, this chapter's untrained `TinyGPT` ($V = 16$, $d_{model} = 16$) starts within $0.02$ nats of $\ln V$ (this workbook) | over 5 seeds, all scored on one fixed batch, the mean distance from $\ln 16 = 2.773$ is 0.005 ± 0.007 nats (2.772 to 2.785) (§7) | seeds §7 | reproduces |
# | C4 | In float64, the fast kernels give the reference's numbers and gradients to $10^{-10}$ (README) | attention outputs and input gradients at 8 and 256 keys (the whole-matrix and the blocked kernel), and a whole `TinyGPT`'s logits, loss, parameter gradients and parameters after one clipped AdamW step, differ by less than $10^{-14}$ in float64 (appendix, §13, below); this row covers only what §13 runs (no score bias, no fast `rms_norm`: those are in `tests/engine/test_kernels.py`) | exact §13 | reproduces |
# | C5a | Position enters through the input, the scores, a rotation of $q$ and $k$, or the causal mask (book, TL;DR; survey §8) | the model calls `embed`, `rotate` and `score_bias` and applies the mask; every scheme but `none` overrides at least one hook (§8) | exact §8 | reproduces |
# | C5b | ... and only there (the same list, read as complete) | Shaw's relative values enter through a fourth hook, `output_term`, added to the attention's output (§8) | exact §8 | does not reproduce |
#
# ## 12. Where next
#
# * The exercises: [`exercises/engine.py`](../exercises/engine.py), 0.1 to 0.4. Grade them with
#   `python -m exercises grade engine`; one you have not touched is reported as "not attempted".
# * Next, chapter 1 (`01_order_blind.py`): take position away completely and prove, then measure,
#   that attention cannot tell a sequence from its shuffle, and what the causal mask gives back.

# %% [markdown]
# ## Appendix: the fast kernels
#
# The reference ops are written to be read: one equation, one thread, no tricks. The ops that are
# slow that way also have a **fast kernel** in `mini_transformer/engine/kernels/` with the same
# signature. `GPTConfig(kernels="fast")` chooses the set, read once by the model through
# `mini_transformer.engine.kernels.select` and kept as `model.kernels`; a layer you call on its own,
# outside a model, runs the reference. Every model a chapter builds runs the reference, the code the
# chapters show, except this appendix's side-by-side check (§13); a committed checkpoint a
# chapter loads runs the set it was trained with (chapter 10's
# sink control: the fast set). Each experiment picks its set in its own script: most run the fast set, while
# `chapter01_nope` and `rope_copy` run the reference. No experiment is re-run here under the other
# set.
#
# | op | the reference the chapters show | its fast kernel |
# | --- | --- | --- |
# | attention (chapters 0, 1, and every cached decoding step of chapters 9 and 10) | `engine/functional.py` | `engine/kernels/blocked_attention.py` picks: below 256 keys `engine/kernels/attention.py` (scores stored key-major, rows in blocks over the cores), from 256 keys blocks of keys with a running softmax (memory T x block, not T^2; under a causal mask each block runs only the queries that see it) |
# | a score bias (Shaw, Transformer-XL, T5, ALiBi, the 2-D bias; chapters 4, 5, 7) | the scheme's `score_bias`, added in `functional.py` | the same attention kernel, which takes the bias as a finished array: it folds no scheme's formula in; a scheme that needs the probabilities (Shaw with its value term) takes the reference path under either set |
# | the rotation of RoPE (chapters 6, 8, 11) | `positional/rope.py`, `apply_rotary` | `engine/kernels/rope.py`: the quarter turn as a matrix, in the input's memory order; both pairing conventions and partial rotary |
# | cross-entropy, AdamW and gradient clipping (chapter 0) | `engine/functional.py`, `engine/optim.py` | `engine/kernels/cross_entropy.py`, `engine/kernels/adamw.py` |
# | GELU, layer and RMS norm, the $q, k, v$ projection, the embedding lookup, the linear layer (every model) | `engine/autograd.py` (GELU), `engine/functional.py` | `engine/kernels/gelu.py`, `norms.py`, `projection.py`, `embedding.py`, `linear.py` |
# | a sinusoidal or learned table (chapters 2, 3) | `positional/sinusoidal.py`, `positional/learned.py` | none: adding or looking up a table costs nothing next to attention |
#
# `tests/engine/test_kernels.py` holds every kernel to its reference, in values and gradients, and
# trains a `TinyGPT` of seven schemes for four steps with each set, to the same parameters.
#
# ### 13. Checking C4
#
# Check the claim here, on attention at 8 keys (the whole-matrix kernel) and at 256 (the blocked
# one), and on a whole model: its logits, its loss, the gradients of every parameter, and the
# parameters after one AdamW step with the gradients clipped to norm 1:

# %%
import dataclasses

from mini_transformer.engine import kernels


def largest_gap(a_list, b_list):
    return max(float(xp.abs(a_ - b_).max()) for a_, b_ in zip(a_list, b_list))


attention_gaps = {}  # T_k: (largest output difference, largest input-gradient difference)
for T_k in (8, 256):  # below and at BLOCKED_FROM = 256, where the fast set switches to blocks of keys
    q, k, v = (Tensor(randn(1, 2, T_k, 16), requires_grad=True) for _ in range(3))  # (B, H, T, d_head)
    mask = xp.tril(xp.ones((T_k, T_k), dtype=bool))
    gy = randn(1, 2, T_k, 16)
    outputs, grads = {}, {}
    for name in kernels.NAMES:
        for t_ in (q, k, v):
            t_.grad = None
        y_ = kernels.select(name).attention(q, k, v, mask=mask)
        (y_ * Tensor(gy)).sum().backward()
        outputs[name], grads[name] = [y_.data], [t_.grad for t_ in (q, k, v)]
    attention_gaps[T_k] = (largest_gap(outputs["reference"], outputs["fast"]),
                           largest_gap(grads["reference"], grads["fast"]))
runs = {}  # kernel set: (logits, loss, parameter gradients, parameters after one step)
for name in kernels.NAMES:
    m = TinyGPT(dataclasses.replace(cfg, kernels=name)).to_dtype("float64")
    logits_ = m(batch.x).data
    loss_ = m.loss(batch.x, batch.y)
    m.zero_grad()
    loss_.backward()
    param_grads = [p.grad.copy() for p in m.parameters()]
    m.kernels.clip_grad_norm(m.parameters(), 1.0)
    m.kernels.AdamW(m.parameters(), lr=1e-2).step()
    runs[name] = ([logits_], [xp.asarray(float(loss_.item()))], param_grads, [p.data.copy() for p in m.parameters()])
model_gaps = [largest_gap(a_, b_) for a_, b_ in zip(runs["reference"], runs["fast"])]

# %% tags=["nbval-check-output"]
print("attention", kernels.REFERENCE.attention.__module__, "against", kernels.FAST.attention.__module__)
def bound(gap):
    return "below 1e-14" if gap < 1e-14 else f"{gap:.0e}"


for T_k, (value_gap, grad_gap) in attention_gaps.items():
    print(f"  {T_k} keys: largest difference of the outputs: {bound(value_gap)}; of the gradients: {bound(grad_gap)}")
print("a whole TinyGPT in float64, same weights: largest difference of "
      + ", ".join(f"{what}: {bound(gap)}" for what, gap in
                  zip(("the logits", "the loss", "the parameter gradients", "the parameters after one step"), model_gaps)))
assert max(max(pair) for pair in attention_gaps.values()) < 1e-10 and max(model_gaps) < 1e-10

# %% [markdown]
# C4 holds on what this section runs: every gap is below $10^{-14}$, far inside $10^{-10}$. It runs
# one model, the default `rope`, with the ops a training step calls; the other schemes and the
# awkward inputs are in `tests/engine/test_kernels.py`.
