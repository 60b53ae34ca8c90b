# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 8. Stretching RoPE
#
# A RoPE model trained on $L$ tokens falls apart at $4L$ (section 11 measures it). Every open
# long-context model of the last years is such a model, stretched: Llama 3.1 from 8k to 128k,
# Qwen from 32k to 128k, Phi-3 from 4k to 128k. This chapter takes the stretching methods
# apart one at a time, each a different answer to one question: which pairs of channels meet
# angles they never saw, and what should happen to them? You finish by reading a published
# `rope_scaling` block the way the model's code reads it, and by checking the sources' claims
# against a tiny model stretched four times.
#
# ## Objectives
#
# By the end you can:
#
# * compute the critical dimension of any RoPE model and say which of its pairs never complete
#   a turn in training;
# * derive NTK-aware scaling's exponent $d/(d-2)$, write it, and write a test that catches the
#   six ways it goes wrong;
# * explain why dynamic NTK and a KV cache disagree, and show the fix on a model;
# * compute YaRN's temperature and the Llama 3.1 frequencies from a published config, and check
#   them against the model code;
# * read the four-way stretch of a tiny model (zero-shot and after a fine-tune) and say which of
#   the sources' claims it reproduces.
#
# ## The claim ledger
#
# Predict first: does each claim hold on this workbook's tiny model? Section 13 settles them on
# the numbers the chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | For $d_{head} = 128$ and a training length of 4096 the critical dimension is $d_{extra} = 92$: the last 36 dimensions never see a full period (survey §6.2, after Liu et al.) | | §2 |
# | C2 | Raising the base to $10^6$ moves the extrapolation limit $T_{extra} = 2\pi\beta^{d_{extra}/d}$ to about 100k (survey §6.2 and Table 4, Code Llama) | | §2 |
# | C3 | Interpolation is far more stable than extrapolation: the interpolation bound is about 600 times smaller (book §2.6, §5, after Chen et al.) | | §3 |
# | C4 | NTK-aware scaling, $\mathrm{base}' = \mathrm{base}\cdot s^{d/(d-2)}$, leaves $\theta_0$ untouched and stretches the lowest frequency by $s$ (book §2.6; survey §6.4) | | §4 |
# | C5 | Dynamic NTK conflicts with a cache of rotated keys (survey §6.5) | | §5 |
# | C6 | Unscaled RoPE's loss explodes past its training length (book §2.6 and Exercise 3) | | §11 |
# | C7 | Position interpolation is stable at every length but costs a little loss at the training length (book Exercise 3) | | §11 |
# | C8 | NTK-aware scaling sits between: close to unscaled at the training length, better past it (book Exercise 3) | | §11 |
# | C9 | One scale factor for all frequencies is the wrong granularity: per-band (YaRN) and per-pair (LongRoPE) methods do better (book §5; survey §6.6 to §6.8) | | §11 |
# | C10 | A short fine-tune at the new length repairs most of the damage (book §2.6, after Chen et al.) | | §11 |
#
# The functions you write live in [`exercises/context_extension.py`](../exercises/context_extension.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 8.1 | `critical_dimension(d_head, base, train_len)` | Liu et al.'s $d_{extra}$ |
# | 8.2 | `ntk_base(base, factor, rotary_dim)` | NTK-aware scaling's new base |
# | 8.3 | `test_ntk_base(ntk_base)` | a test that catches a wrong NTK base |
# | 8.4 | `yarn_attention_factor(factor, mscale)` | YaRN's temperature, as a factor on q and k |
# | 8.5 | `llama3_inv_freq(inv_freq, factor, low, high, L)` | the Llama 3.1 rule |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work);
# grade with `python -m exercises grade context_extension`.

# %%
import json
import math
import os

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.positional import rope_scaling
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp

g = rng(0)  # one seeded generator for the whole chapter

# %% [markdown]
# ## 1. The problem, pair by pair
#
# Pair $i$ of a head turns by $\theta_i = \mathrm{base}^{-2i/d}$ radians per token, once every
# $\lambda_i = 2\pi/\theta_i$ tokens. A model trained on $L$ tokens has seen pair $i$ at the
# angles $0 \dots L\theta_i$ only, which is $\rho_i = L\theta_i/2\pi$ turns. A pair with
# $\rho_i \ge 1$ has seen every angle of its circle: past $L$ it only repeats itself. A pair with
# $\rho_i < 1$ has seen an arc. Past $L$ it moves onto angles no weight was trained for.
#
# Take the model of this chapter's experiment: two heads of $d_{head} = 32$, trained at $L = 64$.

# %% tags=["nbval-check-output"]
d_head, base, L = 32, 10000.0, 64
lam = to_numpy(rope_scaling.wavelengths(d_head, base))          # (16,) tokens per turn
rho = to_numpy(rope_scaling.rotations_within(d_head, base, L))  # (16,) turns within L
print(f"{'pair':>4}{'wavelength':>12}{'turns in L':>12}")
for i in (0, 1, 2, 3, 4, 5, 6, 10, 15):
    print(f"{i:>4}{lam[i]:>12.1f}{rho[i]:>12.3f}")
print(f"pairs that complete a turn in L = {L}: {int((rho >= 1).sum())} of {d_head // 2}")

# %% [markdown]
# Five pairs of sixteen turn fully in 64 tokens; eleven never do. At $4L$ those eleven meet up to
# four times the angle they ever saw. That is the whole difficulty. Everything below rescales the
# $\theta_i$, per pair or all at once, so that $4L$ lands on angles the model knows.

