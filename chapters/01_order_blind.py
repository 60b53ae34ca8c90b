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
# # Chapter 1. Attention is order-blind
#
# "Dog bites man" and "man bites dog" hold the same three tokens. A Transformer encoder with no
# positional information cannot tell them apart: shuffle its input and its output shuffles the same
# way, and nothing else changes. This chapter proves that in four lines, measures it down to rounding
# error in float64, and then looks at the one crack in it, the causal mask of a decoder, which lets a token
# count how many tokens came before it. Chapters 2 to 8 and 13 put back what this one takes away,
# each in a different place; the others measure, serve and debug what they put back.
#
# **By the end you can**
#
# * prove that self-attention without position is permutation-equivariant, and measure it on a whole
#   `TinyEncoder` to rounding;
# * write the check, `permutation_gap`, and a test that catches an order-aware attention a reversal misses;
# * explain, and measure, how the causal mask leaks position and what a decoder with no positional
#   scheme (NoPE) learns from it;
# * diagnose "the model ignores position" with a shuffle, including a bug where a norm erases the
#   encoding.
#
# You write four functions in [`exercises/order.py`](../exercises/order.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 1.1 | `permutation_gap(y, y_perm, perm)` | how far one shuffle is from equivariance |
# | 1.2 | `self_attention(x, W_q, W_k, W_v, causal)` | one head of attention with no position, with or without a mask |
# | 1.3 | `uniform_causal_attention(v)` | what a causal head with equal scores outputs: it counts |
# | 1.4 | `test_self_attention_is_permutation_equivariant(self_attention, permutation_gap)` | a test that catches hidden order |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work);
# grade everything with `python -m exercises grade order`.

# %% [markdown]
# ## The claims this chapter tests
#
# Predict each one before you run anything; section 10 settles them with the chapter's numbers.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | $\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)$: permute the input rows and the output rows permute identically (book §1; survey §1.2, eq. 6) | yes / no | §2 |
# | C2a | With the positional embedding zeroed, a sequence and its reversal give the same outputs, reversed, in an encoder to floating-point error (book, exercise 1) | yes / no | §3 |
# | C2b | ... and a decoder's differ, because of the mask (book, exercise 1) | yes / no | §3 |
# | C2c | ... by "somewhat" (book, exercise 1) | yes / no | §3 |
# | C3a | In a decoder token $i$ sees exactly $i + 1$ tokens, so the count encodes absolute position, which a causal head reads exactly when the first token is a marker, a BOS token (book, interview question 2, read here with this chapter's marker) | yes / no | §4 |
# | C3b | ... and decoder-only models can learn some positional behaviour with no explicit encoding (book, interview question 2) | yes / no | §5 |
# | C3c | A BOS token raises a NoPE decoder's mean accuracy on "say your position" (this chapter) | yes / no | §5 |
# | C4 | The causal mask gives a direction, not a fine distance (survey §10, misunderstanding 1) | yes / no | §4 |
# | C5 | An encoder with no positional encoding is exactly permutation-equivariant: it cannot distinguish orders at all (book, question 2, follow-up) | yes / no | §3 |
# | C6a | The mask's signal is weak (book, question 2) | yes / no | §5 |
# | C6b | ... and models trained on it alone underperform (book, question 2) | yes / no | §5 |
# | C7a | Every positional scheme the probe runs (the eight 1-D schemes of chapters 2 to 11) breaks equivariance (this workbook, experiments/permutation.py) | yes / no | §6 |
# | C7b | ... and so does the causal mask alone (this workbook, experiments/permutation.py) | yes / no | §6 |
# | C8a | "Model ignores position entirely": a cause, an encoding zeroed by a norm (book §4, failure table) | yes / no | §7 |
# | C8b | ... and its check, shuffle the input, outputs must change, finds it in an encoder (book §4, failure table) | yes / no | §7 |
# | C8c | ... and the same check, as the table writes it, finds it in a decoder (book §4, failure table) | yes / no | §7 |
# | C8d | "Model ignores position entirely": another cause, an encoding added after the projection (book §4, failure table) | yes / no | §7 |

# %%
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
# ## 1. What a shuffle does to a function
#
# Sequences are `(B, T, ...)`: axis 1 is the position. A permutation `perm` of $0, \dots, T-1$
# shuffles a sequence as `x[:, perm]`: the token now at position $t$ is the one that sat at
# position `perm[t]`. In matrix form that is $PX$, with $P$ the permutation matrix whose row $t$ has
# its 1 in column `perm[t]`.
#
# Two properties a function $f$ of a sequence can have:
#
# * **invariant**: $f(PX) = f(X)$. The output does not care about the order (a sum over tokens).
# * **equivariant**: $f(PX) = P f(X)$. Every token's output moves with its token and does not change:
#   `f(x[:, perm]) == f(x)[:, perm]`.
#
# Any function that treats every token alike and on its own, `tanh(x @ W)` for instance, is
# equivariant. A running sum over positions is neither: the first token's output depends on what
# comes first.
#
# ### Exercise 1.1: `permutation_gap`   ★☆☆ · 10 min
#
# *Why it matters:* this is the check of the whole chapter, and of the failure table's "model ignores
# position" row; getting the direction of the un-shuffle wrong is the classic slip.
#
# Write `permutation_gap(y, y_perm, perm)` in [`exercises/order.py`](../exercises/order.py): given
# `y = f(x)` and `y_perm = f(x[:, perm])`, both `(B, T, ...)`, return the largest absolute difference
# between `y_perm` and what an equivariant `f` would give, as a Python float.

# %%
permutation_gap = use("order", "permutation_gap")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# The output of the shuffled run at position $t$ belongs to one token of the original sequence. At which
# position of the original did that token sit? Answer it for `perm = [2, 0, 1]` before you index anything.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Work one case by hand: `y = [[10, 20, 30]]` (one channel) and `perm = [2, 0, 1]`. The shuffled input
# holds tokens 2, 0, 1, so an equivariant `f` gives `y_perm = [[30, 10, 20]]`, and the gap must be 0:
# your un-shuffled `y` must read `[[30, 10, 20]]` too. The other direction reads `[[20, 30, 10]]` and a
# gap of 20. A reversal is its own inverse, so it cannot tell the two directions apart.
# </details>

# %% tags=["answer"]
reveal("order", "permutation_gap")

# %% [markdown]
# Grade it alone with `python -m exercises grade order --exercise 1.1`. Check it on the three kinds of
# function: one that acts on each token alone, a sum over the tokens, and a running sum.

# %%
B, T, d = 2, 8, 4
x = randn(B, T, d)
W = randn(d, d)
perm = g.permutation(T)
functions = {
    "tanh(x @ W), token by token": lambda x: xp.tanh(x @ W),
    "sum over the tokens": lambda x: xp.broadcast_to(x.sum(axis=1, keepdims=True), x.shape),
    "running sum over positions": lambda x: xp.cumsum(x, axis=1),
}

# %% tags=["nbval-check-output"]
print("perm =", [int(p) for p in perm])
for name, f in functions.items():
    gap = permutation_gap(f(x), f(x[:, perm]), perm)
    print(f"{name:<30} gap {'0 (to rounding)' if gap < 1e-12 else 'nonzero'}")
assert permutation_gap(xp.tanh(x @ W), xp.tanh(x[:, perm] @ W), perm) < 1e-12
assert permutation_gap(xp.cumsum(x, axis=1), xp.cumsum(x[:, perm], axis=1), perm) > 1e-3

