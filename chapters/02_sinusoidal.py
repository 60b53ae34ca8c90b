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
# # Chapter 2. Clocks: the sinusoidal encoding
#
# Attention alone treats its input as a set: shuffle an encoder's tokens and its outputs shuffle
# with them (chapter 1). A causal decoder can learn some position from its mask, but only
# indirectly ([chapter 1, §5](01_order_blind.py#5.-What-a-NoPE-model-learns-from-the-leak)
# measures how much). The original Transformer writes each token's position into its embedding:
# a vector of sines and cosines, added to the token's vector before the first layer. Why sines and cosines, and why pairs of them? You start from a binary counter
# and end with a table whose rows turn like clocks. Then you check what the sources claim for
# it: that a shift is a rotation; that adding it to the embedding, instead of concatenating it,
# "mostly does not" interfere (book §2.1); and that it was chosen in the hope of carrying the
# model past the length it was trained on, a hope the book itself calls weaker in practice than
# the argument suggests (the hope: §5; weaker in practice: §2.1).
#
# **By the end you can**
#
# * build the sinusoidal table and say which column holds what (Exercise 2.1);
# * derive the matrix $M_k$ with $PE(t + k) = M_k\,PE(t)$ from the angle-addition formulas, and
#   build it (Exercise 2.2);
# * write a property test that catches a wrong table or a wrong $M_k$ (Exercise 2.3);
# * measure, on a trained model, what adding the table to the embeddings costs, and what happens
#   past the training length.
#
# ## The claim ledger
#
# The sources (the book chapter, "book", and the survey, "survey") make these claims about the
# sinusoidal encoding. Write down your prediction for each before you run anything; section 11
# fills in what this workbook measured.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | A binary counter encodes position with square waves, but a shift is not a fixed linear map of its bits; smooth waves fix that (book §1) | | §1, §4 |
# | C2 | $PE(t + k)$ is a fixed rotation of $PE(t)$: one matrix for every $t$ (book §2.1, survey §3.2.2) | | §4 |
# | C3 | $PE(m)\cdot PE(n) = \sum_i \cos((m - n)\omega_i)$ depends only on $m - n$ (survey §3.2.2) | | §5 |
# | C4 | The dot product peaks at $s = t$ and decays with distance (book §1) | | §3 |
# | C5 | The wavelengths run from $2\pi \approx 6.3$ tokens to about $2\pi\cdot 10000 \approx 63000$ (book §2.1) | | §2 |
# | C6 | Adding the encoding to the embedding instead of concatenating "mostly does not" cause interference (book §2.1) | | §7, §9 |
# | C7 | Extrapolation past the training length is weaker in practice than the argument for sinusoids suggests (book §2.1, survey §3.2.2) | | §9 |
#
# Section 11 settles these and splits some of them, one claim a row (C1a and C1b, C4a and C4c, C5a and
# C5b, C6a and C6b, C7b and C7c); it also settles claims of this chapter's own that make the sources'
# testable or say what the measurements found beside them (C4b, C6c to C6e, C7a). Predict those too
# when you reach them.
#
# ## The exercises
#
# You write them in [`exercises/sinusoidal.py`](../exercises/sinusoidal.py), each where this
# chapter has taught what it needs. Stars: ★ a formula into code, ★★ a design choice or an edge
# case, ★★★ a test or a derivation of your own.
#
# | Exercise | Function | | minutes |
# |---|---|---|---|
# | 2.1 | `sinusoidal_positional_encoding(T, d_model, base)`: the `(T, d_model)` table | ★ | 6 |
# | 2.2 | `shift_rotation(k, d_model, base)`: the matrix $M_k$ with $PE(t + k) = M_k\,PE(t)$ | ★★ | 12 |
# | 2.3 | `test_sinusoidal_properties(sinusoidal_positional_encoding, shift_rotation)`: a test of your own, scored against wrong tables and matrices | ★★★ | 20 |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work); grade one exercise with
# `python -m exercises grade sinusoidal --exercise 2.N`.

# %%
import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

# %% [markdown]
# ## 1. Counting in binary
#
# Write the positions in binary. Bit $b$ of $t$ is $\lfloor t / 2^b \rfloor \bmod 2$: the lowest
# bit flips at every step, the next every two steps, the next every four. Each bit is a square
# wave, bit $b$ with a period of $2^{b+1}$ positions, and together the bits name every position
# exactly.

# %%
def bits(T, n_bits):
    """The (T, n_bits) table of the binary digits of 0 .. T-1, lowest bit first, as floats."""
    t = xp.arange(T)[:, None]  # (T, 1)
    return ((t >> xp.arange(n_bits)[None, :]) & 1).astype("float64")  # (T, n_bits)


# %% tags=["nbval-check-output"]
B = bits(64, 6)
for t in range(8):
    print(f"{t}: {''.join(str(int(b)) for b in B[t, 2::-1])}")  # highest of the three bits first, as written
assert [int(b) for b in B[5, :3]] == [1, 0, 1]  # 5 = 101

# %%
fig, ax = plt.subplots(figsize=(8, 1.8))
ax.imshow(to_numpy(B).T, aspect="auto", cmap="gray_r", interpolation="nearest")
ax.set(xlabel="position t", ylabel="bit b", title="Binary counter: bit b is a square wave of period 2^(b+1)")
fig.tight_layout()

# %% [markdown]
# A model needs relative moves: "the token three back", the same rule at every position. For a
# code it can use directly, a move by $k$ should be one fixed linear map, the same matrix at
# every $t$. Is there a matrix $A$ with $\mathrm{bits}(t + 1) = A\,\mathrm{bits}(t)$ for all $t$?
# A purely linear map sends $\mathrm{bits}(0) = 0$ to 0, so it misses $0 \to 1$ by a whole unit for
# a dull reason. Give it an intercept (a column of ones, so the map is $A\,\mathrm{bits}(t) + c$),
# fit it by least squares, and look at the error row by row: grouped by how many bits
# flip from $t$ to $t + 1$, that is, by how far the carry runs.

# %% tags=["nbval-check-output"]
X, Y = B[:-1], B[1:]  # bits(t) and bits(t + 1), t = 0 .. 62
X1 = xp.concatenate([X, xp.ones((63, 1))], axis=1)  # (63, 7): the bits and a column of ones, the intercept
A_T = xp.linalg.lstsq(X1, Y, rcond=None)[0]  # (7, 6): the least-squares Y ~ X1 @ A^T
row_error = to_numpy(xp.abs(X1 @ A_T - Y).max(axis=1))  # (63,) the worst bit of each row
flips = to_numpy(xp.abs(Y - X).sum(axis=1)).astype(int)  # (63,) how many bits change from t to t + 1
binary_error = float(row_error.max())
worst_by_flips = {f: float(row_error[flips == f].max()) for f in range(1, 7)}
for f, err in worst_by_flips.items():
    n_rows = int((flips == f).sum())
    print(f"{f} bit{'s' if f > 1 else ' '} flip ({n_rows:>2} row{'s' if n_rows > 1 else ''}): worst error {err:.3f}")
print(f"least-squares affine map bits(t) -> bits(t + 1): worst error {binary_error:.3f} (a bit is 0 or 1), "
      f"at t = {int(row_error.argmax())}")
assert binary_error > 0.9 and int(row_error.argmax()) == 31
assert worst_by_flips[1] < 0.55 and worst_by_flips[2] < 0.55 and worst_by_flips[6] > 1.0
assert all(worst_by_flips[f] < worst_by_flips[f + 1] for f in range(2, 6))

# %% [markdown]
# Even with the intercept the least-squares map gets a bit wrong by a whole unit, at $t = 31$, where
# all six bits flip ($011111 \to 100000$). Where only one or two bits flip it misses by at most
# 0.526; the worst error grows with every further bit the carry runs through (0.763, 0.860, 0.952,
# 1.020). An exact affine map would have zero squared error, so least squares would have found it:
# none exists. The reason is the carry: the new bit $b$ is the old bit XOR the carry into it, the
# AND of bits $0$ to $b - 1$. Even the shortest carry is not affine: on $t = 0 \dots 3$, where the
# higher bits are 0, the new bit 1 is $b_1 \oplus b_0$, and an affine map of $(b_0, b_1)$ that gives
# 0 at $(0, 0)$ and 1 at $(1, 0)$ and $(0, 1)$ gives 2 at $(1, 1)$, where XOR gives 0. That
# explains why no map is exact, not why the error grows with the carry: the long carries are also
# the rare rows (32 rows with one flip, 1 with six), and least squares weighs every row alike, so
# this fit cannot separate the two. Section 4 shows that smooth waves in (sin, cos) pairs make the
# move exactly linear.
#
# ## 2. Clocks
#
# Replace each square wave by a clock hand: a point on the unit circle, written as its sine and
# cosine. Pair $i$ turns at the frequency $\omega_i$, and position $t$ puts its hand at the angle
# $t\,\omega_i$:
#
# $$PE_{t, 2i} = \sin(t\,\omega_i), \qquad PE_{t, 2i+1} = \cos(t\,\omega_i), \qquad
# \omega_i = \mathrm{base}^{-2i/d_{model}}, \quad i = 0, \dots, d_{model}/2 - 1,$$
#
# with $\mathrm{base} = 10000$. Pair 0 turns one radian per position; each next pair turns
# slower by the factor $\mathrm{base}^{2/d_{model}}$. Pair $i$ comes back to where it started
# after its wavelength, $\lambda_i = 2\pi/\omega_i$ tokens: the fast clocks tell neighbours apart,
# the slow ones tell far positions apart.
#
# ### Exercise 2.1: `sinusoidal_positional_encoding`   ★ · 6 min
#
# *Why it matters:* it is the table the original Transformer adds to every input, and the one
# the model of section 8 trains on.
#
# Write `sinusoidal_positional_encoding(T, d_model, base=10000.0)`: the float64 table of shape
# `(T, d_model)` whose row $t$ encodes position $t$, sines in the even columns and cosines in the
# odd ones. Grade it alone:
# `python -m exercises grade sinusoidal --exercise 2.1`.