# %%
fig, ax = plt.subplots(figsize=(7, 3))
ax.semilogy(range(d_head // 2), lam, "o", label="wavelength 2 pi / theta_i")
ax.axhline(L, color="k", ls=":", label=f"training length L = {L}")
ax.axhline(4 * L, color="C3", ls="--", label=f"target 4L = {4 * L}")
ax.set(xlabel="pair i", ylabel="tokens", title="d_head = 32, base 10000: which pairs turn within L")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 2. The critical dimension and the scaling law
#
# Liu et al. ("Scaling Laws of RoPE-based Extrapolation") count the pairs that turn within $L$,
# in dimensions. Pair $i$ turns within $L$ when $2\pi\,\mathrm{base}^{2i/d} < L$, that is when
# $i < \frac{d}{2}\log_{\mathrm{base}}\frac{L}{2\pi}$, so
#
# $$d_{extra} = 2\left\lceil \frac{d}{2}\,\log_{\mathrm{base}}\frac{L}{2\pi}\right\rceil .$$
#
# The dimensions past $d_{extra}$ are the ones whose angle distribution shifts past $L$. The
# survey (§6.1, after LongRoPE2) calls the boundary pair the critical dimension,
# $r_{crit} = \min\{r : \lambda_r \ge L\} = d_{extra}/2$.
#
# ### Exercise 8.1: `critical_dimension`   ★★☆ · 10 min
#
# *Why it matters:* it is the first number to compute for any RoPE model you are asked to
# stretch, and it sets where YaRN's and LongRoPE's per-pair treatment changes.
#
# Write `critical_dimension(d_head, base, train_len)`: the even integer $d_{extra}$, clipped to
# $0 \dots d_{head}$. Grade with `python -m exercises grade context_extension --exercise 8.1`.

# %%
critical_dimension = use("context_extension", "critical_dimension")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a logarithm in any base</summary>
#
# $\log_{\mathrm{base}} x = \ln x / \ln \mathrm{base}$: `math.log(x) / math.log(base)`.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: count, then double</summary>
#
# The number of pairs with $i < x$ is $\lceil x \rceil$ (pairs $0 \dots \lceil x\rceil - 1$).
# Clip it to $0 \dots d/2$ (a very long $L$ cannot give more pairs than the head has), then
# multiply by 2.
# </details>

# %% tags=["answer"]
reveal("context_extension", "critical_dimension")

# %% [markdown]
# The survey's worked example, by hand: $d = 128$, base $10^4$, $L = 4096$ (Llama 2) gives
# $64 \cdot \log_{10^4}(4096/2\pi) = 64 \cdot 0.7036 = 45.03$, so 46 pairs and $d_{extra} = 92$.
# The tiny model: $16 \cdot \log_{10^4}(64/2\pi) = 4.03$, so $d_{extra} = 10$, pairs 0 to 4, as
# section 1 counted.

# %% tags=["nbval-check-output"]
for name, d, b, n in [("Llama 2", 128, 1e4, 4096), ("this chapter's model", 32, 1e4, 64),
                      ("Llama 3 (base 500000)", 128, 5e5, 8192), ("Code Llama (base 10^6)", 128, 1e6, 16384)]:
    print(f"{name:<24} d_extra = {critical_dimension(d, b, n):>3} of {d}")
assert critical_dimension(128, 1e4, 4096) == 92 and critical_dimension(32, 1e4, 64) == 10

# %% [markdown]
# The scaling law turns the count around. Keep the $d_{extra}$ dimensions from pre-training and
# fine-tune with a larger base $\beta$: the critical pair's period becomes
#
# $$T_{extra} = 2\pi\,\beta^{d_{extra}/d},$$
#
# which Liu et al. read as the length the model can extrapolate to; inverting it gives the base
# a target length needs, $\beta = (T/2\pi)^{d/d_{extra}}$ (`rope_scaling.extrapolation_bound`,
# `rope_scaling.base_for_length`). For Llama 2's $d_{extra} = 92$:

# %% tags=["nbval-check-output"]
for beta in (1e4, 5e5, 1e6):
    print(f"base {beta:>9,.0f}: T_extra = {rope_scaling.extrapolation_bound(128, beta, 4096):>9,.0f} tokens")
print(f"base that T_extra puts at 100,000 tokens: {rope_scaling.base_for_length(128, 100_000, 4096):,.0f}")
assert 120_000 < rope_scaling.extrapolation_bound(128, 1e6, 4096) < 140_000

# %% [markdown]
# Code Llama raised the base to $10^6$ and studied extrapolation to 100k (survey, Table 4); the
# law puts $T_{extra}$ at 129k for that base. That is arithmetic on the law, not a measurement:
# whether a model reaches its $T_{extra}$ depends on what it was trained on, as the survey says.
#
# ## 3. Position interpolation, and why it is safe
#
# Position interpolation (Chen et al., 2023) divides every position by $s = L'/L$:
#
# $$m' = m/s \quad\Longleftrightarrow\quad \theta_i' = \theta_i / s.$$
#
# Every angle at $L'$ is one the model saw at $L$. What it has not seen is *fractional* positions:
# neighbours are now $1/s$ apart. Chen et al.'s argument is that scores between trained integer
# positions are well behaved, while scores past $L$ can be anything. Check it the way their
# figure does. An attention score as a function of the offset is
#
# $$a(s) = \mathrm{Re}\sum_{j} h_j\, e^{\mathrm{i} s \theta_j},$$
#
# one complex weight $h_j$ per pair. Fit the $h_j$ to random targets in $[-1, 1]$ at the offsets
# $0 \dots L-1$ (a least-squares fit with a small ridge $\alpha$, in the role of training), then look
# at $a$ between the integers and past $L$.

# %%
def score_features(offsets, d=128, base=10000.0):
    """(n, d) real features of a(s): cos(s theta_j) and -sin(s theta_j), so a = features @ [Re h, Im h]."""
    angles = offsets[:, None] * rope_scaling.thetas(d, base)[None, :]  # (n, d/2)
    return xp.concatenate([xp.cos(angles), -xp.sin(angles)], axis=1)


def fit_scores(train_len=2048, ridge=1e-3, d=128, seed=0):
    """Fit a(s) to random targets at the offsets 0 .. L-1; return the weights (d,)."""
    F = score_features(xp.arange(train_len, dtype="float64"), d)
    targets = rng(seed).uniform(-1.0, 1.0, size=(train_len,), dtype="float64")
    return xp.linalg.solve(F.T @ F + ridge * xp.eye(d), F.T @ targets)


def interpolation_and_extrapolation(w, train_len=2048, d=128):
    """Largest |a(s) - straight line between its integer neighbours| inside L, and largest |a(s)| in [L, 2L]."""
    fine = xp.arange(0, (train_len - 1) * 8) / 8.0                         # eight points per unit offset
    lo = xp.floor(fine)
    t = fine - lo
    between = (1 - t) * (score_features(lo, d) @ w) + t * (score_features(lo + 1, d) @ w)
    inside = float(xp.abs(score_features(fine, d) @ w - between).max())
    outside = float(xp.abs(score_features(xp.linspace(train_len, 2 * train_len, 8001), d) @ w).max())
    return inside, outside


# %% tags=["nbval-check-output"]
print(f"{'ridge':>7}{'|a| in [0, L]':>15}{'off the line between integers':>31}{'|a| in [L, 2L]':>16}{'ratio':>8}")
bounds = {}
for ridge in (1e-3, 1e-1, 10.0):
    w = fit_scores(ridge=ridge)
    fitted = float(xp.abs(score_features(xp.arange(2048.0)) @ w).max())
    inside, outside = interpolation_and_extrapolation(w)
    bounds[ridge] = (inside, outside)
    print(f"{ridge:>7g}{fitted:>15.2f}{inside:>31.4f}{outside:>16.2f}{outside / inside:>8.0f}")
assert all(outside > 50 * inside for inside, outside in bounds.values())

# %% [markdown]
# Between integers the fitted score stays within a hundredth of the straight line, whatever the
# ridge. Past $L$ it reaches values the fit never produced, and how far depends entirely on how
# the fit weighted the slow pairs: the weaker the ridge, the wilder. The ratio runs from about 100
# to 3000 here, so "600 times" is a statement about Chen et al.'s bounds for LLaMA, not a constant
# you will measure; the direction is what holds. Drawn:

# %%
w = fit_scores(ridge=1e-3)
fig, (ax_far, ax_near) = plt.subplots(1, 2, figsize=(12, 3.4))
s_far = xp.linspace(1500, 2600, 4401)
ax_far.plot(to_numpy(s_far), to_numpy(score_features(s_far) @ w), lw=0.8)
ax_far.axvline(2048, color="k", ls=":", label="training length L = 2048")
ax_far.set(xlabel="offset s", ylabel="a(s)", title="Past L: extrapolation")
ax_far.legend(fontsize=8)
s_near = xp.linspace(100, 104, 401)
ax_near.plot(to_numpy(s_near), to_numpy(score_features(s_near) @ w), label="a(s) between integers")
ints = xp.arange(100.0, 105.0)
ax_near.plot(to_numpy(ints), to_numpy(score_features(ints) @ w), "o", label="trained integer offsets")
ax_near.set(xlabel="offset s", ylabel="a(s)", title="Inside L: interpolation")
ax_near.legend(fontsize=8)
fig.suptitle("A score fitted at the offsets 0..2047 (d_head 128, base 10000)")
fig.tight_layout()

# %% [markdown]
# The cost of PI is the other side of the same coin: the fast pairs, which carry local order,
# are compressed too. Pair 0 turned one radian per token; at $s = 4$ it turns a quarter radian,
# and the model must tell neighbours apart with a quarter of the angle it learned on.
#
# ## 4. NTK-aware scaling: why the exponent is $d/(d-2)$
#
# NTK-aware scaling keeps the fast pairs and stretches the slow ones by changing the base alone.
# Two conditions fix the new base $b'$:
#
# * pair 0 keeps its frequency: $\theta_0' = b'^{\,0} = 1 = \theta_0$, true for any base;
# * the slowest pair, $\theta_{d/2-1} = b^{-(d-2)/d}$, turns exactly $s$ times slower:
#   $b'^{-(d-2)/d} = b^{-(d-2)/d}/s$, so $b' = b\cdot s^{d/(d-2)}$.
#
# In between, $\theta_i' = \theta_i\,s^{-2i/(d-2)}$: the stretch grows geometrically from 1 to $s$
# across the pairs (survey, eq. 48).
#
# ### Exercise 8.2: `ntk_base`   ★☆☆ · 5 min
#
# *Why it matters:* it is the one-line "context extension" most inference servers offer, and the
# exponent is where it goes wrong.
#
# Write `ntk_base(base, factor, rotary_dim)`. Grade with
# `python -m exercises grade context_extension --exercise 8.2`.

# %%
ntk_base = use("context_extension", "ntk_base")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# `factor ** d / (d - 2)` is `(factor ** d) / (d - 2)`. The exponent needs its own parentheses.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The new base stretches the slowest pair exactly $s$ times. Case: $d = 6$, $s = 4$, base 10000: the
# exponent is $6/4 = 1.5$ and $4^{1.5} = 8$, so the new base is 80000; the slowest pair ($i = 2$) turns
# $8^{4/6} = 4$ times slower. Without the parentheses you would multiply by $4^6/4 = 1024$.
# </details>

# %% tags=["answer"]
reveal("context_extension", "ntk_base")

# %% [markdown]
# By hand: base $10^4$, $s = 4$, $d = 4$ has exponent 2, so $b' = 160\,000$. And for any $d$, the
# property that defines the method: $\theta_0$ stays 1 and the last pair slows by exactly $s$.

# %% tags=["nbval-check-output"]
print(f"ntk_base(10000, 4, 4) = {ntk_base(10000.0, 4.0, 4):,.0f}")
for d, s in [(32, 4.0), (128, 8.0), (96, 2.5)]:
    plain, stretched = rope_scaling.thetas(d, 10000.0), rope_scaling.thetas(d, ntk_base(10000.0, s, d))
    slows = float(plain[-1] / stretched[-1])
    print(f"d = {d:>3}, s = {s:g}: theta_0 = {float(stretched[0]):g}, last pair slowed by {slows:.6f}")
    assert float(stretched[0]) == 1.0 and math.isclose(slows, s, rel_tol=1e-12)
assert math.isclose(ntk_base(10000.0, 4.0, 4), 160_000.0)

# %% [markdown]
# ### What the nominal $s$ buys
#
# NTK divides $\theta_i$ by $s^{2i/(d-2)}$: by 1 for pair 0, by exactly $s$ for the last pair,
# by less in between. Is the model then safe to $sL$? A pair that turned fully within $L$
# ($\rho_i \ge 1$) has seen its whole circle and is safe at any length. A pair that did not has
# seen the angles $0 \dots L\theta_i$ only, and at its new frequency it reaches $L\theta_i$ at
# position $L\,s^{2i/(d-2)}$: there it leaves what it saw. The first of those pairs, the critical
# pair $r$ of section 2, is stretched least and leaves first, so every pair stays on trained
# angles only up to
#
# $$L_{safe} = L\,s^{2r/(d-2)} < sL \quad (r < d/2 - 1).$$
#
# The nominal $s$ *overstates* the extension: to keep pair $r$ in range up to $sL$ you must ask
# for the factor $s^{(d-2)/(2r)}$. That is the YaRN paper's remark about NTK-aware scaling, seen
# from the angles: some pairs are pushed past the range they saw, so in practice $s$ has to be
# set higher than the extension you want (Peng et al. 2023, §3). Compute it for this chapter's
# head and for a Llama-sized one.

# %% tags=["nbval-check-output"]
print(f"{'d_head':>6}{'L':>6}{'s':>4}{'pair r':>7}{'r stretched by':>16}{'L_safe':>9}{'s L':>7}{'factor for s L':>16}")
quoted = {}
for dh, L_, sf in [(d_head, L, 4.0), (128, 4096, 8.0)]:
    ntk_freq, _ = rope_scaling.rope_inv_freq(dh, base, {"rope_type": "ntk", "factor": sf})
    stretch = rope_scaling.thetas(dh, base) / ntk_freq                       # (d/2,) theta_i / theta_i'
    unturned = rope_scaling.rotations_within(dh, base, L_) < 1               # pairs that never turned in L
    leaves = L_ * stretch                                                   # (d/2,) where pair i leaves its range
    safe = float(leaves[unturned].min())
    r_crit = rope_scaling.critical_dimension(dh, base, L_).pair
    needed = sf ** ((dh - 2) / (2 * r_crit))
    print(f"{dh:>6}{L_:>6}{sf:>4g}{r_crit:>7}{float(stretch[r_crit]):>16.3f}{safe:>9,.1f}{sf * L_:>7,.0f}{needed:>16.2f}")
    assert bool(unturned[r_crit]) and not bool(unturned[:r_crit].any())               # the critical pair is the first unturned one
    assert math.isclose(safe, L_ * sf ** (2 * r_crit / (dh - 2)), rel_tol=1e-12) and safe < sf * L_
    assert math.isclose(float(stretch[-1]), sf, rel_tol=1e-12)               # only the slowest pair gets all of s
    more_freq, _ = rope_scaling.rope_inv_freq(dh, base, {"rope_type": "ntk", "factor": needed})
    assert math.isclose(L_ * float(rope_scaling.thetas(dh, base)[r_crit] / more_freq[r_crit]), sf * L_, rel_tol=1e-9)
    quoted[dh] = (round(float(stretch[r_crit]), 3), round(safe, 1), round(needed, 2))
assert quoted == {32: (1.587, 101.6, 64.0), 128: (4.565, 18696.4, 17.25)}

# %% [markdown]
# For the tiny model, pair 5 is stretched by only 1.587, so NTK at $s = 4$ keeps every pair on
# trained angles to 101.6 tokens, not 256; reaching 256 that way takes a factor of 64. For
# $d_{head} = 128$, $L = 4096$, $s = 8$ the safe length is 18,696.4, not 32,768, and the factor
# for 32,768 is 17.25. The fast pairs are the reason NTK is worth having; the slow-but-unturned
# pairs in between are the reason its $s$ is not the extension.

# %% [markdown]
# ### Exercise 8.3: a test of your own   ★★★ · 15 min
#
# *Why it matters:* a wrong exponent still gives a larger base and a model that runs; only the
# property that defines the method tells it apart.
#
# Write `test_ntk_base(ntk_base)` in `exercises/context_extension.py`: it receives an
# implementation with the signature of Exercise 8.2 and must raise `AssertionError` when it is
# wrong. The grader runs your test on the reference (it must pass) and on six wrong ones, and
# tells you which got away. Grade it alone: `python -m exercises grade context_extension --exercise 8.3`.

# %%
test_ntk_base = use("context_extension", "test_ntk_base")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a check that checks nothing</summary>
#
# $\theta_0' = b'^{\,0} = 1$ for *every* base $b'$. A test of pair 0 alone passes on any answer.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: what pins the exponent</summary>
#
# The slowest pair must turn exactly $s$ times slower. Check it for several rotary dimensions
# (not only 128) and a factor that is not a whole number, and check that no pair speeds up.
# </details>

# %% tags=["answer"]
reveal("context_extension", "test_ntk_base")

# %% [markdown]
# Your test must pass on the `ntk_base` this chapter runs and fail on each wrong one in
# `exercises/grading/modules/context_extension/mutants.py`. The cell runs it on each, as the grader does.

# %% tags=["nbval-check-output"]
from exercises.grading.modules import reader_tests

test_ntk_base(ntk_base)
print("the test passes on the ntk_base this chapter runs")
mutants = reader_tests("context_extension")["test_ntk_base"].mutants
for m in mutants:
    try:
        test_ntk_base(m.make(ntk_base))
        verdict = "got away"
    except AssertionError:
        verdict = "caught"
    print(f"{m.key:<20} {verdict:<10} {m.title}")

# %% [markdown]
# The stretch per pair, $\lambda_i'/\lambda_i = \theta_i/\theta_i'$, for the methods so far, on
# the tiny model's head ($d = 32$, $s = 4$): PI stretches every pair by 4, NTK from 1 to 4.

# %%
theta = rope_scaling.thetas(d_head, base)
stretch = {
    "linear (PI)": theta / rope_scaling.rope_inv_freq(d_head, base, {"rope_type": "linear", "factor": 4.0})[0],
    "ntk": theta / rope_scaling.thetas(d_head, ntk_base(base, 4.0, d_head)),
}
fig, ax = plt.subplots(figsize=(7, 3))
for name, f in stretch.items():
    ax.plot(range(d_head // 2), to_numpy(f), "o-", label=name)
ax.axvline(5, color="k", ls=":", label="critical pair (5)")
ax.set(xlabel="pair i", ylabel="stretch of the wavelength", title="How much each pair is slowed, s = 4, d_head = 32")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# **Your base inside a model.** A model whose RoPE has base `ntk_base(10000, 4, d_head)` must be
# the same function as the library's model with `rope_scaling={"rope_type": "ntk", "factor": 4}`.
# The cell trains both side by side, in float64 with the reference kernels ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)), on the same batches
# from the same weights.

# %%
from mini_transformer.model import data
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional.rope import RoPE
from exercises.adapters.side_by_side import train_side_by_side

cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=2, max_len=16, positional="rope",
                rope_scaling={"rope_type": "ntk", "factor": 4.0})


def copy_batches(g):
    b = data.copy_task(16, 8, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


run = train_side_by_side(cfg, RoPE(cfg.d_head, base=ntk_base(10000.0, 4.0, cfg.d_head)), copy_batches, steps=30)
print(run.report())
assert run.first_difference is None

# %% [markdown]
# ## 5. Dynamic NTK, and why it fights the cache
#
# A fixed scale hurts short inputs: a model stretched for $4L$ runs a 10-token prompt with
# stretched slow pairs too. Dynamic NTK picks the scale from the current length $\ell$ (survey,
# eq. 49):
#
# $$s(\ell) = \max\!\left(1, \frac{\ell}{L}\right),$$
#
# then applies NTK-aware scaling with $s(\ell)$. Up to $L$ it is plain RoPE. (The Hugging Face
# reference, which this library follows, writes $s(\ell) = \max(1, s\,\ell/L - (s - 1))$: the
# same rule for $s = 1$.)
#
# The catch is the KV cache. A cached key was rotated once, when it was written, with the scale
# of that moment. Twenty tokens later the scale has changed, and every new query is rotated with a
# different base than the keys it reads. The survey's two fixes: store keys unrotated and rotate
# them again at each step, or fix the scale for the whole generation. This library does the second
# with `planned_length(n)`, which `generate` calls with the final length. Measure the three on a
# small random model trained at length 8 and run to 24.

# %%
def random_rope_model(rope_scaling):
    model = TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8, positional="rope",
                              rope_scaling=rope_scaling)).to_dtype("float64")
    draw = rng(1)
    for p in model.parameters():
        p.data[...] = draw.normal(0.0, 0.5, size=p.shape, dtype="float64")
    return model


def decode(model, x, prefill=4):
    """Prefill, then one token per step through the KV cache; logits (B, T, vocab)."""
    cache = model.new_cache()
    steps = [model(x[:, :prefill], cache=cache).numpy()]
    steps += [model(x[:, t:t + 1], cache=cache).numpy() for t in range(prefill, x.shape[1])]
    return xp.concatenate([asarray(s) for s in steps], axis=1)


# %% tags=["nbval-check-output"]
dynamic = {"rope_type": "dynamic", "factor": 2.0}
x = g.integers(0, 16, size=(2, 24))
model = random_rope_model(dynamic)
full = asarray(model(x).numpy())                   # one pass over 24 tokens: one scale for every key
model.positional.rerotate_keys = False             # the naive cache: each key keeps the scale of its day
naive = decode(model, x)
model.positional.rerotate_keys = True
with model.positional.planned_length(24):          # what generate() does: fix the final length first
    planned = decode(model, x)
print(f"largest logit difference from the full pass, naive cache:   {float(xp.abs(naive - full).max()):.3f}")
print(f"largest logit difference from the full pass, planned length: below 1e-10: "
      f"{bool(xp.abs(planned - full).max() < 1e-10)}")
assert float(xp.abs(naive - full).max()) > 1e-2

# %% [markdown]
# The naive cache goes stale by a tenth of a logit and more; fixing the length repairs it
# exactly. The price of the fix is that dynamic NTK is no longer dynamic within a generation:
# the prompt is read with the scale of the final length.
#
# ## 6. NTK-by-parts: a ramp over the pairs
#
# YaRN's paper sorts the pairs by $\rho_i = L\theta_i/2\pi$, the turns they make within $L$
# (survey, eq. 50-52). Pairs with $\rho_i > \beta$ (32 for LLaMA) turned many times and are kept;
# pairs with $\rho_i < \alpha$ (1) never turned and are interpolated like PI; in between a ramp
# $\gamma_i$ blends the two:
#
# $$\theta_i' = (1 - \gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i .$$
#
# The survey writes $\gamma$ linear in $\rho$. The authors' code, the Hugging Face reference and
# DeepSeek's code put the same two thresholds in pair-index space instead, linear in $\log\rho$,
# and published YaRN checkpoints are built that way, so this library follows the code
# (`rope_scaling.by_parts_ramp`). They agree on which pairs are kept and which interpolated.

# %% tags=["nbval-check-output"]
def survey_ramp(rho, alpha=1.0, beta=32.0):
    return xp.clip((rho - alpha) / (beta - alpha), 0.0, 1.0)


d_big, L_big = 128, 4096
rho_big = rope_scaling.rotations_within(d_big, 10000.0, L_big)
code_ramp = rope_scaling.by_parts_ramp(d_big, 10000.0, L_big)
print(f"d_head 128, L 4096: kept {int((code_ramp == 1).sum())} pairs, interpolated {int((code_ramp == 0).sum())}, "
      f"blended {int(((code_ramp > 0) & (code_ramp < 1)).sum())} (the code's ramp)")
print(f"the survey's ramp: kept {int((survey_ramp(rho_big) == 1).sum())}, interpolated "
      f"{int((survey_ramp(rho_big) == 0).sum())}")
tiny_ramp = rope_scaling.by_parts_ramp(d_head, base, L)
print("the tiny model (d 32, L 64), gamma per pair:", [round(float(v), 2) for v in tiny_ramp])

# %%
fig, (ax_big, ax_tiny) = plt.subplots(1, 2, figsize=(12, 3.2))
ax_big.plot(to_numpy(code_ramp), ".-", label="the code's ramp (linear in pair index)")
ax_big.plot(to_numpy(survey_ramp(rho_big)), ".--", label="the survey's ramp (linear in rho)")
ax_big.set(xlabel="pair i", ylabel="gamma_i (1 = kept)", title="d_head 128, L = 4096")
ax_big.legend(fontsize=8)
ax_tiny.plot(to_numpy(tiny_ramp), "o-")
ax_tiny.set(xlabel="pair i", ylabel="gamma_i", title="d_head 32, L = 64: no pair turns 32 times")
fig.tight_layout()

# %% [markdown]
# In the tiny model no pair turns 32 times in 64 tokens (pair 0 turns 10.2 times), so only pair 0
# is kept whole and the ramp covers pairs 1 to 4. The LLaMA thresholds are a fit to LLaMA, not a
# constant, as the survey warns.
#
# ## 7. YaRN's temperature
#
# Stretching the frequencies changes how peaked the attention is. YaRN adds a temperature $t$ to
# the softmax, $\mathrm{softmax}(q \cdot k / (t\sqrt{d}))$, fitted for LLaMA as
#
# $$\sqrt{1/t} = 0.1\ln s + 1,$$
#
# and applies it by multiplying both $q$ and $k$ by $\sqrt{1/t}$ (survey, eq. 53-55). In code the
# factor multiplies the cos and sin tables, so every rotated query and key, and the logits by its
# square. DeepSeek's configs multiply the logarithm by an `mscale`.
#
# ### Exercise 8.4: `yarn_attention_factor`   ★☆☆ · 5 min
#
# *Why it matters:* it is the number a `rope_scaling` block with `"rope_type": "yarn"` silently
# adds to your model, and the one a port most often forgets.
#
# Write `yarn_attention_factor(factor, mscale=1.0)`. Grade with
# `python -m exercises grade context_extension --exercise 8.4`.

# %%
yarn_attention_factor = use("context_extension", "yarn_attention_factor")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Two cases: for $s \le 1$ nothing is stretched and the factor is 1. Otherwise it grows with the
# logarithm of $s$, scaled by `mscale`.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Check the numbers of §7's formula by hand, with `mscale = 1`: $s = e^2 \approx 7.389$ gives 1.2 and
# $s = 4$ gives 1.139; $s = 1$ gives exactly 1, and $s = 0.5$ must give 1 as well (the formula alone would
# give 0.931: a factor below 1 would sharpen a model that was never stretched).
# </details>

# %% tags=["answer"]
reveal("context_extension", "yarn_attention_factor")

# %% [markdown]
# By hand: $s = 4$ gives $0.1 \ln 4 + 1 = 1.1386$, so the logits grow by $1.1386^2 = 1.296$. Check
# it on the model's own tables: at position 0 every angle is 0 whatever the frequencies, so cos
# holds the factor alone and sin is 0, and a query against a key there scores the factor squared
# times what it scores without YaRN.

# %% tags=["nbval-check-output"]
from mini_transformer.positional.rope import apply_rotary

yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
rotary, plain_rotary = RoPE(32, rope_scaling=yarn).rotary, RoPE(32).rotary
q, k = g.normal(size=(1, 1, 1, 32), dtype="float64"), g.normal(size=(1, 1, 1, 32), dtype="float64")


def score_at_zero(r):
    cos, sin = r.at(xp.arange(1))                                            # position 0: every angle is 0
    return float((apply_rotary(q, cos, sin) * apply_rotary(k, cos, sin)).sum())


ratio = score_at_zero(rotary) / score_at_zero(plain_rotary)
print(f"yarn_attention_factor(4) = {yarn_attention_factor(4.0):.4f}; the model's factor = {rotary.attention_factor:.4f}")
print(f"logit ratio at position 0: {ratio:.4f}; the factor squared: {yarn_attention_factor(4.0) ** 2:.4f}")
assert math.isclose(yarn_attention_factor(4.0), rotary.attention_factor, rel_tol=1e-12)
assert math.isclose(ratio, yarn_attention_factor(4.0) ** 2, rel_tol=1e-9)

# %% [markdown]
# ### YaRN's frame: what each method changes
#
# Pair $i$ at position $m$ sits at the angle $m\theta_i$. The methods of this chapter differ in
# which factor of that product they change, and YaRN's paper sorts them that way:
#
# * position interpolation changes the **position**, $m \to m/s$: the same as every
#   $\theta_i / s$, one factor for all pairs;
# * NTK-aware scaling changes the **base**, and with it each $\theta_i$ by a different factor,
#   $s^{2i/(d-2)}$ (dynamic NTK also lets $s$ follow the length);
# * NTK-by-parts changes the **frequencies per pair, by wavelength**: a pair that turns often
#   within $L$ keeps its $\theta_i$, a pair that never turns is divided by $s$, a ramp between;
# * YaRN is by-parts plus a **temperature**, a change that is not in the angle at all: it scales
#   the logits.
#
# The table shows it on this chapter's head, as $\theta_i / \theta_i'$ per pair, with the factor
# each method puts on cos and sin.

# %% tags=["nbval-check-output"]
methods = {"PI": {"rope_type": "linear", "factor": 4.0},
           "NTK": {"rope_type": "ntk", "factor": 4.0},
           "by-parts": {"rope_type": "ntk_by_parts", "factor": 4.0, "original_max_position_embeddings": L},
           "YaRN": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": L}}
plain_freq = rope_scaling.thetas(d_head, base)
frame = {name: rope_scaling.rope_inv_freq(d_head, base, cfg) for name, cfg in methods.items()}
pairs_shown = (0, 1, 2, 4, 5, 8, 15)
print(f"{'theta_i / theta_i_new':<22}" + "".join(f"{'pair ' + str(i):>8}" for i in pairs_shown) + f"{'cos, sin x':>12}")
for name, (freq, factor) in frame.items():
    print(f"{name:<22}" + "".join(f"{float(plain_freq[i] / freq[i]):>8.3f}" for i in pairs_shown) + f"{factor:>12.4f}")
by_pos = {name: plain_freq / freq for name, (freq, _) in frame.items()}
assert xp.allclose(by_pos["PI"], 4.0)                                                   # position: one factor
assert math.isclose(float(by_pos["NTK"][0]), 1.0) and math.isclose(float(by_pos["NTK"][-1]), 4.0)
assert bool((xp.diff(by_pos["NTK"]) > 0).all())                                         # base: a factor per pair
assert xp.allclose(frame["YaRN"][0], frame["by-parts"][0])                              # YaRN's angles are by-parts'
assert frame["by-parts"][1] == frame["NTK"][1] == frame["PI"][1] == 1.0
assert math.isclose(frame["YaRN"][1], 0.1 * math.log(4.0) + 1, rel_tol=1e-12)          # ... plus the temperature

# %% [markdown]
# ### Why a temperature: the entropy of the scores
#
# A softmax over more keys is flatter. With $T$ keys of equal score its entropy is $\ln T$, and
# scores that vary still spread over more keys as $T$ grows. A model run at $sL$ meets query rows
# of up to $sL$ keys, flatter than any row it was trained on. The sources explain YaRN's
# temperature that way: sharpening the logits by $1/t$ pulls the entropy back toward
# what the model saw. (The paper fits $\sqrt{1/t} = 0.1\ln s + 1$ to perplexity on LLaMA; the
# entropy is the reason, the constant is a fit.) Measure it on the simplest scores there are,
# independent unit-variance logits for 64 queries, over $L$ keys and over $4L$.

# %% tags=["nbval-check-output"]
def mean_entropy(logits):
    """Mean over rows of the softmax entropy (nats) of (n_rows, T) logits."""
    p = xp.exp(logits - logits.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return float(-(p * xp.log(p)).sum(axis=-1).mean())


logits = rng(8).normal(size=(64, 4 * L), dtype="float64")                # (queries, 4L keys)
sharpen = yarn_attention_factor(4.0) ** 2                                  # the logits grow by the factor squared
H_L, H_4L, H_4L_t = mean_entropy(logits[:, :L]), mean_entropy(logits), mean_entropy(sharpen * logits)
print(f"ln L = {math.log(L):.3f}, ln 4L = {math.log(4 * L):.3f}")
print(f"mean entropy over L keys {H_L:.3f}; over 4L keys {H_4L:.3f}; over 4L with YaRN's temperature {H_4L_t:.3f}")
recovered = (H_4L - H_4L_t) / (H_4L - H_L)
print(f"the rise from L to 4L keys: {H_4L - H_L:.3f} nats (ln 4 = {math.log(4):.3f}); the temperature takes back {recovered:.0%} of it")
assert H_L < H_4L_t < H_4L and abs((H_4L - H_L) - math.log(4)) < 0.05 and round(recovered, 2) == 0.23

# %% [markdown]
# Over four times the keys the entropy rises by 1.379 nats, nearly $\ln 4 = 1.386$; YaRN's
# temperature at $s = 4$ takes back 23% of that rise on these scores. It is a correction of the spread, not a
# full cancellation, and how much it recovers depends on how spread the scores are.

# %% [markdown]
# ## 8. The Llama 3.1 rule
#
# Llama 3.1 stretches an 8k model to 128k with a by-parts rule of its own, set by wavelength
# rather than by rotation count. With $L$ = `original_max_position_embeddings`, $l$ =
# `low_freq_factor` and $h$ = `high_freq_factor`:
#
# * $\lambda_i < L/h$: the pair turns more than $h$ times in $L$; $\theta_i$ is kept;
# * $\lambda_i > L/l$: it turns less than $l$ times; $\theta_i / s$;
# * between: $g = (L/\lambda_i - l)/(h - l)$ and $\theta_i' = (1 - g)\,\theta_i/s + g\,\theta_i$.
#
# ### Exercise 8.5: `llama3_inv_freq`   ★★☆ · 15 min
#
# *Why it matters:* this is how you get from a published `config.json` to the angles the model
# actually uses, and the two band edges are easy to swap.
#
# Write `llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor,
# original_max_position_embeddings)`: the new `(d/2,)` frequencies. Do not write into
# `inv_freq`. Grade with `python -m exercises grade context_extension --exercise 8.5`.

# %%
llama3_inv_freq = use("context_extension", "llama3_inv_freq")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Compare wavelengths, not frequencies: each pair's wavelength $2\pi/\theta_i$, in tokens, against the
# two band edges $L/h$ (`high_freq_factor`) and $L/l$ (`low_freq_factor`).
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Compute the blended value for every pair, then pick per pair, without a loop: kept where the
# wavelength is short, divided by $s$ where it is long, blended elsewhere. Case: $L = 8192$, $l = 1$,
# $h = 4$, $s = 8$: a pair of wavelength 1000 ($< 2048$) keeps $\theta$; one of 10000 ($> 8192$) gets
# $\theta/8$; one of 4096 has $g = (8192/4096 - 1)/(4 - 1) = 1/3$ and gets
# $\frac{2}{3}\cdot\frac{\theta}{8} + \frac{1}{3}\theta = \frac{5}{12}\theta$.
# </details>

# %% tags=["answer"]
reveal("context_extension", "llama3_inv_freq")

# %% [markdown]
# Read the published block. Llama 3.1 8B: $d_{head} = 128$, base 500 000, $s = 8$, $l = 1$, $h = 4$,
# $L = 8192$. By hand: $\lambda_i = 2\pi\cdot 500000^{i/64} < 2048$ needs $i < 28.2$, so pairs 0 to
# 28 are kept; $\lambda_i > 8192$ needs $i > 34.99$, so pairs 35 to 63 are divided by 8; pairs 29
# to 34 are blended. Your function on the block must give what the model's code computes,
# `rope_scaling.rope_inv_freq` (through `model_configs.describe_model`).

# %% tags=["nbval-check-output"]
from mini_transformer.positional.model_configs import describe_model

llama = describe_model("Llama-3.1-8B")
block = llama["rope_scaling"]
print("rope_scaling:", block)
theta_llama = rope_scaling.thetas(128, llama["rope_theta"])
mine = llama3_inv_freq(theta_llama, block["factor"], block["low_freq_factor"], block["high_freq_factor"],
                       block["original_max_position_embeddings"])
ratio = to_numpy(theta_llama / mine)
kept, divided = [i for i in range(64) if ratio[i] == 1.0], [i for i in range(64) if math.isclose(ratio[i], 8.0)]
print(f"kept: pairs {kept[0]}..{kept[-1]}; divided by 8: pairs {divided[0]}..{divided[-1]}; "
      f"blended: {[i for i in range(64) if i not in kept + divided]}")
assert kept == list(range(29)) and divided == list(range(35, 64))
assert xp.allclose(mine, llama["inv_freq"], rtol=1e-12, atol=0)
print("your frequencies equal the model code's:", True)

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.semilogy(to_numpy(llama["base_wavelengths"]), ".", label="trained (base 500000)")
ax.semilogy(to_numpy(2 * math.pi / mine), ".", label="Llama 3.1 rule")
for n, label, style in [(8192, "trained length 8192", ":"), (131072, "target 131072", "--")]:
    ax.axhline(n, color="k", ls=style, lw=0.8, label=label)
ax.set(xlabel="pair i", ylabel="wavelength (tokens)", title="Llama 3.1 8B: the slow pairs stretched 8 times")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 9. LongRoPE: search the factors
#
# Every rule so far is a formula. LongRoPE (Ding et al., 2024) searches one factor $\lambda_i$ per
# pair, $\theta_i' = \theta_i/\lambda_i$, scoring candidates by the model's loss at the target
# length with no training: an evolutionary search (survey §6.8). LongRoPE2 adds a constraint: from
# the critical pair on, the factors may not decrease (a slower pair never needs less stretch).
# `mini_transformer/evaluation/longrope_search.py` runs that search on the tiny model, starting from PI, NTK
# and YaRN. The experiment's committed result holds the factors it found for $s = 4$:

# %%
from mini_transformer.evaluation.experiments.common import RESULTS
from mini_transformer.evaluation.longrope_search import starting_points

with open(os.path.join(RESULTS, "context_extension.json")) as f:
    ext = json.load(f)
found = ext["searched_factors"]
starts = starting_points(d_head, base, ext["train_len"], 4.0)

# %% tags=["nbval-check-output"]
print("pair:     " + "".join(f"{i:>6}" for i in range(d_head // 2)))
for name, f in [("PI", starts["pi"]), ("NTK", starts["ntk"]), ("YaRN", starts["yarn"]), ("searched", found)]:
    print(f"{name:<10}" + "".join(f"{v:>6.2f}" for v in f))
crit = ext["critical_pair"]
print(f"critical pair {crit}: the searched factors never decrease from there on")
assert all(b >= a for a, b in zip(found[crit:], found[crit + 1:])) and crit == critical_dimension(d_head, base, L) // 2

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
for name, f, style in [("PI", starts["pi"], "s-"), ("NTK", starts["ntk"], "o-"), ("YaRN", starts["yarn"], "^-"),
                       ("searched", found, "D-")]:
    ax.plot(range(d_head // 2), f, style, label=name, ms=4)
ax.axvline(crit, color="k", ls=":", label=f"critical pair {crit}")
ax.set(xlabel="pair i", ylabel="factor lambda_i", title="Per-pair factors for s = 4, d_head 32, L = 64")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# The search keeps the three fastest pairs exactly and stretches the slowest ones *more* than
# $s = 4$, up to 6.5: a pair that never turned in training can be slowed further at no cost,
# since the model never learned its angle beyond an arc. Section 11 measures whether that wins.
#
# ## 10. Reading a published `rope_scaling` block
#
# A model's `config.json` carries its RoPE settings: `rope_theta`, `head_dim` (or
# `hidden_size / num_attention_heads`), and a `rope_scaling` block. `rope_scaling.rope_inv_freq`
# reads the block as the reference code does and returns the frequencies and the attention
# factor; `model_configs.describe_model` does it for the models it stores.

# %% tags=["nbval-check-output"]
for name in ("Llama-2-7B", "Code-Llama-7B", "Llama-3.1-8B", "Qwen3-0.6B", "DeepSeek-V3"):
    m = describe_model(name)
    scaling = m.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "none"))
    print(f"{name:<14} rotary {m['rotary_dim']:>3}, base {m['rope_theta']:>9,.0f}, trained {m['train_len']:>6}, "
          f"scaling {kind:<7} factor {scaling.get('factor', 1):>4g}, attention factor {m['attention_factor']:.4f}, "
          f"d_extra {m['critical_dimension'].d_extra}")

# %% [markdown]
# Three things to read off. Qwen3's YaRN block gives the attention factor $0.1\ln 4 + 1 = 1.1386$:
# your Exercise 8.4. DeepSeek-V3's block has `mscale = mscale_all_dim = 1`, so the factor on cos
# and sin is 1, and its attention code multiplies the softmax scale by $(0.1\ln 40 + 1)^2$ instead:
# the same temperature, in another place, which a port must not apply twice. And the critical
# dimension moves with the base: 92 of 128 at base $10^4$, 70 at 500 000 with an 8k training
# length; DeepSeek's rotates only 64 of each head's 192 dimensions.

# %% [markdown]
# ## 11. The sources' Exercise 3, on a tiny model
#
# The book's Exercise 3: train a small RoPE model at one length and measure loss at longer ones
# with no change, with linear interpolation ($s = 4$) and with NTK scaling ($s = 4$). The
# experiment `python -m mini_transformer.evaluation.experiments.context_extension` does that and more: a
# `TinyGPT` with two heads of 32 channels, trained on the standard library's source at $L = 64$
# for 1500 steps, run at $4L = 256$ with each method zero-shot, then fine-tuned at $4L$ for 150
# steps with each and measured again. (The book trains at 128 and looks at 128, 256, 512; the
# experiment's smaller $L$ keeps the run to minutes.) The chapter reads the committed result.

# %% tags=["nbval-check-output"]
METHODS = ["none", "linear (PI)", "ntk", "dynamic", "yarn", "searched"]
rows = {name: ext["methods"][name] for name in METHODS}
print(f"trained at L = {ext['train_len']} for {ext['steps']} steps, run at 4L = {ext['target_len']}; "
      f"fine-tune {ext['finetune_steps']} steps; held-out loss (nats per byte)")
print(f"{'method':<14}{'at L':>8}{'at 4L':>8}{'past L':>8}{'tuned, L':>10}{'tuned, 4L':>11}")
for name, r in rows.items():
    print(f"{name:<14}{r['loss_at_L']:>8.2f}{r['loss_at_4L']:>8.2f}{r['loss_past_L']:>8.2f}"
          f"{r['finetuned_loss_at_L']:>10.2f}{r['finetuned_loss_at_4L']:>11.2f}")

# %%
from mini_transformer.evaluation.experiments import context_extension

fig = context_extension.plot(ext)
plt.show()

# %% [markdown]
# Against the sources' claims:
#
# * **C6, unscaled RoPE breaks**: 1.60 at $L$, 2.75 at $4L$ and 3.12 on the positions past $L$.
#   Reproduces.
# * **C7, PI is stable and costs a little at $L$**: it costs a great deal at $L$ (2.95 against
#   1.60), and at $4L$ zero-shot it is no better than doing nothing (2.75 against 2.75).
#   Does not reproduce. The tiny model leans on its fast pairs, which PI compresses fourfold,
#   more than on its slow ones; the sources' picture comes from 128-channel heads trained on
#   thousands of tokens.
# * **C8, NTK sits between**: 1.66 at $L$ (close to 1.60), 2.16 at $4L$ (better than 2.75).
#   Reproduces.
# * **C9, per-band and per-pair beat one factor**: YaRN 1.77 and the searched factors 1.62 at $4L$,
#   against 2.75 for PI. Reproduces; dynamic NTK (1.86) also does well, and is exactly plain RoPE
#   at $L$ (1.60).
# * **C10, a short fine-tune repairs most of it**: after 150 steps every method is between 1.44
#   and 1.54 at $4L$; PI recovers from 2.75 to 1.54 but stays the worst, and still pays at $L$
#   (1.67 against 1.57 to 1.63 for the others). Reproduces, with PI's residue.

# %%
m = rows
assert m["none"]["loss_at_4L"] > m["none"]["loss_at_L"] + 1.0                       # C6
assert m["linear (PI)"]["loss_at_L"] > m["none"]["loss_at_L"] + 1.0                 # C7: not "a little"
assert abs(m["linear (PI)"]["loss_at_4L"] - m["none"]["loss_at_4L"]) < 0.01         # C7: no better at 4L
assert abs(m["ntk"]["loss_at_L"] - m["none"]["loss_at_L"]) < 0.1 < m["none"]["loss_at_4L"] - m["ntk"]["loss_at_4L"]  # C8
assert max(m["yarn"]["loss_at_4L"], m["searched"]["loss_at_4L"]) < m["linear (PI)"]["loss_at_4L"] - 0.9  # C9
assert m["dynamic"]["loss_at_L"] == m["none"]["loss_at_L"]
tuned = [r["finetuned_loss_at_4L"] for r in m.values()]
assert max(tuned) < min(r["loss_at_4L"] for r in m.values()) and max(tuned) == m["linear (PI)"]["finetuned_loss_at_4L"]  # C10
print("each verdict above holds on the committed run")

# %% [markdown]
# ## 12. Check yourself
#
# Answer out loud or on paper before you open an answer.
#
# **1.** What is the critical pair of this chapter's model ($d_{head} = 32$, $L = 64$), and what does
# it mean for each of its 16 pairs at $4L$?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# $d_{extra} = 2\lceil 16 \log_{10^4}(64/2\pi)\rceil = 2\lceil 4.03\rceil = 10$, so the critical pair
# is 5 (section 2). Pairs 0 to 4 turned fully in 64 tokens and only repeat themselves at $4L$;
# pairs 5 to 15 turned through an arc and meet up to four times the largest angle they saw. The
# search of section 9 keeps its factors non-decreasing from pair 5 on.
# </details>

# %% [markdown]
# **2.** Why is the NTK exponent $d/(d-2)$ and not 1? What does a test that checks only
# $\theta_0 = 1$ catch?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The slowest pair has exponent $-(d-2)/d$, so slowing it by exactly $s$ needs
# $b'^{(d-2)/d} = s\, b^{(d-2)/d}$, that is $b' = b\, s^{d/(d-2)}$; with exponent 1 it slows by
# $s^{(d-2)/d}$ only. A test of $\theta_0$ alone catches nothing: $b'^0 = 1$ for every base, right
# or wrong. The property that pins the exponent is the last pair's.
# </details>

# %% [markdown]
# **3.** A server runs a dynamic-NTK model with a KV cache that stores rotated keys. What goes
# wrong, and what are the two fixes?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The scale grows with the length, so each cached key keeps the rotation of the length at which
# it was written, while the new query uses the current one: the scores are no longer those of any
# single RoPE. Section 5 measured logits off by more than 0.01. The fixes: store keys unrotated and
# rotate the whole cache again whenever the scale changes, or fix the scale for the whole
# generation from the planned final length (`planned_length`, which `generate` uses), which
# matched the full pass to 1e-10.
# </details>

# %% [markdown]
# **4.** Qwen3's `rope_scaling` is `{"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 32768}`.
# By how much does it scale the attention logits, and where does that happen in the code?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The factor is $0.1 \ln 4 + 1 = 1.1386$ (Exercise 8.4; section 10 printed it for Qwen3). It
# multiplies the cos and sin tables, so every rotated query and key, and the logits by
# $1.1386^2 = 1.296$ (section 7 measured the ratio at position 0).
# </details>

# %% [markdown]
# **5.** The book says PI "costs a little loss at $L$" and is stable at every length. What did the
# tiny model show, and why might it differ?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# PI cost 1.35 nats at $L$ (2.95 against 1.60) and was no better than unscaled RoPE at $4L$ zero-shot
# (2.75 and 2.75). A head of 32 channels has only 16 pairs, and this model relies on its fast
# pairs for local structure; PI slows those fourfold. After 150 fine-tuning steps PI recovered to
# 1.54 at $4L$, still the worst of the six. The sources' picture comes from 128-channel heads
# trained on thousands of tokens.
# </details>

# %% [markdown]
# ## 13. The ledger, settled
#
# | # | claim (source) | this model | verdict |
# | --- | --- | --- | --- |
# | C1 | $d_{extra} = 92$ for $d_{head}$ 128 at 4096 (survey §6.2) | 92, by formula and by counting wavelengths; the tiny model's is 10 | reproduces |
# | C2 | base $10^6$ moves $T_{extra}$ to about 100k (survey §6.2, Table 4) | the law gives 129k for Llama 2's $d_{extra}$; not measured on a model | reproduces as arithmetic |
# | C3 | interpolation about 600x more stable than extrapolation (book §2.6, §5) | between integers a fitted score stays within 0.01 of a line; past $L$ it reaches 100 to 3000 times that, depending on the fit | partly: the direction, not a fixed ratio |
# | C4 | NTK keeps $\theta_0$, slows the last pair by $s$ (book §2.6; survey §6.4) | $\theta_0 = 1$ and the last pair slowed by exactly $s$ for every $d$ tried; side-by-side training equal to the library | reproduces |
# | C5 | dynamic NTK conflicts with a rotated-key cache (survey §6.5) | naive cache off by more than 0.01 in the logits; a planned length matches to 1e-10 | reproduces |
# | C6 | unscaled RoPE breaks past $L$ (book Ex. 3) | 1.60 at $L$, 2.75 at $4L$ | reproduces |
# | C7 | PI stable, costs a little at $L$ (book Ex. 3) | 2.95 at $L$, 2.75 at $4L$: costly at $L$ and no better than unscaled at $4L$ | does not reproduce |
# | C8 | NTK between (book Ex. 3) | 1.66 at $L$, 2.16 at $4L$ | reproduces |
# | C9 | per-band and per-pair beat one factor (book §5; survey §6.6-6.8) | YaRN 1.77, searched 1.62, PI 2.75 at $4L$ | reproduces |
# | C10 | a short fine-tune repairs most of the damage (book §2.6) | 150 steps: all methods 1.44 to 1.54 at $4L$; PI still the worst and still costly at $L$ | reproduces, with PI's residue |
#
# ## 14. Where next
#
# * Exercises: [`exercises/context_extension.py`](../exercises/context_extension.py); grade them
#   with `python -m exercises grade context_extension` (one at a time with `--exercise 8.2`).
# * Every method of this chapter, as the model runs it, is one function in
#   `mini_transformer/positional/rope_scaling.py`; `GPTConfig(rope_scaling=...)` takes a published block as
#   it is. The rotation itself is `mini_transformer/positional/rope.py` (`apply_rotary`).
# * The interview cards on extending 8k to 128k, on base 10000 and on PI against NTK are in
#   [`cards/08_stretching_rope.md`](cards/08_stretching_rope.md).
# * To go further: `python -m mini_transformer.evaluation.experiments.context_extension` reruns the
#   experiment (minutes); `evaluate.passkey_grid` measures retrieval, which loss does not.