# %% [markdown]
# A sum over the tokens is invariant, which is a special case of equivariant when every position
# holds the same output. The running sum is what an RNN computes, in spirit: its order lives in
# the computation itself. Attention has no such chain.
#
# ## 2. Self-attention is permutation-equivariant
#
# One head of attention with no position, for the tokens $X$ `(T, d_model)`:
#
# $$Q = X W_q,\quad K = X W_k,\quad V = X W_v, \qquad \mathrm{Attn}(X) = \mathrm{softmax}\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big) V.$$
#
# Shuffle the tokens, $X \to PX$. The proof is four lines.
#
# 1. The projections act row by row: $Q \to PQ$, $K \to PK$, $V \to PV$.
# 2. The scores: $(PQ)(PK)^\top = P\,(Q K^\top)\,P^\top$, the same numbers with rows *and* columns
#    shuffled. The score of token $a$ against token $b$ is $q_a \cdot k_b / \sqrt{d_k}$ wherever they
#    sit: the positions $i, j$ never appear in it (survey §1.2).
# 3. A row-wise softmax does not care where the entries of a row are, or in which order the rows
#    come: $\mathrm{softmax}(P S P^\top) = P\, \mathrm{softmax}(S)\, P^\top$.
# 4. Multiply by $PV$ and use $P^\top P = I$:
#    $P\, \mathrm{softmax}(S)\, P^\top P V = P\, \mathrm{softmax}(S)\, V = P\,\mathrm{Attn}(X)$.
#
# Step 3 is where a causal mask breaks the argument. The mask keeps key $j$ for query $i$ when
# $j \le i$, a rule about *positions*, and it does not move with the tokens: $M$ is the same lower
# triangle before and after the shuffle, and $P M P^\top \neq M$.
#
# ### Exercise 1.2: `self_attention`   ★★☆ · 15 min
#
# *Why it matters:* the function the rest of the book adds position to, and the flag that separates an
# encoder from a decoder.
#
# Write `self_attention(x, W_q, W_k, W_v, causal=False)`: `x` `(B, T, d_model)`, `W_q` and `W_k`
# `(d_model, d_k)`, `W_v` `(d_model, d_v)`; return `(B, T, d_v)` with the dtype of `x`. With
# `causal=True`, query $i$ sees keys $j \le i$ only.

# %%
self_attention = use("order", "self_attention")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# The scores are every query against every key, `(B, T, T)`, scaled by $1/\sqrt{d_k}$: row $i$ is query
# $i$. The softmax normalises each row.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The causal mask keeps key $j$ for query $i$ when $j \le i$: the lower triangle, diagonal included;
# the rest gets $-\infty$ before the softmax, and `causal=False` masks nothing. Case: $T = 3$ with every
# score 0: causal weights are the rows $(1, 0, 0)$, $(1/2, 1/2, 0)$, $(1/3, 1/3, 1/3)$; without the mask
# every row is $(1/3, 1/3, 1/3)$.
# </details>

# %% tags=["answer"]
reveal("order", "self_attention")

# %% [markdown]
# Grade it alone with `python -m exercises grade order --exercise 1.2`. Now measure the proof: the
# encoder's gap must be rounding, the decoder's must not.

# %%
B, T, d = 2, 10, 8
x = randn(B, T, d)
W_q, W_k, W_v = randn(d, d), randn(d, d), randn(d, d)
perm = g.permutation(T)
gaps = {causal: permutation_gap(self_attention(x, W_q, W_k, W_v, causal), self_attention(x[:, perm], W_q, W_k, W_v, causal),
                                perm) for causal in (False, True)}

# %% tags=["nbval-check-output"]
print(f"encoder (causal=False): gap {'below 1e-13' if gaps[False] < 1e-13 else gaps[False]}")
print(f"decoder (causal=True):  gap {gaps[True]:.2f}")
assert gaps[False] < 1e-13 and gaps[True] > 0.1

# %% [markdown]
# The same fact as a picture. Left: the attention weights of the encoder for $X$. Middle: for the
# shuffled $PX$, a different-looking matrix. Right: the middle matrix with the shuffle undone,
# $P^\top \mathrm{softmax}(PSP^\top) P$, which is the left one exactly.

# %%
def weights(x):
    """(T, T) attention weights of the first sequence, no mask."""
    s = (x[0] @ W_q) @ (x[0] @ W_k).T / math.sqrt(d)
    e = xp.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


A, A_perm = weights(x), weights(x[:, perm])
back = xp.argsort(perm)  # the inverse permutation
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
for ax, w, title in [(axes[0], A, "weights for X"), (axes[1], A_perm, "weights for PX"),
                     (axes[2], A_perm[back][:, back], "PX's weights, un-shuffled")]:
    ax.imshow(to_numpy(w), cmap="viridis", vmin=0, vmax=float(A.max()))
    ax.set(xlabel="key", ylabel="query", title=title)
plt.show()
assert xp.allclose(A_perm[back][:, back], A)

# %% [markdown]
# ## 3. A whole encoder, and the sources' exercise
#
# A Transformer is attention plus layers that act on each token alone: the token embedding, layer
# norm, the MLP, the output head. Each of those is equivariant on its own (section 1), and a chain
# of equivariant functions is equivariant. So a `TinyEncoder` (no mask) with `positional="none"`
# should be exactly equivariant, every layer included.
#
# `mini_transformer.evaluation.measures.permutation_sensitivity(model, ids)` runs that experiment: it shuffles
# the token ids with a fixed permutation, runs the model on both, un-shuffles and reports the largest
# change of any logit (and that change relative to the largest logit). The models below are float64,
# with weights drawn at standard deviation 0.5 so a difference cannot hide behind a tiny
# initialisation, and run the reference kernels ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)).

# %%
from mini_transformer.engine.autograd import no_grad
from mini_transformer.evaluation.measures import permutation_sensitivity
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT

T = 12


def random_model(cls, positional="none", n_layers=2, norm="layer", seed=0):
    """A float64 model with O(1) random weights (standard deviation 0.5)."""
    cfg = GPTConfig(vocab_size=20, d_model=32, n_layers=n_layers, n_heads=4, max_len=T, positional=positional,
                    norm=norm, seed=seed)
    model = cls(cfg).to_dtype("float64")
    draw = rng(seed + 100)
    for p in model.parameters():
        p.data[...] = draw.normal(0.0, 0.5, p.shape, dtype="float64")
    return model


ids = g.integers(0, 20, (4, T))  # (B, T) token ids
probes = {(cls.__name__, p): permutation_sensitivity(random_model(cls, p), ids)
          for cls in (TinyEncoder, TinyGPT) for p in ("none", "learned")}

# %% tags=["nbval-check-output"]
for (name, p), r in probes.items():
    change = "below 1e-13 (rounding only)" if r.relative < 1e-13 else f"{r.relative:.2f}"
    print(f"{name:<12} positional={p!r:<10} relative change: {change}")
assert probes["TinyEncoder", "none"].relative < 1e-13
assert min(r.relative for key, r in probes.items() if key != ("TinyEncoder", "none")) > 0.05

# %% [markdown]
# The encoder without position changes by rounding only, below $10^{-13}$ of its largest logit. Every
# other row changes by a large fraction of the
# largest logit, 0.37 to 0.71 of it in this run: a learned table of positions, or the causal mask of
# `TinyGPT` on its own.
#
# The book's exercise 1 asks for one particular shuffle: *run the model with learned positions and
# with the positional embedding zeroed; feed a sequence and its reversal; compare.* Zeroing the
# learned table is one line, `model.positional.weight.data[...] = 0`:

# %%
reverse = xp.arange(T)[::-1]


def reversal_gap(model):
    """Largest change of any logit between a sequence and its reversal, un-reversed; and the largest logit."""
    with no_grad():
        y, y_rev = model(ids).data, model(ids[:, reverse]).data
    return permutation_gap(y, y_rev, reverse), float(xp.abs(y).max())