# %%
sinusoidal_positional_encoding = use("sinusoidal", "sinusoidal_positional_encoding")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Build the angles first, a `(T, d_model/2)` array: positions as a column times frequencies as a
# row. Then place their sines and cosines.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The frequencies are $\mathrm{base}^{-2i/d_{model}}$ for $i = 0, \dots, d_{model}/2 - 1$: if you build
# the values $2i$ directly, the exponent divides them by $d_{model}$ once, not twice. Sines go to the even
# columns, cosines to the odd ones. Case: $d_{model} = 4$, base 10000: $\omega = (1, 0.01)$, so row 1 is
# $(\sin 1, \cos 1, \sin 0.01, \cos 0.01) = (0.841, 0.540, 0.010, 1.000)$.
# </details>

# %% tags=["answer"]
reveal("sinusoidal", "sinusoidal_positional_encoding")

# %% [markdown]
# Check it by hand. Position 0 is the angle 0 on every clock: $[0, 1, 0, 1, \dots]$. For
# $d_{model} = 4$ the frequencies are $1$ and $10000^{-1/2} = 0.01$, so row 1 is
# $[\sin 1, \cos 1, \sin 0.01, \cos 0.01]$. For $d_{model} = 8$ they are
# $10000^{-i/4}$: exactly $1, 0.1, 0.01, 0.001$ (survey §3.2.1).

# %% tags=["nbval-check-output"]
pe4 = sinusoidal_positional_encoding(2, 4)
print("row 0:", [round(float(v), 6) for v in pe4[0]])
print("row 1:", [round(float(v), 6) for v in pe4[1]])
assert xp.allclose(pe4[0], asarray([0.0, 1.0, 0.0, 1.0]))
assert xp.allclose(pe4[1], asarray([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]))
pe8 = sinusoidal_positional_encoding(2, 8)
omega8 = [math.atan2(float(pe8[1, 2 * i]), float(pe8[1, 2 * i + 1])) for i in range(4)]  # the angle at t = 1
print("omega_i for d_model = 8, read back from row 1:", [f"{w:.4g}" for w in omega8])
assert all(math.isclose(w, 10.0 ** -i) for i, w in enumerate(omega8))

# %% [markdown]
# **C5, the wavelengths.** Pair 0 has $\lambda_0 = 2\pi \approx 6.3$ tokens. The last pair,
# $i = d_{model}/2 - 1$, has $\lambda = 2\pi\cdot\mathrm{base}^{(d_{model}-2)/d_{model}}$: not quite
# $2\pi\cdot\mathrm{base}$, because the exponent stops one pair short of 1. How short, for the
# widths of this workbook's models and of the original Transformer?

# %% tags=["nbval-check-output"]
def wavelengths(d_model, base=10000.0):
    """2 pi / omega_i for every pair, (d_model/2,)."""
    return 2 * math.pi * base ** (xp.arange(0, d_model, 2, dtype="float64") / d_model)


for d_model in (32, 64, 512):
    lam = wavelengths(d_model)
    print(f"d_model {d_model:>3}: pair 0 {float(lam[0]):.2f} tokens, last pair {float(lam[-1]):>8.0f} tokens "
          f"({float(lam[-1]) / (2 * math.pi * 10000):.0%} of 2 pi base)")
assert math.isclose(float(wavelengths(64)[0]), 2 * math.pi)
assert 47000 < float(wavelengths(64)[-1]) < 47200 and 60500 < float(wavelengths(512)[-1]) < 60700

# %% [markdown]
# So the book's "about 63000" is the limit of a wide model: at $d_{model} = 512$ the slowest
# clock needs 60 611 tokens for a turn, at 64 it needs 47 117.
#
# ## 3. The table, drawn
#
# Left, the table for $T = 100$ and $d_{model} = 64$, the book's figure: the first columns
# oscillate fast, the last ones hardly move in 100 positions. Right, $PE_t\cdot PE_s$ against
# $s$ for three positions $t$.

