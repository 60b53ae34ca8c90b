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
# # Chapter 7. ALiBi, and the train-short-test-long bake-off
#
# You trained a model on 64 tokens. Can it read 512? Chapter 6's RoPE cannot, not without help.
# ALiBi (Press et al., 2022) takes a different road: it adds no position vector at all and
# rotates nothing. Each head subtracts a fixed penalty, proportional to the distance, from its
# attention scores. The penalty is defined at every distance, so the model runs at any length.
# This chapter builds ALiBi, trains a model on your code, and then asks the harder question:
# a model that *runs* past its training length, does it *use* what it reads there?
#
# ## Objectives
#
# By the end you can:
#
# * compute ALiBi's slopes for any head count, with the authors' workaround when the count is not a
#   power of two, and say how far each head looks;
# * build the causal bias and the encoder's symmetric bias, and test a bias by the properties
#   that define it;
# * train a `TinyGPT` on your own slopes and bias and check it step by step against the
#   library's;
# * explain, with a tiled attention you run, why a closed-form bias fits in a fused kernel;
# * read the bake-off of eight schemes trained at L = 64 and run to 8L, and measure whether
#   ALiBi uses the context past L.
#
# ## The claim ledger
#
# The sources make these claims. Write your prediction in the third column before you run
# anything: does it hold on this workbook's tiny model? Section 10 settles each one with the
# numbers the chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | For 8 heads the slopes are 1/2, 1/4, ..., 1/256: a geometric sequence from $2^{-8/H}$ with ratio $2^{-8/H}$ (book §2.5, §3.4) | | §2 |
# | C2a | The slope-1/2 head suppresses a key 10 tokens back by 5 nats and attends locally (book §2.5) | | §3 |
# | C2b | The slope-1/256 head is barely affected within 1000 tokens: its penalty there stays under 1 nat (book §2.5) | | §3 |
# | C3 | ALiBi learns no position parameters and adds nothing to the input (book §2.5; survey §7) | | §6 |
# | C4a | ALiBi's bias folds into a fused attention kernel as a closed-form function of the indices (book §2.3, §4) | | §5 |
# | C4b | A learned relative bias must be materialised as $(H, T_q, T_k)$ (book §2.3, §4) | | §5 |
# | C5 | Trained short, ALiBi runs long: its loss does not rise past the training length, a rise at $4L$ under 0.05 nats (book §2.5, after Press et al.) | | §7 |
# | C6a | Unscaled RoPE's perplexity explodes at 4 times the training length: its loss past the training length is over $\ln 2 = 0.693$ nats above its loss at it, on the same windows, the perplexity more than doubled (book §2.6) | | §7 |
# | C6b | The sinusoidal encoding's perplexity degrades past the training length: its rise at $4L$ is over 0.05 nats (book §2.1) | | §7 |
# | C6c | A learned table cannot run past the training length at all (book §2.2) | | §7 |
# | C7a | T5's relative bias generalises past the training length on text: its rise at $4L$ is no larger than a model's with no position at all (book §4, whose row is about encoder-decoders, tested here on a causal decoder) | | §7 |
# | C7b | ... modestly: its rise stays over 0.05 nats (book §4) | | §7 |
# | C8a | ALiBi's monotone recency prior is the wrong inductive bias for retrieval from far back in a long context: it hurts long-context retrieval, measured here as a far-context gain at $4L$, trained at $L$, under 0.005 nats (book §2.5 and its interview answer) | | §8 |
# | C8b | The cause is its distance penalty: a scheme without one (Transformer-XL, trained alike) gains more from far context than ALiBi does (book §2.5 and its interview answer) | | §8 |
#
# The functions you write live in [`exercises/alibi.py`](../exercises/alibi.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 7.1 | `alibi_slopes(n_heads)` | the slope of every head |
# | 7.2 | `alibi_bias(n_heads, T_q, T_k)` | the causal bias, `(1, H, T_q, T_k)` |
# | 7.3 | `alibi_bias_symmetric(n_heads, T)` | the encoder's bias, `(1, H, T, T)` |
# | 7.4 | `test_alibi(alibi_slopes, alibi_bias)` | a test that catches a wrong ALiBi |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work);
# grade with `python -m exercises grade alibi`.

# %%
import json
import math
import os

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

g = rng(0)  # one seeded generator for the whole chapter


def randn(*shape):
    """Standard normal float64 numbers on the active backend."""
    return g.normal(size=shape, dtype="float64")


def diff_text(a, b):
    """The largest |a - b| as a check cell prints it: "0 (identical)", "under 1e-12", or the number."""
    d = float(abs(a - b).max())
    return "0 (identical)" if d == 0 else "under 1e-12" if d < 1e-12 else f"{d:.1e}"


# %% [markdown]
# ## 1. A penalty instead of a position
#
# Chapter 6 put position into the queries and keys. ALiBi leaves them alone and edits the
# scores. Head $h$ of query $i$ against key $j \le i$ scores
#
# $$S^{(h)}_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_{head}}} - m_h\,(i - j),$$
#
# with a fixed slope $m_h > 0$ per head, never learned. The penalty grows linearly with the
# distance $i - j$. It depends on $i$ and $j$ only through $i - j$, so it is a relative scheme,
# and it is defined at every distance, so nothing stops the model at any length.
#
# The penalty acts in log space. Adding $-m_h d$ to a score multiplies that key's unnormalised
# softmax weight by $e^{-m_h d}$. For a head whose content scores are all equal, the weights fall off
# geometrically with the distance: the slope sets how far the head can look.
#
# ## 2. The slopes
#
# For $H$ heads, $H$ a power of two, the slopes are the geometric sequence
#
# $$m_h = 2^{-8h/H}, \qquad h = 1, \dots, H,$$
#
# which starts at $2^{-8/H}$ and shrinks by the same ratio $2^{-8/H}$ each head. For 8 heads:
# $1/2, 1/4, \dots, 1/256$. The exponents always run down to $-8$, so the gentlest head always
# has slope $1/256$.
#
# The paper trains only head counts that are powers of two, as a comment in the authors' reference
# code says. For other $H$ that code (`get_slopes` in their fairseq `transformer.py`) uses a
# workaround they did not train with, and it is less obvious. Take the $c$ slopes of
# the largest power of two $c < H$; then add the 1st, 3rd, 5th, ... slopes of the $2c$ sequence
# until there are $H$. The first of them is steeper than all $c$; the others fall between them. For 6 heads: the 4 slopes of
# $H = 4$, $(2^{-2}, 2^{-4}, 2^{-6}, 2^{-8})$, then the 1st and 3rd of $H = 8$, $(2^{-1}, 2^{-3})$.
#
# ### Exercise 7.1: `alibi_slopes`   ★★☆ · 10 min
#
# *Why it matters:* the slopes are all of ALiBi's position information, and the head count of
# a real model is not always a power of two (BLOOM-176B has 112).
#
# Write `alibi_slopes(n_heads)`: a float64 array `(n_heads,)`, the geometric rule for a power of
# two, the authors' workaround otherwise. Grade it alone with
# `python -m exercises grade alibi --exercise 7.1`.

# %%
alibi_slopes = use("alibi", "alibi_slopes")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Find $c$, the largest power of two at or below `n_heads`. For a power of two the slopes are the
# geometric sequence $2^{-8h/c}$, $h = 1, \dots, c$: 8 heads give $1/2, 1/4, \dots, 1/256$.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The $2c$ sequence is $2^{-8h/(2c)} = 2^{-4h/c}$ for $h = 1, \dots, 2c$. Its odd-numbered
# slopes ($h = 1, 3, 5, \dots$) are the ones not already among the $c$ slopes. Take the first
# `n_heads - c` of them, after the $c$ slopes. Case: 6 heads, $c = 4$: $1/4, 1/16, 1/64, 1/256$, then
# the 8-head sequence's $h = 1, 3$: $1/2, 1/8$.
# </details>

# %% tags=["answer"]
reveal("alibi", "alibi_slopes")

# %% [markdown]
# Check it on the numbers worked by hand above: 8 heads are the paper's $2^{-1} \dots 2^{-8}$,
# 6 heads by the authors' workaround are $2^{-2}, 2^{-4}, 2^{-6}, 2^{-8}, 2^{-1}, 2^{-3}$.

# %% tags=["nbval-check-output"]
for H in (8, 6, 12):
    print(f"H = {H:>2}: slopes = 2^-[" + ", ".join(f"{-math.log2(float(m)):g}" for m in alibi_slopes(H)) + "]")
assert [float(m) for m in alibi_slopes(8)] == [2.0 ** -h for h in range(1, 9)]
assert [float(m) for m in alibi_slopes(6)] == [2.0 ** -e for e in (2, 4, 6, 8, 1, 3)]
assert xp.allclose(alibi_slopes(8)[1:] / alibi_slopes(8)[:-1], 2.0 ** (-8 / 8))  # one ratio, 2^(-8/H)
assert float(max(alibi_slopes(6))) == 2.0 ** -1 and float(max(alibi_slopes(12))) == 2.0 ** -0.5  # an extra head is the steepest

# %% [markdown]
# Drawn: each head's slope, on a log scale. For a power of two the heads are evenly spread in
# $\log_2$ from $-8/H$ to $-8$. For 6 and 12 heads the extra heads (red) never land on top of
# one of the others, and they are all steep: one of them is steeper than every other head
# ($2^{-1}$ for 6 heads, $2^{-0.5}$ for 12), and the rest fall between the steepest of the
# others.

# %%
fig, axes = plt.subplots(1, 5, figsize=(13, 3), sharey=True)
for ax, H in zip(axes, (4, 6, 8, 12, 16)):
    c = 1 << (H.bit_length() - 1)                                                # the power of two at or below H
    log_m = to_numpy(xp.log2(alibi_slopes(H)))
    ax.plot(range(1, c + 1), log_m[:c], "o", label="2^(-8h/c), c the power of two at or below H")
    if H > c:
        ax.plot(range(c + 1, H + 1), log_m[c:], "s", color="C3", label="the odd-numbered slopes of the 2c sequence")
    ax.set(title=f"H = {H}", xlabel="head h", ylim=(-8.8, 0.2))
axes[0].set_ylabel("log2(slope m_h)")
fig.legend(*axes[1].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8)
fig.suptitle("ALiBi's slopes; for 6 and 12 heads the authors' workaround adds steep slopes, one steeper than all")
fig.tight_layout(rect=(0, 0.08, 1, 1))

