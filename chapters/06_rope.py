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
# # Chapter 6. Rotary position embedding (RoPE)
#
# Attention sees a bag of vectors: permute the tokens and the outputs permute with them.
# RoPE tells it the order by *rotating* each query and each key by an angle that grows with
# its position. You build it here from a single 2-D rotation, and you check every claim on
# numbers as you go.
#
# You write eight functions in [`exercises/rope.py`](../exercises/rope.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 6.1 | `rotate_half(x)` | the quarter turn of every rotate-half pair |
# | 6.2 | `apply_rotary(x, cos, sin)` | rotate queries or keys by their positions |
# | 6.3 | `RotaryEmbedding(d_head, base, scaling, factor)` | the cos and sin tables, with linear and NTK scaling |
# | 6.4 | `relative_score(q, k, m, n, rotary)` | the score of a query at `m` against a key at `n` |
# | 6.5 | `wavelength_table(d_head, base)` | how many tokens each pair needs for one turn |
# | 6.6 | `rotate_interleaved(x)` | the quarter turn in the other pairing convention |
# | 6.7 | `apply_rotary_interleaved(x, cos, sin)` | RoPE in the other convention |
# | 6.8 | `interleaved_to_half_permutation(d_head)` | the channel order that converts between them |
#
# How to work: read a section, write the function in `exercises/rope.py`, and grade it with
# `python -m exercises grade rope` (or `python -m pytest tests/test_exercises.py`). Then rerun
# the section here. Each section loads its function with `use(...)`, which prints whether it
# runs **yours** or the **reference**. Until you write a function, the reference stands in, so
# the chapter always runs top to bottom.
#
# The layout is the book's everywhere: queries and keys are `(B, H, T, d_head)`.

# %%
import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.backend import asarray, rng, to_numpy, xp

g = rng(0)  # one seeded generator for the whole chapter


def randn(*shape):
    """Standard normal float64 numbers on the active backend."""
    return g.normal(size=shape, dtype="float64")


# %% [markdown]
# ## 1. The goal
#
# An attention score is a dot product, $s = \langle q_m, k_n \rangle$, between the query of
# token $m$ and the key of token $n$. You want it to depend on the positions only through the
# offset $n - m$. And you want to get there by transforming *each vector on its own*, with
# only its own position:
#
# $$\langle f(q, m),\, f(k, n) \rangle = g(q, k, n - m).$$
#
# The "on its own" part matters. A key computed once can then be stored and reused by every
# later query (section 7).
#
# Adding a position vector does not do it. With $\tilde q = q + p_m$ and $\tilde k = k + p_n$,
#
# $$\langle q + p_m, k + p_n \rangle = q\cdot k + q\cdot p_n + p_m\cdot k + p_m\cdot p_n,$$
#
# and the two cross terms depend on $m$ and $n$ themselves. Check it with the sinusoidal
# encoding: the same offset, 2, gives two different scores.

# %%
from mini_transformer.positional.sinusoidal import sinusoidal_positional_encoding

d = 8
q, k = randn(d), randn(d)
pe = sinusoidal_positional_encoding(200, d)  # (200, d)


def additive_score(m, n):
    return float((q + pe[m]) @ (k + pe[n]))


# %% tags=["nbval-check-output"]
for m, n in [(3, 1), (103, 101)]:
    print(f"added sinusoids: score(m={m}, n={n}) = {additive_score(m, n):+.4f}")
assert abs(additive_score(3, 1) - additive_score(103, 101)) > 1e-3  # same offset, different score

# %% [markdown]
# ## 2. One pair: a rotation
#
# Start in two dimensions. Rotating by the angle $\varphi$ is
#
# $$R(\varphi) = \begin{bmatrix}\cos\varphi & -\sin\varphi\\ \sin\varphi & \cos\varphi\end{bmatrix}.$$
#
# Two facts carry the whole method.
#
# * $R$ is orthogonal: $R(\varphi)^\top R(\varphi) = I$, so $R(\varphi)^\top = R(-\varphi)$.
# * Rotations add up: $R(a)\,R(b) = R(a + b)$.
#
# Rotate position $m$ by $m\theta$ and write $R_m = R(m\theta)$. Then
# $R_m^\top R_n = R(-m\theta)\,R(n\theta) = R_{n-m}$.

# %%
def R(phi):
    """The 2-D rotation by phi, a (2, 2) array."""
    c, s = math.cos(phi), math.sin(phi)
    return asarray([[c, -s], [s, c]], dtype="float64")


# %% tags=["nbval-check-output"]
theta = 0.3
m, n = 7, 2
checks = {
    "R^T R = I": xp.allclose(R(1.1).T @ R(1.1), xp.eye(2)),
    "R(a) R(b) = R(a + b)": xp.allclose(R(0.4) @ R(1.3), R(1.7)),
    "R_m^T R_n = R_(n-m)": xp.allclose(R(m * theta).T @ R(n * theta), R((n - m) * theta)),
}
for name, ok in checks.items():
    print(f"{name:<22} {bool(ok)}")
assert all(checks.values())

# %% [markdown]
# Now the proof, in three lines. Rotate the query by its position and the key by its own:
#
# $$\langle R_m q,\, R_n k\rangle = (R_m q)^\top (R_n k) = q^\top R_m^\top R_n\, k = q^\top R_{n-m}\, k.$$
#
# The absolute positions cancel. Only $n - m$ is left. Check it: offsets $(3, 1)$ and
# $(103, 101)$ give one score, $(3, 2)$ another.

# %%
q2, k2 = randn(2), randn(2)


def score_2d(m, n):
    return float((R(m * theta) @ q2) @ (R(n * theta) @ k2))


# %% tags=["nbval-check-output"]
for m, n in [(3, 1), (103, 101), (3, 2)]:
    print(f"rotated pair: score(m={m}, n={n}) = {score_2d(m, n):+.6f}")
assert math.isclose(score_2d(3, 1), score_2d(103, 101), rel_tol=1e-9)
assert not math.isclose(score_2d(3, 1), score_2d(3, 2), rel_tol=1e-3)