# %%
pe = sinusoidal_positional_encoding(100, 64)  # (100, 64)
fig, (ax_t, ax_d) = plt.subplots(1, 2, figsize=(11, 3.6))
im = ax_t.imshow(to_numpy(pe), aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
ax_t.set(xlabel="column (2i: sin, 2i + 1: cos)", ylabel="position t", title="PE, T = 100, d_model = 64")
fig.colorbar(im, ax=ax_t)
for t in (10, 50, 80):
    ax_d.plot(range(100), to_numpy(pe @ pe[t]), ".", ms=4, label=f"t = {t}")
ax_d.set(xlabel="position s", ylabel="PE_t . PE_s", title="Dot products of rows")
ax_d.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# **C4.** The dot product peaks at $s = t$, where it is $\lVert PE_t\rVert^2 = d_{model}/2 = 32$
# (every pair is a unit vector). Does it *decay* with distance? Walk away from $t$ and see
# whether it ever goes up again.

# %% tags=["nbval-check-output"]
pe200 = sinusoidal_positional_encoding(200, 64)
dots = to_numpy(pe200 @ pe200[0])  # PE_0 . PE_k, k = 0 .. 199
rises = [k for k in range(1, 200) if dots[k] > dots[k - 1]]
print("PE_0 . PE_k for k = 0..8:", [round(float(v), 2) for v in dots[:9]])
print(f"first k where it goes up again: {rises[0]}; it goes up at {len(rises)} of 199 steps")
print(f"lowest over k < 100: {dots[:100].min():.2f} at k = {int(dots[:100].argmin())}")
blocks = [float(dots[b:b + 20].mean()) for b in range(0, 200, 20)]  # means over k = 0..19, 20..39, ...
print("mean over each block of 20 offsets:", " ".join(f"{m:.1f}" for m in blocks))
assert dots.argmax() == 0 and math.isclose(dots[0], 32.0) and rises[0] == 6 and len(rises) == 82
assert blocks[0] > blocks[-1] and sum(b > a for a, b in zip(blocks, blocks[1:])) == 2

# %% [markdown]
# It does not fall at every step: it goes up at 82 of the 199 steps, the first time from $k = 5$
# to $6$. It falls as a trend: the mean over the first 20 offsets is 22.9, over the last 20 of
# the 200 it is 12.2, though not block after block (it goes up at 2 of the 9 steps between
# blocks). Which pairs make the first rise? The sum is $\sum_i \cos(k\omega_i)$, so look at each
# term's change from $k = 5$ to $6$.

# %% tags=["nbval-check-output"]
omega64 = 10000.0 ** (-xp.arange(0, 64, 2) / 64)  # (32,)
change = to_numpy(xp.cos(6 * omega64) - xp.cos(5 * omega64))  # (32,) each pair's term at k = 6 minus at k = 5
for i in range(6):
    print(f"pair {i}: omega {float(omega64[i]):.3f}, angle {5 * float(omega64[i]):.2f} -> "
          f"{6 * float(omega64[i]):.2f} rad, cos changes by {change[i]:+.3f}")
print(f"all 32 pairs: {change.sum():+.3f}; without pair 0: {change.sum() - change[0]:+.3f}; "
      f"without pair 1: {change.sum() - change[1]:+.3f}")
assert change[0] > 0.6 and change[1] > 0.6 and change.sum() > 0
assert change.sum() - change[0] < 0 and change.sum() - change[1] < 0

# %% [markdown]
# Two pairs rise together: pair 0 (one radian a token, back near its start at $k = 6 \approx 2\pi$)
# by 0.677, and pair 1 (0.750 rad a token, already past $\pi$ at $k = 5$, so on its way back up)
# by 0.609. The slower pairs 2 to 5 still fall, by 0.027, 0.307, 0.310 and 0.228. With the remaining
# pairs, the net step is +0.055, and without either of the two fast pairs it would be a fall. So the first rise is the two fastest
# clocks turning back up at once, not pair 0 alone. The peak claim holds; "decays" holds as a
# trend, not at every step.
#
# ## 4. A shift is a rotation
#
# Fix an offset $k$ and look at one pair. With $u_i(t) = (\sin t\omega_i, \cos t\omega_i)$, the
# angle-addition formulas give
#
# $$\begin{aligned}
# \sin((t + k)\omega_i) &= \sin(t\omega_i)\cos(k\omega_i) + \cos(t\omega_i)\sin(k\omega_i),\\
# \cos((t + k)\omega_i) &= \cos(t\omega_i)\cos(k\omega_i) - \sin(t\omega_i)\sin(k\omega_i).
# \end{aligned}$$
#
# Both right-hand sides are sums of $\sin(t\omega_i)$ and $\cos(t\omega_i)$ with coefficients that
# depend on $k$ alone, so they are a $2 \times 2$ matrix times $u_i(t)$, and the matrix does not
# depend on $t$. Stack one such block per pair on the diagonal and you have $M_k$, with
# $PE(t + k) = M_k\,PE(t)$ for every $t$ (book §2.1, survey eq. 19). Writing the block down, with
# its signs in the right places, is the exercise.
#
# ### Exercise 2.2: `shift_rotation`   ★★ · 12 min
#
# *Why it matters:* this matrix is the reason the sources give for choosing sinusoids (the
# book's "look $k$ back" as a fixed linear map, §1; Vaswani et al. cite the offset property, book
# §2.1), and writing it down is the derivation an interviewer asks for.
#
# Derive the $2 \times 2$ block from the two formulas above (which entry multiplies the sine, which
# the cosine, and with which sign), then write `shift_rotation(k, d_model, base=10000.0)`: the
# float64 `(d_model, d_model)` matrix $M_k$, your block in rows and columns $2i, 2i + 1$ for each
# pair, zero elsewhere. The rows of the table are row vectors in code, so the check is
# `pe[k:] == pe[:-k] @ M.T`. Grade it alone:
# `python -m exercises grade sinusoidal --exercise 2.2`.

# %%
shift_rotation = use("sinusoidal", "shift_rotation")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Start from a zero matrix and fill four entries per pair. Check $M_0$ (the identity) and
# $d_{model} = 2$ (one block) by hand before anything larger.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Read the block off the formulas row by row: the new sine (row $2i$) is
# $\cos k\omega_i \cdot \sin + \sin k\omega_i \cdot \cos$, so row $2i$ holds
# $(\cos k\omega_i, \sin k\omega_i)$ in columns $2i, 2i+1$; the new cosine (row $2i+1$) holds
# $(-\sin k\omega_i, \cos k\omega_i)$. Case: $d_{model} = 2$, so $\omega_0 = 1$ and
# $M_1 = \begin{bmatrix}\cos 1 & \sin 1\\ -\sin 1 & \cos 1\end{bmatrix}$; then
# $M_1\,PE(0) = M_1 (0, 1)^\top = (\sin 1, \cos 1)^\top = PE(1)$.
# </details>

# %% tags=["answer"]
reveal("sinusoidal", "shift_rotation")

# %% [markdown]
# Check every claim of the derivation on numbers: $M_k$ moves every row of the table $k$ places
# on, near position 0 and near position 1000 alike; it is orthogonal; shifts add up,
# $M_a M_b = M_{a+b}$; and $M_{-k} = M_k^\top$ turns back.

# %% tags=["nbval-check-output"]
d_model = 16
table = sinusoidal_positional_encoding(1100, d_model)  # (1100, 16)
M5 = shift_rotation(5, d_model)
errors = {
    "PE(t + 5) = M_5 PE(t), t = 0 .. 1094": float(xp.abs(table[5:] - table[:-5] @ M5.T).max()),
    "M_5^T M_5 = I": float(xp.abs(M5.T @ M5 - xp.eye(d_model)).max()),
    "M_2 M_3 = M_5": float(xp.abs(shift_rotation(2, d_model) @ shift_rotation(3, d_model) - M5).max()),
    "M_-5 = M_5^T": float(xp.abs(shift_rotation(-5, d_model) - M5.T).max()),
}
for name, err in errors.items():  # the errors are rounding, whose last digits differ between BLAS builds
    print(f"{name:<38} largest error {'below 1e-12' if err < 1e-12 else err}")
assert all(err < 1e-12 for err in errors.values())
far = max(float(xp.abs(M5 @ table[3] - table[8]).max()), float(xp.abs(M5 @ table[1003] - table[1008]).max()))
print(f"the same M_5 at t = 3 and at t = 1003: largest error {'below 1e-12' if far < 1e-12 else far}")
assert far < 1e-12

# %% [markdown]
# The block, read off the formulas row by row:
#
# $$u_i(t + k) = \begin{bmatrix}\cos k\omega_i & \sin k\omega_i\\ -\sin k\omega_i & \cos k\omega_i\end{bmatrix} u_i(t).$$
#
# The book writes this block as $R(\omega_i k)$, with
# $R(\phi) = \begin{bmatrix}\cos\phi & \sin\phi\\ -\sin\phi & \cos\phi\end{bmatrix}$ (§2.1), and the
# survey writes the same matrix (eq. 19). Chapter 6 uses the name $R(\varphi)$ for the textbook
# rotation $\begin{bmatrix}\cos\varphi & -\sin\varphi\\ \sin\varphi & \cos\varphi\end{bmatrix}$,
# which turns a (cos, sin) pair forward. Ours is its transpose, because the pair here is
# (sin, cos), sine first. Two matrices, one name: check the signs whenever you move between the
# two chapters.

# %% [markdown]
# **C1 and C2, side by side.** Fit a linear map from row $t$ to row $t + 1$ by least
# squares, as for the bits in section 1, now on a sinusoidal table of the same 64 positions. It
# needs no intercept: a linear map is an affine one with $c = 0$.

# %% tags=["nbval-check-output"]
S = sinusoidal_positional_encoding(64, 6)
A_T = xp.linalg.lstsq(S[:-1], S[1:], rcond=None)[0]
sin_error = float(xp.abs(S[:-1] @ A_T - S[1:]).max())
print(f"least-squares affine map, binary bits:  worst error {binary_error:.3f}")
print(f"least-squares linear map, sinusoids:    worst error {'below 1e-12' if sin_error < 1e-12 else sin_error}")
fit_gap = float(xp.abs(A_T.T - shift_rotation(1, 6)).max())
print(f"the fit against M_1: largest difference {'below 1e-9' if fit_gap < 1e-9 else fit_gap}")
assert sin_error < 1e-12 and xp.allclose(A_T.T, shift_rotation(1, 6), atol=1e-9)

# %% [markdown]
# The least-squares fit finds $M_1$ itself: the map exists, it is exact, and it is the one you
# derived.
#
# ## 5. The dot product sees only the offset
#
# Two rows at the same frequency are unit vectors at the angles $m\omega_i$ and $n\omega_i$, so
# $u_i(m)\cdot u_i(n) = \cos((m - n)\omega_i)$, and summed over the pairs
#
# $$PE(m)\cdot PE(n) = \sum_{i} \cos\big((m - n)\,\omega_i\big)$$
#
# (survey eq. 20 and 21). It depends on the positions only through $m - n$, and, since cosine is
# even, only through $|m - n|$.

# %% tags=["nbval-check-output"]
pe = sinusoidal_positional_encoding(64, 32)  # (64, 32)
G = pe @ pe.T  # (64, 64) all dot products
omega = 10000.0 ** (-xp.arange(0, 32, 2) / 32)  # (16,)
by_formula = xp.cos((xp.arange(64)[:, None, None] - xp.arange(64)[None, :, None]) * omega).sum(-1)
formula_gap = float(xp.abs(G - by_formula).max())
print(f"PE(m) . PE(n) against sum_i cos((m - n) omega_i): largest difference "
      f"{'below 1e-12' if formula_gap < 1e-12 else formula_gap}")
print(f"(m, n) = (3, 1): {float(G[3, 1]):.6f}, (50, 48): {float(G[50, 48]):.6f}, (50, 52): {float(G[50, 52]):.6f}")
assert xp.allclose(G, by_formula) and math.isclose(float(G[3, 1]), float(G[50, 48]))
assert math.isclose(float(G[3, 1]), float(G[50, 52]))  # two back from 3 and two ahead from 50 look the same

# %%
fig, ax = plt.subplots(figsize=(4.2, 3.6))
im = ax.imshow(to_numpy(G), cmap="viridis", interpolation="nearest")
ax.set(xlabel="position n", ylabel="position m", title="PE(m) . PE(n): constant on every diagonal")
fig.colorbar(im, ax=ax)
fig.tight_layout()

# %% [markdown]
# The raw dot product cannot tell "two back" from "two ahead". Attention does not use it raw: its
# score is $PE(m)^\top W_q W_k^\top PE(n)$ (plus the content terms), and a learned $W_q W_k^\top$
# need not be symmetric. With $W_q W_k^\top$ chosen as $M_k$ the score of position $m$ against $n$
# is $PE(m)^\top M_k PE(n) = PE(m)\cdot PE(n + k)$, which peaks where $n = m - k$: a head that
# looks $k$ back, at every position. This is the book's "look $k$ back" as a fixed linear map
# (§1), which §2.1 states as one learned linear transformation that attends to the token $k$
# positions back at every absolute position. The check below is for $k = 3$ and the keys a causal
# head sees; a query before position $k$ has no key $k$ back, so the queries start at $k$.
#
# One head cannot hold all of $M_k$: its $W_q W_k^\top$ has rank at most $d_{head}$ (8 in the
# model of section 7, $d_{model} = 32$ with 4 heads), and $M_k$ has full rank $d_{model}$. So the
# check also keeps $M_3$'s blocks on 4 of the 16 pairs only, zero elsewhere, a matrix of rank 8,
# for three choices of the 4 pairs.

# %% tags=["nbval-check-output"]
k = 3
scores = pe @ shift_rotation(k, 32) @ pe.T  # (64, 64): query m against key n through W_q W_k^T = M_k
best = [int(xp.argmax(scores[m, :m + 1])) for m in range(k, 64)]  # the best key among those a causal head sees
print(f"with W_q W_k^T = M_{k}, the best key of queries {k}..63 is {k} back for",
      sum(b == m - k for b, m in zip(best, range(k, 64))), f"of {64 - k}")
assert all(b == m - k for b, m in zip(best, range(k, 64)))
for pairs in ((0, 1, 2, 3), (12, 13, 14, 15), (0, 4, 8, 12)):
    keep = asarray([1.0 if c // 2 in pairs else 0.0 for c in range(32)])  # (32,) 1 on the kept pairs' columns
    M_kept = shift_rotation(k, 32) * keep[:, None] * keep[None, :]  # M_3's blocks on those pairs, zero elsewhere
    rank = int(xp.linalg.matrix_rank(M_kept))
    kept_scores = pe @ M_kept @ pe.T  # (64, 64)
    hits = sum(int(xp.argmax(kept_scores[m, :m + 1])) == m - k for m in range(k, 64))
    margin = min(float(kept_scores[m, m - k]) - max(float(kept_scores[m, n]) for n in range(m + 1) if n != m - k)
                 for m in range(k, 64))  # how far the key 3 back is ahead of the runner-up, at the closest query
    print(f"M_{k} kept on pairs {pairs} only (rank {rank}): the best key is {k} back for {hits} of {64 - k},"
          f" ahead by at least {margin:.2g}")
    assert rank == 8 and hits == 64 - k

# %% [markdown]
# Kept on 4 of the 16 pairs, $M_3$ still puts every query's best key exactly 3 back, 61 of 61, for
# each of the three choices. That cannot fail: every kept term $\cos((m - n - 3)\omega_i)$ is
# largest at $n = m - 3$; what the choice changes is the margin over the runner-up, printed above,
# next to nothing for pairs 12 to 15. Each choice is a rank-8 matrix, which one head's $W_q W_k^\top$ in that model
# can equal. How much softmax weight
# that key would get is not measured here. It is also a check on the raw table, as the first layer of
# the original, post-norm Transformer sees it. The model of section 7 is pre-norm: its heads see the
# layer norm of token plus table, and centring and rescaling each row does not keep the exact offset
# property, so this section does not show that a head of that model can look $k$ back this way.
#
# ## 6. A test you write
#
# You now know properties of the table that hold whatever the numbers: row 0, the frequencies,
# $PE(t + k) = M_k\,PE(t)$. Turned into assertions, they make a test that catches a wrong table
# or a wrong $M_k$ before a model ever trains on it.
#
# ### Exercise 2.3: a test of your own   ★★★ · 20 min
#
# *Why it matters:* the property you derived is not enough on its own. Many wrong tables satisfy
# $PE(t+k) = M_k PE(t)$ too; a good test pins down what the property leaves free, and the grader
# measures how well yours does.
#
# Write `test_sinusoidal_properties(sinusoidal_positional_encoding, shift_rotation)` in
# `exercises/sinusoidal.py`: it receives two implementations and raises `AssertionError` (a plain
# `assert`) when they are wrong. The grader runs it on the reference, where it must pass, and on
# nine *mutants*, each the reference with one realistic mistake (a swapped layout, a wrong
# exponent, a block that turns backwards, ...), and reports which ones your test lets through.
# Grade it alone:
# `python -m exercises grade sinusoidal --exercise 2.3`.

# %%
test_sinusoidal_properties = use("sinusoidal", "test_sinusoidal_properties")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Shift every row of a correct table by one position: does $PE(t + k) = M_k\,PE(t)$ still hold?
# Use a base other than 10000 in both functions: does a table that ignores its base still pass?
# Each "yes" is a mutant your test must catch some other way.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Pin the absolute numbers by hand, then check the relation widely. Row 0 is $[0, 1, 0, 1, \dots]$;
# for $d_{model} = 8$ row 1 holds $\sin$ and $\cos$ of $1, 0.1, 0.01, 0.001$; and
# `pe[k:] == pe[:-k] @ M.T` for several $k$ (not only 1) and for base 100 as well as 10000.
# </details>

# %% tags=["answer"]
reveal("sinusoidal", "test_sinusoidal_properties")

# %% [markdown]
# Run your test here on the chapter's two functions, then on every mutant the grader uses, beside
# a weak test that checks only the defining property, with $k = 1$ and the default base.

# %% tags=["nbval-check-output"]
from exercises.adapters.scoreboard import scoreboard

impls = {"sinusoidal_positional_encoding": sinusoidal_positional_encoding, "shift_rotation": shift_rotation}


def weak_test(sinusoidal_positional_encoding, shift_rotation):
    pe = sinusoidal_positional_encoding(20, 8)
    assert xp.allclose(pe[1:], pe[:-1] @ shift_rotation(1, 8).T)


runs = scoreboard("sinusoidal", "test_sinusoidal_properties", impls,
                  {"your test": test_sinusoidal_properties, "weak test": weak_test})
assert all(r["reference"]["result"] == "passed" for r in runs.values())

# %% [markdown]
# The weak test misses three mutants, and each for a reason you can state: a table shifted by one
# position still turns by $M_k$ from row to row; a table that ignores its base is right at the
# default base; and with $k = 1$, "turn by $k\omega_i$" and "turn by $\omega_i$" are the same
# matrix. The defining property tells you the family; the hand-worked rows tell you the member.
#
# ## 7. Added, not concatenated
#
# The encoding is *added* to the token embedding, $x_t = e_{\mathrm{tok}(t)} + PE_t$, so content
# and position share the same $d_{model}$ channels. The alternative is to concatenate, giving
# each its own channels. The book says adding "looks like it should cause interference and
# mostly does not" (§2.1). Two things that plausibly matter to how much they interfere: the directions
# the two summands take, and their sizes. Start with the sizes, in the model you train below, `TinyGPT`
# with its default `kernels="reference"` ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)):
# token rows are drawn with standard deviation 0.02, as in GPT-2, and every row of the table has
# norm $\sqrt{d_{model}/2}$.

# %% tags=["nbval-check-output"]
from mini_transformer.model import tasks
from mini_transformer.model import GPTConfig, TinyGPT

cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=4, max_len=8, positional="sinusoidal", seed=0)
token_norm = float(xp.linalg.norm(TinyGPT(cfg).tok.weight.data, axis=1).mean())
pe_norm = float(xp.linalg.norm(sinusoidal_positional_encoding(8, 32), axis=1).mean())
print(f"d_model 32 at initialisation: a token row has norm {token_norm:.2f}, a position row {pe_norm:.2f} "
      f"({pe_norm / token_norm:.0f} times larger)")
sqrt_d_norm = token_norm * math.sqrt(32)  # the token rows times sqrt(d_model), as the original paper multiplies them
print(f"a token row times sqrt(d_model): norm {sqrt_d_norm:.2f}, still {pe_norm / sqrt_d_norm:.0f} times shorter "
      f"than a position row")
assert math.isclose(pe_norm, 4.0) and 25 < pe_norm / token_norm < 45 and 5 < pe_norm / sqrt_d_norm < 8
# drawn with standard deviation sigma, a row of d_model entries has norm about sigma sqrt(d_model), and
# times sqrt(d_model) about sigma d_model: equal to sqrt(d_model / 2) when sigma = (2 d_model)^(-1/2)
print(f"equal norms after the sqrt(d_model) factor need sigma = (2 d_model)^(-1/2) = {(2 * 32) ** -0.5:.3f}; "
      f"sigma = d_model^(-1/2) = {32 ** -0.5:.3f} gives about {32 ** -0.5 * 32:.2f}")
half_token_norm = float(xp.linalg.norm(TinyGPT(cfg).tok.weight.data[:, :16], axis=1).mean())
half_pe_norm = float(xp.linalg.norm(sinusoidal_positional_encoding(8, 16), axis=1).mean())
print(f"concatenated: the token part (16 channels) has norm {half_token_norm:.2f}, the 16-wide table "
      f"{half_pe_norm:.2f} ({half_pe_norm / half_token_norm:.0f} times larger)")
assert math.isclose(half_pe_norm, math.sqrt(8)) and 25 < half_pe_norm / half_token_norm < 45
pe_rank = int(xp.linalg.matrix_rank(sinusoidal_positional_encoding(8, 32)))
print(f"room: the table's 8 rows span {pe_rank} directions, the 16 token rows at most 16; "
      f"{16 + pe_rank} of the 32 channels")
assert pe_rank == 8 and 16 + pe_rank <= 32  # token rows orthogonal to the table's rows exist

# %% [markdown]
# At initialisation the input is almost all position. There is room, though, to keep the two
# apart: the table's 8 rows span 8 directions and the 16 token rows at most 16, 24 of the 32
# channels (the last line of the cell), so token rows orthogonal to every row of the table exist,
# and with them adding is concatenating in a rotated basis. A language model, with far more tokens
# than channels, has no such room (the byte-level text models of §9 put `vocab_size=256` tokens in
# $d_{model} = 64$ channels); this one does. Does the size matter, and does concatenating
# help? Train four small models on *look 3 back* (`tasks.lookback_task`: every token repeats the
# one three places earlier, so the answer at position $t$ is the token at $t - 2$; chance, a
# uniform guess over its 11 symbols, is $\ln 11 = 2.40$ nats, and the cell after the training
# shows how much better a rule that reads no position does) at length 8, for 100 steps each:
#
# * **added**: $x = e + PE$, the library's scheme;
# * **concatenated**: the first 16 channels of $e$, then a 16-channel table, $x = [e_{:16}, PE]$,
#   the same width;
# * both again with the table scaled by 0.1.
#
# The concatenated arm changes more than the layout. Its table is 16 wide, so it has 8 pairs at
# $\omega_i = 10000^{-2i/16}$ and rows of norm $\sqrt{8} = 2.83$; the added arm's has 16 pairs at
# $10000^{-2i/32}$ and norm 4. The ratio of a position row to the token part it sits beside is
# about the same, 35 added and 36 concatenated (the cell above), but the frequencies differ: the
# comparison below is of layout and frequencies together.
#
# The scaled table is your function times 0.1, in the model through
# `from_functions.sinusoidal` (section 8 says more about it). The
# concatenation is a small scheme of its own: it overrides the `embed` hook, the place where an
# input scheme adds its vectors.

# %%
import inspect

from exercises.adapters import from_functions
from mini_transformer.model.train import TrainConfig, train
# the scheme lives beside the seeded run that settles this section's ledger rows, so both train the same one
from experiments.chapter02_adding import ConcatenatedSinusoids

print(inspect.getsource(ConcatenatedSinusoids))


def lookback_batches(g, T=8):
    b = tasks.lookback_task(32, T, 3, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


def train_inputs(scheme, steps=100, seed=0):
    """Train the look-3-back model of `cfg` with `scheme` in place of the library's; return the losses."""
    model = TinyGPT(cfg)
    if scheme is not None:
        model.positional = scheme
    return train(model, lookback_batches, TrainConfig(steps=steps, lr=3e-3, warmup=10, seed=seed, progress=False)).losses


def scaled(c):
    return from_functions.sinusoidal(lambda T, d, base=10000.0: c * sinusoidal_positional_encoding(T, d, base))


variants = {"added": None, "concatenated": ConcatenatedSinusoids(1.0),
            "added, x 0.1": scaled(0.1), "concatenated, x 0.1": ConcatenatedSinusoids(0.1)}
curves = {name: train_inputs(scheme) for name, scheme in variants.items()}

# %% tags=["nbval-check-output"]
for name, losses in curves.items():
    print(f"{name:<20} loss after 100 steps {sum(losses[-10:]) / 10:.2f} nats (mean of the last 10)")
last = {name: sum(losses[-10:]) / 10 for name, losses in curves.items()}
print(f"gap, added minus added x 0.1: {last['added'] - last['added, x 0.1']:.2f} nats")
assert last["added"] > 2.3 and last["concatenated"] > 2.3  # at chance, ln 11 = 2.40
assert last["added, x 0.1"] < 2.0 and last["concatenated, x 0.1"] < 2.0
assert abs(last["added, x 0.1"] - last["concatenated, x 0.1"]) < 0.3
# Every scored target is one of the block's symbols, already in view: guess uniformly among the distinct
# symbols in view, a rule that reads no position. From t = 2 on the whole block is in view, so the rule
# scores ln 3, ln 2 or 0 as the block's 3 symbols (of 11) are all different, two alike or all one.
probe = tasks.lookback_task(4096, 8, 3, vocab_size=16, seed=1)
in_view = [math.log(len(set(xs[:t + 1]))) for xs, ys in zip(to_numpy(probe.x).tolist(), to_numpy(probe.y).tolist())
           for t in range(8) if ys[t] != tasks.IGNORE]
no_position = sum(in_view) / len(in_view)
no_position_exact = (11 * 10 * 9 * math.log(3) + 3 * 11 * 10 * math.log(2)) / 11**3
print(f"chance, a uniform guess over the 11 symbols: ln 11 = {math.log(11):.2f} nats; a uniform guess among the "
      f"symbols in view, which reads no position: {no_position:.2f} on 4096 sequences ({no_position_exact:.3f} expected)")
assert abs(no_position - no_position_exact) < 0.01
assert last["added"] > math.log(11) - 0.1 > no_position + 1 and min(last.values()) > no_position

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.4))
for name, losses in curves.items():
    ax.plot(losses, label=name, ls="-" if name.startswith("added") else "--")
ax.axhline(math.log(11), color="gray", lw=0.8, ls=":")
ax.text(99, math.log(11) + 0.03, "chance", ha="right", fontsize=8, color="gray")
ax.axhline(no_position, color="gray", lw=0.8, ls="-.")
ax.text(99, no_position + 0.03, "a guess among the symbols in view (no position)", ha="right", fontsize=8, color="gray")
ax.set(xlabel="step", ylabel="training loss (nats)", title="Look 3 back at length 8: how position enters")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# After 100 steps adding and concatenating end within a tenth of a nat of each other, both at full
# scale (2.41 and 2.41) and at a tenth (1.71 and 1.79); at full size both sit at chance, at a tenth
# both learn. Chance is a low bar here. Every scored target is a symbol already in view, so a rule
# that reads no position at all, a uniform guess among the symbols in view, scores 0.99 nats. At
# 2.41 the full-size models have not even learned to copy a symbol from the context; the tenth-size
# ones, at 1.71 and 1.79, are still above that bar too. That is one seed and 100 steps. The experiment
# `python -m experiments.chapter02_adding` trains the same four models
# (with the fast kernels of
# [chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)) for 600 steps on five
# seeds (every arm of a seed from the same weights and batches) and scores each on 1024 held-out
# sequences, drawn apart from the training batches. Held out is not unseen here: look 3 back has
# only $11^3 = 1331$ sequences, and every seed's training batches draw all of them (the cell's first
# line), so the held-out loss measures how well a model fits the task, not how it generalises.
# "Left chance" is the first step where the mean training loss over 10 steps falls below 2.2 nats.
# Its committed result:

# %% tags=["nbval-check-output"]
from mini_transformer.engine.optim import cosine_lr
from mini_transformer.evaluation import stats

from experiments.common import load_result

adding = load_result("chapter02_adding")


def sequences(x):
    """The distinct look-3-back sequences in a batch: the first 3 tokens fix the rest."""
    return {tuple(row[:3]) for row in to_numpy(x).tolist()}


# the held-out draws as the experiment makes them (`run` in experiments/chapter02_adding.py), and each
# seed's training batches as `train` asks for them: one generator, seeded with the seed, step after step
held_out = sequences(tasks.lookback_task(adding["environment"]["test_sequences"], 8, 3, vocab_size=16, seed=10_008).x)
trained_on = []
for seed in adding["seeds"]:
    g = rng(seed)
    trained_on.append(set().union(*(sequences(lookback_batches(g)[0]) for _ in range(adding["steps"]))))
print(f"look 3 back has {11**3} sequences; the training batches of every seed draw {min(map(len, trained_on))} of "
      f"them; the {adding['environment']['test_sequences']} held-out draws hold {len(held_out)}, every one in "
      f"every seed's training batches")
assert all(len(t) == 11**3 and held_out <= t for t in trained_on)
print(f"{len(adding['seeds'])} seeds, {adding['steps']} steps; per seed:")
for arm in adding["arms"]:
    rows = adding["per_seed"][arm]
    print(f"  {arm:<18} left chance at step " + " ".join(f"{r['left_chance_at']:>3}" for r in rows)
          + ";  loss at step 100 " + " ".join(f"{r['loss_at_100']:.2f}" for r in rows)
          + ";  held-out loss at the end " + " ".join(f"{r['held_out_loss']:.3f}" for r in rows))
exits = {arm: stats.t_interval([r["left_chance_at"] for r in adding["per_seed"][arm]]) for arm in adding["arms"]}
for arm, (mean, hw, _, _) in exits.items():
    print(f"{arm:<18} leaves chance at step {mean:.0f} ± {hw:.0f}")


def exit_delay(later, earlier, digits):
    """How many steps later one arm leaves chance than another, paired by seed: per seed, and mean ± 95%."""
    d = [a["left_chance_at"] - b["left_chance_at"] for a, b in zip(adding["per_seed"][later], adding["per_seed"][earlier])]
    mean, _, lo, hi = stats.t_interval(d)
    return d, stats.format_interval(mean, lo, hi, digits), lo, hi


delays = {"concatenated after added, full size": exit_delay("concatenated", "added", 0),
          "concatenated after added, x 0.1": exit_delay("concatenated_x0.1", "added_x0.1", 1),
          "added full size after added x 0.1": exit_delay("added", "added_x0.1", 0)}
for name, (d, interval, _, _) in delays.items():
    print(f"{name:<36} per seed {' '.join(f'{v:+d}' for v in d)}: {interval} steps")
settled = adding["claims"]
for key, digits in (("added_minus_concatenated_x0.1_at_100", 3), ("added_minus_concatenated_x0.1", 3),
                    ("added_minus_concatenated", 2), ("full_minus_tenth_at_100", 2), ("full_minus_tenth_at_end", 2)):
    print(f"{key:<37} {stats.format_record(settled[key], digits)}")
print(f"learning rate at step 99: {cosine_lr(99, 3e-3, 10, 100, 3e-4):.1e} in the 100-step cell above, "
      f"{cosine_lr(99, 3e-3, 10, 600, 3e-4):.2e} in these 600-step runs")
c6a, c6a_100, c6b = (settled[k] for k in ("added_minus_concatenated_x0.1", "added_minus_concatenated_x0.1_at_100",
                                           "added_minus_concatenated"))
learned = [math.log(11) - r["loss_at_100"] for arm in ("added_x0.1", "concatenated_x0.1") for r in adding["per_seed"][arm]]
print(f"added minus concatenated, x 0.1, at step 100: from {c6a_100['interval'][0]:+.3f} to "
      f"{c6a_100['interval'][1]:+.3f} nats; by step 100 the tenth-size arms are {min(learned):.2f} to "
      f"{max(learned):.2f} nats below chance")
print(f"added minus concatenated, x 0.1, held-out loss at the end: from {c6a['interval'][0]:+.4f} to "
      f"{c6a['interval'][1]:+.4f} nats (the interval alone: {c6a['interval_verdict']} at the bar {c6a['threshold']}); "
      f"per seed at most {max(c6a['values']):.3f}")
print("added minus concatenated, full size, held-out loss at the end, per seed: "
      + " ".join(f"{v:+.2f}" for v in c6b["values"]))
tenth_accuracy = [r["held_out_accuracy"] for arm in ("added_x0.1", "concatenated_x0.1") for r in adding["per_seed"][arm]]
print(f"tenth-size arms at the end: held-out accuracy {min(tenth_accuracy):.3f} or more")
assert 0.05 < c6a_100["interval"][1] < 0.1 < min(learned) and min(tenth_accuracy) >= 0.998
assert (c6a_100["threshold"], c6a_100["interval_verdict"], c6a_100["verdict"]) == (0.05, "not established", "not tested here")
assert (c6a["threshold"], c6a["interval_verdict"], c6a["verdict"]) == (0.05, "reproduces", "not tested here")
# the bar decides this interval's own verdict (it holds 0), and not C6b's, which holds 0 and 0.05 alike
assert c6a["interval"][0] < 0 < c6a["interval"][1] < 0.05 and max(c6a["values"]) < 0.05
assert c6b["interval"][0] < 0 < 0.05 < c6b["interval"][1]
assert settled["full_minus_tenth_at_end"]["verdict"] == "reproduces"
assert all(r["left_chance_at"] is not None for r in adding["per_seed"]["added"])
assert all(v > 0 for v in delays["concatenated after added, full size"][0]) and delays["concatenated after added, full size"][2] > 0
assert delays["concatenated after added, x 0.1"][2] < 0 < delays["concatenated after added, x 0.1"][3]

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.4))
for i, arm in enumerate(adding["arms"]):
    for j, r in enumerate(adding["per_seed"][arm]):
        ax.plot(r["losses"], color=f"C{i}", lw=0.7, alpha=0.7, ls="-" if arm.startswith("added") else "--",
                label=arm if j == 0 else None)