# %% [markdown]
# ## 3. How far each head looks
#
# Give a head flat content (all $q \cdot k$ equal) and a long past. Its softmax weight on the key
# $d$ tokens back is proportional to $e^{-m_h d}$, so the share of its attention on the last
# $D + 1$ keys ($d = 0 \dots D$, the query's own key included) is
#
# $$\frac{\sum_{d=0}^{D} e^{-m_h d}}{\sum_{d=0}^{\infty} e^{-m_h d}} = 1 - e^{-m_h (D + 1)}.$$
#
# The source says the slope-1/2 head is suppressed by 5 nats at distance 10 and attends
# locally, and the slope-1/256 head is barely affected within 1000 tokens and attends
# globally. Compute both.

# %%
def penalty(m, d):
    """Nats subtracted from a key d tokens back by a head of slope m."""
    return m * d


def share_within(m, D):
    """Share of a flat-content head's attention on the last D + 1 keys (d = 0 .. D), over a long past."""
    return 1 - math.exp(-m * (D + 1))


def half_window(m):
    """The smallest D whose last D + 1 keys hold at least half of a flat-content head's attention."""
    return math.ceil(math.log(2) / m - 1)


# %% tags=["nbval-check-output"]
print(f"{'slope':>7}{'penalty at 10':>15}{'penalty at 1000':>17}{'weight at 1000':>16}{'half the mass within':>22}")
print(f"{'':>7}{'':>15}{'':>17}{'':>16}{'(tokens back)':>22}")
for m in (1 / 2, 1 / 16, 1 / 256):
    print(f"{'1/' + str(round(1 / m)):>7}{penalty(m, 10):>12.2f} nats{penalty(m, 1000):>12.2f} nats"
          f"{math.exp(-penalty(m, 1000)):>16.3f}{half_window(m):>22}")
print(f"share of the slope-1/256 head's attention within the last 1000 tokens: {share_within(1 / 256, 999):.1%}")
assert penalty(1 / 2, 10) == 5.0 and half_window(1 / 2) == 1 and half_window(1 / 256) == 177

# %% [markdown]
# The first half of the claim is exact: 5 nats at distance 10, and at least half of the slope-1/2 head's
# attention sits on the query itself and the token before it. The second half is generous. A
# key 1000 tokens back pays 3.91 nats in the slope-1/256 head, a factor of 50 against the nearest
# key; half of that head's attention lies within 177 tokens. It looks much further than the steep
# heads, but "barely affected", read as a penalty under 1 nat (a weight cut by less than a factor
# $e$), it is not. Drawn, per head, for 8 heads:

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
dist = xp.arange(0, 1001)
for m in alibi_slopes(8):
    ax.plot(to_numpy(dist), to_numpy(xp.exp(-float(m) * dist)), label=f"m = 1/{round(1 / float(m))}")
ax.set(yscale="log", ylim=(1e-4, 1.5), xlabel="distance i - j (tokens; linear to 1, log beyond)",
       ylabel="weight relative to d = 0", title="Flat content: each ALiBi head's weight falls as exp(-m d)")
ax.set_xscale("symlog", linthresh=1)
ax.set_xlim(0, 1000)
ax.legend(fontsize=7, ncol=2)
fig.tight_layout()

# %% [markdown]
# ## 4. The bias
#
# In code the penalty is one array, added to the scores `(B, H, T_q, T_k)` before the softmax:
#
# $$\mathrm{bias}[0, h, i, j] = \begin{cases} -m_h\,(i - j) & j \le i,\\ 0 & j > i.\end{cases}$$
#
# The future keys get 0, not a bonus: the causal mask removes them. The clamp is no substitute for
# the mask: without it every future key, the next token included, would get the query's own
# bias, 0, more than any past key. One more convention matters. The $T_q$ queries
# are the **last** $T_q$ of the $T_k$ positions: in training $T_q = T_k$, and in cached decoding
# one new query at position $T_k - 1$ scores against every cached key.
#
# ### Exercise 7.2: `alibi_bias`   ★☆☆ · 10 min
#
# *Why it matters:* it is the function you write in an interview, and the model runs it (section 6).
#
# Write `alibi_bias(n_heads, T_q, T_k)`: a float64 array `(1, H, T_q, T_k)` as above, using your
# `alibi_slopes`. Grade with `python -m exercises grade alibi --exercise 7.2`.

# %%
alibi_bias = use("alibi", "alibi_bias")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# The queries are the last $T_q$ of the $T_k$ positions. Build their positions as a column and the key
# positions as a row; their difference is the `(T_q, T_k)` matrix of $i - j$.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Clamp the distances at 0, then give the slopes and the distances their own axes so they broadcast:
# `(1, H, 1, 1)` times `(1, 1, T_q, T_k)` is `(1, H, T_q, T_k)`. Case: one head (slope $1/256$),
# $T_q = 1$, $T_k = 3$: the query sits at position 2 and its bias row is $-(2, 1, 0)/256$.
# </details>

# %% tags=["answer"]
reveal("alibi", "alibi_bias")

# %% [markdown]
# Worked by hand: 2 heads have slopes $2^{-8h/2} = 2^{-4h}$, that is $1/16$ and $1/256$; with
# $T_q = 2$ queries at positions 2 and 3 of $T_k = 4$ keys, the first head's rows are
# $-(2, 1, 0, 0)/16$ and $-(3, 2, 1, 0)/16$. One decode step ($T_q = 1$) must equal the last row
# of the full bias.

# %% tags=["nbval-check-output"]
b = alibi_bias(2, 2, 4)
print("shape:", tuple(b.shape))
print("head 0, times -16:", (to_numpy(-b[0, 0]) * 16).astype(int).tolist())
assert xp.allclose(b[0, 0], -asarray([[2, 1, 0, 0], [3, 2, 1, 0]]) / 16)
assert xp.allclose(b[0, 1], -asarray([[2, 1, 0, 0], [3, 2, 1, 0]]) / 256)
full, step = alibi_bias(8, 9, 9), alibi_bias(8, 1, 9)
assert xp.array_equal(step[0, :, 0], full[0, :, -1])
print("one decode step against the last row of the full bias, largest difference:", diff_text(step[0, :, 0], full[0, :, -1]))

# %% [markdown]
# ### The form BLOOM ships: a bias on the key position alone
#
# Port BLOOM and you meet a different array: Hugging Face's `build_alibi_tensor` returns
# $m_h \cdot j$, one row of key positions per head, shape `(B·H, 1, T_k)`, with no query
# position in it. It gives the same attention, because a softmax does not see a constant added
# to a whole row. For any $c$,
#
# $$\mathrm{softmax}(s + c)_j = \frac{e^{s_j + c}}{\sum_l e^{s_l + c}} = \frac{e^{c}\,e^{s_j}}{e^{c}\sum_l e^{s_l}} = \mathrm{softmax}(s)_j .$$
#
# Now split the penalty: $-m_h(i - j) = m_h j - m_h i$. Along row $i$ (one query, every key)
# the part $-m_h i$ is the same number for every $j$: it is the $c$ of that row, and it drops
# out. What is left, $+m_h j$, depends on the key alone. The causal mask changes nothing: the
# masked keys are $-\infty$ under either bias, and the shift holds over the keys that remain.
# (It is the *row* that must be constant: a bias constant down a column would change the
# attention.)
#
# Why ship that form? It is one row per head, $H \cdot T_k$ numbers instead of
# $H \cdot T_q \cdot T_k$, broadcast over the queries: the cell below writes it `(1, H, 1, T_k)`,
# with no batch; BLOOM's `(B·H, 1, T_k)` holds one such row per sequence. It does not depend on
# how many queries there are or where they sit, so one decode step, a prefill and a training
# block all use the same row. BLOOM rebuilds it at every call from the attention mask, counting
# $j$ as the cumulative sum of the mask, so left padding does not move a real token's position.
# Check the equality on numbers, with the causal mask, and a bias that is *not* a row constant
# away from ALiBi, $-m_h (i - j)^2$, as the control that must differ.

# %% tags=["nbval-check-output"]
def causal_softmax(scores):
    """Softmax over the last axis of (1, H, T, T) scores, future keys masked to -inf."""
    T = scores.shape[-1]
    s = xp.where(xp.tril(xp.ones((T, T), dtype=bool)), scores, -xp.inf)
    w = xp.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


H, T = 4, 12
content = rng(7).normal(size=(1, H, T, T), dtype="float64")             # (1, H, T, T) q.k / sqrt(d)
slopes_col = alibi_slopes(H)[None, :, None, None]                         # (1, H, 1, 1)
key_only = slopes_col * xp.arange(T)[None, None, None, :]                 # (1, H, 1, T_k): +m_h j
squared = -slopes_col * (xp.arange(T)[:, None] - xp.arange(T)) ** 2       # (1, H, T, T): -m_h (i - j)^2
w_alibi = causal_softmax(content + alibi_bias(H, T, T))
w_key = causal_softmax(content + key_only)
w_sq = causal_softmax(content + squared)
gap, control = float(xp.abs(w_alibi - w_key).max()), float(xp.abs(w_alibi - w_sq).max())
print(f"bias shapes: ALiBi {tuple(alibi_bias(H, T, T).shape)}, key position only {tuple(key_only.shape)}")
print(f"max |weights(-m(i - j)) - weights(+m j)|     = {gap:.1e}")
print(f"max |weights(-m(i - j)) - weights(-m(i - j)^2)| = {control:.3f}  (the control)")
assert gap < 1e-12 < 0.1 < control
past = xp.tril(xp.ones((T, T), dtype=bool))
diffs = xp.where(past, alibi_bias(H, T, T)[0] - key_only[0], xp.nan)      # (H, T, T) on the kept keys
assert xp.allclose(xp.nanmax(diffs, axis=-1), xp.nanmin(diffs, axis=-1))  # one constant per row ...
assert xp.allclose(xp.nanmax(diffs, axis=-1), -alibi_slopes(H)[:, None] * xp.arange(T))  # ... and it is -m_h i

# %% [markdown]
# ### The encoder's form
#
# A bidirectional encoder has no causal mask. Its future keys are real keys, so a bias of 0 for
# them would make every later token look as close as the query itself. Press et al. define ALiBi
# for causal decoders only; a common encoder variant, the form the survey writes (eq. 58),
# penalises the distance either way:
#
# $$\mathrm{bias}[0, h, i, j] = -m_h\,|i - j|.$$
#
# ### Exercise 7.3: `alibi_bias_symmetric`   ★☆☆ · 5 min
#
# *Why it matters:* the causal form in an encoder is a silent bug: it runs, it trains, and it
# gives the future half of the sentence no distance signal.
#
# Write `alibi_bias_symmetric(n_heads, T)`: a float64 array `(1, H, T, T)`. Grade with
# `python -m exercises grade alibi --exercise 7.3`.