rows = {}
for cls in (TinyEncoder, TinyGPT):
    for zeroed in (True, False):
        model = random_model(cls, "learned")
        if zeroed:
            model.positional.weight.data[...] = 0.0
        rows[cls.__name__, zeroed] = reversal_gap(model)

# %% tags=["nbval-check-output"]
for (name, zeroed), (gap, size) in rows.items():
    table = "zeroed" if zeroed else "random, std 0.5"
    print(f"{name:<12} learned table {table:<16} reversal gap / largest logit: "
          f"{'below 1e-13' if gap / size < 1e-13 else f'{gap / size:.2f}'}")
assert rows["TinyEncoder", True][0] / rows["TinyEncoder", True][1] < 1e-13
assert rows["TinyGPT", True][0] / rows["TinyGPT", True][1] > 0.1

# %% [markdown]
# As the book says: with the table zeroed the encoder is equivariant to floating-point error, and the
# decoder is not. The two models share their weights and differ only in the mask, so the mask is the
# cause. How large the decoder's change is, the book's "somewhat", these models cannot say: their
# weights are random at standard deviation 0.5, and the "random, std 0.5" table is not a trained one,
# so the sizes above say nothing about a trained decoder. Position by position, with the table zeroed:

# %%
by_position = {}  # name -> (T,) largest logit change at each position, over the largest logit
fig, ax = plt.subplots(figsize=(7, 3.2))
for cls, offset in [(TinyEncoder, -0.2), (TinyGPT, 0.2)]:
    model = random_model(cls, "learned")
    model.positional.weight.data[...] = 0.0
    with no_grad():
        y, y_rev = model(ids).data, model(ids[:, reverse]).data
    change = xp.abs(y_rev - y[:, reverse]).max(axis=(0, 2))  # (T,) by position in the reversed run
    by_position[cls.__name__] = change / float(xp.abs(y).max())
    ax.bar(xp.arange(T) + offset, to_numpy(xp.maximum(change, 1e-17)), width=0.4, label=cls.__name__)
ax.set(yscale="log", xlabel="position in the reversed sequence", ylabel="largest logit change",
       title="Learned positions zeroed: a sequence against its reversal")
ax.legend()
plt.show()

# %% tags=["nbval-check-output"]
enc, dec = by_position["TinyEncoder"], by_position["TinyGPT"]
print(f"TinyEncoder: {'below 1e-14 of the largest logit at every position' if float(enc.max()) < 1e-14 else enc}")
print(f"TinyGPT:     {float(dec.min()):.2f} to {float(dec.max()):.2f} of the largest logit, position by position")
assert float(enc.max()) < 1e-14 and float(dec.min()) > 0.1

# %% [markdown]
# The encoder's bars sit at rounding, below $10^{-14}$ of the largest logit at every position. The
# decoder's are large at every position (0.25 to 0.46 of the largest logit): the token that lands at
# position $t$ of the reversed run sees itself and the $t$ tokens that followed it in the original, not
# the ones that preceded it, so it sees a different set of tokens. What a decoder token's output depends
# on, exactly, is the next section.
#
# ## 4. The crack: a causal token can count
#
# Under the causal mask query $i$ attends over exactly $i + 1$ keys. Suppose a head's scores are all
# equal (its $W_q$ is 0, say). Then its weights are uniform over what it sees,
#
# $$y_i = \frac{1}{i + 1}\sum_{j=0}^{i} v_j,$$
#
# and if the first token carries a marker (a beginning-of-sequence token whose value is 1 in some
# channel where every other token has 0) that channel reads $1/(i+1)$, a function of the position.
# The book (interview question 2) says only that the count of visible tokens encodes absolute
# position. The marker is this chapter's construction, and the exact read-out needs it: over tokens
# with no marker the same head outputs their mean, which does not carry its count exactly. Kazemnejad et
# al. (2023, "The Impact of Positional Encoding on Length Generalization in Transformers", Theorem
# 1) recover absolute position in a NoPE decoder's first layer the same way, from a
# beginning-of-sequence token and the causal mask. That a later layer decodes it is an explanation
# not tested here. Without the mask every token averages all $T$ tokens and reads $1/T$: nothing.
#
# ### Exercise 1.3: `uniform_causal_attention`   ★☆☆ · 10 min
#
# *Why it matters:* this one line is the whole of the NoPE argument, and the running mean is the
# pattern to recognise when a causal model "knows" positions it was never given.
#
# Write `uniform_causal_attention(v)`: `v` `(..., T, d)`; return `(..., T, d)` with the dtype of
# `v`, where row $i$ is the mean of rows $0..i$.

# %%
uniform_causal_attention = use("order", "uniform_causal_attention")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# A running sum along the position axis, divided by how many terms each entry of it holds.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Row $i$ holds $i + 1$ terms: divide by $1, 2, \dots, T$ as a column `(T, 1)`, built in `v`'s dtype so
# a float32 input stays float32. Case: the values `[1, 0, 0, 0]` (one channel) have the running sums
# `[1, 1, 1, 1]`, and the outputs `[1, 1/2, 1/3, 1/4]`.
# </details>

# %% tags=["answer"]
reveal("order", "uniform_causal_attention")

# %% [markdown]
# Grade it alone with `python -m exercises grade order --exercise 1.3`. It must equal a real causal
# head whose scores are all equal, your `self_attention` with $W_q = 0$; and with the marker as
# values it must count.

# %% tags=["nbval-check-output"]
marker = xp.zeros((1, 8, 1))
marker[0, 0, 0] = 1.0  # (B, T, 1): 1 on the first token, 0 elsewhere
counted = uniform_causal_attention(marker)[0, :, 0]
print("causal head on the marker:  ", [round(float(c), 4) for c in counted])
print("positions read back, 1/y - 1:", [round(1 / float(c) - 1) for c in counted])
x = randn(2, 6, 4)
zero = xp.zeros((4, 4))
same = xp.allclose(uniform_causal_attention(x @ W_v[:4, :4]), self_attention(x, zero, zero, W_v[:4, :4], causal=True))
same_gap = float(xp.abs(uniform_causal_attention(x @ W_v[:4, :4]) - self_attention(x, zero, zero, W_v[:4, :4], causal=True)).max())
print(f"against self_attention with W_q = 0, causal: largest difference {'below 1e-13' if same_gap < 1e-13 else same_gap}")
assert xp.allclose(counted, 1.0 / xp.arange(1, 9)) and same

# %% [markdown]
# So much for absolute position. What about *distance*, "the token three back"? Look again at what
# one causal layer computes at position $i$: its own token, and an average over the **set** of tokens
# $0..i$. Shuffle the tokens before position $i$ among themselves and that set is the same, so the
# output at $i$ and after cannot change. One causal layer knows *how many* tokens came before, not
# *which one is where*: for one layer, the survey's "a direction, not a fine distance" (§10) is exact.
# The survey's sentence names no depth, and the models it surveys are many layers deep.
#
# A second layer reopens the question. Its keys are the first layer's outputs, and those now differ
# from position to position (each carries its own count), so a shuffle of the prefix changes what
# the second layer sees. Measure both: shuffle the first $k$ tokens by a cycle, and record the
# largest change at the positions after them.

# %%
def prefix_shuffle_change(n_layers):
    """(T-2, T): for k = 2 .. T-1, the largest logit change at each position after cycling the first k tokens."""
    model = random_model(TinyGPT, "none", n_layers=n_layers)
    with no_grad():
        y = model(ids).data
        rows = []
        for k in range(2, T):
            cycle = xp.concatenate([xp.roll(xp.arange(k), 1), xp.arange(k, T)])  # moves each of the first k tokens
            y_k = model(ids[:, cycle]).data
            rows.append(xp.abs(y_k - y[:, cycle]).max(axis=(0, 2)))  # (T,) the token at t came from cycle[t]
    return xp.stack(rows)