ax.axhline(math.log(11), color="gray", lw=0.8, ls=":")
ax.set(xlabel="step", ylabel="training loss (nats)", title="Look 3 back, 600 steps, five seeds per arm")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# Read the intervals (95%, over the five seeds, paired) against the book's claim and against the
# 100-step cell.
#
# * **Adding against concatenating, at a tenth of the scale: not tested here.** The claim needs a
#   size, since "mostly does not interfere" allows some cost; the bar, here and at full size, is
#   0.05 nats, a convention borrowed from the bar chapter 7 uses for "runs long", not a size the
#   book's words give. The bar decides one interval's own verdict, the end-of-training one at a
#   tenth: from -0.0013 to +0.0127 nats lies below 0.05 but holds 0. On the held-out loss at step
#   600 adding costs 0.006 ± 0.007 nats (the interval alone: reproduces), at most 0.014 in any
#   seed, and both arms end near their floor (held-out accuracy 0.998 or more, loss 0.003 to 0.017
#   nats). The floor hides no cost that an arm pays by failing to learn: on the same loss at the
#   same step the full-size table's, 1.21 ± 0.41 nats (below), shows plainly. What this task
#   cannot do is crowd the channels. The table's 8 rows and the 16 token rows take at most 24 of
#   the 32 channels (the norm cell), so the model can keep content and position in separate
#   subspaces exactly, the book's own first reason. The book states no condition under which adding
#   would interfere: it says only that position and content "share the same $d$ dimensions", which
#   "looks like it should cause interference and mostly does not". This chapter reads that
#   interference as needing tokens that fill every channel the table uses, as in a language model
#   with far more tokens than channels. That reading is this chapter's, an explanation not tested
#   here. The byte-level text models of §9 meet its condition, but no concatenated arm was trained
#   on them; this task does not meet it. So the verdict is not tested here, for that missing condition (the
#   record's stated reason), with the interval's own "reproduces" beside it, on this task only. At step 100
#   (1.07 to 1.47 nats) the training loss measures learning speed, not a trained model's cost:
#   adding minus concatenating is -0.084 ± 0.144 nats, from -0.229 to +0.060. The two arms also
#   leave chance within about 5 steps of each other: 1.6 ± 3.6 steps apart.
# * **The same at full size: not tested here.** On the held-out loss at the end, -0.03 ± 0.74 nats (the interval alone: not established):
#   per seed -0.95, -0.33, +0.45, +0.41, +0.27, so concatenating ends better in 3 of the 5 seeds.
#   The end losses scatter (0.67 to 1.62), and not in step with the exits (seed 2's added run leaves
#   chance first, at step 157, and ends at 1.257; seed 0's leaves at 191 and ends best, at 0.672).
#   At 0.67 to 1.62 these arms are still learning, far from the floor, so, as at step 100 at a
#   tenth, this difference may measure learning speed rather than interference; and the channels
#   are no more crowded at full size (24 of 32). So C6b, like C6a, is not tested here.
#   The exits themselves do differ: concatenating leaves chance later than adding in every seed,
#   by 121 ± 39 steps.
# * **The full-size table is a delayed start, not a wall.** The 100-step cell made it look stuck at
#   chance; in fact the added model leaves chance at step 192 ± 43, against 48 ± 5 with the table at
#   a tenth, a delay of 144 ± 38 steps paired by seed (concatenated at full size: step 313 ± 74). At
#   step 100 it is 1.19 ± 0.14 nats behind the tenth. The 100-step cell shows a smaller gap, 0.70
#   nats (2.41 against 1.71), because its tenth-size model learned less by step 100 than these runs
#   did (1.71, against 1.07 to 1.33). The two differ in their kernels (the cell's "reference", these
#   runs' fast ones) and in their schedule: the cell's cosine decay ends
#   at step 100, so its learning rate is down to 3.0e-04 at step 99, against 2.85e-03 at step 99 of a
#   600-step run. Which of the two is the reason is an explanation not tested here.
# * **...and the delay has not been made up by step 600:** the full-size added table is still
#   1.21 ± 0.41 nats behind (0.67 to 1.55 against 0.003 to 0.017). Whether a longer run closes the
#   gap, this run does not say.
#
# So at full size the scale matters, and the layout (with its frequencies, above) changes when the
# model leaves chance: concatenating leaves 121 ± 39 steps after adding, about as much as the full
# size delays the added model against a tenth (144 ± 38). Which layout *ends* better at full size is
# not settled: concatenating ends ahead in 3 of 5 seeds, and the interval, -0.03 ± 0.74, holds
# either answer. At a tenth of the scale adding against concatenating is -0.084 ± 0.144 nats at step
# 100, and the two leave chance within about 5 steps (1.6 ± 3.6). Why concatenating is the slower to leave chance
# at full size, this run does not isolate. A position row is 35 times the norm of a token row at
# initialisation. The original paper multiplies the embedding weights by $\sqrt{d_{model}}$ (Vaswani
# et al., §3.4, with no reason given); with this workbook's initialisation that takes a token row
# from 0.11 to 0.64, still 6 times shorter than a position row. A row drawn with standard deviation
# $\sigma$ has norm about $\sigma\sqrt{d_{model}}$, and times $\sqrt{d_{model}}$ about
# $\sigma d_{model}$; that equals $\sqrt{d_{model}/2}$ only for $\sigma = (2 d_{model})^{-1/2} = 0.125$
# (the norm cell). With $\sigma = d_{model}^{-1/2} = 0.177$ the token row would be the longer one,
# about 5.66 against 4. (The text models of section 9 do learn with the full-size table.)
#
# ## 8. Your encoding inside the model
#
# `from_functions.sinusoidal(sinusoidal_positional_encoding)` builds the
# scheme from your function: every forward pass asks it for the table and adds the rows of the
# tokens' positions. `train_side_by_side` trains the library's model and one running your
# function, in float64, on the same batches from the same start. With a correct function the two
# loss curves agree to rounding; with a wrong one the cell says at which step they part, and the
# plot shows both.