# %%
alibi_bias_symmetric = use("alibi", "alibi_bias_symmetric")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# It is Exercise 7.2 with the absolute distance where the causal form clamps at 0, and $T_q = T_k = T$.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Both directions now cost: the bias is $-m_h |i - j|$, symmetric, zero on the diagonal. Case: one head
# (slope $2^{-8} = 1/256$), $T = 3$: the bias is $-\frac{1}{256}$ times
# `[[0, 1, 2], [1, 0, 1], [2, 1, 0]]`, shape `(1, 1, 3, 3)`.
# </details>

# %% tags=["answer"]
reveal("alibi", "alibi_bias_symmetric")

# %% [markdown]
# Both forms side by side, for the two steepest heads of a 4-head model ($m = 1/4$ and $1/16$)
# over 16 positions. The causal bias is a lower triangle that darkens away from the diagonal; the
# symmetric one darkens both ways. The steeper head goes dark within a few tokens.

# %% tags=["nbval-check-output"]
T = 16
causal, symmetric = alibi_bias(4, T, T), alibi_bias_symmetric(4, T)
assert xp.array_equal(symmetric[0].transpose(0, 2, 1), symmetric[0])         # symmetric in i and j
assert xp.array_equal(xp.tril(symmetric[0]), causal[0])                        # the causal form is its lower half
assert xp.allclose(symmetric, -alibi_slopes(4)[None, :, None, None] * xp.abs(xp.arange(T)[:, None] - xp.arange(T)))
print("symmetric bias against its transpose, largest difference:", diff_text(symmetric[0].transpose(0, 2, 1), symmetric[0]))
print("its lower triangle against the causal bias, largest difference:", diff_text(xp.tril(symmetric[0]), causal[0]))

# %%
fig, axes = plt.subplots(1, 4, figsize=(13, 3.4), layout="constrained")
panels = [("causal", causal, 0), ("causal", causal, 1), ("symmetric", symmetric, 0), ("symmetric", symmetric, 1)]
for ax, (name, bias, h) in zip(axes, panels):
    im = ax.imshow(to_numpy(bias[0, h]), cmap="viridis", vmin=-3, vmax=0)
    ax.set(title=f"{name}, m = 1/{round(1 / float(alibi_slopes(4)[h]))}", xlabel="key j", ylabel="query i")
fig.colorbar(im, ax=axes, shrink=0.9, label="bias (nats), clipped at -3")
plt.show()

# %% [markdown]
# ### Exercise 7.4: a test of your own   ★★★ · 15 min
#
# *Why it matters:* an ALiBi with the queries in the wrong rows trains without an error and
# decodes wrong. A property test is what catches it, and writing one
# is what an interviewer asks for after the bias.
#
# Write `test_alibi(alibi_slopes, alibi_bias)` in `exercises/alibi.py`: it receives an
# implementation of each (the signatures of Exercises 7.1 and 7.2) and must raise
# `AssertionError` when they are not ALiBi. The grader runs your test on the reference (it must
# pass) and on eleven wrong ALiBis, each wrong in one way a reader's code can be, and tells you
# which got away. Grade it alone: `python -m exercises grade alibi --exercise 7.4`.

# %%
test_alibi = use("alibi", "test_alibi")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: where the mistakes hide</summary>
#
# A test with 8 heads and a square bias ($T_q = T_k$) looks at the easy cases only. The slope
# rule differs for a head count that is not a power of two; the query rows matter only when
# $T_q < T_k$; the clamp matters only for the keys after the query.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the properties</summary>
#
# Work out by hand: the slopes of 8 and of 6 heads; the whole $(1, H, T, T)$ bias of 4 heads,
# $-m_h \max(i - j, 0)$; its diagonals are constant (only $i - j$ counts); and one decode step,
# `alibi_bias(H, 1, T)`, is the last row of `alibi_bias(H, T, T)`.
# </details>

# %% tags=["answer"]
reveal("alibi", "test_alibi")

# %% [markdown]
# Your test must pass on the functions this chapter runs, and fail on every wrong one. The
# wrong ones are in `exercises/grading/modules/alibi/mutants.py`; each wraps a correct function and
# breaks one thing. The cell runs your test on each, as the grader does.

# %% tags=["nbval-check-output"]
from exercises.grading.modules import reader_tests

test_alibi(alibi_slopes, alibi_bias)
print("the test passes on the ALiBi this chapter runs")
mutants = reader_tests("alibi")["test_alibi"].mutants
caught = []
for m in mutants:
    impls = {"alibi_slopes": alibi_slopes, "alibi_bias": alibi_bias}
    impls[m.wraps] = m.make(impls[m.wraps])
    try:
        test_alibi(**impls)
        verdict = "got away"
    except Exception as e:  # an assertion, or a crash on a wrong shape
        verdict = "caught" if isinstance(e, AssertionError) else f"caught by {type(e).__name__}"
    caught.append(verdict.startswith("caught"))
    print(f"{m.key:<20} {m.wraps:<13} {verdict:<10} {m.title}")
print(f"caught {sum(caught)} of {len(mutants)}")

# %% [markdown]
# ## 5. Why ALiBi fits inside a fused kernel
#
# A fused attention kernel (FlashAttention is the common one) never builds the $T \times T$
# score matrix. It walks over tiles of queries and keys, keeps a running maximum and a running
# sum per query row, and rescales its partial output as new tiles arrive: the *online softmax*.
# Memory stays $O(T)$ instead of $O(T^2)$. Any bias that is a full $(H, T_q, T_k)$ array breaks
# that: it has $T^2$ entries per head that the kernel must read. The source's point is that
# ALiBi never needs the array. Inside a tile the kernel knows the query and key indices, and the
# bias is a closed-form function of them, $-m_h \max(i - j, 0)$: $H$ numbers of state in all.
#
# Below is that kernel, in plain arrays. It computes each tile's bias from its indices and never
# holds more than one tile of it.

# %%
def attention_dense(q, k, v, bias):
    """Reference attention (H, T, d): the whole score matrix, the whole bias, the causal mask."""
    T = q.shape[1]
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1]) + bias[0]        # (H, T, T)
    scores = xp.where(xp.tril(xp.ones((T, T), dtype=bool)), scores, -xp.inf)
    weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v                  # (H, T, d)


def attention_tiled_alibi(q, k, v, slopes, tile=32):
    """Online-softmax attention (H, T, d) over tiles, with ALiBi's bias made from indices inside each tile."""
    H, T, d = q.shape
    out = xp.zeros_like(q)
    for i0 in range(0, T, tile):
        i = xp.arange(i0, min(i0 + tile, T))                                     # query indices of this tile
        row_max = xp.full((H, len(i), 1), -xp.inf)
        row_sum = xp.zeros((H, len(i), 1))
        acc = xp.zeros((H, len(i), d))
        for j0 in range(0, i0 + len(i), tile):                                   # key tiles up to the diagonal
            j = xp.arange(j0, min(j0 + tile, T))
            s = q[:, i] @ k[:, j].transpose(0, 2, 1) / math.sqrt(d)              # (H, tile, tile)
            s = s - slopes[:, None, None] * xp.maximum(i[:, None] - j[None, :], 0)   # the bias, from indices
            s = xp.where(j[None, :] <= i[:, None], s, -xp.inf)
            new_max = xp.maximum(row_max, s.max(axis=-1, keepdims=True))
            p = xp.exp(s - new_max)
            rescale = xp.exp(row_max - new_max)                                  # earlier tiles, to the new max
            row_sum = row_sum * rescale + p.sum(axis=-1, keepdims=True)
            acc = acc * rescale + p @ v[:, j]
            row_max = new_max
        out[:, i] = acc / row_sum
    return out


# %% tags=["nbval-check-output"]
H, T, d = 4, 256, 16
q, k, v = randn(H, T, d), randn(H, T, d), randn(H, T, d)
dense = attention_dense(q, k, v, alibi_bias(H, T, T))
tiled = attention_tiled_alibi(q, k, v, alibi_slopes(H), tile=32)
print("tiled attention against dense attention, largest difference:", diff_text(tiled, dense))
print(f"bias entries the dense form holds: H x T x T = {H * T * T:,}")
print(f"bias entries the tiled form holds at once: H x 32 x 32 = {H * 32 * 32:,}, from {H} slopes")
assert xp.allclose(tiled, dense, atol=1e-12)

# %% [markdown]
# The same tiles serve a learned relative bias if the kernel looks its table up inside each
# tile. Check it with T5's bias (chapter 5): a `(32, H)` table indexed by the bucket of $j - i$.
# The tiled function below computes each tile's buckets from its indices and looks them up; it
# never holds more than one tile of bias either.

# %%
from mini_transformer.positional.t5 import relative_position_bucket


def attention_tiled_table(q, k, v, table, tile=32):
    """Online-softmax attention (H, T, d) with T5's bias looked up per tile: table[bucket(j - i), h]."""
    H, T, d = q.shape
    out = xp.zeros_like(q)
    for i0 in range(0, T, tile):
        i = xp.arange(i0, min(i0 + tile, T))
        row_max, row_sum, acc = xp.full((H, len(i), 1), -xp.inf), xp.zeros((H, len(i), 1)), xp.zeros((H, len(i), d))
        for j0 in range(0, i0 + len(i), tile):
            j = xp.arange(j0, min(j0 + tile, T))
            s = q[:, i] @ k[:, j].transpose(0, 2, 1) / math.sqrt(d)                        # (H, tile, tile)
            buckets = relative_position_bucket(j[None, :] - i[:, None], bidirectional=False)  # (tile, tile)
            s = s + table[buckets].transpose(2, 0, 1)                                    # the bias, looked up
            s = xp.where(j[None, :] <= i[:, None], s, -xp.inf)
            new_max = xp.maximum(row_max, s.max(axis=-1, keepdims=True))
            p, rescale = xp.exp(s - new_max), xp.exp(row_max - new_max)
            row_sum = row_sum * rescale + p.sum(axis=-1, keepdims=True)
            acc = acc * rescale + p @ v[:, j]
            row_max = new_max
        out[:, i] = acc / row_sum
    return out