# %% [markdown]
# A picture of the same fact: a query and a key at positions $(0, 1)$, then both moved three
# tokens on, to $(3, 4)$. Both arrows turn by the same angle, so the angle between them, and
# with it the dot product, stays.

# %%
fig, ax = plt.subplots(figsize=(4, 4))
for (pm, pn), style in [((0, 1), "-"), ((3, 4), "--")]:
    for vec, p, color, name in [(q2, pm, "C0", "q"), (k2, pn, "C1", "k")]:
        v = to_numpy(R(p * theta) @ vec)
        ax.annotate("", xy=v, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=color, linestyle=style))
        ax.text(*(1.08 * v), f"{name} at {p}", color=color, fontsize=8)
lim = 1.3 * float(max(xp.linalg.norm(q2), xp.linalg.norm(k2)))
ax.set_xlim(-lim, lim)
ax.set_ylim(-lim, lim)
ax.set_aspect("equal")
ax.set_title("positions (0, 1), solid, and (3, 4), dashed")
fig.tight_layout()

# %% [markdown]
# ## 3. The complex view
#
# Read the pair $(a, b)$ as the complex number $z = a + \mathrm{i}b$. Rotation by $\varphi$ is
# then multiplication by $e^{\mathrm{i}\varphi}$:
#
# $$(a + \mathrm{i}b)(\cos\varphi + \mathrm{i}\sin\varphi) = (a\cos\varphi - b\sin\varphi) + \mathrm{i}\,(b\cos\varphi + a\sin\varphi).$$
#
# The dot product of two pairs is $\Re(z_1 \bar z_2)$, so the score becomes
#
# $$\langle R_m q, R_n k\rangle = \Re\!\left(q_z e^{\mathrm{i}m\theta}\,\overline{k_z e^{\mathrm{i}n\theta}}\right) = \Re\!\left(q_z \bar k_z\, e^{\mathrm{i}(m-n)\theta}\right).$$
#
# The phases subtract. That is the proof again, in one line.

# %%
def as_complex(pair):
    return complex(float(pair[0]), float(pair[1]))


# %% tags=["nbval-check-output"]
phi = 0.9
rotated = as_complex(R(phi) @ q2)
multiplied = as_complex(q2) * complex(math.cos(phi), math.sin(phi))
print("R(phi) q equals q_z * e^(i phi):", abs(rotated - multiplied) < 1e-12)
m, n = 5, 2
via_phase = (as_complex(q2) * as_complex(k2).conjugate() * complex(math.cos((m - n) * theta), math.sin((m - n) * theta))).real
print("score equals Re(q_z conj(k_z) e^(i(m-n)theta)):", math.isclose(score_2d(m, n), via_phase, rel_tol=1e-12))
assert abs(rotated - multiplied) < 1e-12 and math.isclose(score_2d(m, n), via_phase, rel_tol=1e-12)

# %% [markdown]
# ## 4. Many dimensions
#
# A head has $d_{head}$ channels, not two. Split them into $d_{head}/2$ pairs and give pair
# $i$ its own frequency,
#
# $$\theta_i = \mathrm{base}^{-2i/d_{head}}, \qquad i = 0, \dots, d_{head}/2 - 1, \qquad \mathrm{base} = 10000.$$
#
# Position $m$ rotates pair $i$ by $m\theta_i$. Stacked, that is a block-diagonal matrix,
#
# $$R_m = \mathrm{diag}\big(R(m\theta_0), R(m\theta_1), \dots, R(m\theta_{d/2-1})\big),$$
#
# which is orthogonal, and $R_m^\top R_n = R_{n-m}$ block by block. The three-line proof holds
# unchanged.
#
# Which channels form a pair is a convention. This book pairs channel $i$ with channel
# $i + d_{head}/2$ (the *rotate-half* convention of GPT-NeoX and Hugging Face's LLaMA). Then
# you never build $R_m$. With $x = [x_1, x_2]$ split into halves,
#
# $$R_m x = x \odot \cos + \mathrm{rotate\_half}(x) \odot \sin, \qquad \mathrm{rotate\_half}([x_1, x_2]) = [-x_2, x_1],$$
#
# where the row of the cos table is $[\cos m\theta_0, \dots, \cos m\theta_{d/2-1}, \cos m\theta_0, \dots, \cos m\theta_{d/2-1}]$:
# every angle twice, once for each half.
#
# ### Exercise 6.1: `rotate_half`
#
# Write `rotate_half(x)` for `x` of shape `(..., d)`: return `[-x2, x1]`. Do not write into `x`.

# %%
rotate_half = use("rope", "rotate_half")

# %% tags=["answer"]
reveal("rope", "rotate_half")

# %% tags=["nbval-check-output"]
x4 = asarray([1.0, 2.0, 3.0, 4.0])
print("rotate_half([1, 2, 3, 4]) =", [float(v) for v in rotate_half(x4)])
assert xp.allclose(rotate_half(x4), asarray([-3.0, -4.0, 1.0, 2.0]))
x = randn(2, 3, 5, 8)
assert xp.allclose(rotate_half(rotate_half(x)), -x)  # two quarter turns make a half turn
print("two quarter turns give -x:", True)

# %% [markdown]
# ### Exercise 6.2: `apply_rotary`
#
# For the pair $(a, b) = (x_i, x_{i+d/2})$ at angle $t$,
#
# $$(a, b) \mapsto (a\cos t - b\sin t,\; b\cos t + a\sin t).$$
#
# Write `apply_rotary(x, cos, sin)` for `x` of shape `(..., T, d_head)` and tables of shape
# `(T, d_head)`. Return the dtype of `x`: a float32 model stays float32.

# %%
apply_rotary = use("rope", "apply_rotary")

# %% tags=["answer"]
reveal("rope", "apply_rotary")

# %% [markdown]
# Check it against the matrix you did not build: place $R(m\theta_i)$ on channels
# $(i, i + d/2)$ of a $d \times d$ identity, and multiply.