# %%
from exercises.adapters.side_by_side import train_side_by_side

small = GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8, positional="sinusoidal", seed=0)
yours = from_functions.sinusoidal(sinusoidal_positional_encoding)
side = train_side_by_side(small, yours, lookback_batches, steps=40)

# %% tags=["nbval-check-output"]
print(side.report())
assert side.first_difference is None

# %%
side.plot(yours="your function", title="The same model, two sources of the table");

# %% [markdown]
# ## 9. Past the training length
#
# The formula gives a row for any $t$, so a sinusoidal model runs at any length. But rows past
# the training length $L$ are vectors the model never saw. How far are they from the rows it did
# see? For $L = 32$ and $d_{model} = 64$, the sizes of the five-seed runs below, take each position
# $t$ up to $4L$, the length those runs are tested at, and find the most similar row among positions
# $0 \dots L - 1$ other than itself, by cosine.

# %%
L, d_model = 32, 64
pe = sinusoidal_positional_encoding(4 * L, d_model)  # (128, 64)
unit = pe / xp.linalg.norm(pe, axis=1, keepdims=True)
similar = unit @ unit[:L].T  # (128, 32)
similar[xp.arange(L), xp.arange(L)] = -1.0  # a row is not its own neighbour
nearest = to_numpy(similar.max(axis=1))  # (128,)

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(range(4 * L), nearest, ".", ms=3)
ax.axvline(L, color="k", ls=":", lw=1)
ax.text(L + 4, 0.3, "training length L", fontsize=8)
ax.set(xlabel="position t", ylabel="best cosine with a row t' < L",
       title="How close each row comes to a trained one (d_model = 64)")