# %% tags=["nbval-check-output"]
t5_table = randn(32, H)                                                                  # (num_buckets, H)
n = xp.arange(T)
t5_bias = t5_table[relative_position_bucket(n[None, :] - n[:, None], bidirectional=False)].transpose(2, 0, 1)[None]
tiled_t5, dense_t5 = attention_tiled_table(q, k, v, t5_table), attention_dense(q, k, v, t5_bias)
print("T5's bias looked up per tile against the dense, materialised form, largest difference:", diff_text(tiled_t5, dense_t5))
assert xp.allclose(tiled_t5, dense_t5, atol=1e-12)

# %% [markdown]
# (In training, the backward pass would also have to add each tile's gradient into that table; it is not run here.) None of
# this takes a hand-written kernel per scheme: a *score-modification hook* makes the bias a
# small function the fused kernel calls on each tile's scores. PyTorch's FlexAttention takes
# `score_mod(score, b, h, q_idx, kv_idx)` and compiles it into one fused kernel; ALiBi is
# `score + slope[h] * (kv_idx - q_idx)`, and a T5 bucket table or a learned bias is a lookup
# inside the same function. What has no shortcut is a general bias *tensor* handed to the
# kernel from outside: it must be read in full. At $H = 32$
# and $T = 8192$ it is $32 \cdot 8192^2 \cdot 4$ bytes, 8 GiB in float32, per layer. This
# workbook's attention is the textbook one: its reference kernel materialises ALiBi's bias
# too, `(1, H, T_q, T_k)` in the scores' dtype (`mini_transformer/positional/alibi.py`), and so
# does the fast kernel in `mini_transformer/engine/kernels/attention.py` (and `blocked_attention.py`). What the tiled functions above
# show is that neither ALiBi's bias nor T5's *has* to be materialised.
#
# ## 6. Your ALiBi inside a model
#
# `from_functions.alibi(alibi_slopes, alibi_bias)` is a positional scheme computed by your two
# functions: the model asks your `alibi_bias` for the bias at every layer and every step. The
# cell trains a `TinyGPT` with it beside the same model built by the library, on the same
# batches from the same weights, in float64, with the reference kernels ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)). The model has 6 heads,
# so the authors' workaround for a head count that is not a power of two runs inside it.

# %%
from mini_transformer.model import tasks
from mini_transformer.model import GPTConfig, TinyGPT
from exercises.adapters import from_functions
from exercises.adapters.side_by_side import train_side_by_side

cfg = GPTConfig(vocab_size=16, d_model=48, n_layers=2, n_heads=6, max_len=16, positional="alibi")