changes = {n: prefix_shuffle_change(n) for n in (1, 2)}
after = {n: max(float(changes[n][k - 2, k:].max()) for k in range(2, T)) for n in (1, 2)}  # right of the block

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, n in zip(axes, (1, 2)):
    im = ax.imshow(to_numpy(xp.log10(xp.maximum(changes[n], 1e-16))), cmap="magma", vmin=-16, vmax=1, aspect="auto",
                   extent=(-0.5, T - 0.5, T - 0.5, 1.5))
    ax.plot([1.5, T - 1.5], [2, T - 1], color="white", linewidth=1)  # left of the line: the shuffled tokens themselves
    ax.set(xlabel="position t", ylabel="first k tokens shuffled", title=f"TinyGPT, no position, {n} layer{'s' * (n > 1)}")
fig.colorbar(im, ax=axes, label="log10 of the largest logit change")
plt.show()

# %% tags=["nbval-check-output"]
print(f"1 layer:  largest change after the shuffled block: {'below 1e-13' if after[1] < 1e-13 else after[1]}")
print(f"2 layers: largest change after the shuffled block: {'below 1e-13' if after[2] < 1e-13 else f'{after[2]:.2f}'}"
      f" (over every k; at k = 5, {float(changes[2][5 - 2, 5:].max()):.2f})")
assert after[1] < 1e-13 and after[2] > 0.1

# %% [markdown]
# Left of the white line sit the shuffled tokens themselves, which moved and now see different
# prefixes, so their outputs change in both models. Right of it, the one-layer model is exactly blind
# to the order of everything before: black, below $10^{-13}$. The two-layer model is not: its second
# layer's keys are the first layer's outputs, which differ from position to position, so the order of
# the prefix reaches the outputs after it. That is necessary for a NoPE decoder to represent distance,
# not proof that it does: that the second layer reads a count as a position it can compare is an
# explanation not tested here, and no run in this chapter trains a task that needs distance (section
# 5 trains absolute position only).
#
# ## 5. What a NoPE model learns from the leak
#
# Give the model a task that is nothing but position: the input is a beginning-of-sequence token
# (id 1) followed by random tokens, and the target at every position is the position itself, $0$ to
# $T - 1$, as a token id. Train three 2-layer models ($d_{model} = 16$, two heads) on it for 200
# steps: a `TinyGPT` with no position, a `TinyEncoder` with no position, and, without the
# beginning-of-sequence token, the `TinyGPT` again.
#
# What does a model blind to position score? Position 0 holds the BOS token, so it can get that one
# by content. On positions 1 to 11 its answer at a position depends only on the token there and on
# the set of tokens in the row. The tokens are drawn independently, so, given that set, every one of
# the eleven positions holds a token drawn the same way and gets the same distribution of answers.
# One distribution puts at most probability 1 on the eleven answers 1 to 11 together, so the
# expected number of right answers on positions 1 to 11 is at most 1 a row: the expected accuracy
# there is at most $1/11 = 0.091$, exactly that when every answer is one of 1 to 11 (a model that
# always answers 0 scores 0). That is this section's chance level, on positions 1 to 11; the
# accuracy on a finite set of held-out rows scatters around it.

# %%
import inspect

from experiments import chapter01_nope
from experiments.chapter01_nope import BOS, V, position_accuracy, position_batches

assert chapter01_nope.T == T  # the seeded experiment of this section's ledger row trains exactly these models
print(inspect.getsource(position_batches))
print(inspect.getsource(position_accuracy))

# %%
accuracy = {"TinyGPT, BOS first": position_accuracy(TinyGPT, True),
            "TinyEncoder, BOS first": position_accuracy(TinyEncoder, True),
            "TinyGPT, no BOS": position_accuracy(TinyGPT, False)}

# %%
fig, ax = plt.subplots(figsize=(7, 3.6))
for (name, acc), marker in zip(accuracy.items(), "osd"):
    ax.plot(range(T), to_numpy(acc), marker=marker, linestyle="none",
            label=f"{name}: positions 1..{T - 1} {float(acc[1:].mean()):.2f}")
ax.hlines(1 / (T - 1), 1, T - 1, color="grey", linestyle="--", label=f"chance on positions 1..{T - 1}, 1/{T - 1} = {1 / (T - 1):.3f}")
ax.set(xlabel="position", ylabel="held-out accuracy", ylim=(-0.03, 1.05),
       title="'Say your position', no positional scheme, 200 steps (T = 12)")
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
plt.show()

# %%
for name, acc in accuracy.items():  # training is not bit-for-bit the same on every machine: no stored output here
    print(f"{name:<24} mean accuracy {float(acc.mean()):.2f}; positions 1..{T - 1}: {float(acc[1:].mean()):.2f}")
assert accuracy["TinyGPT, BOS first"].mean() > 0.8
assert accuracy["TinyEncoder, BOS first"][1:].mean() < 2 / T
assert accuracy["TinyGPT, no BOS"].mean() < 0.5

# %% [markdown]
# That is one seed of each, and training in float32 is not bit-for-bit the same under every BLAS and
# thread count, so the cell prints your run but stores nothing. The experiment
# `python -m experiments.chapter01_nope` trains the same three models
# on five seeds and scores each on the same 256 held-out rows. Its committed result:

# %% tags=["nbval-check-output"]
from mini_transformer.evaluation import stats
from experiments.common import load_result

nope = load_result("chapter01_nope")
print(f"{nope['steps']} steps, seeds {nope['seeds']}; mean accuracy per seed, and on positions 1..{T - 1}:")
for arm in nope["arms"]:
    rows = nope["per_seed"][arm]
    mean, _, lo, hi = stats.t_interval([r["accuracy"] for r in rows])
    print(f"  {arm:<12} " + " ".join(f"{r['accuracy']:.2f}" for r in rows) + f"  ({stats.format_interval(mean, lo, hi)});  "
          + "positions 1..11: " + " ".join(f"{r['accuracy_after_0']:.2f}" for r in rows))
for key, rec in nope["claims"].items():
    print(f"{key:<22} {stats.format_record(rec)}")
assert [nope["claims"][k]["verdict"] for k in ("gpt_bos_above_chance", "marker_gain", "encoder_at_chance")] == [
    "reproduces", "reproduces", "not established"]
enc_rec = nope["claims"]["encoder_at_chance"]
n = enc_rec["trials_per_seed"][0]  # 256 held-out rows times the 11 positions 1..11
print(f"encoder_bos, right answers on positions 1..11 per seed, of {n} (1/11 of {n} is {n / 11:.0f}): "
      + " ".join(str(k) for k in enc_rec["successes_per_seed"]))
assert n == 2816 and sum(k > n / 11 for k in enc_rec["successes_per_seed"]) == 3
enc_positions = [a for r in nope["per_seed"]["encoder_bos"] for a in r["by_position"][1:]]
print(f"encoder_bos, one position 1..11 of one seed: {min(enc_positions):.2f} to {max(enc_positions):.2f}")
print("gpt_no_bos by position 0..11:")
for r in nope["per_seed"]["gpt_no_bos"]:
    print(f"  seed {r['seed']}: " + " ".join(f"{a:.2f}" for a in r["by_position"]))