# %%
def block_rotation(m, d, base=10000.0):
    """R_m as an explicit (d, d) matrix in the rotate-half pairing."""
    Rm = [[0.0] * d for _ in range(d)]
    for i in range(d // 2):
        c, s = math.cos(m * base ** (-2 * i / d)), math.sin(m * base ** (-2 * i / d))
        a, b = i, i + d // 2
        Rm[a][a], Rm[a][b], Rm[b][a], Rm[b][b] = c, -s, s, c
    return asarray(Rm, dtype="float64")


def tables(m, d, base=10000.0):
    """The (1, d) cos and sin rows of position m, written out from the formula."""
    angles = [m * base ** (-2 * (j % (d // 2)) / d) for j in range(d)]
    return asarray([[math.cos(a) for a in angles]]), asarray([[math.sin(a) for a in angles]])


# %% tags=["nbval-check-output"]
d, m = 8, 5
v = randn(d)
cos_m, sin_m = tables(m, d)
rotated = apply_rotary(v[None, :], cos_m, sin_m)[0]
print("apply_rotary equals the block-diagonal R_m:", bool(xp.allclose(rotated, block_rotation(m, d) @ v)))
print("the norm is preserved:", bool(xp.isclose(xp.linalg.norm(rotated), xp.linalg.norm(v))))
assert xp.allclose(rotated, block_rotation(m, d) @ v)

# %% [markdown]
# ### Exercise 6.3: `RotaryEmbedding`
#
# The tables come from one small class. `RotaryEmbedding(d_head)` stores
# $\theta_i = \mathrm{base}^{-2i/d_{head}}$ in `self.inv_freq`; calling it with `(T, offset)`
# returns `(cos, sin)`, each `(T, d_head)`, for the positions `offset, ..., offset + T - 1`.
# Section 5 adds the `scaling` argument; write it now or come back.

# %%
RotaryEmbedding = use("rope", "RotaryEmbedding")

# %% tags=["answer"]
reveal("rope", "RotaryEmbedding")

# %% [markdown]
# For $d_{head} = 8$ the frequencies are $10000^{-i/4}$: exactly $1, 0.1, 0.01, 0.001$.
# Check that, the duplication across the halves, and the offset: the tables of three
# positions from offset 5 are rows 5 to 7 of the tables from 0.

# %% tags=["nbval-check-output"]
rope8 = RotaryEmbedding(8)
print("theta_i for d_head = 8:", [f"{float(t):.4g}" for t in rope8.inv_freq])
cos, sin = rope8(16)
print("tables:", tuple(cos.shape), tuple(sin.shape))
assert xp.allclose(rope8.inv_freq, asarray([1.0, 0.1, 0.01, 0.001]))
assert xp.allclose(cos[:, :4], cos[:, 4:]) and xp.allclose(sin[:, :4], sin[:, 4:])  # each angle twice
assert xp.allclose(cos[0], 1.0) and xp.allclose(sin[0], 0.0)  # position 0 does not rotate
c5, s5 = rope8(3, offset=5)
assert xp.allclose(c5, cos[5:8]) and xp.allclose(s5, sin[5:8])
print("rope(3, offset=5) equals rows 5..7 of rope(16):", True)

# %% [markdown]
# One more check, the one reference implementations are built on: pair $(x_i, x_{i+d/2})$ read
# as $z_i = x_i + \mathrm{i}\,x_{i+d/2}$ and multiplied by $e^{\mathrm{i}m\theta_i}$ must give
# what `apply_rotary` gives.

# %% tags=["nbval-check-output"]
d, T, offset = 16, 6, 9
x = randn(2, 3, T, d)  # (B, H, T, d_head)
cos, sin = RotaryEmbedding(d)(T, offset=offset)
y = apply_rotary(x, cos, sin)  # (B, H, T, d_head)
z = x[..., : d // 2] + 1j * x[..., d // 2:]  # (B, H, T, d/2) one complex number per pair
angles = xp.arange(offset, offset + T)[:, None] * RotaryEmbedding(d).inv_freq[None, :]  # (T, d/2)
zr = z * xp.exp(1j * angles)
print("apply_rotary equals complex multiplication:", bool(xp.allclose(y, xp.concatenate([zr.real, zr.imag], axis=-1))))
assert xp.allclose(y, xp.concatenate([zr.real, zr.imag], axis=-1))

# %% [markdown]
# ### Exercise 6.4: `relative_score`
#
# The score that this chapter is about, as a function:
#
# $$s(m, n) = \langle R_m q,\, R_n k\rangle.$$
#
# Write `relative_score(q, k, m, n, rotary)`: rotate `q` (shape `(d_head,)`) to position `m`,
# `k` to position `n`, return the dot product as a float. This is the property test an
# interviewer asks for after you write the rotation.

# %%
relative_score = use("rope", "relative_score")

# %% tags=["answer"]
reveal("rope", "relative_score")

# %% tags=["nbval-check-output"]
rope64 = RotaryEmbedding(64)
q, k = randn(64), randn(64)
for m, n in [(3, 1), (103, 101), (3, 2)]:
    print(f"score(m={m}, n={n}) = {relative_score(q, k, m, n, rope64):+.6f}")
assert math.isclose(relative_score(q, k, 3, 1, rope64), relative_score(q, k, 103, 101, rope64), rel_tol=1e-9)
assert not math.isclose(relative_score(q, k, 3, 1, rope64), relative_score(q, k, 3, 2, rope64), rel_tol=1e-5)

# %% [markdown]
# All positions at once: the matrix $S_{mn} = s(m, n)$ must be constant along every diagonal
# (a Toeplitz matrix), because a diagonal is a fixed $n - m$.

# %% tags=["nbval-check-output"]
P = 24
S = [[relative_score(q, k, m, n, rope64) for n in range(P)] for m in range(P)]
diagonals_constant = all(math.isclose(S[m][n], S[0][n - m] if n >= m else S[m - n][0], rel_tol=1e-9, abs_tol=1e-9)
                         for m in range(P) for n in range(P))
print(f"S ({P} x {P}) is constant along every diagonal:", diagonals_constant)
assert diagonals_constant

# %% [markdown]
# How does the score move with the distance? Take $k = q$ and slide the key away. The sum of
# $d/2$ cosines at different frequencies falls off on average, but not monotonically: a single
# pair is periodic, so nothing forbids a far key from scoring higher than a near one.

# %%
dist = list(range(0, 400))
same = [relative_score(q, q, 0, t, rope64) for t in dist]
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(dist, same)
ax.set_xlabel("n - m (tokens)")
ax.set_ylabel("score of q against itself")
ax.set_title("RoPE score of one vector against itself, by distance (d_head = 64)")
fig.tight_layout()

# %% [markdown]
# ## 5. The wavelength ladder
#
# Pair $i$ turns once every
#
# $$\lambda_i = \frac{2\pi}{\theta_i} = 2\pi\cdot \mathrm{base}^{2i/d_{head}}$$
#
# tokens. Pair 0 turns once every $2\pi \approx 6.3$ tokens and tells neighbours apart; the
# last pair needs nearly $2\pi\cdot\mathrm{base}$ tokens and tells far positions apart.
#
# ### Exercise 6.5: `wavelength_table`
#
# Write `wavelength_table(d_head, base)`: the `(d_head/2,)` wavelengths.

# %%
wavelength_table = use("rope", "wavelength_table")

# %% tags=["answer"]
reveal("rope", "wavelength_table")

# %% [markdown]
# For $d_{head} = 128$ the exponent is $2i/128 = i/64$, so every 16 pairs multiply the wavelength
# by $10000^{16/64} = 10$. Where does it pass 8192 tokens, a common training length? Work it by
# hand: $2\pi\cdot 10^{i/16} > 8192$ needs $i/16 > \log_{10}(8192/2\pi) \approx 3.115$, so
# $i \ge 50$.

# %% tags=["nbval-check-output"]
lam = wavelength_table(128, 10000.0)
for i in [0, 16, 32, 48, 63]:
    print(f"pair {i:>2}: wavelength {float(lam[i]):>9.1f} tokens")
first_long = int(xp.argmax(lam > 8192))
print("first pair that never completes a turn in 8192 tokens:", first_long)
assert first_long == 50 and math.isclose(float(lam[16]), 20 * math.pi)

# %% [markdown]
# The frequency bands, drawn: $\sin(m\theta_i)$ for five pairs of a 64-dimensional head. Pair
# 0 completes a cycle every 6 tokens; pair 31 hardly moves across 64 positions.

# %%
pos = xp.arange(64)
theta64 = RotaryEmbedding(64).inv_freq
fig, ax = plt.subplots(figsize=(7, 3))
for i in [0, 4, 8, 16, 31]:
    ax.plot(to_numpy(pos), to_numpy(xp.sin(pos * theta64[i])), label=f"pair {i}")
ax.set_xlabel("position m")
ax.set_ylabel("sin(m theta_i)")
ax.legend(fontsize=8, loc="lower left")
ax.set_title("RoPE frequency bands, d_head = 64")
fig.tight_layout()

# %% [markdown]
# ### Stretching the ladder: linear and NTK scaling
#
# A model trained on $L$ tokens never saw the angles of positions beyond $L$. Two cheap ways to
# run it longer, by a factor $s$ (the `scaling` and `factor` arguments of Exercise 6.3):
#
# * **linear** (position interpolation): use position $m/s$. Every angle stays in the trained
#   range, but neighbours are now only $\theta_0/s$ apart.
# * **NTK-aware**: keep the positions, raise the base, $\mathrm{base}' = \mathrm{base}\cdot s^{d/(d-2)}$.
#   The exponent is chosen so that $\theta_0 = 1$ stays and the last pair slows by exactly $s$:
#   $\theta'_{d/2-1} = (\mathrm{base}\cdot s^{d/(d-2)})^{-(d-2)/d} = \theta_{d/2-1}/s$.

# %% tags=["nbval-check-output"]
s = 4.0
plain, linear, ntk = RotaryEmbedding(64), RotaryEmbedding(64, scaling="linear", factor=s), RotaryEmbedding(64, scaling="ntk", factor=s)
c_lin, _ = linear(1, offset=8)
c_plain, _ = plain(1, offset=2)
print("linear, factor 4, at position 8 equals plain at position 2:", bool(xp.allclose(c_lin, c_plain)))
print(f"NTK theta_0: {float(ntk.inv_freq[0]):.6f}")
print(f"NTK slows the last pair by: {float(plain.inv_freq[-1] / ntk.inv_freq[-1]):.6f}")
assert xp.allclose(c_lin, c_plain)
assert math.isclose(float(ntk.inv_freq[0]), 1.0) and math.isclose(float(plain.inv_freq[-1] / ntk.inv_freq[-1]), s)

# %%
fig, ax = plt.subplots(figsize=(6, 3))
pairs = list(range(32))
ax.semilogy(pairs, to_numpy(wavelength_table(64)), label="plain")
ax.semilogy(pairs, to_numpy(s * wavelength_table(64)), label=f"linear, s = {s:g} (in original positions)")
ax.semilogy(pairs, to_numpy(wavelength_table(64, base=ntk.base)), label=f"NTK, s = {s:g}")
ax.set_xlabel("pair i")
ax.set_ylabel("wavelength (tokens)")
ax.legend(fontsize=8)
ax.set_title("Linear scaling stretches every pair; NTK leaves the fast ones")
fig.tight_layout()

# %% [markdown]
# ## 6. Two pairing conventions
#
# The RoFormer paper, and Meta's original LLaMA code, pair *neighbouring* channels,
# $(x_{2i}, x_{2i+1})$. Their tables repeat each angle in neighbouring columns,
# $[\cos m\theta_0, \cos m\theta_0, \cos m\theta_1, \cos m\theta_1, \dots]$ (the
# *repeat-interleave* layout), and the quarter turn is
#
# $$\mathrm{rotate\_interleaved}([x_0, x_1, x_2, x_3, \dots]) = [-x_1, x_0, -x_3, x_2, \dots].$$
#
# Both are RoPE. They rotate different pairs of channels, so a model trained with one is a
# different function under the other.
#
# ### Exercises 6.6 and 6.7: `rotate_interleaved` and `apply_rotary_interleaved`

# %%
rotate_interleaved, apply_rotary_interleaved = use("rope", "rotate_interleaved", "apply_rotary_interleaved")

# %% tags=["answer"]
reveal("rope", "rotate_interleaved")

# %% tags=["answer"]
reveal("rope", "apply_rotary_interleaved")

# %% [markdown]
# The interleaved form is the complex view with no reshuffling: $z_i = x_{2i} + \mathrm{i}\,x_{2i+1}$.

# %% tags=["nbval-check-output"]
print("rotate_interleaved([1, 2, 3, 4]) =", [float(v) for v in rotate_interleaved(x4)])
d, T = 8, 5
x = randn(2, T, d)
theta8 = RotaryEmbedding(d).inv_freq
angles = xp.arange(T)[:, None] * theta8[None, :]  # (T, d/2)
cos_i, sin_i = xp.repeat(xp.cos(angles), 2, axis=-1), xp.repeat(xp.sin(angles), 2, axis=-1)  # repeat-interleave
zr = (x[..., 0::2] + 1j * x[..., 1::2]) * xp.exp(1j * angles)  # (2, T, d/2)
y = apply_rotary_interleaved(x, cos_i, sin_i)
print("interleaved RoPE equals complex multiplication:", bool(xp.allclose(y, xp.stack([zr.real, zr.imag], axis=-1).reshape(x.shape))))
assert xp.allclose(y, xp.stack([zr.real, zr.imag], axis=-1).reshape(x.shape))

# %% [markdown]
# ### Exercise 6.8: the channel permutation
#
# The two conventions are the same rotation with the channels relabelled. Rotate-half channel
# $i$ must hold what the interleaved layout keeps in channel $2i$, and channel $i + d/2$ what it
# keeps in channel $2i+1$:
#
# $$\mathrm{perm} = (0, 2, 4, \dots, d-2,\; 1, 3, \dots, d-1), \qquad
# \mathrm{RoPE_{half}}(x[\mathrm{perm}]) = \mathrm{RoPE_{interleaved}}(x)[\mathrm{perm}].$$
#
# Write `interleaved_to_half_permutation(d_head)`, the index array `perm` with that property,
# so that `x[..., perm]` is interleaved data in rotate-half order. Its inverse, `argsort(perm)`,
# goes back, and it also turns the rotate-half tables into repeat-interleave tables.

# %%
interleaved_to_half_permutation = use("rope", "interleaved_to_half_permutation")

# %% tags=["answer"]
reveal("rope", "interleaved_to_half_permutation")

# %% tags=["nbval-check-output"]
perm = interleaved_to_half_permutation(8)
back = xp.argsort(perm)  # the inverse permutation: rotate-half order back to interleaved
print("perm for d_head = 8:        ", [int(p) for p in perm])
print("argsort(perm), the way back:", [int(p) for p in back])
cos, sin = RotaryEmbedding(8)(T)
assert xp.allclose(cos[:, back], cos_i) and xp.allclose(sin[:, back], sin_i)
x = randn(1, 2, T, 8)  # (B, H, T, d_head), read as interleaved-layout data
same_rotation = xp.allclose(apply_rotary(x[..., perm], cos, sin),
                            apply_rotary_interleaved(x, cos_i, sin_i)[..., perm])
print("rotate-half RoPE of x[perm] equals interleaved RoPE of x, permuted:", bool(same_rotation))
assert same_rotation

# %% [markdown]
# ### The porting bug
#
# Take the query and key projections trained with interleaved RoPE (Meta's original LLaMA
# release is one such checkpoint) and load them into code that uses rotate-half RoPE (the
# Hugging Face form). Nothing crashes. Shapes match. The scores are simply different, and the
# model quietly gets worse. Permuting each head's output channels of $W_q$ and $W_k$ by `perm`
# (columns in this book's `x @ W` layout; rows in a PyTorch `(out, in)` weight) repairs it
# exactly. It is a per-head permutation: one `perm` of length $H d_{head}$ over all the columns
# at once mixes the heads and is wrong too. $W_v$ is not rotated and needs nothing.

# %% tags=["nbval-check-output"]
d_model, n_heads, d_head, T = 16, 2, 8, 10
W_q = randn(d_model, n_heads * d_head) / 4  # "the checkpoint": trained with interleaved RoPE
W_k = randn(d_model, n_heads * d_head) / 4
x = randn(T, d_model)
cos, sin = RotaryEmbedding(d_head)(T)  # rotate-half tables
perm = interleaved_to_half_permutation(d_head)
back = xp.argsort(perm)
cos_i, sin_i = cos[:, back], sin[:, back]  # repeat-interleave tables
head_perm = xp.concatenate([h * d_head + perm for h in range(n_heads)])  # perm inside each head's columns


def heads(y):
    return y.reshape(T, n_heads, d_head).transpose(1, 0, 2)  # (H, T, d_head)


def scores_interleaved(W_q, W_k):
    q, k = heads(x @ W_q), heads(x @ W_k)
    return apply_rotary_interleaved(q, cos_i, sin_i) @ apply_rotary_interleaved(k, cos_i, sin_i).transpose(0, 2, 1)


def scores_half(W_q, W_k):
    q, k = heads(x @ W_q), heads(x @ W_k)
    return apply_rotary(q, cos, sin) @ apply_rotary(k, cos, sin).transpose(0, 2, 1)  # (H, T, T)


reference_scores = scores_interleaved(W_q, W_k)
naive = scores_half(W_q, W_k)
ported = scores_half(W_q[:, head_perm], W_k[:, head_perm])
whole = interleaved_to_half_permutation(n_heads * d_head)  # one permutation across all the heads
mixed = scores_half(W_q[:, whole], W_k[:, whole])
print("weights loaded as they are, same scores:", bool(xp.allclose(naive, reference_scores)))
print("each head's output channels permuted by perm, same scores:", bool(xp.allclose(ported, reference_scores)))
print("one perm over all heads' channels, same scores:", bool(xp.allclose(mixed, reference_scores)))
assert not xp.allclose(naive, reference_scores) and xp.allclose(ported, reference_scores)
assert not xp.allclose(mixed, reference_scores)

# %% [markdown]
# How to catch it in a real port: rotate one layer's $q$ in both codebases and compare the
# arrays, before you look at any loss.
#
# ## 7. The KV cache
#
# When a model generates text it adds one token at a time. A KV cache keeps the keys and values
# of earlier tokens so each step only computes the new token's. RoPE fits this perfectly,
# because a key's rotation depends on its own position only:
#
# $$\tilde k_n = R_n k_n \text{ is written once, when token } n \text{ arrives;}\qquad \tilde q_t = R_t\, q_t \text{ at step } t.$$
#
# The cached $\tilde k_n$ stays valid for every later query. The one thing to get right is $t$:
# the new token's position is the number of tokens already in the cache, not 0.
#
# Below is one causal self-attention layer written with arrays, with a full forward pass and a
# cached one.

# %%
class CausalSelfAttention:
    """One causal self-attention layer with RoPE, in plain arrays, with a KV cache."""

    def __init__(self, d_model, n_heads, seed=0):
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        w = rng(seed)
        self.W_q, self.W_k, self.W_v, self.W_o = (
            w.normal(0.0, 1 / math.sqrt(d_model), (d_model, d_model), dtype="float64") for _ in range(4))
        self.rope = RotaryEmbedding(self.d_head)

    def heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.n_heads, self.d_head).transpose(0, 2, 1, 3)  # (B, H, T, d_head)

    def attend(self, q, k, v, q_pos, k_pos):
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(self.d_head)  # (B, H, T_q, T_k)
        scores = xp.where(k_pos[None, :] <= q_pos[:, None], scores, -xp.inf)  # no peeking at the future
        weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        out = weights @ v  # (B, H, T_q, d_head)
        B, H, T, _ = out.shape
        return out.transpose(0, 2, 1, 3).reshape(B, T, self.d_model) @ self.W_o  # (B, T_q, d_model)

    def forward(self, x):
        """The whole sequence at once, positions 0 .. T-1."""
        T = x.shape[1]
        q, k, v = self.heads(x @ self.W_q), self.heads(x @ self.W_k), self.heads(x @ self.W_v)
        cos, sin = self.rope(T)
        pos = xp.arange(T)
        return self.attend(apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v, pos, pos)

    def step(self, x_new, cache, offset):
        """New tokens at positions offset .. offset + T_new - 1, attending to the cache and themselves."""
        T_new = x_new.shape[1]
        q, k, v = self.heads(x_new @ self.W_q), self.heads(x_new @ self.W_k), self.heads(x_new @ self.W_v)
        cos, sin = self.rope(T_new, offset=offset)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # each key is rotated here, once
        if cache is not None:  # keys are stored already rotated, so the cache never re-rotates them
            k, v = xp.concatenate([cache["k"], k], axis=2), xp.concatenate([cache["v"], v], axis=2)
        T_k = k.shape[2]
        return self.attend(q, k, v, xp.arange(T_k - T_new, T_k), xp.arange(T_k)), {"k": k, "v": v}


def decode(layer, x, prefill, reset_position=False):
    """Prefill the first tokens together, then one token per step; returns (B, T, d_model)."""
    out, cache = layer.step(x[:, :prefill], None, offset=0)
    outs = [out]
    for t in range(prefill, x.shape[1]):
        offset = 0 if reset_position else cache["k"].shape[2]  # the bug resets the position to 0
        out, cache = layer.step(x[:, t:t + 1], cache, offset=offset)
        outs.append(out)
    return xp.concatenate(outs, axis=1)


# %% [markdown]
# The check that catches every cache bug: cached outputs must equal the full forward pass, at
# every position.

# %% tags=["nbval-check-output"]
layer = CausalSelfAttention(d_model=16, n_heads=2, seed=3)
x = randn(2, 8, 16)  # (B, T, d_model)
full = layer.forward(x)


def matches_full(cached):
    """Per position: do the cached outputs equal the full forward pass?"""
    return [bool(xp.allclose(cached[:, t], full[:, t], atol=1e-10)) for t in range(x.shape[1])]


good = matches_full(decode(layer, x, prefill=4))
bad = matches_full(decode(layer, x, prefill=4, reset_position=True))
print("position:                  ", " ".join(f"{t:>3}" for t in range(8)))
print("cache, correct offsets:    ", " ".join(f"{'ok' if ok else 'BAD':>3}" for ok in good))
print("cache, position reset to 0:", " ".join(f"{'ok' if ok else 'BAD':>3}" for ok in bad))
assert all(good) and all(bad[:4]) and not any(bad[4:])

# %% [markdown]
# The prefill positions are fine in both runs, and the bug only shows once decoding starts:
# that is why it slips through a test that only checks the first forward pass. Every decoded
# token is rotated as if it sat at position 0, so its query sees the cached keys at the wrong
# offsets.
#
# ## 8. RoPE in TinyGPT, trained on a position-sensitive task, against none
#
# Now put RoPE in a real model. `TinyGPT` takes the scheme by name, and its attention calls the
# scheme's `rotate` hook on every query and key. With the default `kernels="reference"` that hook
# computes `x * cos + rotate_half(x) * sin`, the formula of your `apply_rotary` above
# (`mini_transformer/functional.py`, `apply_rotary`); `GPTConfig(kernels="fast")` swaps in
# `mini_transformer/kernels/rope.py`, the same numbers as matrix products, faster. The task
# is *copy*: a row of random symbols, a separator, then the same symbols again. To write the
# symbol that comes $n + 1$ places back, a token must find the key exactly $n + 1$ positions
# behind it: a pure question of relative position.
#
# The same model with `positional="none"` gets no position at all. The causal mask still leaks
# a little order (a token sees how many tokens came before it), so it does not fail completely,
# but it has no direct way to say "the one $n + 1$ back".

# %%
from mini_transformer import data
from mini_transformer.autograd import no_grad
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.train import TrainConfig, train


def train_on_copy(positional, n=8, steps=200, seed=0):
    """Train a small TinyGPT on the copy task; return (training losses, accuracy per copied position)."""
    cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=4, max_len=2 * n, positional=positional, seed=seed)
    model = TinyGPT(cfg)

    def batches(g):
        b = data.copy_task(32, n, vocab_size=16, seed=int(g.host.integers(2**31)))
        return b.x, b.y

    result = train(model, batches, TrainConfig(steps=steps, lr=3e-3, warmup=20, seed=seed, progress=False))
    test = data.copy_task(256, n, vocab_size=16, seed=10_000)  # held-out rows
    with no_grad():
        pred = to_numpy(model(test.x).data).argmax(-1)
    correct = pred[:, n:] == to_numpy(test.y)[:, n:]  # the copied half is what is scored
    return result.losses, correct.mean(axis=0)


runs = {name: train_on_copy(name) for name in ("rope", "none")}
for name, (losses, acc) in runs.items():
    print(f"{name:>5}: final training loss {losses[-1]:.3f}, copy accuracy {acc.mean():.1%}")

# %%
fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.2))
for name, (losses, acc) in runs.items():
    ax_loss.plot(losses, label=name)
    ax_acc.plot(range(1, len(acc) + 1), acc, marker="o", label=name)
ax_loss.set(xlabel="step", ylabel="training loss (nats)", yscale="log", title="copy task")
ax_acc.set(xlabel="position in the copied half", ylabel="accuracy", ylim=(0, 1.05), title="held-out accuracy")
ax_acc.legend()
plt.tight_layout()
plt.show()
assert runs["rope"][1].mean() > 0.95 and runs["rope"][1].mean() > runs["none"][1].mean() + 0.2

# %% [markdown]
# RoPE learns the copy almost perfectly in a few hundred steps; without position the model is
# stuck far below. Both runs are seeded, so you see the same curves every time; change `seed`
# or `steps` in `train_on_copy` to see how robust the gap is.

# %% [markdown]
# ## 9. Past the training length: what the tiny model shows
#
# Section 5 stretched the wavelength ladder on paper. The experiment
# `python -m mini_transformer.experiments.context_extension` does it on a trained model: a RoPE
# `TinyGPT` trained on the standard library's source at length $L = 64$, then run at $4L$ with
# each method of the scaling family, zero-shot and after a short fine-tune at $4L$. Its full run
# takes minutes, so the chapter reads the committed result instead of retraining.

# %%
import json
import os

from mini_transformer.experiments import context_extension
from mini_transformer.experiments.common import RESULTS

with open(os.path.join(RESULTS, "context_extension.json")) as f:
    ext = json.load(f)
L = ext["train_len"]
print(f"trained at L = {L}, run at 4L = {ext['target_len']}; held-out loss in nats per byte")
print(f"{'method':<14}{'at L':>8}{'at 4L':>8}{'at L, tuned':>13}{'at 4L, tuned':>14}")
for name, r in ext["methods"].items():
    print(f"{name:<14}{r['loss_at_L']:>8.2f}{r['loss_at_4L']:>8.2f}{r['finetuned_loss_at_L']:>13.2f}"
          f"{r['finetuned_loss_at_4L']:>14.2f}")
fig = context_extension.plot(ext)
plt.show()

# %% [markdown]
# Read the table against the sources' claims, and check each on its numbers:
#
# * **Unscaled RoPE breaks past $L$**: the slow pairs meet angles they never saw.
# * **Position interpolation costs something at $L$**: dividing every frequency by 4 squeezes the
#   fast pairs too, so the model's local patterns blur, and a short fine-tune does not fully undo it.
# * **Per-pair methods do better**: NTK, YaRN and the searched factors leave the fast pairs almost
#   alone and stretch the slow ones.
#
# One claim does **not** reproduce here: PI is not *far* below unscaled RoPE at $4L$ zero-shot,
# and in shorter runs it is even worse. A model this small leans on the fast pairs, which PI
# disturbs, more than on the slow ones, which extrapolation breaks. The sources' picture comes
# from models with 128-channel heads trained on thousands of tokens.

# %%
m = ext["methods"]
assert m["none"]["loss_at_4L"] > m["none"]["loss_at_L"] + 0.5            # unscaled RoPE breaks
assert m["linear (PI)"]["loss_at_L"] > m["none"]["loss_at_L"] + 0.5      # PI pays at L
assert m["searched"]["loss_at_4L"] < m["linear (PI)"]["loss_at_4L"]      # per-pair factors beat one factor
assert min(m["ntk"]["loss_at_4L"], m["yarn"]["loss_at_4L"]) < m["linear (PI)"]["loss_at_4L"]
print("each claim above holds on the committed run")

# %% [markdown]
# ## 10. Check yourself
#
# Answer out loud, or on paper, before you open an answer.
#
# **1. Implement RoPE and prove the relative-position property.**
# Follow-up: why does RoPE work with a KV cache more smoothly than T5's relative bias?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Split the head into $d_{head}/2$ pairs and rotate pair $i$ at position $m$ by $m\theta_i$,
# $\theta_i = \mathrm{base}^{-2i/d_{head}}$. In code: the outer product of positions and
# `inv_freq` gives the angles, concatenated with themselves so both channels of a pair share
# one; then `x * cos + rotate_half(x) * sin` with `rotate_half([x1, x2]) = [-x2, x1]`.
# Proof: $R$ is orthogonal, so $R_m^\top = R_{-m}$; rotations add, so $R_m^\top R_n = R_{n-m}$;
# hence $\langle R_m q, R_n k\rangle = q^\top R_m^\top R_n k = q^\top R_{n-m} k$. Test: the score
# at $(3, 1)$ equals the one at $(103, 101)$ and differs from $(3, 2)$.
#
# Follow-up: RoPE rotates each key once, at write time, with its own absolute position, so a
# cached key is correct for every later query and a step does no per-pair work. A relative bias
# depends on the pair $(i, j)$, so every step must build a bias for the new row of scores and
# add it to the score matrix, which fused attention kernels never materialise.
# </details>

# %% [markdown]
# **2. Why does a Transformer need positional information at all, and does a decoder-only model?**
# Follow-up: what does that imply for a bidirectional encoder?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Self-attention is permutation-equivariant: permute the input rows and the output rows permute
# the same way, nothing else changes. Without positions a sequence is a set. A decoder-only
# model gets a weak signal from the causal mask itself (token $i$ sees exactly $i + 1$ tokens,
# so the count of visible tokens encodes position), and such models can learn some positional
# behaviour with no explicit encoding, but they do worse, so everyone adds a scheme.
#
# Follow-up: an encoder has no mask to fall back on. Without an encoding it is exactly
# permutation-equivariant and cannot tell word orders apart; removing the encoding from a
# BERT-style model drops order-sensitive tasks to the bag-of-words baseline.
# </details>

# %% [markdown]
# **3. What does base 10000 mean in RoPE, and what happens when you change it?**
# Follow-up: how does that relate to NTK-aware scaling?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# It sets the geometric range of the wavelengths. Pair $i$ turns at
# $\theta_i = \mathrm{base}^{-2i/d_{head}}$, so pair 0 has period $2\pi$ tokens and the last pair
# about $2\pi\cdot\mathrm{base}$: for $d_{head} = 128$, from about 6 tokens to about 54 000
# (section 5). A larger base lengthens the slow wavelengths, so positions stay distinguishable
# further out before the slowest pair wraps; a smaller base does the opposite. Long-context
# models such as Llama 3 raise the base at pretraining time.
#
# Follow-up: NTK-aware scaling pulls the same lever after training,
# $\mathrm{base}' = \mathrm{base}\cdot s^{d/(d-2)}$, chosen so $\theta_0 = 1$ is untouched and the
# slowest pair stretches by $s$. Position interpolation instead divides every position by $s$
# and so compresses the fast pairs too, the ones that carry local order.
# </details>

# %% [markdown]
# **4. You have an 8k model and need 128k. Walk through the options.**
# Follow-up: what breaks in serving at 128k?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# First ask what 128k is for: retrieval from anywhere in the window, or only tolerating long
# inputs; the evaluation differs. Feeding 128k tokens to a model trained at 8k puts the angles
# 16 times outside the trained range and perplexity explodes, so something must change. With no
# fine-tuning budget, NTK-aware base scaling buys perhaps 2 to 4 times, with some loss. With a
# budget, position interpolation at $s = 16$ plus a few hundred to a thousand steps on genuinely
# long documents is the documented path, and YaRN does better by interpolating only the bands
# whose wavelength exceeds the original context (plus a softmax temperature correction). Beyond
# about 8 times, expect to need long training documents, not only more steps. Evaluate with
# needle-in-a-haystack and multi-document QA: long-text perplexity is dominated by local context
# and stays flat while long-range retrieval fails.
#
# Follow-up: the KV cache. At about 0.5 MiB per token for a 7B model, 128k tokens is 64 GiB for
# one sequence, so the batch collapses to 1 and throughput with it. Mitigations: grouped-query
# attention, cache quantisation, sliding-window or hybrid layers, prefix caching. Prefill's
# quadratic attention also dominates, hence chunked prefill.
# </details>

# %% [markdown]
# **5. ALiBi versus RoPE.**
# Follow-up: which would you pick for a streaming speech-recognition decoder?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# ALiBi adds a fixed, unlearned penalty $-m_h(i - j)$ to the scores with one slope per head and
# no position embeddings; RoPE rotates queries and keys so the score depends on the offset.
# ALiBi extrapolates to longer inputs without fine-tuning and costs almost nothing, but it bakes
# in a monotone recency prior: distant tokens are penalised whether or not they matter, which
# hurts long-context retrieval. RoPE has no such prior and dominates current models, at the
# price of a scaling scheme to go past the trained length.
#
# Follow-up: ALiBi is a defensible choice there. Utterances are long, the useful context really
# is local, and there is no fine-tuning pass for context extension at deploy time: the recency
# prior is right for the task. The question tests whether you match the inductive bias to the
# task rather than reach for the popular option.
# </details>

# %% [markdown]
# **6. Explain attention sinks and why they matter for long conversations.**
# Follow-up: how do positions interact with them?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# A softmax row sums to 1, so a head with nothing relevant to attend to still has to put its
# mass somewhere, and trained models learn to park it on the first few tokens. Slide a window
# past those tokens and the mass lands on real tokens instead, the attention pattern changes
# and perplexity explodes. StreamingLLM keeps the first four tokens' keys and values pinned in
# the cache next to the rolling window, which restores quality at constant memory.
#
# Follow-up: give positions by slot in the cache, not by position in the text. The pinned
# tokens sit at 0 to 3 and the window right after, so no rotation ever leaves the trained range,
# however long the conversation runs. Absolute text positions would bring back the
# extrapolation problem that the window was meant to avoid.
# </details>

# %% [markdown]
# ## 11. Exercises and drills
#
# * The exercises: [`exercises/rope.py`](../exercises/rope.py), 6.1 to 6.8. Grade them with
#   `python -m exercises grade rope`; an exercise you have not touched is reported as
#   "not attempted", and a wrong one gets layered feedback: shape and dtype first, then NaN,
#   then the name of the mistake if it is a known one, then the numbers.
# * The drills: retype from a blank file against the clock. `python -m exercises drill rope`
#   (`rotate_half`, `apply_rotary`, `RotaryEmbedding`; target 15 minutes), and the drills of
#   the other schemes, `sinusoidal` (6 minutes), `alibi` (8) and `t5` (12). Grade with
#   `python -m exercises drill rope --grade`; see your progress with
#   `python -m exercises drill --history rope`.
# * Write the relative-position test first when you drill: it catches the sign errors that
#   otherwise take twenty minutes to find.