fig.tight_layout()

# %% tags=["nbval-check-output"]
print(f"inside L: every row has a neighbour at cosine {nearest[:L].min():.3f} or more")
print(f"past L:   t = L {nearest[L]:.3f} (row L - 1 is one step back), t = L + 1 {nearest[L + 1]:.3f}, "
      f"t = 2L {nearest[2 * L]:.3f}, t = 4L - 1 {nearest[-1]:.3f}; the best match averages {nearest[L:].mean():.3f} over t = L .. 4L - 1")
flat = sum(abs(b - a) < 1e-12 for a, b in zip(nearest[L:], nearest[L + 1:]))
print(f"from t = L to 4L - 1 the best match is unchanged at {flat} of the {3 * L - 1} steps")
assert nearest[:L].min() > 0.95 and nearest[L:].mean() < 0.7
assert nearest[L + 1:].max() < nearest[:L].min() - 0.05  # from L + 1 on, no row comes as close as any inside
assert all(b <= a + 1e-12 for a, b in zip(nearest[L:], nearest[L + 1:]))  # and the best match never rises
assert flat == 79
# what the plateau is made of: pair i of rows t and s contributes cos((t - s) omega_i) to their summed cosine
for t_past in (2 * L, 4 * L - 1):
    best = int(similar[t_past].argmax())  # the best match among rows 0 .. L - 1
    per_pair = to_numpy(pe[t_past, 0::2] * pe[best, 0::2] + pe[t_past, 1::2] * pe[best, 1::2])  # (32,)
    fast, slow = per_pair[:20].mean(), per_pair[20:].mean()
    print(f"t = {t_past}: best match row {best}, offset {t_past - best}; mean cosine of pairs 0 to 19 {fast:.3f}, "
          f"of the 12 slowest, 20 to 31, {slow:.3f}")
    assert slow > 0.98 and fast < 0.4

# %% [markdown]
# Inside $L$ each row has a neighbour at cosine 0.966 or more. Row $L$ still has one, row $L - 1$,
# one step back, as every row inside has. From there the best match never rises: 0.884 at $L + 1$,
# 0.598 at $2L$, 0.579 at $4L - 1$, 0.614 on average over the positions $L$ to $4L - 1$. It falls in
# steps and is flat between them (unchanged at 79 of the 95 steps from $L$ on), a plateau near 0.6 past $2L$.
# The two sides of that comparison are unlike: every row has the same norm and the dot product
# depends only on the offset (§5), so the cosine of two rows depends only on their offset. A row
# inside has a trained row one step away; a row $t$ past $L$ has none nearer than $t - L + 1$ steps,
# and 0.884 at $L + 1$ is the cosine of any two rows two apart. Farther out the best match does not
# follow the distance: from $2L$ to $4L - 1$ the nearest trained row goes from 33 to 96 steps away
# while the best match moves only from 0.598 to 0.579. The plateau is made of the slow pairs: at
# the best match's offset (44 at $2L$, 101 at $4L - 1$) the 12 slowest pairs, 20 to 31, still agree
# almost fully, mean cosine 0.998 and 0.990, while pairs 0 to 19 have lost most of their agreement,
# 0.359 and 0.332 (the last two lines of the cell).
#
# What a trained model makes of that is measured over five seeds by
# `python -m experiments.short_long_seeds --seeds 0,1,2,3,4`: byte-level `TinyGPT`s
# ($d_{model} = 64$, 2 layers) trained on the standard library's source at $L = 32$ for 500
# steps, then run on windows of $4L$. The whole table, with every scheme, is shown and explained
# in [chapter 7, §7](07_alibi.py#7.-The-bake-off:-eight-schemes,-trained-at-L,-run-at-8L); here
# are its three rows this chapter needs: the table as the formula gives it, the same table scaled
# by $0.02\sqrt 2$ (so that its entries have the token rows' root mean square, 0.02), and no
# position at all. The *rise past $L$* is the loss at positions $L, L + L/8, L + 2L/8, \dots$ with the whole
# prefix in view minus with only the last $L$ tokens: near 0 for a model that runs long.

# %% tags=["nbval-check-output"]
sl = load_result("short_long_seeds")
by_arm = {arm: sl["per_seed"][arm] for arm in ("sinusoidal", "sinusoidal_scaled", "none")}


def over_seeds(values, digits=3):
    mean, _, lo, hi = stats.t_interval(values)
    return stats.format_interval(mean, lo, hi, digits)


print(f"trained at L = {sl['train_len']} for {sl['steps']} steps, batches of {sl['environment']['batch_size']}, "
      f"seeds {sl['seeds']}; mean ± 95% over seeds (nats)")
print(f"{'arm':<18}{'loss at L':>15}{'t >= L of 4L':>15}{'rise past L':>15}")
for arm, rows in by_arm.items():
    print(f"{arm:<18}" + "".join(f"{over_seeds([r[k] for r in rows]):>15}" for k in ("loss_L", "beyond_4L", "rise")))


def at_L(a, b):
    """Loss at L of arm a minus arm b, paired by seed."""
    return [x["loss_L"] - y["loss_L"] for x, y in zip(by_arm[a], by_arm[b])]


for a, b in (("sinusoidal", "none"), ("sinusoidal", "sinusoidal_scaled")):
    d = at_L(a, b)
    print(f"at L, {a} minus {b}: per seed {' '.join(f'{v:+.3f}' for v in d)}; {over_seeds(d)}")