# %% [markdown]
# Read the rows against the claims (intervals are $95\%$, over the five seeds).
#
# * **C3b reproduces.** With a beginning-of-sequence token the decoder learns its position from the
#   mask alone: its accuracy on positions 1 to 11 is 0.91 ± 0.11 (0.82 to 1.00 by seed; a t interval
#   over five shares, so it can pass 1), against a chance level of $1/11 = 0.091$. That it reads the
#   count with a head like section 4's is an
#   explanation not tested here: no cell looks inside the trained attention.
# * **The encoder is at chance.** It gets position 0 right (its token is the BOS, which is content,
#   not position). On positions 1 to 11 it is at the chance level derived above: 0.09 in every seed,
#   0.091 ± 0.001 over the five, an interval that contains $1/11$. The bound holds in expectation, and
#   a sample scatters around it: on these 256 rows three seeds of five are just above it (257, 261 and
#   260 right answers of 2816, where $1/11$ is 256). So the record `encoder_at_chance`, "below 1/11",
#   is not established, and more seeds would not make it a test of blindness: a position-blind model
#   whose answers on positions 1 to 11 all lie in 1 to 11 scores exactly $1/11$ in expectation, so
#   its interval closes in on $1/11$, not below it. The limit is the test's design, not the number of
#   seeds. C5, the book's claim, needs no sample: the encoder is equivariant for any weights (section
#   3's argument, measured there to rounding). Position by position it scatters, from 0.00 to 0.39:
#   a model blind to position can be right often at one position and never at another, but over the
#   eleven together, in expectation, not more than 1/11 of the time. The same measurement sees
#   position when it is there: the decoder's row above is its positive control.
# * Without a marker the decoder gets position 0 in every seed (1.00) and positions 1 and 2 above
#   1/11 in every seed; further in it mostly does worse (seed 1 keeps 0.38 to 0.50 up to position 6;
#   at positions 7 to 9 every seed scores 0.00 to 0.20). Its best position after 0 is the last one
#   in three seeds (0.86, 0.77, 0.79) and position 10 in the other two (0.61, 0.38). Its mean
#   accuracy is 0.30 ± 0.10; the marker adds 0.62 ± 0.16 (C3c), in these runs of 200 steps at $d_{model} = 16$.
#   Why the first positions are easier (the first token attends only to itself) and why the rest are
#   hard (without a marker the count must be read from an average of random tokens) are
#   explanations not tested here.
#
# C6b, "underperforms", is a statement about language models. This workbook's experiment
# `train_short_test_long` trained eight schemes, `none` included, as a byte-level `TinyGPT` on the
# standard library's source for 1500 steps at length 64. Its table is shown and explained in
# [chapter 7, §7](07_alibi.py#7.-The-bake-off:-eight-schemes,-trained-at-L,-run-at-8L); here only the rows this claim needs:

# %%
from experiments.common import load_result

losses = {name: r["loss"] for name, r in load_result("train_short_test_long")["results"].items()}

# %% tags=["nbval-check-output"]
others = [row[0] for name, row in losses.items() if name != "none"]
print(f"at L: none {losses['none'][0]:.2f} nats per byte; every other scheme {min(others):.2f} to {max(others):.2f}")
assert losses["none"][0] > max(others) + 0.3

# %% [markdown]
# In that run, at the training length, `none` is the worst by a wide margin: 2.03 nats against 1.50
# to 1.69 for every scheme. But it is one seed. The experiment
# `python -m experiments.input_schemes_at_train_len` trains the same model
# (for 600 steps, not 1500) on three seeds with no scheme, with a learned table, and with the
# sinusoidal table (as the formula gives it, and scaled to the size of a token row), every arm of a
# seed on the same training batches, and scores each at $L$ on the same held-out windows. The `none`
# and sinusoidal arms of a seed also start from the same weights. The learned arm draws its table from
# the seed's generator after the token embedding and before the blocks, so every random weight of its
# blocks and head differs from theirs:

# %% tags=["nbval-check-output"]
at_L = load_result("input_schemes_at_train_len")
for arm in at_L["arms"]:
    print(f"{arm:<18} loss at L, seeds {at_L['seeds']}: "
          + "  ".join(f"{r['loss_at_L']:.3f}" for r in at_L["per_seed"][arm]))
print(f"{'none_minus_learned':<30} {stats.format_record(at_L['claims']['none_minus_learned'])}")
scaled = at_L["claims"]["none_minus_sinusoidal_scaled"]  # chapter 2's record: only its interval here
print(f"{'none_minus_sinusoidal_scaled':<30} {stats.format_interval(scaled['mean'], *scaled['interval'])} "
      f"({len(scaled['values'])} seeds; chapter 2's record, read in §9 there)")
none_minus_sin = [n["loss_at_L"] - s_["loss_at_L"] for n, s_ in zip(at_L["per_seed"]["none"], at_L["per_seed"]["sinusoidal"])]
print("none minus sinusoidal (unscaled), per seed: " + " ".join(f"{v:+.3f}" for v in none_minus_sin))
assert none_minus_sin[0] > 0 > max(none_minus_sin[1:])  # unscaled sinusoids are worse than none in seeds 1 and 2
assert at_L["claims"]["none_minus_learned"]["verdict"] == "not tested here"
copy_runs = load_result("rope_copy")  # chapter 6, §8: the same sentence of the book, read as a copy task
print(f"chapter 6's rope_copy, {copy_runs['steps']} steps: copy accuracy, RoPE minus no position "
      f"{stats.format_record(copy_runs['claims']['C4'])}")
print(f"{'':<30} RoPE's own accuracy: {stats.format_record(copy_runs['claims']['rope_accuracy'])}")
assert copy_runs["steps"] == 150 and copy_runs["claims"]["C4"]["verdict"] == "reproduces"
assert all(v == 1.0 for v in copy_runs["claims"]["rope_accuracy"]["values"])

# %% [markdown]
# In every seed `none` is worse than the learned table and than the sinusoids scaled to the token
# rows' size: 0.22 ± 0.01 nats behind the learned table and 0.12 ± 0.02 behind the scaled sinusoids
# ($95\%$ intervals over the three seeds). It is not the worst arm: the sinusoidal table as the formula
# gives it is worse than `none` in seeds 1 and 2 (none minus it: +0.056, -0.082, -0.052). C6b's row
# compares `none` with a learned table. The book speaks of trained models, and at 600 steps these arms
# are still learning (in the bake-off above, at 1500 steps, both end lower: `none` at 2.03, every scheme
# at 1.69 or less), so the gap measures learning speed too: C6b is not tested here, though the interval
# alone says reproduces, as for chapter 3's C5a to C5c. The second line is chapter 2's record (§9
# there): whether a table sized to the token rows helps at $L$ in these runs of 600 steps. That is a
# question about this budget, not the book's "models trained that way underperform", so it prints
# here as an interval, without a verdict.
#
# So this chapter does not settle the book's sentence for language models.
# [Chapter 6, §8](06_rope.py#8.-Your-RoPE-inside-TinyGPT) settles a narrower reading of it, on another
# quantity (its C4, the last two lines): the book names no task, and chapter 6 reads the sentence as
# copying at a fixed offset within a budget of 150 steps, where RoPE beats the same decoder without
# position by 0.63 ± 0.04 of held-out accuracy over 5 seeds. That reproduces, for that reading and that
# budget; for trained language models no row settles the sentence (C6b: not tested here). The two measurements
# differ in what they compare. There the RoPE arm has learned its task (1.00 held out, in all 5 seeds),
# and the gap is what the arm without position has not learned in the same 150 steps; whether it
# would with more steps, that record does not show. Here both arms are still lowering a text loss,
# and the gap is as much a difference in speed as in what is learned.
#
# What the source does not say: past the training length. Chapter 7's five-seed runs (trained at
# $L = 32$, §7 there) measure each scheme's rise past $L$ at $4L$, the loss at $t \ge L$ with the whole
# prefix minus with the last $L$ tokens only:

# %% tags=["nbval-check-output"]
long = load_result("short_long_seeds")
for key in ("runs_long_none", "runs_long_rope", "runs_long_sinusoidal", "runs_long_alibi", "runs_long_shaw",
            "runs_long_transformer_xl"):
    rec = long["claims"][key]
    print(f"{key:<25} rise at 4L, nats: {stats.format_record(rec)};  per seed "
          + " ".join(f"{v:.3f}" for v in rec["values"]))
rises = {key: long["claims"][f"runs_long_{key}"]["values"] for key in ("none", "rope", "sinusoidal")}
assert all(n < min(r, s_) for n, r, s_ in zip(rises["none"], rises["rope"], rises["sinusoidal"]))

# %% [markdown]
# `none` rises 0.10 ± 0.04 nats, over the 0.05 that chapter 7 takes for "runs long", so it does not
# run long; but it rises less than RoPE (0.47 ± 0.12) and the sinusoidal table (0.97 ± 0.42), in every
# seed. That this is because a count of visible tokens is defined at any length is an explanation not
# tested here. The relative schemes that run long (ALiBi, Shaw, Transformer-XL) rise far less than
# `none`. Chapter 7, §7, settles these claims.
#
# ## 6. The 1-D schemes of chapters 2 to 11 break equivariance
#
# A positional scheme exists to break exactly this symmetry. The experiment `python -m experiments.permutation`
# runs the permutation probe on `PROBED` (`experiments/permutation.py`): `none` and the eight 1-D schemes of
# chapters 2 to 11, not the 2-D `relative_2d` (it needs a square window) nor chapter 13's `mrope`, `fire` and
# `temperature`, in both models, over 5 seeds (float64, weights at standard deviation 0.5, $T = 16$); its committed result:

# %%
from experiments import permutation as permutation_experiment

perm_result = load_result("permutation")
table = perm_result["relative_change"]

# %% tags=["nbval-check-output"]
print(f"relative change of the logits under a shuffle, min .. max over seeds {perm_result['seeds']}")
for key, v in table.items():
    print(f"{key:<28} {v['min']:.1e} .. {v['max']:.1e}")
assert table["TinyEncoder/none"]["max"] < 1e-14
assert min(v["min"] for key, v in table.items() if key != "TinyEncoder/none") > 0.05

# %%
fig = permutation_experiment.plot(perm_result)
plt.show()

# %% [markdown]
# Each bar is a model's smallest change over the five seeds. One bar is at rounding, $10^{-16}$: the
# encoder with no scheme. Every other bar, every scheme in either model and the bare causal mask, is
# far above it, from 5.9e-02 to 4.3e-01 of the output's size; over all the seeds the table above
# reaches 9.4e-01 (`TinyEncoder/decoupled_rope`'s largest). So C7a and C7b reproduce, for the schemes
# probed here. That is not a law about every scheme one can write: section 7 builds one that a
# layer-norm encoder erases, and that encoder stays equivariant. Notice where the bare mask lands:
# `TinyGPT/none` (0.35 to 0.72) sits among the real schemes. The probe cannot tell a weak positional
# signal from a strong one; it only tells none from some. Section 5 showed what the mask's signal is
# worth in training.
#
# ## 7. Diagnosing "the model ignores position"
#
# The book's failure table (§4) has this row:
#
# | Symptom | Cause | Check |
# | --- | --- | --- |
# | Model ignores position entirely | Encoding added after the projection, or zeroed by a norm | Check permutation sensitivity: shuffle input, outputs must change |
#
# Here is the second cause, built on purpose. The simplest encoding there is adds the position
# number $t$ to every channel of token $t$. It is not book §1's "append the integer": that one
# appends $t$ as one more coordinate, which a layer norm shifts and scales but does not remove,
# since it is not the same in every channel. A scheme is one small class with an `embed` hook:

# %%
from mini_transformer.positional import PositionalScheme


class AddPositionToEveryChannel(PositionalScheme):
    r"""x_t + t (1, 1, ..., 1): position as a constant added to all d_model channels."""

    def embed(self, x, offset):
        T_ = x.shape[1]
        pos = xp.arange(offset, offset + T_, dtype=x.dtype)[None, :, None]  # (1, T, 1)
        return x + pos * xp.ones(x.shape[-1], dtype=x.dtype)  # (B, T, d_model)


# %% [markdown]
# Every block of `TinyGPT` and `TinyEncoder` starts with a norm (pre-norm), and so does the head.
# Layer norm subtracts each token's mean over its channels, and $t(1, \dots, 1)$ *is* a mean: it
# vanishes from every norm's output, exactly. RMS norm divides by the root mean square and
# subtracts nothing, so there the encoding survives. Put the scheme into two encoders, one per
# norm, and shuffle:

# %%
norm_probe = {}
for norm in ("layer", "rms"):
    model = random_model(TinyEncoder, norm=norm)
    model.positional = AddPositionToEveryChannel()
    norm_probe[norm] = permutation_sensitivity(model, ids).relative

# %% tags=["nbval-check-output"]
for norm, rel in norm_probe.items():
    print(f"TinyEncoder, norm={norm!r:<8} + position on every channel: "
          f"{'rounding only: the model ignores position' if rel < 1e-13 else f'relative change {rel:.2f}: position is used'}")
assert norm_probe["layer"] < 1e-13 and norm_probe["rms"] > 0.1

# %% [markdown]
# The check catches the bug: with layer norm the encoder is exactly as blind as with no scheme at
# all, although a position was added to every token. C8b's check works in an encoder, and C8a's
# cause is real. The table's other cause, an encoding "added after the projection", does not say
# which projection, and this chapter builds no such model: C8d is not tested here.
#
# Now the same bug in a decoder: one `TinyGPT` with layer norm and the position on every channel, and
# the same weights with no scheme at all.

# %%
buggy = random_model(TinyGPT)
buggy.positional = AddPositionToEveryChannel()
decoder_probe = {"position on every channel, layer norm": permutation_sensitivity(buggy, ids).relative,
                 "no scheme": permutation_sensitivity(random_model(TinyGPT), ids).relative}

# %% tags=["nbval-check-output"]
for name, rel in decoder_probe.items():
    print(f"TinyGPT, {name:<38} relative change {rel:.2f}")
same = abs(decoder_probe["no scheme"] - decoder_probe["position on every channel, layer norm"])
print(f"the two differ by {'below 1e-13' if same < 1e-13 else same}")
assert same < 1e-13 and decoder_probe["no scheme"] > 0.1

# %% [markdown]
# The decoder with the bug passes "outputs must change": its outputs change under a shuffle, by
# exactly as much as those of the same decoder with no scheme, because the mask alone changes them
# (section 3). In a decoder the table's check as written cannot find this bug. Compare against the
# same model with `positional="none"`, as this cell does, or run the check on an encoder. What the
# check gets right is the symptom: a decoder whose encoding a norm erased is a NoPE decoder, and a
# NoPE decoder does not ignore position, it can learn position from the mask (section 5, C3b). So the
# row's symptom, "ignores position entirely", is absent, and the check, which tests the symptom,
# passes; what it misses is the cause, the encoding the norm erased.
#
# A variant of the check can work in a decoder of one layer: shuffle only the tokens before the last,
# keep the last in place, and compare the last position's logits. Section 4 showed why: with no
# position, one causal layer is exactly blind to the order of a prefix, so any change is position.
# Chapter 12's `check_shuffle` (Exercise 12.6) is this variant, and it asserts one layer. Measure it
# on the bug and on a learned table, in one layer and in two:

# %%
def last_position_change(model):
    """Relative change of the last position's logits when the tokens before it are cycled."""
    cycle = xp.concatenate([xp.roll(xp.arange(T - 1), 1), xp.arange(T - 1, T)])  # the last token stays
    with no_grad():
        before, after = model(ids).data[:, -1], model(ids[:, cycle]).data[:, -1]  # (B, vocab) each
    return float(xp.abs(after - before).max() / xp.abs(before).max())