def copy_batches(g):
    b = tasks.copy_task(16, 8, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


# %%
yours = train_side_by_side(cfg, from_functions.alibi(alibi_slopes, alibi_bias), copy_batches, steps=40)
print(yours.report())
assert yours.first_difference is None

# %% [markdown]
# What a wrong function looks like from here: the slopes of the *next* power of two, cut to six
# (a common slip), give the model $2^{-1} \dots 2^{-6}$: the gentlest head, $2^{-8}$, is gone and
# $2^{-5}$ takes its place. The curves part at the first step.

# %%
def slopes_rounded_up(n_heads):
    c = 1 << (n_heads - 1).bit_length()                                          # 8 for 6 heads: rounds up
    return 2.0 ** (-8.0 * xp.arange(1, n_heads + 1) / c)


# %%
wrong = train_side_by_side(cfg, from_functions.alibi(slopes_rounded_up), copy_batches, steps=40)
print(wrong.report())
assert wrong.first_difference == 0

# %%
fig, (ax_loss, ax_diff) = plt.subplots(1, 2, figsize=(12, 3.2))
ax_loss.plot(yours.library, label="library", lw=3, alpha=0.5)
ax_loss.plot(yours.yours, "--", label="your slopes and bias")
ax_loss.plot(wrong.yours, ":", label="slopes of the next power of two")
ax_loss.set(xlabel="step", ylabel="training loss (nats)", title="Copy task, 6 heads")
ax_loss.legend(fontsize=8)
for run, label, style in [(yours, "your slopes and bias", "o"), (wrong, "slopes of the next power of two", "x")]:
    gap = [max(abs(a - b), 1e-17) for a, b in zip(run.library, run.yours)]
    ax_diff.semilogy(gap, style, ms=4, label=label)
ax_diff.axhline(1e-6, color="k", ls=":", lw=1, label="tolerance 1e-6")
ax_diff.set(xlabel="step", ylabel="|loss - library's loss| (1e-17 = equal)", title="Where the curves part")
ax_diff.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# The claim that ALiBi learns nothing for position (C3) is a count: the ALiBi model has exactly
# the parameters of the same model with no position at all, and adds nothing to the input.

# %% tags=["nbval-check-output"]
def n_params(model):
    return sum(int(p.data.size) for p in model.parameters())


alibi_model, none_model = TinyGPT(cfg), TinyGPT(GPTConfig(**{**cfg.to_dict(), "positional": "none"}))
x = randn(1, 5, cfg.d_model)
print(f"parameters: alibi {n_params(alibi_model):,}, none {n_params(none_model):,}")
print("alibi's embed(x) against x, largest difference:", diff_text(alibi_model.positional.embed(x, 0), x))
assert n_params(alibi_model) == n_params(none_model)

# %% [markdown]
# ## 7. The bake-off: eight schemes, trained at L, run at 8L
#
# The experiment `python -m experiments.train_short_test_long` trains one
# `TinyGPT` per scheme (d_model 64, 2 layers, 4 heads, so ALiBi's slopes are $1/4, 1/16, 1/64,
# 1/256$) on the standard library's source at $L = 64$ for 1500 steps, all with the same seed
# and batches, then measures held-out loss at 1x, 2x, 4x and 8x $L$. It is **one seed**: its table
# and picture show what the schemes do, and no verdict on a trained model is drawn from them
# (the one row it settles, C6c, is the learned table's refusal, which no seed changes). Those
# verdicts come from section 7.1, a smaller run repeated over seeds (C6a's from chapter 8's run). The bake-off takes minutes
# on two cores, so the chapter reads the committed result.

# %%
from experiments.common import RESULTS

with open(os.path.join(RESULTS, "train_short_test_long.json")) as f:
    bake = json.load(f)
ORDER = ["none", "sinusoidal", "learned", "shaw", "transformer_xl", "t5", "rope", "alibi"]
L, lengths, res = bake["train_len"], bake["lengths"], bake["results"]


def cell(v):
    return f"{v:.2f}" if math.isfinite(v) else "refused"


# %% tags=["nbval-check-output"]
print(f"trained at L = {L} for {bake['steps']} steps; held-out loss over the whole window (nats per byte)")
print(f"{'scheme':<16}" + "".join(f"{f'{m}x = {n}':>11}" for m, n in zip(bake["multiples"], lengths)))
for name in ORDER:
    print(f"{name:<16}" + "".join(f"{cell(v):>11}" for v in res[name]["loss"]))

# %% [markdown]
# The chapter's central picture: loss against evaluation length, the training length marked,
# and on the right the loss over the positions past $L$ only, the ones no scheme saw.

# %%
fig, (ax_all, ax_past) = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
for n, name in enumerate(ORDER):
    r = res[name]
    style = dict(marker="os^vDP*X"[n], color=f"C{n}", lw=2.5 if name == "alibi" else 1.2,
                 ls="-" if name in ("alibi", "rope", "learned", "t5") else "--", label=name)
    ax_all.plot(lengths, r["loss"], **style)
    ax_past.plot(lengths[1:], r["loss_beyond"][1:], **style)
ax_all.plot([L], [res["learned"]["loss"][0]], "x", color="C2", ms=14, mew=2)
ax_all.annotate("learned: no row past 64, refused", (L, res["learned"]["loss"][0]), xytext=(80, 1.35),
                fontsize=8, color="C2", arrowprops=dict(arrowstyle="->", color="C2"))
for ax, title in ((ax_all, "mean over the whole window"), (ax_past, "mean over positions t >= L only")):
    ax.axvline(L, color="k", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.set(xlabel="evaluation length (tokens); dotted: the training length L", title=title)
ax_all.set_ylabel("held-out loss (nats per byte)")
ax_past.legend(fontsize=8, loc="upper left")
fig.suptitle(f"Train short, test long: eight schemes trained at L = {L}")
fig.tight_layout()
plt.show()

# %% [markdown]
# Three groups on this one seed, each direction checked on its numbers in the next cell:
#
# * **ALiBi, Shaw and Transformer-XL run long.** Their loss over the whole window *falls* past
#   $L$ (why it falls: not longer context, section 8). Shaw clips every distance at 16, so at $8L$ it
#   meets no distance it did not train on. Transformer-XL does: its $R_{i-j}$ is the sinusoidal
#   table at the distance, and the rows for distances 64 to 511 are ones training never showed
#   it; here they do not break it. ALiBi's penalty is the same formula at every distance.
# * **Sinusoidal and unscaled RoPE break.** Their loss climbs by more than a nat; the learned
#   table refuses every length past 64.
# * **T5 degrades too.** It climbs from 1.55 to 2.53. With 32 causal buckets up to distance 128,
#   training at $L = 64$ reaches buckets 0 to 26 only, and every distance from 67 on lands in a
#   bucket that never trained ([chapter 5, §7](05_buckets.py#7.-Trained-at-8,-run-at-16) counts them);
#   at $L = 32$, section 7.1's Chase 1 finds they are not the whole cause of the rise.
#
# One more thing this seed shows: ALiBi's loss at the training length, 1.66, is above the other
# relative schemes' 1.50 to 1.55. One seed settles nothing; section 7.1 puts an interval on each
# comparison.

# %% tags=["nbval-check-output"]
loss = {name: res[name]["loss"] for name in ORDER}
assert all(loss[n][-1] <= loss[n][0] for n in ("alibi", "shaw", "transformer_xl"))     # no rise at 8L
assert loss["rope"][-1] > loss["rope"][0] + 1 and loss["sinusoidal"][-1] > loss["sinusoidal"][0] + 1   # they climb
assert all(not math.isfinite(v) for v in loss["learned"][1:])                          # learned: refused (C6c)
assert loss["t5"][-1] > loss["t5"][0] + 0.5                                            # T5 climbs
assert loss["alibi"][0] > max(loss[n][0] for n in ("shaw", "transformer_xl", "t5", "rope"))
print("each direction above holds on this one committed seed (an illustration, not a verdict)")
first = 8 * loss["alibi"][-1] - 7 * res["alibi"]["loss_beyond"][-1]     # the 8L mean is (1 x first L + 7 x the rest) / 8
print(f"alibi, the 8L windows split at t = L: t < L {first:.3f}, t >= L {res['alibi']['loss_beyond'][-1]:.3f}   "
      f"other text {loss['alibi'][0] - first:+.3f}   short context {first - res['alibi']['loss_beyond'][-1]:+.3f}")
assert loss["alibi"][0] - first > 0.1 > abs(first - res["alibi"]["loss_beyond"][-1])   # question 3 quotes both

# %% [markdown]
# The same bake-off at two more seeds, run once outside the chapter: `python -m experiments.bake_off_seeds`
# runs seeds 0, 1 and 2 one after another, about three times the bake-off's cost
# (`bench_results/bake_off_seeds_2026-12-06/`). Each seed draws its own initial weights, training batches and
# evaluation windows; seed 0 is the run above, number for number. The next cell checks at every seed the five
# directions the cell above checks at seed 0 (not its split of the $8L$ windows, which question 3 reads at
# seed 0 alone). For the first group that is no rise at $8L$, not the fall seed 0 shows: the cell prints the
# margins, and at seed 1 they are near zero. Beside them it prints the context-use gap at $8L$, section 7.1's
# rise past $L$ measured at $8L$ (the same tokens with the whole prefix and with the last $L$ only): under
# the 0.05 nats of "runs long" for all three schemes at every seed. That record draws no verdicts: the
# ledger's verdicts on trained models rest on section 7.1's run, all but C6a's, which rests on chapter 8's.

# %% tags=["nbval-check-output"]
from mini_transformer.evaluation import stats
from experiments.common import load_result

three = load_result("bake_off_seeds")
relative = ("shaw", "transformer_xl", "t5", "rope")
for seed, run in three["per_seed"].items():
    at = {name: run[name]["loss"] for name in ORDER}
    held = {"alibi, shaw, transformer_xl: no rise at 8L": all(at[n][-1] <= at[n][0] for n in ("alibi", "shaw", "transformer_xl")),
            "rope, sinusoidal: climb over a nat": all(at[n][-1] > at[n][0] + 1 for n in ("rope", "sinusoidal")),
            "learned: refused past L": all(not math.isfinite(v) for v in at["learned"][1:]),
            "t5: climbs over half a nat": at["t5"][-1] > at["t5"][0] + 0.5,
            "alibi at L above the four": at["alibi"][0] > max(at[n][0] for n in relative)}
    print(f"seed {seed}: " + "; ".join(f"{k} {'yes' if v else 'NO'}" for k, v in held.items()))
    print("    loss at 8L minus at L: " + ", ".join(f"{n} {at[n][-1] - at[n][0]:+.4f}" for n in ("alibi", "shaw", "transformer_xl"))
          + "; context-use gap at 8L: " + ", ".join(f"{n} {run[n]['context_use_gap']:+.3f}" for n in ("alibi", "shaw", "transformer_xl"))
          + f"; alibi minus t5 at L {at['alibi'][0] - at['t5'][0]:+.3f}")
    assert all(held.values()), (seed, held)
    assert all(run[n]["context_use_gap"] < 0.05 for n in ("alibi", "shaw", "transformer_xl"))   # under "runs long"'s bar
above_t5 = [run["alibi"]["loss"][0] - run["t5"]["loss"][0] for run in three["per_seed"].values()]
print(f"alibi minus t5 at L, paired by seed, over seeds {three['seeds']}: "
      f"{stats.format_interval(*[stats.t_interval(above_t5)[i] for i in (0, 2, 3)], 3)} nats")

# %% [markdown]
# At the full size ALiBi's loss at $L$ is above T5's at every seed (0.083 ± 0.058 nats over the three,
# printed above); section 7.1's smaller run finds the two not distinguishable (-0.015 ± 0.020 over five
# seeds). Which of the runs' differences decides it ($L$,
# steps, batch, the evaluation windows) is not tested here; the finding at the end of the chapter keeps
# section 7.1's reading and says so.

# %% [markdown]
# ### 7.1 Over seeds: the verdicts
#
# Three seeds of all eight schemes at the bake-off's size are not a chapter's run, and three seeds give
# wide intervals. `python -m experiments.short_long_seeds --seeds 0,1,2,3,4`
# repeats only what the verdicts need, at a smaller size and over five seeds: the same model, trained at
# **$L = 32$ for 500 steps of 8 windows** (not 64 for 1500 steps of 16) and evaluated at
# **$4L = 128$** (not $8L$), over seeds 0 to 4, every arm in the table below trained at $L$ with its seed's initial
# token rows and batches. The ledger's verdicts on trained models rest on this run, all but C6a's.
#
# It measures the rise past $L$ on the same tokens both ways: at the positions
# $t = L, L + L/8, L + 2L/8, \dots$ of a $4L$-token window, the loss with the whole prefix in view minus the loss with only the last $L$
# tokens, run as a window of their own (a sliding window at the trained length, inside what
# training showed the model). A scheme that runs long has a rise near 0; one that breaks, a
# large one. Comparing the same tokens, with and without what lies past $L$, is what settles the
# book's "does not rise past $L$" (C5): a split of one window's positions into inside and past $L$
# ([chapter 9](09_measuring_long_context.py)'s C2b) compares different tokens with different amounts
# of context. Each claim reads one measure, per seed, against one bar:
#
# | claim | measure at $4L$ (nats, per seed) | bar | the claim's side |
# | --- | --- | --- | --- |
# | "runs long" (C5) | rise past $L$ | 0.05 | under |
# | "breaks" (C6b) | rise past $L$ | 0.05 | over |
# | "perplexity explodes" (C6a) | loss past $L$ minus loss at $L$ (chapter 8's measure); here also the rise past $L$ | $\ln 2 = 0.693$, the perplexity doubled | over |
# | T5 "generalises" (C7a) | T5's rise minus no position's, paired | 0 | under |
# | T5 rises less than RoPE (no claim of the book's) | RoPE's rise minus T5's, paired | 0 | over |
# | T5 ... "modestly" (C7b) | T5's rise | 0.05 | over |
# | ALiBi pays at $L$ (a finding) | ALiBi's loss at $L$ minus another scheme's, paired | 0 | over |
#
# Why these bars. "Runs long" allows a rise of 0.05 nats, the threshold of C5, and "breaks" is a rise
# over it. "Explodes" asks more than "breaks": the perplexity past $L$ more than doubled. C7's
# "generalises modestly" is not "runs long": it is two claims. A bias that generalises past $L$
# costs the model no more there than having no position at all; this is the chapters' README's "a
# rise below a scheme that breaks" with no position as that scheme (it breaks too, rising
# 0.098 ± 0.036). Against unscaled RoPE T5 would pass, but that shows only that it breaks less
# than RoPE. "Modestly" is a rise still over the 0.05 of "runs long". Section 8.1 adds the
# far-context measures of C8a and C8b. Beside the schemes of the bake-off the run trains two chases (below): T5 with
# `max_distance` at the training length, and a sinusoidal table scaled down to the size of the
# token rows. The table prints mean ± the $95\%$ half-width over the seeds.

# %%
from mini_transformer.evaluation import stats
from experiments.common import load_result

sl = load_result("short_long_seeds")
verdicts = sl["claims"]


def over_seeds(arm, key, digits=3):
    """mean ± 95% t half-width of one measure of one arm over its seeds, as stats.format_interval prints it."""
    mean, _, lo, hi = stats.t_interval([r[key] for r in sl["per_seed"][arm]])
    return stats.format_interval(mean, lo, hi, digits)


# %% tags=["nbval-check-output"]
ARMS = ["alibi", "rope", "sinusoidal", "sinusoidal_scaled", "none", "t5", "t5_max_L", "shaw", "transformer_xl"]
print(f"trained at L = {sl['train_len']} for {sl['steps']} steps, seeds {sl['seeds']} (nats per byte); loss at L: "
      f"L-token windows; the rest: positions t = L, L + L/8, ... of {sl['multiple']}L windows")
print(f"{'arm':<19}{'loss at L':>15}{'whole prefix':>15}{'last L only':>15}{'rise past L':>15}")
for arm in ARMS:
    print(f"{arm:<19}" + "".join(f"{over_seeds(arm, k):>15}" for k in ("loss_L", "full", "window", "rise")))
print()
for key in ("runs_long_alibi", "breaks_rope", "explodes_rope", "breaks_sinusoidal", "runs_long_t5", "runs_long_t5_max_L",
            "t5_generalises_vs_none", "t5_rises_less_than_rope", "breaks_t5", "t5_max_L_helps", "alibi_pays_at_L_vs_rope", "alibi_pays_at_L_vs_transformer_xl",
            "alibi_pays_at_L_vs_shaw", "alibi_pays_at_L_vs_t5"):
    print(f"{key:<34}{stats.format_record(verdicts[key], 3)}")
assert verdicts["runs_long_alibi"]["verdict"] == 'reproduces'
assert verdicts["breaks_rope"]["verdict"] == 'reproduces'
assert verdicts["explodes_rope"]["verdict"] == 'does not reproduce'
assert verdicts["breaks_sinusoidal"]["verdict"] == 'reproduces'
assert verdicts["runs_long_t5"]["verdict"] == 'does not reproduce'
assert verdicts["runs_long_t5_max_L"]["verdict"] == 'does not reproduce'
assert verdicts["t5_max_L_helps"]["verdict"] == 'reproduces'
assert verdicts["alibi_pays_at_L_vs_rope"]["verdict"] == 'reproduces'
assert verdicts["alibi_pays_at_L_vs_transformer_xl"]["verdict"] == 'reproduces'
assert verdicts["alibi_pays_at_L_vs_t5"]["verdict"] == 'not established'
assert verdicts["t5_rises_less_than_rope"]["verdict"] == verdicts["breaks_t5"]["verdict"] == 'reproduces'
assert verdicts["t5_generalises_vs_none"]["verdict"] == 'does not reproduce'
explodes_ch8 = load_result("context_extension")["claims"]["C6"]   # chapter 8: RoPE at L = 64, 1500 steps, 3 seeds
print(f"{'chapter 8, unscaled RoPE at 4L: loss past L minus at L (context_extension/C6)':<34}  "
      f"{stats.format_record(explodes_ch8, 3)}")
assert explodes_ch8["verdict"] == 'reproduces'
past_minus_at_L = [r["beyond_4L"] - r["loss_L"] for r in sl["per_seed"]["rope"]]   # chapter 8's measure, on this run
mean, _, lo, hi = stats.t_interval(past_minus_at_L)
print(f"{'this run, unscaled RoPE at 4L: loss past L minus loss at L (L-token windows)':<34}  "
      f"{stats.format_interval(mean, lo, hi, 3)}; per seed " + ", ".join(f"{v:.2f}" for v in past_minus_at_L))
assert hi < math.log(2) and verdicts["explodes_rope"]["interval"][1] < math.log(2)   # both measures under ln 2 here

# %% [markdown]
# ALiBi's rise past $L$ is 0.006 ± 0.003 nats over 5 seeds: it runs long (C5). Unscaled RoPE's is
# 0.472 ± 0.118 nats over 5 seeds: it breaks, but the whole interval lies under $\ln 2$, so at this
# size its perplexity does not double. In chapter 8's run (2 heads, $L = 64$, 1500
# steps of 16 windows) it does: at $4L$ its loss past $L$ minus its loss at $L$ is 1.50 ± 0.29 nats over 3 seeds (the
# cell's second line from the end), over $\ln 2$. Read on chapter 8's measure, this run's RoPE stays under
# $\ln 2$ too: its loss past $L$ in the $4L$ windows minus its loss on the $L$-token windows is
# 0.435 ± 0.146 nats over 5 seeds (the cell's last line; here the two are separate windows, where
# chapter 8's $L$-window is the head of its $4L$ one). On this run both measures stay under $\ln 2$,
# so the measure is not what separates the two runs: the size is, and which of its differences
# (heads, training length, steps, batch 16 against 8) does it is not tested here. So C6a reproduces
# at chapter 8's size and not at this one. Chapter 8's C6 settles the book's Exercise 3, "degrades
# sharply", at the same bar ($\ln 2$, the perplexity doubled) and on the same measure; this workbook reads
# §2.6's "perplexity explodes" as that same claim, so one verdict serves both sentences. The ledger's row
# gives chapter 8's, and quotes this run beside it. The unscaled sinusoidal table's is 0.967 ± 0.417 nats over 5 seeds:
# it breaks (C6b). T5's is 0.216 ± 0.051 nats over 5 seeds: it does not run long (C7b). It rises
# 0.256 ± 0.133 nats less than RoPE's, paired by seed, but 0.118 ± 0.081 more than no position at
# all, which rises 0.098 ± 0.036: by this bar it does not generalise past $L$ on text (C7a; on
# [chapter 5](05_buckets.py)'s task it does, C5a). Shaw
# (0.021 ± 0.005) and Transformer-XL (0.004 ± 0.004) run long. And ALiBi pays at the training length against three of the relative schemes: paired
# by seed, its loss at $L$ is 0.060 ± 0.016 nats above RoPE's, 0.062 ± 0.015 above Shaw's and
# 0.098 ± 0.022 above Transformer-XL's; against T5 it is -0.015 ± 0.020, not established.
#
# **Chase 1: why T5 does not run long here.** With 32 causal buckets up to `max_distance` 128,
# training at $L = 32$ reaches distances 0 to 31, buckets 0 to 21 (bucket 21 holds distances 31
# to 34); at $4L$ the distances 35 to 127 land in buckets 22 to 31, which received no gradient
# in training
# ([chapter 5, §7](05_buckets.py#7.-Trained-at-8,-run-at-16) counts the pairs per bucket and shows
# the untrained buckets did not move). The run that probes this cause is `t5_max_L`: the same T5
# with `max_distance` = $L$ = 32, so that every distance from 31 on shares bucket 31, the one that
# distance 31 trains. It rises 0.181 ± 0.049 nats over 5 seeds, against
# 0.216 ± 0.051 with the default: a T5 with no untrained bucket in reach still rises, so untrained
# *parameters* are not the whole cause. Unseen *distances* remain: bucket 31 trains on distance 31
# alone, one query-key pair in each 32-token window, and at $4L$ it stands for distances 31 to 127,
# which training never showed (the next cell counts them). The arm merges those distances into one
# trained bucket; it does not remove them. The difference, 0.035 ± 0.015 nats, is above zero, but
# it does not measure the untrained buckets alone: `max_distance` = $L$ also moves the logarithmic buckets (chapter
# 5, §7). What the rest of the rise is, this run does not isolate.

# %% tags=["nbval-check-output"]
distance = xp.arange(1, 4 * sl["train_len"])                                     # 1 .. 127, every distance at 4L
bucket = relative_position_bucket(-distance, bidirectional=False, max_distance=sl["train_len"])
far = distance[bucket == 31]
print(f"max_distance = {sl['train_len']}: bucket 31 holds distances {int(far.min())} to {int(far.max())}; "
      f"a {sl['train_len']}-token window holds {sl['train_len'] - int(far.min())} query-key pair at distance "
      f"{int(far.min())}, and none further")
assert int(far.min()) == 31 and int(far.max()) == 127 and bool((bucket[distance < 31] < 31).all())

# %% [markdown]
# **Chase 2: why the sinusoidal table breaks, and whether it is worse than no position at all.**
# The sinusoidal table is added unscaled: each row has norm $\sqrt{d_{model}/2}$, against token
# rows initialised at standard deviation 0.02. The next cell measures the ratio on the model.
# `sinusoidal_scaled` multiplies the table by $0.02\sqrt 2$, which gives its entries the token
# rows' root mean square, and is otherwise the same model.

# %% tags=["nbval-check-output"]
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional.sinusoidal import sinusoidal_positional_encoding

sin_model = TinyGPT(GPTConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=4, max_len=32, positional="sinusoidal"))
tok_norm = float(xp.linalg.norm(sin_model.tok.weight.data, axis=1).mean())
pe_norm = float(xp.linalg.norm(sinusoidal_positional_encoding(32, 64), axis=1).mean())
print(f"row norms at initialisation: token {tok_norm:.3f}, sinusoidal {pe_norm:.3f} (ratio {pe_norm / tok_norm:.0f}), "
      f"scaled sinusoidal {pe_norm * sl['sinusoidal_scale']:.3f}")
for key in ("sinusoidal_worse_than_none", "scaled_sinusoidal_worse_than_none", "scale_matters",
            "breaks_sinusoidal_scaled"):
    print(f"{key:<34}{stats.format_record(verdicts[key], 3)}")
assert 30 < pe_norm / tok_norm < 40
assert verdicts["sinusoidal_worse_than_none"]["verdict"] == 'reproduces'
assert verdicts["scaled_sinusoidal_worse_than_none"]["verdict"] == 'reproduces'
assert verdicts["scale_matters"]["verdict"] == 'reproduces'
assert verdicts["breaks_sinusoidal_scaled"]["verdict"] == 'reproduces'

# %% [markdown]
# Scaled to the token rows' size, the table still breaks: its rise is 0.404 ± 0.138 nats over 5 seeds.
# On every position $t \ge L$ of the $4L$ windows (not the table's sampled ones), paired by seed: unscaled minus no position at all is
# 0.910 ± 0.314 nats (worse than none); scaled minus none is 0.228 ± 0.127 (still worse); unscaled minus
# scaled is 0.682 ± 0.279 (the scale makes it worse). So the scale confound is real and is most of the gap. The
# unscaled table is about 36 times the size of a token row; that it swamps the tokens at positions
# it never saw is an explanation not tested here. Without it the table still breaks, and is still worse than no position at all past $L$,
# by less. Why, this run does not isolate; one explanation, not tested here: positions past $L$
# are input vectors the model never saw, at any scale.
#
# %% [markdown]
# ## 8. Runs long is not uses long
#
# ALiBi's loss past $L$ is flat. Does it read the tokens further back than $L$, or does it run
# there while looking at the last few dozen? At the positions $t = L, L + L/8, L + 2L/8, \dots$ of
# a long window the measurement scores the next token twice:
#
# * **whole prefix**: tokens $0 \dots t$ in view, one forward pass over the window;
# * **last $L$ only**: tokens $t - L + 1 \dots t$, run as a sequence of their own at positions
#   $0 \dots L - 1$, a sliding window at the trained length.
#
# If the two losses match, the tokens further back than $L$ change nothing; that says the model
# uses short only on a text where they are worth something (section 8.1 checks). If the whole
# prefix is better, the extra context is used. The **far-context
# gain** is the last-$L$ loss minus the whole-prefix loss (section 7.1's rise with its sign
# turned).
#
# First the one-seed bake-off, an illustration. Its file holds the measurement for all eight
# schemes, made on the models of section 7's table in the same run, right after each one's
# training: 64 windows of 512 tokens (and the token after them) drawn from the held-out text
# with the bake-off's seed, scored at $t = 64, 72, \dots, 504$, every $L/8$. The learned table
# cannot run the whole prefix (the file keeps its refusal) but runs every last-$L$ window. The
# cell checks that every scheme was measured, that the whole-prefix column ranks the seven that
# run it as section 7's loss past $L$ at $8L$ does (other windows of the same held-out text), and
# each direction the paragraph after the picture states.

# %% tags=["nbval-check-output"]
n_use = bake["context_use_length"]
USE = [name for name in ORDER if "context_use" in res[name]]
pos = res["alibi"]["context_use"]["positions"]
print(f"t = {pos[0]}, {pos[1]}, ..., {pos[-1]} of {bake['environment']['context_use_windows']} held-out "
      f"{n_use}-token windows, loss (nats per byte)")
print(f"{'scheme':<16}{'whole prefix':>14}{'last L only':>13}{'whole - last L':>16}")
gap = {}
for name in USE:
    u = res[name]["context_use"]
    gap[name] = u["full_mean"] - u["window_mean"]
    print(f"{name:<16}{cell(u['full_mean']):>14}{cell(u['window_mean']):>13}"
          f"{(f'{gap[name]:+.3f}' if math.isfinite(gap[name]) else '-'):>16}")
assert USE == ORDER                                             # every scheme, on the model of section 7's table
use = {name: res[name]["context_use"] for name in USE}
assert not math.isfinite(use["learned"]["full_mean"]) and math.isfinite(use["learned"]["window_mean"])
runs = [name for name in USE if math.isfinite(use[name]["full_mean"])]
assert (sorted(runs, key=lambda n: use[n]["full_mean"])        # the same ranking as section 7's loss past L at 8L
        == sorted(runs, key=lambda n: res[n]["loss_beyond"][-1]))
assert all(abs(gap[n]) < 0.01 for n in ("alibi", "transformer_xl")) and 0.01 < gap["shaw"] < 0.1
long_runners = [use[n][k] for n in ("alibi", "shaw", "transformer_xl") for k in ("full_mean", "window_mean")]
assert min(long_runners) <= use["rope"]["window_mean"] <= max(long_runners)    # the window brings RoPE among them
assert all(gap[n] > 1 for n in ("sinusoidal", "t5", "rope")) and 0.1 < gap["none"] < 1

# %%
fig, axes = plt.subplots(2, (len(USE) + 1) // 2, figsize=(16, 6.4), sharey=True, squeeze=False)
for ax, name in zip(axes.flat, USE):
    u = res[name]["context_use"]
    ax.plot(u["positions"], u["full"], ".", label="whole prefix")
    ax.plot(u["positions"], u["window"], "x", label=f"last L = {L} only")
    ax.axvline(L, color="k", ls=":", lw=1)
    refused = "" if math.isfinite(u["full_mean"]) else " (whole prefix refused)"
    ax.set(title=name + refused)
for ax in axes[-1]:
    ax.set_xlabel("position t (dotted: L)")
for ax in axes[:, 0]:
    ax.set_ylabel("loss at t (nats per byte)")
axes[0, 0].legend(fontsize=8)
fig.suptitle("Past L: does the model use the tokens further back than L?")
fig.tight_layout()
plt.show()

# %% [markdown]
# On this one seed, ALiBi and Transformer-XL score about the same with the whole prefix as with
# the last 64 tokens only (1.58 against 1.58, 1.42 against 1.41); Shaw, the third scheme that runs
# long in section 7, scores a little worse with the whole prefix (1.46 against 1.43). RoPE scores
# 3.38 with the whole prefix and 1.45 with the last 64 only: a window of $L$ brings it within
# ALiBi's, Shaw's and Transformer-XL's 1.41 to 1.58. The window
# removes both the distances RoPE never saw and the extra keys; which of the two breaks it is not
# tested here. The other schemes that climb in section 7 also score worse with the whole prefix:
# the sinusoidal table (3.70 against 1.62) and T5 (2.69 against 1.48) by more than a nat, no
# position at all (2.31 against 2.05) by 0.266. The learned table refuses the whole prefix and
# scores 1.58 with the last 64 only. A difference of a few thousandths on one seed is no verdict,
# and "no difference" says nothing unless the measurement can see a difference where one exists.
#
# ### 8.1 Over seeds, with controls
#
# Section 7.1's run measures the far-context gain of every arm at $4L$ over five seeds, and adds
# two controls, both trained at $4L = 128$ with the same tokens per step as the others:
#
# * `rope_long_copy`, the **positive control for the measurement**: RoPE on the *doubled* text,
#   every 48-byte chunk written twice, so each byte of a second copy sits 48 tokens back, further
#   than $L = 32$. A model that learned the copy must lose it when it sees only the last 32
#   tokens. It trains for 1000 steps, twice the others, to learn the copy. If it shows no gain
#   here, the measurement is blind.
# * `alibi_long`, a **check on the text**: ALiBi on the same text as the others, trained with
#   the far tokens in view. A weak one: it keeps the distance penalty that C8a and C8b question.
#   A scheme without a penalty trained at $4L$ on this text, the control the text needs, was not run.
#
# "Uses far context" is a gain above 0.005 nats: a quarter of a percent of ALiBi's loss at $L$
# (2.031, section 7.1), too small to count as use at this scale.

# %% tags=["nbval-check-output"]
print(f"far-context gain at t >= L of {sl['multiple']}L windows: loss with the last L = {sl['train_len']} only "
      f"minus with the whole prefix (nats per byte)")
for arm in ("rope_long_copy", "alibi_long", "alibi", "transformer_xl", "rope", "t5", "shaw"):
    trained = "4L" if sl["per_seed"][arm][0]["train_len"] > sl["train_len"] else "L"
    print(f"{arm:<16}trained at {trained:<3}{over_seeds(arm, 'gain'):>17}  ({len(sl['per_seed'][arm])} seeds)")
print()
for key in ("copy_control_uses_far", "control_uses_far", "uses_far_alibi", "uses_far_transformer_xl",
            "penalty_is_cause"):
    print(f"{key:<26}{stats.format_record(verdicts[key], 3)}")
assert verdicts["copy_control_uses_far"]["verdict"] == 'reproduces'
assert verdicts["control_uses_far"]["verdict"] == 'not established'
assert verdicts["uses_far_alibi"]["verdict"] == 'not tested here'
assert verdicts["uses_far_alibi"]["interval_verdict"] == 'reproduces'
assert verdicts["uses_far_transformer_xl"]["verdict"] == 'not tested here'
assert verdicts["penalty_is_cause"]["verdict"] == 'not tested here'
assert verdicts["penalty_is_cause"]["interval_verdict"] == 'not established'
lc = load_result("long_context")["claims"]                 # chapter 9: ALiBi trained at L = 32, a passkey in every window
print(f"\nchapter 9, farthest keys found at 8L (C1b): {stats.format_record(lc['C1b'], 2)}; per seed "
      + ", ".join(f"{v:.2f}" for v in lc["C1b"]["values"]))
print("chapter 9, share of keys found at L minus at 8L (C3b): "
      + stats.format_interval(lc["C3b"]["mean"], *lc["C3b"]["interval"], 2))
assert lc["C1b"]["verdict"] == 'not established'

# %% [markdown]
# The copy control gains 0.416 ± 0.143 nats over 5 seeds: the measurement sees far-context
# use where it exists. ALiBi trained at $L$ gains -0.006 ± 0.003 nats over 5 seeds, under 0.005.
# But the check on the text shows nothing: ALiBi trained at $4L$ with the far tokens in view gains
# -0.001 ± 0.007, an interval that holds both 0 and 0.005 (not established). No arm shows that far
# context pays on this text, so a model that gains nothing from it says nothing about a recency prior.
# Transformer-XL, which has no distance penalty, gains -0.004 ± 0.004; Transformer-XL minus ALiBi,
# paired by seed, is 0.002 ± 0.003 nats. The book's claim is about retrieval far back in a long
# context. [Chapter 9](09_measuring_long_context.py) probes retrieval with passkeys: ALiBi trained
# at $L = 32$ finds most of the farthest keys at $8L$ on 4 seeds of 5 (0.84 to 1.00) and a third of
# them on seed 0 (0.33), 0.82 ± 0.35 over 5 seeds, and the share found at $L$ minus at $8L$ is 0.08 ±
# 0.19, an interval that holds 0. Whether the
# penalty *hurts* that retrieval needs a scheme without one that runs past $L$, trained on the
# passkeys alike, to compare, and chapter 9 trained none: C8a is not tested here, and neither is C8b.
#
# The penalty alone does not forbid the far keys. The next cell prints what each of the
# four heads (slopes $1/4 \dots 1/256$, the same in both runs) charges a key at the bake-off's
# distances $L - 1 = 63$ and $8L - 1 = 511$: the gentlest head pays 2.00 nats at 511 (511/256),
# which tilts its weights but forbids nothing.

# %% tags=["nbval-check-output"]
print("slopes of a 4-head model:", ", ".join(f"1/{round(1 / float(m))}" for m in alibi_slopes(4)))
for d in (L - 1, 8 * L - 1):
    print(f"penalty at distance {d:>3}: " + ", ".join(f"{penalty(float(m), d):6.2f}" for m in alibi_slopes(4)) + " nats")
assert round(penalty(float(min(alibi_slopes(4))), 8 * L - 1), 2) == 2.00     # the gentlest head at 511

# %% [markdown]
# So the bias permits far keys. The recency prior is real as an inductive bias (whatever the
# content, the bias multiplies a key's unnormalised weight by $e^{-m_h d}$, section 1); the book
# calls it the right prior where the useful context is local (book, interview answer 5), which
# nothing here tests.
#
# %% [markdown]
# ## 9. Check yourself
#
# Answer out loud or on paper before you open an answer.
#
# **1.** What are the slopes of a 12-head model, and which of them come from the 16-head sequence?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The largest power of two below 12 is 8, so the first eight are $2^{-1}, \dots, 2^{-8}$. The
# 16-head sequence is $2^{-h/2}$; its 1st, 3rd, 5th and 7th slopes, $2^{-0.5}, 2^{-1.5}, 2^{-2.5},
# 2^{-3.5}$, fill the last four heads (section 2 printed them). No slope repeats: $2^{-0.5}$ is
# steeper than all eight first ones, and the other three fall between the four steepest of them.
# </details>

# %% [markdown]
# **2.** The causal bias gives a future key 0 and the encoder's gives it $-m_h |i - j|$. What goes
# wrong if an encoder uses the causal form?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Nothing crashes. Every future key gets bias 0, the same as the query itself, so within a head
# all later tokens look equally close: the bias gives future keys no distance signal.
# The symmetric form is the causal one mirrored (section 4 checks that its lower triangle is the
# causal bias).
# </details>

# %% [markdown]
# **3.** ALiBi's loss goes from 1.66 at $L$ to 1.56 at $8L$. Why is that not evidence that it uses a
# longer context, and what measurement is?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Two things move that mean besides context. Each evaluation length draws its own windows, and
# text varies; and a longer window holds a smaller share of the positions $t < L$ at its start.
# Section 7's check cell splits ALiBi's $8L$ windows at $t = L$, as
# [chapter 4, §11](04_relative_vectors.py#11.-Past-the-training-length) does for Shaw and
# Transformer-XL. For a causal relative scheme, positions $t < L$ are computed exactly as in an
# $L$-token window, and yet in the $8L$ windows ALiBi scores 0.125 nats lower on them than on the
# $L$-token windows' text ("other text"), more than the whole fall. Its positions $t \ge L$, which
# see more context, score worse than those first ones on this seed ("short context", -0.020), and
# their $\tfrac{7}{8}$ share of the $8L$ mean pulls it *up*. On this seed the fall is the text, not context
# being used. Over 5 seeds at $4L$ that split is not established: -0.031 ± 0.038 nats
# (short_long_seeds/short_context_costs_alibi). The
# measurement that separates it is section 8's: score the *same* positions with the whole prefix
# and with only the last $L$ tokens, over seeds, beside a control that does use far context.
# </details>

# %% [markdown]
# **4.** T5's bias is relative, like ALiBi's. Why does it degrade past $L$ here when ALiBi does not?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# T5 learns one number per bucket. With 32 causal buckets up to distance 128, section 7's bake-off,
# trained at $L = 64$, reaches buckets 0 to 26 only; distances from 67 on land in buckets 27 to 31, which
# never received a gradient and, weight decay aside, keep their initial values. In section 7.1's
# run, trained at $L = 32$, the untrained buckets are 22 to 31, and they are not the whole cause
# there: its T5 with `max_distance` at the training length, where every far distance shares bucket
# 31, a bucket that did train, rises nearly as much (0.181 ± 0.049 against 0.216 ± 0.051 nats).
# That arm removes the untrained parameters, not the unseen distances: bucket 31 trained on
# distance 31 alone and at $4L$ serves distances 31 to 127. What the rest of the cause is, that
# run does not isolate. ALiBi learns nothing that a new length could find
# untrained: its penalty at distance 400 follows from the same slope as at distance 4.
# </details>

# %% [markdown]
# **5.** In section 5's tiled kernel, what does ALiBi's bias cost in memory, and what would a
# general `(1, H, T, T)` bias cost at $H = 32$, $T = 8192$ in float32?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# ALiBi needs its $H$ slopes and the indices the kernel already has; one tile of bias
# ($H \times 32 \times 32$ in section 5) exists at a time. A general bias is
# $32 \cdot 8192^2 \cdot 4$ bytes $= 8$ GiB per layer, read in full by every forward pass.
# </details>

# %% [markdown]
# **6.** Unscaled RoPE scores 3.38 past $L$ with its whole prefix and 1.45 with only the last 64
# tokens (section 8). RoPE's score depends only on the offset $n - m$: why does the whole prefix
# hurt it at all, and what does the window give up?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# With the whole prefix a scored query (up to $t = 504$ in section 8) meets keys at offsets up to 504, and training at 64 only ever
# showed it offsets up to 63: the rotation angles of the slow pairs at those offsets are new to
# it. It also meets up to eight times as many keys. The window removes both, and keeps every offset
# below 64; which of the two hurts RoPE is not tested here. The window gives up every token
# further back than 63. Whether they are worth anything on this text, section 8.1 cannot tell:
# ALiBi trained with them in view gains -0.001 ± 0.007 nats (trained at $4L$, with $L = 32$), and no scheme without a
# penalty was trained that way. Chapter 8 stretches
# RoPE and measures its loss at $4L$; whether a stretched RoPE reads the far tokens, it does not test.
# </details>

# %% [markdown]
# ## 10. The ledger, settled
#
# Each row by the verdict rule of [the chapters' README](README.md#Evidence-and-the-verdict-rule):
# `exact §N` is a computation without sampling, asserted in section N; `result NAME/KEY` is a
# claim record of section 7.1's run over seeds (trained at $L = 32$ for 500 steps, evaluated at
# $4L$), or for C6a chapter 8's, whose interval the row quotes. Of the one-seed bake-off of section 7, only the learned
# table's refusal settles a row (C6c).
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1 | 8 heads: slopes 1/2 .. 1/256, geometric with ratio $2^{-8/H}$ (book §2.5, §3.4) | exactly $2^{-1} \dots 2^{-8}$, one ratio $2^{-1}$; 6 heads $2^{-2,-4,-6,-8,-1,-3}$ by the authors' reference code, a workaround they did not train with (§2) | exact §2 | reproduces |
# | C2a | the slope-1/2 head suppresses a key 10 back by 5 nats and attends locally (book §2.5) | 5.00 nats at 10; at least half its flat-content attention on the last 2 keys (§3) | exact §3 | reproduces |
# | C2b | the slope-1/256 head is barely affected within 1000 tokens: its penalty there stays under 1 nat (book §2.5) | it pays 3.91 nats at 1000, a weight of 0.020 against the nearest key (§3) | exact §3 | does not reproduce |
# | C3 | no position parameters, nothing added to the input (book §2.5; survey §7) | ALiBi model and no-position model: the same parameter count; `embed` returns its input unchanged (§6) | exact §6 | reproduces |
# | C4a | ALiBi's bias folds into a fused kernel as a closed-form function of the indices (book §2.3, §4) | a tiled online-softmax attention that makes the bias from indices equals the dense one to 1e-12, holding 4,096 bias entries at a time from 4 slopes instead of 262,144 (§5) | exact §5 | reproduces |
# | C4b | a learned relative bias must be materialised as $(H, T_q, T_k)$ (book §2.3, §4) | in the forward pass (inference), T5's table looked up inside the same tiles equals the dense, materialised form to 1e-12 (§5); the backward pass that training also needs, each tile's gradient added into the table, is not run here; this workbook's own kernels materialise both | exact §5 | does not reproduce |
# | C5 | trained short, ALiBi runs long: the rise past $L$ at $4L$ is under 0.05 nats (book §2.5) | rise past $L$ 0.006 ± 0.003 nats over 5 seeds (§7.1) | result short_long_seeds/runs_long_alibi | reproduces |
# | C6a | unscaled RoPE's perplexity explodes at $4L$: its loss past $L$ is over $\ln 2 = 0.693$ nats above its loss at $L$, on the same windows, the perplexity more than doubled (book §2.6) | read as one claim with the book's Exercise 3, "degrades sharply", which chapter 8's C6 settles at the same bar on the same measure; reproduces at chapter 8's size ($L = 64$ / 1500 steps, 2 heads, batch 16): loss past $L$ minus loss at $L$ on the same windows, 1.50 ± 0.29 nats over 3 seeds (§7.1; chapter 8, C6). Not at this chapter's size ($L = 32$ / 500 steps, 4 heads, batch 8), on either measure: loss past $L$ minus at $L$ 0.435 ± 0.146, same-token rise 0.472 ± 0.118 (short_long_seeds/explodes_rope), over 5 seeds, both under $\ln 2$; which difference of size (heads, $L$, steps, batch) separates the two is not tested here | result context_extension/C6 | reproduces |
# | C6b | the sinusoidal encoding's perplexity degrades past $L$: the rise at $4L$ is over 0.05 nats (book §2.1) | rise 0.967 ± 0.417 nats over 5 seeds (per seed 0.90, 1.27, 0.45, 1.26, 0.96) (§7.1) | result short_long_seeds/breaks_sinusoidal | reproduces |
# | C6c | a learned table cannot run past $L$ at all (book §2.2) | it refuses 128, 256 and 512 with a sentence: it has no row past 64 (§7) | exact §7 | reproduces |
# | C7a | T5's relative bias generalises past $L$ on text: its rise at $4L$ is no larger than a model's with no position at all, paired by seed (book §4, whose row is about encoder-decoders, tested here on a causal decoder) | T5's rise minus no position's: 0.118 ± 0.081 nats over 5 seeds; it rises 0.256 ± 0.133 less than unscaled RoPE's (§7.1). The decoder is one of the two stacks the book's row says the bias handles (T5's decoder self-attention adds it under the causal mask), so the stack is not a missing condition; the bar, no larger rise than no position at all, is this workbook's reading of "generalises", so the verdict says T5 rises more past L than no position does, not that it rises as much as unscaled RoPE. On a task T5 does generalise past its length: at 16 after training at 8, all 10 seeds: 1.00 (chapter 5, C5a, relative_bias_generalisation/t5_sensible_at_16) | result short_long_seeds/t5_generalises_vs_none | does not reproduce |
# | C7b | ... modestly: its rise stays over the 0.05 nats that "runs long" allows (book §4) | rise 0.216 ± 0.051 nats over 5 seeds; with `max_distance` = $L$ 0.181 ± 0.049: untrained buckets are not the whole cause, though the distances past 31 stay unseen, merged into bucket 31 (§7.1). Any scheme that breaks meets this bar, no position too (0.098 ± 0.036): with C7a failing, it says only that T5 does not run long | result short_long_seeds/breaks_t5 | reproduces |
# | C8a | ALiBi's monotone recency prior is the wrong inductive bias for retrieval from far back in a long context: it hurts long-context retrieval, measured here as a far-context gain at $4L$, trained at $L$, under 0.005 nats (book §2.5, interview answer) | gain -0.006 ± 0.003 nats over 5 seeds, on a text where no arm gains from far context (§8.1). On chapter 9's passkeys, trained at $L = 32$, the farthest keys found at $8L$: 0.82 ± 0.35 over 5 seeds (seed 0: 0.33, seeds 1 to 4: 0.84 to 1.00; long_context/C1b) | result short_long_seeds/uses_far_alibi | not tested here (no scheme without a penalty that runs past $L$ was trained on passkeys to compare) |
# | C8b | the cause is its distance penalty: a scheme without one (Transformer-XL, trained alike) gains more from far context than ALiBi does (book §2.5, interview answer) | Transformer-XL's gain minus ALiBi's, paired by seed: 0.002 ± 0.003 nats over 5 seeds, on a text where no arm gains from far context (§8.1) | result short_long_seeds/penalty_is_cause | not tested here (no scheme without a penalty that runs past $L$ was trained on passkeys) |
#
# A finding the sources do not state: ALiBi pays at the training length, 0.060 ± 0.016 nats above
# RoPE and 0.098 ± 0.022 above Transformer-XL at $L = 32$, paired by seed, though not established
# against T5 (-0.015 ± 0.020) (§7.1); at the bake-off's full size it is above T5 at each of three
# seeds (0.083 ± 0.058, §7); the finding keeps §7.1's reading, at the size it states. Press et al. do compare the methods at the training length:
# their Figure 1 plots sinusoidal, rotary, T5 and ALiBi perplexity on WikiText-103 from
# $L_{valid} = L$ (512 and 1024) upward, with the exact values in their appendix Tables 2 and 3,
# and their abstract says ALiBi outperforms multiple strong position methods there. This workbook
# has not read those tables' values; check them there. If ALiBi is not behind rotary at
# $L_{valid} = L$ in them, the finding above is this small run's, and the scale (theirs a full-size
# language model on WikiText-103, this one 2 layers of width 64 trained on bytes for 500 steps) is
# one explanation, not tested here. That a flat or
# falling loss past $L$ is not evidence of long context the sources do state (book §4, the decision
# procedure; survey, abstract and §10, item 4); §8 shows it on this text.
#
# ## 11. Where next
#
# * Exercises: [`exercises/alibi.py`](../exercises/alibi.py), 7.1 to 7.4; grade them with
#   `python -m exercises grade alibi` (one at a time with `--exercise 7.2`).
# * The drill: `python -m exercises drill alibi` writes a blank `alibi_slopes` and `alibi_bias`
#   and starts an 8-minute clock; `python -m exercises drill alibi --grade` stops it.
# * The model's ALiBi is `mini_transformer/positional/alibi.py`; the attention it feeds is
#   `mini_transformer/engine/functional.py`.
# * The interview card on ALiBi against RoPE is in [`cards/07_alibi.md`](cards/07_alibi.md).
# * Next, chapter 8: RoPE cannot run long as it is; it can be *stretched*.