for key in ("breaks_sinusoidal", "breaks_sinusoidal_scaled", "breaks_none", "sinusoidal_worse_than_none",
            "scale_matters", "scaled_sinusoidal_worse_than_none"):
    print(f"{key:<34} {stats.format_record(sl['claims'][key], 3)}")
scale, worse = sl["claims"]["scale_matters"], sl["claims"]["sinusoidal_worse_than_none"]
assert scale["seeds"] == worse["seeds"]  # paired by seed
share = [a / b for a, b in zip(scale["values"], worse["values"])]  # the part of each seed's gap the scaling removes
share_mean, _, share_lo, share_hi = stats.t_interval(share)
print(f"scale_matters / sinusoidal_worse_than_none, per seed: {' '.join(f'{v:.2f}' for v in share)}; "
      f"{stats.format_interval(share_mean, share_lo, share_hi, 2)}, from {share_lo:.2f} to {share_hi:.2f}")
assert min(share) > 0.5 and share_lo > 0.5
assert all(v > 0 for v in at_L("sinusoidal", "none")) and all(v > 0 for v in at_L("sinusoidal", "sinusoidal_scaled"))
assert all(sl["claims"][k]["verdict"] == "reproduces" for k in
           ("breaks_sinusoidal", "breaks_sinusoidal_scaled", "sinusoidal_worse_than_none", "scale_matters",
            "scaled_sinusoidal_worse_than_none"))

# %% [markdown]
# Past $L$ the table as the formula gives it breaks: its rise is 0.967 ± 0.417 nats over 5 seeds,
# and on the positions $t \ge L$ of the $4L$ windows it is worse than no position at all, by
# 0.910 ± 0.314 nats. Chapter 7's second chase splits that gap: the table's size is most of it
# (full size minus scaled: 0.682 ± 0.279; as a share of each seed's gap, 0.75 ± 0.13, from 0.62 to
# 0.88, and above one half in every seed), but the scaled table is still worse than no position
# past $L$ (0.228 ± 0.127), and its rise past $L$ is over 0.05 nats too: 0.404 ± 0.138 (C7c). Why
# rows the model never saw do harm (for instance, that attention
# fitted to the rows of positions $0 \dots L - 1$ misreads the new ones) is an explanation not
# tested here: no run here measures where these models' heads attend past $L$. No
# position at all is not immune either: its rise is 0.098 ± 0.036 nats. Why, is again an
# explanation not tested here: it has no table to misread, but a causal model learns some
# position from its mask ([chapter 1, §5](01_order_blind.py#5.-What-a-NoPE-model-learns-from-the-leak)),
# and the longer windows are contexts it never trained on. No run here separates those two from
# anything else that changes past $L$.
#
# At $L$ itself the full-size table is no help here: it is worse than no position at all in all
# 5 seeds (0.100 ± 0.073 nats), and worse than the scaled table in all 5 (0.132 ± 0.068 nats).
# The same comparison at $L = 64$, with 600 steps, batches of 16
# and three seeds, is `python -m experiments.input_schemes_at_train_len`,
# which trains chapter 7's bake-off model with the table as the formula gives it, scaled by
# $0.02\sqrt 2$, and with no position:

# %% tags=["nbval-check-output"]
at_64 = load_result("input_schemes_at_train_len")
for arm in ("sinusoidal", "sinusoidal_scaled", "none"):
    print(f"{arm:<18} loss at L = {at_64['train_len']}, seeds {at_64['seeds']}: "
          + "  ".join(f"{r['loss_at_L']:.3f}" for r in at_64["per_seed"][arm]))
size_cost = at_64["claims"]["sinusoidal_minus_scaled"]
print(f"{at_64['steps']} steps, batches of {at_64['environment']['batch_size']}")
print(f"full size minus scaled, paired: {stats.format_record(size_cost)}")
print(f"none minus scaled, paired: {stats.format_record(at_64['claims']['none_minus_sinusoidal_scaled'], 3)}")
full_minus_none = [x["loss_at_L"] - y["loss_at_L"] for x, y in zip(at_64["per_seed"]["sinusoidal"], at_64["per_seed"]["none"])]
_, _, fmn_lo, fmn_hi = stats.t_interval(full_minus_none)
print(f"full size minus none, paired: per seed {' '.join(f'{v:+.3f}' for v in full_minus_none)}; "
      f"{over_seeds(full_minus_none)}, from {fmn_lo:+.3f} to {fmn_hi:+.3f}")
assert fmn_lo < 0 < fmn_hi
assert size_cost["verdict"] == "not established"
assert at_64["claims"]["none_minus_sinusoidal_scaled"]["verdict"] == "reproduces"

# %% [markdown]
# At $L = 64$ the full-size table costs 0.15 ± 0.20 nats against the scaled one: not established
# with three seeds (C6e). The scaled runs agree with each other (2.030 to 2.048 nats), the
# full-size runs do not (2.107 to 2.243), as on the small task of section 7. Against no position
# the full-size table is not distinguishable here: 0.026 ± 0.180 nats, from -0.154 to +0.206, per
# seed -0.056, +0.082, +0.052. The interval holds 0, and holds the table being better by 0.15 as
# well as worse by 0.21; and for a gap under 0.05 nats this workbook's rule asks for five seeds,
# not three. Not established. The scaled
# table beats no position by 0.125 ± 0.023. The five seeds at $L = 32$ above are a different run
# (500 steps against 600, batches of 8 against 16, another training length): there the size costs
# at $L$ in every seed (0.132 ± 0.068), which settles it for that run, at $L = 32$. At $L = 64$ the
# question stays open. Chapter 3 (§9) uses the scaled arm for the comparison with a learned table.
#
# ## 10. Check yourself on this chapter
#
# Answer out loud, or on paper, before you open an answer.
#
# **1.** The least-squares affine map from $\mathrm{bits}(t)$ to $\mathrm{bits}(t+1)$ gets a bit
# wrong by about 1.0 (section 1). Which positions are hard for it, and what operation would it need?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The positions where a long carry runs. The worst is 31 (011111) to 32 (100000), where all six
# bits flip: it misses by 1.020. Where one or two bits flip the map misses by at most 0.526, and
# the worst error grows with each further bit the carry runs through (0.763, 0.860, 0.952). Bit
# $b$ of $t + 1$ is bit $b$ of $t$ XOR the carry (the AND of bits $0 \dots b-1$), and not even
# the shortest carry is affine: the new bit 1 is $b_1 \oplus b_0$, which no affine map of the bits
# gives (section 1). That is why no affine map is exact. Why the
# least-squares error grows with the carry, the fit does not separate from how rare the long
# carries are (1 row with six flips, 32 with one). (Without the intercept the fit would also miss
# $0 \to 1$ by exactly 1, since a linear map sends 0 to 0: that is why section 1 adds one.) The
# sinusoidal pairs have no carry: each pair turns on its own, by a fixed angle. Section 4's
# least-squares fit predicts every row to below $10^{-12}$ and matches $M_1$ to below $10^{-9}$.
# </details>

# %% [markdown]
# **2.** Suppose your `shift_rotation` used the block
# $\begin{bmatrix}\cos & -\sin\\ \sin & \cos\end{bmatrix}$, chapter 6's $R(\varphi)$ (the transpose
# of the book's $R(\phi)$). Which position would $M_k\,PE(t)$ encode, and which of the grader's
# named mistakes is this?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Position $t - k$. The pair is (sin, cos), sine first; chapter 6's $R(\varphi)$ turns (cos, sin)
# forward, so on (sin, cos) it turns backward. The grader names it "the block turns the wrong way"
# (`rotates_backwards`). The check that catches it is the one in section 4:
# `pe[k:] == pe[:-k] @ M.T` with $k \ne 0$.
# </details>

# %% [markdown]
# **3.** $PE_0\cdot PE_k$ goes *up* from $k = 5$ to $k = 6$ for $d_{model} = 64$ (section 3).
# Why there?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Two fast clocks turn back up at once. Pair 0 turns one radian per token, so its term $\cos k$
# climbs back towards 1 as $k$ nears $2\pi \approx 6.3$: +0.677 from 5 to 6. Pair 1 turns 0.750 rad
# per token, so at $k = 5$ it is already past $\pi$ (3.75 rad) and climbing too: +0.609. The slower
# pairs 2 to 5 still fall, by 0.027, 0.307, 0.310 and 0.228; with the remaining pairs the
# net is +0.055; take away either fast pair and the step is a fall (section 3's cell). The sum of cosines falls as a
# trend (block means 22.9 down to 12.2, C4c, the book's claim) but every single term is periodic,
# which is why a stricter reading, "falls at every step", fails at 82 of 199 steps (C4b). The book's
# caption says only that the dot product "decays with distance"; section 3's right panel, our
# drawing of what that caption describes, shows the wiggles.
# </details>

# %% [markdown]
# **4.** In section 7 the full-size table kept the look-3-back model at chance (2.40 nats, far
# above the 0.99 of a guess among the symbols in view, which reads no position) for 100 steps,
# added or concatenated, while a table scaled by 0.1 learned; over five seeds of 600 steps the
# added model left chance only at step 192 ± 43, against 48 ± 5. What do the two norms
# the chapter printed suggest, and what does this chapter's evidence leave open?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# A position row has norm $\sqrt{d_{model}/2} = 4$; a token row, drawn with standard deviation
# 0.02, about 0.11, 35 times shorter. One explanation, not tested here: after the first LayerNorm
# the token's identity is a small wobble on a large positional vector, so attention and the MLP
# see nearly the same input for every token at a given position, and the gradient that would grow
# the token rows is small. No run in this chapter measures the token rows' norms or their
# gradients, and the explanation does not say why concatenating, which gives the tokens channels
# of their own, leaves chance later still (121 ± 39 steps after adding, in every seed). What the
# runs do show: with the table at a tenth the model leaves chance at step 48 ± 5, and at step 100
# adding minus concatenating is -0.084 ± 0.144 nats, from -0.229 to +0.060 (learning speed), and
# at the end 0.006 ± 0.007 (C6a is still not tested here: 24 rows fit in 32 channels, so nothing
# crowds the tokens, the condition this chapter, not the book, reads into the claim).
# Multiplying the token rows by $\sqrt{d_{model}}$, as the original paper does, still leaves the
# table about 6 times longer with this initialisation (0.64 against 4); whether that removes the
# delay is not run here. The full-size model is not stuck for good: it
# leaves chance at step 192 ± 43, but at step 600 it is still 1.21 ± 0.41 nats behind the tenth.
# </details>