variant = {}
for n_layers in (1, 2):
    for name in ("position on every channel, layer norm", "learned table"):
        model = random_model(TinyGPT, "learned" if name == "learned table" else "none", n_layers=n_layers)
        if name != "learned table":
            model.positional = AddPositionToEveryChannel()
        variant[n_layers, name] = last_position_change(model)

# %% tags=["nbval-check-output"]
for (n_layers, name), rel in variant.items():
    print(f"TinyGPT, {f'{n_layers} layer' + 's' * (n_layers > 1) + ',':<9} {name:<38} last position: "
          f"{'below 1e-13' if rel < 1e-13 else f'relative change {rel:.2f}'}")
assert variant[1, "position on every channel, layer norm"] < 1e-13 < 0.1 < variant[1, "learned table"]
assert variant[2, "position on every channel, layer norm"] > 1e-3  # far above rounding: the variant passes the bug

# %% [markdown]
# In one layer the variant tells the bug (below $10^{-13}$) from a learned table (0.42). In two it
# does not: the bug's last position changes by 0.04 of its size, far above the $10^{-6}$ that chapter
# 12's check takes for rounding, so the variant passes the bug. Every norm erases the bug, so this
# model computes what the same weights with no scheme compute, and that change is the mask's own:
# the sensitivity to a prefix's order that section 4 measured in two layers with no position.
#
# ## 8. A test for a hidden order
#
# The book's exercise tests equivariance with one shuffle, the reversal. Is that enough? Here is an
# attention with a hidden order: each query sees only the keys less than 8 positions away from it, at
# most 7 (a local window, as long-document models use). Measure it with a reversal and with a random
# shuffle, on $T = 12$:

# %% tags=["nbval-check-output"]
def windowed_attention(x, W_q, W_k, W_v, causal=False, width=8):
    """Each query attends only to keys less than `width` positions away, computed with self_attention."""
    T_ = x.shape[1]
    rows = []
    for i in range(T_):
        lo, hi = max(0, i - width + 1), min(T_, i + width)
        rows.append(self_attention(x[:, lo:hi], W_q, W_k, W_v, causal)[:, i - lo])  # (B, d_v)
    return xp.stack(rows, axis=1)  # (B, T, d_v)


x = randn(2, 12, d)
window_gaps = {}
for name, p in [("reversal", xp.arange(12)[::-1]), ("random shuffle", g.permutation(12))]:
    window_gaps[name] = permutation_gap(windowed_attention(x, W_q, W_k, W_v), windowed_attention(x[:, p], W_q, W_k, W_v), p)
    print(f"local window of 8, {name:<15} gap: {'rounding only' if window_gaps[name] < 1e-13 else 'nonzero'}")
assert window_gaps["reversal"] < 1e-13 < 1e-3 < window_gaps["random shuffle"]

# %% [markdown]
# The reversal sees nothing: a window is symmetric ($|i - j| < 8$ is unchanged when both positions
# are mirrored), and so is any score bias that depends on $|i - j|$ alone. The random shuffle catches
# it at once. No test at one length catches every hidden order: at $T = 12$ a window 12 wide sees
# every key, so at that length it is plain attention.
#
# ### Exercise 1.4: `test_self_attention_is_permutation_equivariant`   ★★★ · 20 min
#
# *Why it matters:* "how would you know your model is using position?" is an interview question with
# a test for an answer, and a test is only as good as the hidden order it can find.
#
# Write `test_self_attention_is_permutation_equivariant(self_attention, permutation_gap)`. It receives
# implementations with the signatures of Exercises 1.2 and 1.1 and must raise `AssertionError` (a
# plain `assert`) when `self_attention(..., causal=False)` is not permutation-equivariant, and pass
# when it is. The grader runs it on the reference (it must pass) and on **mutants**: attention
# functions that are order-aware in one hidden way each. It reports how many your test catches and
# which get away.

# %%
test_self_attention_is_permutation_equivariant = use("order", "test_self_attention_is_permutation_equivariant")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Think like the mutants. Which shuffles leave position 0 where it is? Which can a symmetric signal
# survive? Which sequence lengths does a window of 8 hide behind? And how small can a positional
# signal be before `xp.allclose`, with its default relative tolerance of $10^{-5}$ (and absolute
# $10^{-8}$), waves it through?
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Several random shuffles (not only a reversal, and none that moves nothing) of a sequence longer
# than any window, in float64, with a tolerance at the level of rounding: about $10^{-12}$ times the
# size of the output. Equivariance is exact, so the test can be that strict.
# </details>

# %% tags=["answer"]
reveal("order", "test_self_attention_is_permutation_equivariant")

# %% [markdown]
# Grade it with `python -m exercises grade order --exercise 1.4`: it reports how many mutants your
# test catches and which get away. Here it runs on the `self_attention` and `permutation_gap` this
# chapter uses (yours once you have written them, the reference until then), where it must pass, and
# on the local window above, where it must fail:

# %% tags=["nbval-check-output"]
test_self_attention_is_permutation_equivariant(self_attention=self_attention, permutation_gap=permutation_gap)
print("on the chapter's self_attention: passes")
try:
    test_self_attention_is_permutation_equivariant(self_attention=windowed_attention, permutation_gap=permutation_gap)
    caught = None
except AssertionError as e:
    caught = str(e) or "AssertionError"
print("on attention with a local window of 8: fails with", repr(caught[:80]))
assert caught is not None

# %% [markdown]
# ## 9. Check yourself
#
# Answer out loud, or on paper, before you open an answer.
#
# **1.** Prove in four lines that self-attention without position is permutation-equivariant. Which
# line fails when you add a causal mask, and why?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# $Q, K, V \to PQ, PK, PV$ (row-wise projections); scores $\to P S P^\top$; a row-wise softmax commutes
# with permuting rows and columns, so weights $\to P A P^\top$; and $P A P^\top P V = P A V$ because
# $P^\top P = I$. With a mask the third line fails: the mask is a fixed lower triangle $M$ tied to
# positions, and $P M P^\top \ne M$, so the shuffled scores are masked differently. Section 2 measured
# gaps below $10^{-13}$ without the mask and 10.23 with it (one head, weights at standard deviation 1).
# </details>

# %% [markdown]
# **2.** Under a reversal every position of the NoPE decoder changes (section 3). Which positions are
# unchanged under a shuffle of only the first five tokens, in a one-layer decoder and in a two-layer one?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# A one-layer causal output at position $t$ depends on its own token and on the *set* of tokens
# $0..t$. Shuffling the first five tokens leaves that set, and the token, unchanged at every position
# from 5 on, so those outputs are unchanged to rounding (section 4 measured below $10^{-13}$). In two
# layers they change (by 0.19 in the logits at $k = 5$ in section 4's model; up to 0.43 over every
# $k$): the first layer's outputs differ from position to position, so the second layer's keys before
# position 5 are no longer the same set.
# </details>

# %% [markdown]
# **3.** The NoPE encoder of section 5 gets position 0 right every time, and on positions 1 to 11 it
# is at chance. Is its score at position 0 position information?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# No. Position 0 always holds the BOS token, so the model recognises the token, not the position:
# content that happens to correlate with position. Every other position holds a random token. One by
# one they scatter (0.00 to 0.39), but over positions 1 to 11 the encoder scores 0.09 in every seed,
# the chance level: a model blind to position scores at most $1/11 = 0.091$ there in expectation.
# Moving the BOS to position $k$ needs no run: it permutes the input, so by equivariance (§3, C5) the
# output at $k$ equals the BOS's output at 0, and the encoder answers 0 there.
# </details>