# %% [markdown]
# **5.** Past the training length the sinusoidal model is *worse* than the model without any
# position: by 0.910 ± 0.314 nats on the positions $t \ge L$, over five seeds (section 9). How can
# extra information hurt, and how much of the answer has this workbook measured?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Two parts, with different evidence. Measured: most of the gap is the table's size. Scaled to the
# token rows, the table is 0.682 ± 0.279 nats better past $L$ than at full size, a share of each
# seed's gap of 0.75 ± 0.13 (from 0.62 to 0.88, above one half in every seed), and still
# 0.228 ± 0.127 worse than no position (section 9, from chapter 7's second chase). Not measured:
# the mechanism. The rows past $L$ are vectors the model never saw (section 9, at $L = 32$ up to
# $4L$: best cosine to a trained row 0.614 on average, 0.579 at $4L - 1$, against at least 0.966
# inside, where every row has a trained row one step away, while a row $t$ past $L$ has none
# nearer than $t - L + 1$ steps); that heads fitted to the old rows then attend to the wrong
# places is one explanation, not tested here. And the model without position is not untouched
# past $L$: its own rise is 0.098 ± 0.036 nats. Chapter 1 shows a causal model without position
# learns some position from its mask, and the longer windows are contexts it never trained on; that these explain its rise
# is, again, an explanation not tested here.
# </details>

# %% [markdown]
# **6.** The dot product $PE(m)\cdot PE(n)$ is the same for $n = m - 2$ and $n = m + 2$. How can
# a head still attend to "two back" and not "two ahead"?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The score is not the raw dot product but $PE(m)^\top W_q W_k^\top PE(n)$, and $W_q W_k^\top$
# need not be symmetric. With $W_q W_k^\top = M_k$ the score is $PE(m)\cdot PE(n + k)$, which
# peaks at $n = m - k$: section 5 found that key, $k = 3$ back, for queries 3 to 63. One head's
# $W_q W_k^\top$ has rank at most $d_{head}$, so it cannot equal $M_k$, which has full rank; section
# 5 keeps $M_3$'s blocks on 4 of the 16 pairs (rank 8, the $d_{head}$ of section 7's model) and
# the key 3 back still scores highest for all 61 queries, as it must (every kept cosine peaks
# there); the margin, next to nothing for pairs 12 to 15, and the softmax weight are what vary. That is on the raw table; a pre-norm model
# such as section 7's normalises token plus table first, which section 5 does not check. In a
# decoder the causal mask also removes the keys ahead.
# </details>

# %% [markdown]
# ## 11. The ledger, settled
#
# Rows citing `exact §N` are computations without sampling, asserted in that section; rows citing
# `result NAME/KEY` are 95% intervals over seeds, read by the verdict rule of
# [`chapters/README.md`](README.md) ("Evidence and the verdict rule").
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1a | A shift is not a fixed linear map of binary bits (book §1) | least-squares affine map of the bits (linear plus an intercept): worst error 1.020, at $t = 31$, where all six bits flip; at most 0.526 where one or two flip (§1) | exact §1 | reproduces |
# | C1b | ... and smooth waves fix that (book §1) | least-squares linear map of the sinusoids: worst error below $10^{-12}$, and it matches $M_1$ to below $10^{-9}$ (§4) | exact §4 | reproduces |
# | C2 | $PE(t + k)$ is a fixed rotation of $PE(t)$ (book §2.1, survey §3.2.2) | one $M_5$ moves every row of a 1100-row table, error below $10^{-12}$; orthogonal, $M_2 M_3 = M_5$ (§4) | exact §4 | reproduces |
# | C3 | $PE(m)\cdot PE(n) = \sum_i\cos((m-n)\omega_i)$, a function of $m - n$ (survey §3.2.2) | equal to the formula at every $(m, n) < 64$, to below $10^{-12}$; even in $m - n$ as well: two back from 3 equals two ahead from 50 (§5) | exact §5 | reproduces |
# | C4a | The dot product peaks at $s = t$ (book §1) | peak 32 at $s = t$ (§3) | exact §3 | reproduces |
# | C4b | A stricter reading of C4 than the book's "decays with distance": the dot product falls at every step away from $s = t$ (this chapter, §3) | rises at 82 of 199 steps, first from $k = 5$ to 6, where pairs 0 and 1 turn back up together (§3) | exact §3 | does not reproduce |
# | C4c | The dot product decays with distance, the book's claim, read as a trend: the first 20 offsets above the last 20 of 200 (book §1) | means over blocks of 20 offsets: 22.9 for the first, 12.2 for the last, though up at 2 of the 9 steps between blocks (§3) | exact §3 | reproduces |
# | C5a | The shortest wavelength is $2\pi \approx 6.3$ tokens (book §2.1) | $2\pi$ at every $d_{model}$ (§2) | exact §2 | reproduces |
# | C5b | The longest is about $2\pi\cdot 10000 \approx 63\,000$ tokens, read at $d_{model} = 512$, within 5% (book §2.1) | $2\pi\cdot\mathrm{base}^{(d-2)/d}$: 60 611 at $d_{model} = 512$, the paper's width; only 47 117 at 64 (§2) | exact §2 | reproduces |
# | C6a | Adding the table instead of concatenating "mostly does not" interfere, read as: adding costs under 0.05 nats, the bar chapter 7 uses for "runs long" (book §2.1) | table at a tenth, held-out loss at step 600: 0.006 ± 0.007 nats over 5 seeds, at most 0.014 in any seed, so the interval alone says reproduces; the same loss shows the full-size table's cost, 1.21 ± 0.41 (C6d); but this chapter reads the claim's interference as needing channels crowded by tokens (its reading, not tested: the book states no condition, and the text models of §9 meet it with no concatenated arm), and here the table's 8 rows and the 16 token rows fit in 24 of the 32 channels, so content and position can be kept apart exactly; at step 100 the training loss measures learning speed, -0.084 ± 0.144 nats (§7) | result chapter02_adding/added_minus_concatenated_x0.1 | not tested here |
# | C6b | ... also with the table at full size: under the same 0.05 nats (book §2.1) | held-out loss at step 600, as for C6a (at step 100 both full-size arms are still at chance, 2.40 to 2.41 nats in every seed): -0.03 ± 0.74 nats over 5 seeds, per seed -0.95 to +0.45: concatenating ends better in 3 of 5; the arms are still learning here (0.67 to 1.62 nats), so this may measure learning speed, not interference, and the channels are as uncrowded as for C6a; the interval alone says not established (§7) | result chapter02_adding/added_minus_concatenated | not tested here |
# | C6c | A full-size table added to GPT-2-sized token rows (35 times their norm) costs loss early on (this chapter, §7) | 1.19 ± 0.14 nats above the tenth-size table at step 100, over 5 seeds; it leaves chance at step 192 ± 43, not 48 ± 5 (§7) | result chapter02_adding/full_minus_tenth_at_100 | reproduces |
# | C6d | ... and the cost lasts to step 600 (this chapter, §7) | still 1.21 ± 0.41 nats above the tenth at step 600, over 5 seeds (§7) | result chapter02_adding/full_minus_tenth_at_end | reproduces |
# | C6e | On text at $L = 64$, 600 steps, the full-size table costs loss at the training length against one scaled to the token rows (this chapter, §9) | 0.15 ± 0.20 nats at $L = 64$, 3 seeds of 600 steps (§9) | result input_schemes_at_train_len/sinusoidal_minus_scaled | not established |
# | C7a | Past the training length the sinusoids give rows farther from every row of positions $0 \dots L - 1$ than any of those rows is from its nearest neighbour, from $L + 1$ on (this chapter, §9) | best cosine with a row inside: 0.966 at $t = L$ (row $L - 1$ is one step back), 0.884 at $L + 1$ (no trained row nearer than two steps), never rising, 0.598 at $2L$, then a plateau to 0.579 at $4L - 1$ (unchanged at 79 of the 95 steps from $L$ on), 0.614 on average, against at least 0.966 inside, where every row has a trained row one step away ($L = 32$, $d_{model} = 64$, §9) | exact §9 | reproduces |
# | C7b | Extrapolation in practice is weaker than the argument for sinusoids suggests: the loss past $L$ rises by over 0.05 nats (book §2.1, survey §3.2.2) | rise past $L$ at $4L$, the table at full size: 0.967 ± 0.417 nats over 5 seeds, trained at $L = 32$ (§9) | result short_long_seeds/breaks_sinusoidal | reproduces |
# | C7c | ... also with the table scaled to the token rows, so that its size does not confound C7b: the rise past $L$ is over 0.05 nats (book §2.1, survey §3.2.2) | rise past $L$ at $4L$, the table scaled by $0.02\sqrt 2$: 0.404 ± 0.138 nats over 5 seeds, trained at $L = 32$ (§9) | result short_long_seeds/breaks_sinusoidal_scaled | reproduces |
#
# C7b reads the record from which [chapter 7, §7](07_alibi.py#7.-The-bake-off:-eight-schemes,-trained-at-L,-run-at-8L)
# settles every scheme's run past $L$. C7a is this chapter's own measurement of the geometry, not
# a claim of the book, and no run here shows that it is the cause of C7b. The same record holds a
# comparison C6e leaves open, in a different run: at $L = 32$ (500 steps, batches of 8, 5 seeds)
# the full-size table costs 0.132 ± 0.068 nats at $L$ against the scaled one, in all 5 seeds (§9).
# That settles it for that run, not for C6e's ($L = 64$, 600 steps, batches of 16). No claim
# record holds that difference (the cell computes it from the per-seed losses), so it is not a row
# of its own.
#
# ## 12. Where next
#
# * Grade your exercises: `python -m exercises grade sinusoidal`. A function you have not touched
#   is "not attempted"; a wrong one gets layered feedback, down to the name of the mistake when it
#   is a known one.
# * Drill the table from a blank file against the clock: `python -m exercises drill sinusoidal`
#   (target 6 minutes), then `python -m exercises drill sinusoidal --grade`.
# * The library's version is `mini_transformer/positional/sinusoidal.py`.
# * The interview questions this chapter answers are in
#   [`chapters/cards/02_sinusoidal.md`](cards/02_sinusoidal.md).
# * Chapter 3 replaces the formula with a table the model learns, and meets the limit a formula
#   does not have.