# %% [markdown]
# **4.** A colleague tests a new bidirectional encoder for hidden position by feeding a sentence and
# its reversal; the outputs match, reversed, to $10^{-15}$. Is the encoder order-blind?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Not necessarily. Anything symmetric under mirroring passes a reversal: a local attention window
# (section 8: rounding only under reversal, nonzero under a random shuffle), a bias that depends on
# $|i - j|$ (a symmetric ALiBi-style penalty), or an encoding with $p_t = p_{T-1-t}$. Use several
# random shuffles, longer sequences than any window, and a tolerance at rounding level.
# </details>

# %% [markdown]
# **5.** Your model trains, but the permutation probe on it reports a relative change of $10^{-16}$.
# You did add a positional encoding. Name a cause this chapter measured and the fix.

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The encoding is erased before anything reads it: an encoding that is constant across channels (like
# $t(1, \dots, 1)$) is exactly the per-token mean that layer norm subtracts, and in a pre-norm model
# every reader of the residual stream sits behind a norm (section 7: rounding only with layer norm,
# 1.58 with RMS norm). Use an encoding that varies across channels (sinusoidal, learned), or act on the
# scores or on $q$ and $k$ instead of the input. The same probe, rerun, must then show a change.
# </details>

# %% [markdown]
# ## 10. The claims, settled
#
# Rows citing `exact §N` are computations without training, asserted in that section; rows citing
# `result NAME/KEY` are $95\%$ intervals over seeds, read by the verdict rule of
# [`chapters/README.md`](README.md) ("Evidence and the verdict rule"). A row marked "not tested here"
# says what this chapter would need to settle it. An exact row quotes no sizes that other random
# weights would change; sections 3, 4, 6 and 7 print them.
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1 | $\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)$ (book §1; survey §1.2) | one head: gap below $10^{-13}$, its weights equal after un-shuffling; a whole `TinyEncoder`: relative change below $10^{-13}$ (§2, §3) | exact §2 | reproduces |
# | C2a | Zeroed positions: an encoder gives the same outputs under reversal, to floating-point error (book, exercise 1) | below $10^{-13}$ of the largest logit, and below $10^{-14}$ at every position (§3) | exact §3 | reproduces |
# | C2b | ... and a decoder's differ, because of the mask (book, exercise 1) | they differ at every position, where the same weights without the mask change by rounding only: the mask is the cause (§3) | exact §3 | reproduces |
# | C2c | ... by "somewhat" (book, exercise 1) | not measured: the size of the change here is set by random weights at standard deviation 0.5, which say nothing of a decoder the book means (§3) | exact §3 | not tested here |
# | C3a | In a decoder token $i$ sees $i + 1$ tokens, so the count encodes position, which a causal head reads exactly when the first token is a marker, a BOS token (book, question 2, read here with this chapter's marker) | a causal head with equal scores reads $1/(i+1)$ from a marker on the first token, exactly (§4). The exact read-out needs the marker: over tokens with no marker the same head outputs their mean (§4) | exact §4 | reproduces |
# | C3b | ... and NoPE decoders learn some positional behaviour: on "say your position", accuracy on positions 1 to 11 above the chance level 1/11 (book, question 2) | with a BOS token, accuracy on positions 1 to 11: 0.91 ± 0.11 over 5 seeds (pooled 12772/14080: 0.907 ± 0.005) (§5) | result chapter01_nope/gpt_bos_above_chance | reproduces |
# | C3c | A BOS token raises a NoPE decoder's mean accuracy on "say your position" (this chapter, §5) | at 200 steps, $d_{model} = 16$, $T = 12$: it raises it by 0.62 ± 0.16, paired by seed over 5 seeds (§5) | result chapter01_nope/marker_gain | reproduces |
# | C4 | The causal mask gives a direction, not a fine distance (survey §10, misunderstanding 1) | one causal layer is exactly blind to the order of the tokens before a position (below $10^{-13}$): a count, no distance. The survey names no depth, and two causal layers are sensitive to that order (a nonzero change after a shuffled prefix): necessary for a fine distance, not a measure of one; no run here trains a task that needs distance (§4) | exact §4 | not tested here |
# | C5 | An encoder with no positional encoding is exactly permutation-equivariant: it cannot distinguish orders at all (book, question 2, follow-up) | a `TinyEncoder` with no scheme: a shuffle changes its logits by rounding only, below $10^{-13}$ of the largest, as section 3's argument says it must for any weights (§3) | exact §3 | reproduces |
# | C6a | The mask's signal is weak (book, question 2) | not measured: "weak" states no size, and the book says it of language models, which C6b is about; what this chapter computes of the signal is exact, a count, $1/(i+1)$ from a marker (§4) | exact §4 | not tested here |
# | C6b | ... and NoPE models underperform: a higher loss than a learned table's (book, question 2) | the claim needs trained models; these arms are still learning at 600 steps; byte-level loss at $L = 64$: `none` 0.22 ± 0.01 nats above a learned table, 3 seeds of 600 steps, so the interval alone says reproduces (0.12 ± 0.02 above scaled sinusoids, but below the unscaled table in 2 seeds of 3) (§5). This row does not settle the sentence for language models, and no row does. Chapter 6 settles a narrower reading, copying at a fixed offset within 150 steps: RoPE minus no position 0.63 ± 0.04 of held-out accuracy over 5 seeds, with the RoPE arm at 1.00 in every seed, reproduces (rope_copy/C4, chapter 6's C4, printed in §5); whether the arm without position would catch up with more steps, that run does not show | result input_schemes_at_train_len/none_minus_learned | not tested here (the interval's own verdict: reproduces) |
# | C7a | Every positional scheme the probe runs (the eight 1-D schemes of chapters 2 to 11) breaks equivariance (this workbook, experiments/permutation.py) | in `TinyEncoder`, where no scheme changes the logits by rounding only (below $10^{-14}$), each of the eight schemes probed changes them far above rounding on random weights (§6); not so for a scheme outside the library: §7's position on every channel leaves a layer-norm encoder equivariant | exact §6 | reproduces |
# | C7b | ... and so does the causal mask alone (this workbook, experiments/permutation.py) | `TinyGPT/none` changes the logits far above rounding on random weights (§6) | exact §6 | reproduces |
# | C8a | "Model ignores position": a norm can zero the encoding (book §4) | position added to every channel: erased by layer norm (rounding only), kept by RMS norm (a change far above rounding) (§7) | exact §7 | reproduces |
# | C8b | ... and the shuffle check finds it in an encoder (book §4) | the shuffle reports rounding only with layer norm, a change far above rounding with RMS norm (§7) | exact §7 | reproduces |
# | C8c | ... and the same check, as the table writes it, finds it in a decoder (book §4) | the decoder with the bug changes under a shuffle exactly as much as the same weights with no scheme (they differ below $10^{-13}$): the mask alone changes the outputs, so the check passes with the bug in; a variant, shuffling the tokens before the last and comparing the last position, tells the bug from a learned table in one layer, not in two (§7; chapter 12, C8b). What the check misses is the cause, not the symptom: with its encoding erased, the decoder with the bug is a NoPE decoder, whose outputs depend on position through the mask, as the check says (§7) | exact §7 | does not reproduce |
# | C8d | "Model ignores position": an encoding added after the projection is another cause (book §4) | not measured: the table does not say which projection, and this chapter builds no such model (§7) | exact §7 | not tested here |
#
# ## 11. Where next
#
# * The exercises: [`exercises/order.py`](../exercises/order.py), 1.1 to 1.4. Grade them with
#   `python -m exercises grade order`.
# * The probe on any model: `mini_transformer.evaluation.measures.permutation_sensitivity(model, ids)` and
#   `plot_permutation_sensitivity`; the full sweep is `python -m experiments.permutation`.
# * Next, chapter 2: put position back, first by adding it to the input.
