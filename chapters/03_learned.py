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
# # Chapter 3. Tables: learned absolute positions
#
# Chapter 2 computed each position's vector from a formula. GPT-2 and BERT do something
# simpler: they keep a table with one learned row per position and add row $t$ to the token at
# position $t$. No assumption about clocks or periods; the model learns whatever it needs. You
# build the lookup, then find out what the simplicity costs: parameters, rows that training
# never touches, a hard wall at the end of the table, and a decoding bug that fails silently.
#
# **By the end you can**
#
# * look up the rows of any positions, and refuse the ones the table does not have
#   (Exercise 3.1);
# * show that rows past the training length get exactly zero gradient, and that training leaves
#   them as they started, shrunk by weight decay alone;
# * decode through a KV cache with the right offsets and prove it against the full forward pass
#   (Exercise 3.2), and write the test that catches the wrong ones (Exercise 3.3);
# * read the measured cost of a learned table against T5's relative bias and the sinusoids.
#
# ## The claim ledger
#
# Predict before you run. Section 11 settles each claim with this workbook's numbers.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | A table costs $T_{max}\cdot d$ parameters: 0.8M for GPT-2 small, negligible (book §2.2) | | §1 |
# | C2 | ... and 100M for a 128k-context model at $d = 8192$, not negligible (book §2.2) | | §1 |
# | C3a | Rows in the tail of the table are updated rarely, since most sequences are shorter than $T_{max}$ (book §2.2) | | §3 |
# | C3b | Untrained positions have no reliable representation (survey §3.1) | | §3 |
# | C4 | A learned table cannot run one position past $T_{max}$: a hard architectural limit (book TL;DR, §2.2) | | §4 |
# | C5a | Learned positions are better in-distribution than sinusoids as the formula gives them (book TL;DR and §4) | | §9 |
# | C5b | ... and than sinusoids scaled to a token row's size (book TL;DR and §4) | | §9 |
# | C5c | ... but only slightly (book TL;DR and §4) | | §9 |
# | C6a | Trained at length 8 and run at 16, a relative bias works (book §7, exercise 4) | | §9 |
# | C6b | ... while a learned table whose rows 8 to 15 never trained "produces garbage" (book §7, exercise 4; its "or raises an index error" is C4) | | §5, §9 |
# | C7 | Nothing ties neighbouring rows together: "adjacent position differences are not structurally constrained" (survey §3.1) | | §5, §9 |
# | C8a | Decoding with the wrong position is silent (book §2.2) | | §6 |
# | C8b | ... and it costs tokens: decoding with the offset ignored gets fewer tokens right than with the right offsets (book §2.2) | | §6, §9 |
#
# ## The exercises
#
# You write them in [`exercises/learned.py`](../exercises/learned.py), each where this chapter has
# taught what it needs. Stars: ★ a formula into code, ★★ a design choice or an edge case, ★★★ a
# test or a derivation of your own.
#
# | Exercise | Function | | minutes |
# |---|---|---|---|
# | 3.1 | `position_rows(weight, T, offset)`: the `(1, T, d_model)` rows of positions `offset .. offset + T - 1`, and the refusal past the table | ★ | 5 |
# | 3.2 | `cached_decode(params, ids, prefill, step)`: logits of every position, decoded one token at a time through a cache | ★★ | 15 |
# | 3.3 | `test_learned_positions(position_rows, cached_decode)`: a test of your own, scored against wrong lookups and decoding loops | ★★★ | 20 |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work); grade one exercise with
# `python -m exercises grade learned --exercise 3.N`.

# %%
import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.backend import asarray, rng, to_numpy, xp
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

g = rng(0)  # one seeded generator for the whole chapter

# %% [markdown]
# ## 1. One row per position
#
# The table is $P \in \mathbb{R}^{T_{max}\times d_{model}}$, trained with everything else. The
# token at position $t$ enters the first layer as
#
# $$x_t = e_{\mathrm{tok}(t)} + P_t .$$
#
# It costs $T_{max}\cdot d_{model}$ parameters. Check the book's two figures.

# %% tags=["nbval-check-output"]
tables = {"GPT-2 small": (1024, 768), "BERT-base": (512, 768), "128k context, d = 8192": (128 * 1024, 8192)}
for name, (T_max, d) in tables.items():
    print(f"{name:<24} T_max {T_max:>7} x d {d:>5} = {T_max * d:>13,} parameters")
print(f"the book's 100M at d = 8192 is a table of {100e6 / 8192:,.0f} rows")
assert 1024 * 768 == 786_432 and 128 * 1024 * 8192 > 10 * 100e6

# %% [markdown]
# GPT-2's 0.8M is right. The 128k figure is not: $131072 \times 8192 = 1.07$ billion parameters,
# ten times the book's 100M (which is the size of a 12k-row table at $d = 8192$, or of a 128k table
# at GPT-2's width, $131072 \times 768 = 100.7$ million). At two bytes a parameter that is 2 GiB of
# positions.
#
# ## 2. Looking up rows
#
# A batch of $T$ tokens starting at position `offset` needs rows `offset .. offset + T - 1`.
# During training `offset` is 0; during decoding it is the position of the new token. A
# position at or past $T_{max}$ has no row at all.
#
# ### Exercise 3.1: `position_rows`   ★ · 5 min
#
# *Why it matters:* this is the whole scheme, and the `offset` argument is where the decoding
# bug of section 6 lives.
#
# Write `position_rows(weight, T, offset=0)`: the rows of positions `offset .. offset + T - 1` as
# `(1, T, d_model)`, so they broadcast over a batch. Raise `ValueError` with a sentence when a
# position falls outside the table. Index `weight` itself (a slice is all you need): inside the
# model `weight` is a `Parameter`, and indexing it keeps the path along which each row's gradient
# flows back to its row; copying `weight.data` into a new array would cut that path. Grade it alone:
# `python -m exercises grade learned --exercise 3.1`.

# %%
position_rows = use("learned", "position_rows")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Two things to get right besides the rows themselves: the leading axis of size 1 (the rows broadcast
# against a `(B, T, d_model)` batch of embeddings), and what happens when the positions run past the table.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Check first, slice second: NumPy does not complain when a slice runs past the end, it returns fewer
# rows. Case: a table of 10 rows. `T = 3, offset = 7` is rows 7, 8, 9, shape `(1, 3, d_model)`;
# `T = 3, offset = 8` must raise `ValueError` (there is no position 10), where a bare slice would
# quietly return 2 rows. A negative offset is refused too.
# </details>

# %% tags=["answer"]
reveal("learned", "position_rows")

# %% [markdown]
# Check it on a table whose row $t$ holds $4t, \dots, 4t + 3$, so you can read the position off
# the numbers: three rows from offset 5 are rows 5, 6, 7; the last row is there; one past it is
# refused.

# %% tags=["nbval-check-output"]
w = xp.arange(40.0).reshape(10, 4)  # T_max = 10, d_model = 4
rows = position_rows(w, 3, 5)
print("position_rows(w, 3, 5):", tuple(rows.shape), [[int(v) for v in r] for r in rows[0]])
assert rows.shape == (1, 3, 4) and xp.array_equal(rows[0], w[5:8])
assert xp.array_equal(position_rows(w, 1, 9)[0, 0], asarray([36.0, 37.0, 38.0, 39.0]))
try:
    position_rows(w, 1, 10)
    raise AssertionError("position 10 of a 10-row table must be refused")
except ValueError as e:
    print("position_rows(w, 1, 10) refuses:", e)

# %% [markdown]
# ## 3. The rows training never reaches
#
# The gradient of a slice is the incoming gradient scattered back into zeros: row $t$ receives
# exactly the gradient of the token at position $t$, summed over the batch, and a row that no
# token used receives exactly 0. So if every training sequence is shorter than the table, the
# rows past the training length never receive anything.
#
# Train `TinyGPT` (the default `kernels="reference"`, the textbook code: [chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)) with a 16-row table on
# sequences of length 8. The task is *look 3 back* (`tasks.lookback_task`): every token repeats
# the one three places earlier, so the answer at position $t$ is the token at $t - 2$. First one
# backward pass, and the largest gradient entry of each row:

# %%
from mini_transformer.model import tasks
from mini_transformer.engine.autograd import no_grad
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.engine.optim import cosine_lr
from mini_transformer.model.train import TrainConfig, train

cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=4, max_len=16, positional="learned", seed=0)
TRAIN_LEN = 8


def lookback_batches(g, T=TRAIN_LEN):
    b = tasks.lookback_task(32, T, 3, vocab_size=16, seed=int(g.host.integers(2**31)))
    return b.x, b.y


model = TinyGPT(cfg)
table_at_start = to_numpy(model.positional.weight.data).copy()  # (16, 32)
x, y = lookback_batches(rng(1))
model.loss(x, y).backward()
row_grad = to_numpy(abs(model.positional.weight.grad).max(axis=1))  # (16,) largest |gradient| of each row
model.zero_grad()

# %% tags=["nbval-check-output"]
print("largest |gradient| per row:")
print("  rows 0..7: ", " ".join(f"{v:.3f}" for v in row_grad[:TRAIN_LEN]))
print("  rows 8..15:", " ".join(f"{v:.3f}" for v in row_grad[TRAIN_LEN:]))
assert (row_grad[:TRAIN_LEN] > 0).all() and (row_grad[TRAIN_LEN:] == 0).all()  # exactly zero, not small

# %% [markdown]
# Exactly zero. Now train for 150 steps and compare the table with its starting values. AdamW's
# weight decay (0.01, applied to matrices) still shrinks every row a little at each step; with a
# zero gradient that is all that happens to a row, so the untouched rows should come out as
# their starting values times one common factor.

# %%
result = train(model, lookback_batches, TrainConfig(steps=150, lr=3e-3, warmup=10, seed=0, progress=False))
table_after = to_numpy(model.positional.weight.data)  # (16, 32)
moved = ((table_after - table_at_start) ** 2).sum(axis=1) ** 0.5 / (table_at_start ** 2).sum(axis=1) ** 0.5
ratio = table_after[TRAIN_LEN:] / table_at_start[TRAIN_LEN:]

# %% tags=["nbval-check-output"]
print(f"final training loss {result.losses[-1]:.3f}")
print("how far each row moved, relative to its start:")
print("  rows 0..7: ", " ".join(f"{v:.2f}" for v in moved[:TRAIN_LEN]))
print("  rows 8..15:", " ".join(f"{v:.4f}" for v in moved[TRAIN_LEN:]))
print(f"rows 8..15, after / before, every entry: {ratio.min():.5f} .. {ratio.max():.5f}")
decay = math.prod(1 - 0.01 * cosine_lr(step, 3e-3, 10, 150, 3e-4) for step in range(150))  # weight decay alone
print(f"weight decay alone over the 150 steps of the schedule: {decay:.5f}")
assert moved[:TRAIN_LEN].min() > 0.5 and abs(ratio - decay).max() < 2e-5

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(range(16), moved, color=["C0"] * TRAIN_LEN + ["C3"] * (16 - TRAIN_LEN))
ax.axvline(TRAIN_LEN - 0.5, color="k", ls=":", lw=1)
ax.text(TRAIN_LEN - 0.3, 0.3, "training length", fontsize=8)
ax.set(xlabel="row (position)", ylabel="|after - before| / |before|", yscale="log",
       title="150 steps at length 8: rows 8..15 only decay")
fig.tight_layout()

# %% [markdown]
# Rows 0 to 7 moved by 0.96 to 2.09 times their own size; every entry of rows 8 to 15 is its starting
# value times 0.99751 to 0.99752 (float32 rounding), what weight decay alone does over this schedule,
# 0.99751: $\prod_s (1 - \eta_s\lambda)$ with the learning rate $\eta_s$ of each step and
# $\lambda = 0.01$ (the schedule warms up for 10 steps to `lr=3e-3`, then decays on a cosine to
# `TrainConfig`'s floor, `min_lr=3e-4`). The book says the tail is updated
# "rarely". With sequences that never reach it, it never receives a gradient; only weight decay moves it.
#
# ## 4. The wall at $T_{max}$
#
# A table with 16 rows has no row 16. The model checks before it looks anything up.

# %% tags=["nbval-check-output"]
too_long = tasks.lookback_task(1, 17, 3, vocab_size=16, seed=0).x  # (1, 17)
try:
    model(too_long)
    raise AssertionError("a 16-row table must refuse position 16")
except ValueError as e:
    print(e)

# %% [markdown]
# This is an architectural limit, not a quality problem: no amount of data moves it. Chapter 2's
# sinusoids compute a row for any position; the learned table has only the rows it stores.
#
# ## 5. What the table learned, and what it did not
#
# Rows 8 to 15 do exist in this model, random and untrained, so it *can* run at length 16.
# What does it do there? Accuracy of the next-token prediction at every position, on held-out
# sequences of length 16:

# %%
test = tasks.lookback_task(512, 16, 3, vocab_size=16, seed=10_016)
with no_grad():
    z = model(test.x).data  # (512, 16, V) logits
pred = to_numpy(z.argmax(-1))  # (512, 16)
target = to_numpy(test.y)
scored = target >= 0
accuracy = (((pred == target) & scored).sum(axis=0) / scored.sum(axis=0).clip(1))  # (16,)
shifted = z - z.max(axis=-1, keepdims=True)
log_probs = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))  # (512, 16, V)
nll = to_numpy(-xp.take_along_axis(log_probs, asarray(target.clip(0))[..., None], axis=-1)[..., 0])  # (512, 16)
loss_beyond = float(nll[:, TRAIN_LEN:][scored[:, TRAIN_LEN:]].mean())  # nats, on positions 8..15

fig, ax = plt.subplots(figsize=(6.5, 3))
ax.plot(range(2, 16), accuracy[2:], "o")
ax.axvline(TRAIN_LEN - 0.5, color="k", ls=":", lw=1)
ax.axhline(1 / 11, color="gray", ls=":", lw=0.8)
ax.text(15, 1 / 11 + 0.02, "chance", ha="right", fontsize=8, color="gray")
ax.text(TRAIN_LEN - 0.3, 0.5, "training length", fontsize=8)
ax.set(xlabel="position t", ylabel="accuracy", ylim=(0, 1.05), title="Look 3 back, trained at length 8, run at 16")
fig.tight_layout()

# %% tags=["nbval-check-output"]
print("accuracy, positions 2..7:  ", " ".join(f"{v:.2f}" for v in accuracy[2:TRAIN_LEN]))
print("accuracy, positions 8..15: ", " ".join(f"{v:.2f}" for v in accuracy[TRAIN_LEN:]))
print(f"mean past the training length {accuracy[TRAIN_LEN:].mean():.2f} (chance {1 / 11:.2f})")
print(f"loss past the training length {loss_beyond:.2f} nats (a uniform guess: ln 11 = {math.log(11):.2f})")
assert accuracy[2:TRAIN_LEN].min() > 0.95 and accuracy[TRAIN_LEN:].mean() < 0.6

# %% [markdown]
# Perfect inside the training length; past it, far worse, and uneven by position (0.87 at
# position 10, 0.10 at 14; why is not tested here). Is it the "garbage" the book predicts? The
# book's model "has no embedding for positions 8 to 15 at all" (§7, exercise 4); this one has rows
# for them, untrained. What is tested is this table: the book's model read by a lookup that does
# not raise (one that clamps to row 7, say, or fills with NaN) is not tested here. "Garbage" is
# said of the output, and a reader of the tokens a model writes sees which are right, not the
# probabilities behind them: so chapter 5 reads it by accuracy, as output worse than ignoring
# position, and so does this chapter. A rule that uses no position at all, guessing uniformly among
# the symbols seen so far other than the current one (the current one if there is no other), gets
# 0.54 on these positions of the ten-seed run's test set (chapter 5, §7), more than this run's 0.38,
# though 0.38 is four times chance (0.09). This run's
# loss there, 2.05 nats, is a little under the 2.40 of a guess uniform over the 11 symbols.
# Section 9 measures this model's accuracy and loss there over five seeds, and the accuracy over
# ten seeds of a model trained 600 steps.
#
# **C7, the rows among themselves.** A formula ties neighbouring positions together; a table
# does not have to. Compare each trained row with every other by cosine.

# %%
trained = table_after[:TRAIN_LEN]
unit = trained / ((trained ** 2).sum(axis=1, keepdims=True)) ** 0.5
cosines = unit @ unit.T  # (8, 8)
fig, ax = plt.subplots(figsize=(4, 3.4))
im = ax.imshow(cosines, cmap="RdBu", vmin=-1, vmax=1)
ax.set(xlabel="position", ylabel="position", title="Cosine between trained rows")
fig.colorbar(im, ax=ax)
fig.tight_layout()

# %% tags=["nbval-check-output"]
neighbours = [float(cosines[t, t + 1]) for t in range(TRAIN_LEN - 1)]
three_apart = [float(cosines[t, t + 3]) for t in range(TRAIN_LEN - 3)]
print("cosine with the next row:      ", " ".join(f"{v:+.2f}" for v in neighbours))
print("cosine with the row 3 further: ", " ".join(f"{v:+.2f}" for v in three_apart))
print("cosine of row 0 with rows 1..7:", " ".join(f"{float(v):+.2f}" for v in cosines[0, 1:]))
assert max(neighbours) < 0 < 0.3 < min(three_apart)

# %% [markdown]
# Neighbouring rows point away from each other (cosine $-0.31$ to $-0.51$); rows three apart
# point the same way ($0.41$ to $0.94$), the distance the task looks back (whether the rows follow
# that distance is not tested here: no run uses another). Nothing like "nearby positions look alike".
# The survey's sentence is about the parametrisation, true by construction: each row is a parameter
# of its own, with only its own position's gradient (section 3). What a trained table shows is that
# the freedom gets used, and nothing carries what it learned past row 7.
#
# ## 6. The position of a cached token
#
# Generation adds one token at a time. A KV cache keeps the keys and values of the tokens so far,
# so each step computes only the new token's. With a learned table the new token needs *its* row,
# the one of its position in the text: the number of tokens before it. Give it row 0 and nothing
# crashes; the numbers are just wrong (book §2.2).
#
# `TinyGPT` does not let you make this mistake: with a cache, it takes the offset from the cache
# (`cache.seen`) and refuses any other. So the exercise uses a small model that takes the offset
# from you: one causal attention layer over token embeddings plus a learned table, in plain
# arrays, given in `exercises/learned.py`. `table_lm_params(seed)` makes its weights and
# `table_lm_step(params, ids, cache, offset)` runs it on new tokens `ids` at positions
# `offset, offset + 1, ...`, attending to the cached tokens and to themselves.

# %%
from exercises.learned import table_lm_params, table_lm_step  # given code in your exercises file

params = table_lm_params(seed=0)  # vocab 16, d_model 16, T_max 32
ids = g.integers(0, 16, size=(2, 10))  # (B, T) = (2, 10)
full, _ = table_lm_step(params, ids)  # the full forward pass, positions 0 .. 9
print("full forward:", tuple(full.shape))

# %% [markdown]
# ### Exercise 3.2: `cached_decode`   ★★ · 15 min
#
# *Why it matters:* this loop is what every generate function runs; getting its offset wrong is
# the bug the book calls common and silent.
#
# Write `cached_decode(params, ids, prefill, step=None)`: run the first `prefill` tokens in one
# call with an empty cache, then the others one per call, each with the cache the previous call
# returned and its own position as `offset`. Call the model as
# `logits, cache = step(params, ids_new, cache, offset)` (with `step = table_lm_step` when it is
# None), and return every call's logits joined along the time axis, `(B, T, vocab_size)`. Grade it
# alone: `python -m exercises grade learned --exercise 3.2`.

# %%
cached_decode = use("learned", "cached_decode")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# After the prefill call, how many tokens are in the cache? That number is the position of the next
# token. Does it depend on the batch size?
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# One call for the prefix, then one call per remaining token, each with the offset equal to the number
# of tokens already cached. Case: $T = 5$, `prefill = 2`: four calls, tokens `[0, 2)` at offset 0, then
# token 2 at offset 2, token 3 at 3, token 4 at 4. Their logits, `(B, 2, V)` and three `(B, 1, V)`,
# join along the time axis into `(B, 5, V)`, equal to one full pass. A batch of 3 changes no offset.
# </details>

# %% tags=["answer"]
reveal("learned", "cached_decode")

# %% [markdown]
# The check: the cached logits equal the full forward pass at every position, here with a prefill of
# 4 tokens and a batch of 2. It catches a bug only on inputs that expose it: section 7 shows two
# that a one-token prefill and a batch of one let through. Pass a `step` that records the offsets
# it receives, so you see the arithmetic too.

# %% tags=["nbval-check-output"]
seen = []


def recording_step(params, ids_new, cache=None, offset=0):
    seen.append((ids_new.shape[1], offset))
    return table_lm_step(params, ids_new, cache, offset)


cached = cached_decode(params, ids, 4, step=recording_step)
print("calls (tokens, offset):", seen)
cache_gap = float(abs(cached - full).max())
print("largest |cached - full|:", "below 1e-12" if cache_gap < 1e-12 else f"{cache_gap:.1e}")
assert seen == [(4, 0)] + [(1, t) for t in range(4, 10)] and xp.allclose(cached, full, atol=1e-10)

# %% [markdown]
# Now the bug. Reset every decoded token to offset 0 (the `step` below ignores the offset it is
# given once there is a cache) and compare, position by position.

# %% tags=["nbval-check-output"]
def reset_step(params, ids_new, cache=None, offset=0):
    return table_lm_step(params, ids_new, cache, 0 if cache is not None else offset)


wrong = cached_decode(params, ids, 4, step=reset_step)
error = to_numpy(abs(wrong - full).max(axis=(0, 2)))  # (T,) largest error at each position
print("position:           ", " ".join(f"{t:>5}" for t in range(10)))
print("|wrong - full| max: ", " ".join(f"{v:>5.2f}" for v in error))
assert (error[:4] < 1e-10).all() and (error[4:] > 0.1).all()

# %% [markdown]
# The prefill is right and every decoded position is wrong, by 0.40 to 0.62 in the logits. A test
# that only checks the first forward pass passes.
#
# **C8, on the trained model.** Does generation "look fine for a few tokens"? Take the
# look-3-back model of section 3, give it the first 3 tokens of held-out sequences and let it
# generate 5 more through its cache, greedily. Then swap in a lookup that ignores the offset,
# `from_functions.learned` with a function that always returns the first rows
# (section 8 says more about `from_functions`): the uncached forward pass always starts at 0, so
# only the cached steps see the bug.

# %%
from exercises.adapters import from_functions

held_out = tasks.lookback_task(256, TRAIN_LEN, 3, vocab_size=16, seed=777).x  # (256, 8)
library_scheme = model.positional
generated = {}
for name, lookup in [("right offsets", position_rows), ("offset ignored", lambda weight, T, offset=0: weight[None, :T])]:
    model.positional = from_functions.learned(lookup, library_scheme.weight.data)
    out = to_numpy(model.generate(held_out[:, :3], 5, greedy=True))  # (256, 8)
    generated[name] = (out[:, 3:] == to_numpy(held_out)[:, 3:]).mean(axis=0)  # accuracy at positions 3..7
model.positional = library_scheme

# %% tags=["nbval-check-output"]
print("generated position:", " ".join(f"{t:>5}" for t in range(3, 8)))
for name, acc in generated.items():
    print(f"{name:<18}", " ".join(f"{v:>5.2f}" for v in acc))
assert (generated["right offsets"] > 0.99).all()
assert generated["offset ignored"][:2].min() > 0.99 and generated["offset ignored"][2:4].max() < 0.3

# %% [markdown]
# The first two generated tokens are right, the next two nearly all wrong, and the fifth right
# again. The first comes from the prefill, which is correct; each later one is predicted from a
# token that went through the cache with row 0, as a query and as the key it left there. Why
# positions 4 and 7 survive is an explanation not tested here: rows 3 and 6 point roughly the way
# row 0 does (cosine $+0.65$ and $+0.63$, section 5) and rows 4 and 5 do not, but no run isolates
# the rows as the cause. This is one model; section 9 repeats the run on five seeds (C8b).
#
# ## 7. A test you write
#
# Section 6's comparison, cached against full at every position, is the core of a test for
# decoding bugs. Make it a function, add the lookup's own properties, and let the grader measure
# it.
#
# ### Exercise 3.3: a test of your own   ★★★ · 20 min
#
# *Why it matters:* "assert cached logits equal full-forward logits at each step" is the book's
# check for the decoding bug (§4), and it is only as good as the cases you run it on.
#
# Write `test_learned_positions(position_rows, cached_decode)` in `exercises/learned.py`: it
# receives two implementations and raises `AssertionError` when they are wrong. The model it
# decodes with, `table_lm_params` and `table_lm_step`, is in the same file. The grader runs your
# test on the reference, where it must pass, and on nine mutants: lookups with the offset ignored,
# one row late, without the batch axis or without the refusal; decoding loops with the offset
# reset, one ahead, counted in calls, counted in batch rows, or without the cache. Grade it alone:
# `python -m exercises grade learned --exercise 3.3`.

# %%
test_learned_positions = use("learned", "test_learned_positions")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# For each mutant, ask which input shows it. Offsets counted in calls equal offsets counted in
# tokens when every call brings one token. Offsets counted in batch rows are right when the batch
# has one sequence. A missing refusal shows only when you ask for a row that is not there.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# On a table whose row $t$ holds $4t \dots 4t + 3$, check rows from several offsets up to the last
# row, and check that positions past the end raise `ValueError` (`try` / `except ValueError` /
# `else: raise AssertionError`). Then compare `cached_decode(params, ids, prefill)` with
# `table_lm_step(params, ids)[0]` for a batch of two sequences and prefills of 1, 4 and the whole
# length.
# </details>

# %% tags=["answer"]
reveal("learned", "test_learned_positions")

# %% [markdown]
# Your test on the chapter's functions, then on every mutant, beside a weak test: rows from one
# offset, and cached decoding of one sequence with a one-token prefill.

# %% tags=["nbval-check-output"]
from exercises.adapters.scoreboard import scoreboard

impls = {"position_rows": position_rows, "cached_decode": cached_decode}


def weak_test(position_rows, cached_decode):
    w = xp.arange(40.0).reshape(10, 4)
    assert xp.array_equal(position_rows(w, 3, 5)[0], w[5:8])
    one = ids[:1, :6]  # one sequence
    assert xp.allclose(cached_decode(params, one, 1), table_lm_step(params, one)[0])


runs = scoreboard("learned", "test_learned_positions", impls,
                  {"your test": test_learned_positions, "weak test": weak_test})
assert all(r["reference"]["result"] == "passed" for r in runs.values())

# %% [markdown]
# The weak test lets three mutants through, and the reasons are the hints': a one-token prefill
# makes calls and tokens the same count, a batch of one makes batch rows and tokens the same
# count, and it never asks for a row past the end. Exactly the cases a real decoding loop meets
# first: a prompt of several tokens, several prompts at once, a conversation that runs long.
#
# ## 8. Your lookup inside the model
#
# `from_functions.learned(position_rows, weight)` builds the scheme from
# your function and a starting table. Give it a copy of the library model's starting table, and
# `train_side_by_side` trains the library's model and yours in float64 on the same batches. With
# a correct lookup the loss curves agree to rounding; with a wrong one the cell says where they
# part.

# %%
from exercises.adapters.side_by_side import train_side_by_side

small = GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=16, positional="learned", seed=0)
start = TinyGPT(small).positional.weight.data  # the table both models start from
side = train_side_by_side(small, from_functions.learned(position_rows, start), lookback_batches,
                          steps=40)

# %% tags=["nbval-check-output"]
print(side.report())
assert side.first_difference is None

# %%
side.plot(yours="your position_rows", title="The same model, two lookups of one table");

# %% [markdown]
# ## 9. The measured record
#
# The chapter reads the results of committed experiments. First two on look 3 back.
# `python -m experiments.relative_bias_generalisation` trains the
# look-3-back model of section 3 with a 16-row learned table and, beside it, with T5's bucketed
# relative bias (chapter 5), at length 8 for 600 steps, and tests both at 16, over ten seeds.
# `python -m experiments.chapter03_learned` retrains section 3's own model
# (150 steps) on five seeds, measures its rows, its accuracy and loss past 8 and its cached generation
# as in section 6, and settles the claims of both runs:

# %% tags=["nbval-check-output"]
from experiments import relative_bias_generalisation
from experiments.common import load_result

from mini_transformer.evaluation import stats

rbg = load_result("relative_bias_generalisation")
print(f"{rbg['task']}, trained at {rbg['train_len']}, tested at {rbg['test_len']}, {len(rbg['seeds'])} seeds, "
      "mean ± 95% half-width over seeds")
keys = ("accuracy_8", "accuracy_16", "accuracy_beyond_8", "loss_8", "loss_beyond_8")


def cell(values):
    same = stats.all_equal(values)  # every seed equal: "all 10: 1.00", never "± 0.00"
    if same is not None:
        return f"all {len(values)}: {same:.2f}"
    m, _, lo, hi = stats.t_interval(values)
    return stats.format_interval(m, lo, hi)  # as many digits as the half-width needs


print(f"{'scheme':<9}" + "".join(f"{h:>18}" for h in ("acc at 8", "acc at 16", "acc, 8..15", "loss at 8", "loss, 8..15")))
for name in ("t5", "learned"):
    print(f"{name:<9}" + "".join(f"{cell([r[k] for r in rbg['per_seed'][name]]):>18}" for k in keys))
targets = rbg["environment"]["test_sequences"] * (rbg["test_len"] - rbg["train_len"])  # per seed, positions 8..15
for name in ("t5", "learned"):  # for reading only: the verdicts use the seeds' t interval
    right = sum(round(r["accuracy_beyond_8"] * targets) for r in rbg["per_seed"][name])
    p, lo, hi = stats.wilson_interval(right, targets * len(rbg["seeds"]))
    print(f"{name}, acc 8..15 pooled over the seeds: {right}/{targets * len(rbg['seeds'])}, Wilson {stats.format_interval(p, lo, hi)}")
learned_record = load_result("chapter03_learned")
garbage = rbg["claims"]["learned_below_no_position_past_8"]  # C6b, chapter 5's C5b: below the rule with no position
print(f"{'t5_accuracy_beyond_8':<42} {stats.format_record(learned_record['claims']['t5_accuracy_beyond_8'])}")
print(f"{'learned_below_no_position_past_8':<42} {stats.format_record(garbage)} (the rule: {garbage['threshold']:.4f})")
assert garbage["verdict"] == "reproduces"
for key in ("learned_accuracy_beyond_8_minus_chance", "learned_loss_beyond_8_minus_uniform",
            "chapter_model_loss_beyond_8_minus_uniform"):  # measurements beside C6b, no claim
    rec = learned_record["claims"][key]
    unit = "" if "accuracy" in key else " nats"
    print(f"{key:<42} {stats.format_interval(rec['mean'], *rec['interval'])}{unit} ({len(rec['values'])} seeds)")
chapter_model = [r["accuracy_beyond_8"] for r in learned_record["per_seed"]]  # §5's model, 150 steps, no claim
m, _, lo, hi = stats.t_interval(chapter_model)
print(f"{'chapter model accuracy on 8..15':<42} {stats.format_interval(m, lo, hi)} ({len(chapter_model)} seeds: "
      + " ".join(f"{v:.3f}" for v in chapter_model) + ")")
assert lo < garbage["threshold"] < hi  # for §5's model, below the rule is not established
assert learned_record["claims"]["learned_loss_beyond_8_minus_uniform"]["interval"][0] > 0          # above the guess
assert learned_record["claims"]["chapter_model_loss_beyond_8_minus_uniform"]["interval"][1] < 0    # below it

# %%
fig = relative_bias_generalisation.plot(rbg)
plt.show()

# %% [markdown]
# T5's bias is perfect at 16 in every seed (all 10 seeds: 1.00 on positions 8 to 15). Why, when its
# buckets for distances 8 to 15 never trained, is an explanation not tested here (chapter 5, §7).
# The learned table is perfect at length 8 and gets 0.45 ± 0.04 on positions 8 to 15, wholly below
# the 0.5406 of a rule that uses no position at all, so "garbage", read as output worse than ignoring
# position, reproduces (C6b, as chapter 5's C5b). Against chance it looks better, 0.36 ± 0.04 above
# it, but on this task chance is a low bar. The learned table's loss there is 2.92 ± 0.36 nats on
# positions 8 to 15 after 600 steps, 0.52 ± 0.36 above a guess uniform over the 11 symbols
# ($\ln 11 = 2.40$). Section 5's model,
# trained 150 steps, is on the other side: over five seeds of it the loss past 8 is 0.63 ± 0.28
# nats *below* that guess, and its accuracy on positions 8 to 15 is 0.47 ± 0.09, with two seeds
# (0.554, 0.544) above the rule's 0.5406: for this model, below the rule is not established.
# What separates the two runs is not tested here: they differ in their
# steps and in their warmup. With an 8-row table the model would not run at all (section 4).
#
# The five seeds of `chapter03_learned` also settle C7 (section 5's cosines) and C8b (section 6's
# generation, with the offset ignored):

# %% tags=["nbval-check-output"]
per_seed = learned_record["per_seed"]
near = learned_record["claims"]["neighbours_minus_three_apart"]
neighbour_cosines = " ".join(f"{r['neighbour_cosine']:+.2f}" for r in per_seed)
print(f"mean cosine of neighbouring rows, per seed: {neighbour_cosines}")
print(f"neighbours_minus_three_apart               {stats.format_record(near)}; "
      f"the sinusoidal table: {near['sinusoidal_table']:+.2f}")
print(f"{'share right at generated position':<34}" + "".join(f"{t:>14}" for t in range(3, 8)))
for key, name in (("generated_right", "right offsets"), ("generated_offset_ignored", "offset ignored")):
    spread = [(min(r[key][i] for r in per_seed), max(r[key][i] for r in per_seed)) for i in range(5)]  # over seeds
    print(f"{name + ', 5 seeds':<34}" + "".join(f"{f'{lo:.2f} to {hi:.2f}' if lo < hi else f'all {lo:.2f}':>14}"
                                                 for lo, hi in spread))
degrades = learned_record["claims"]["offset_ignored_minus_right_generated"]
print(f"offset_ignored_minus_right_generated       {stats.format_record(degrades)}")
assert max(r["neighbour_cosine"] for r in per_seed) < 0 < near["sinusoidal_table"] and near["verdict"] == "reproduces"
assert all(r["generated_offset_ignored"][0] == r["generated_right"][0] == 1 for r in per_seed)  # the prompt's pass
assert degrades["verdict"] == "reproduces"

# %% [markdown]
# The mean cosine of neighbouring rows is negative in every seed, and 1.08 ± 0.08 below that of
# rows three apart, where the sinusoidal table's neighbours are the more alike (C7). With
# the offset ignored, the first generated token, which the prompt's own pass predicts, is right in
# every seed by construction; over positions 4 to 7 the share right is 0.48 ± 0.02 below the right
# offsets' (C8b: the bug costs tokens). After that one guaranteed token the pattern is not a steady
# decline: position 4 is right for 0.84 to 1.00 of the prompts, 5 and 6 for 0.08 to 0.27, and 7
# again for 0.81 to 1.00. So the book's "looks fine for a few tokens, then degrades" is not settled
# here (C8b).
#
# And at its own length, on text? The train-short-test-long experiment (a model
# with $d_{model} = 64$ trained on the standard library's source at $L = 64$; its whole table is
# in [chapter 7, §7](07_alibi.py#7.-The-bake-off:-eight-schemes,-trained-at-L,-run-at-8L)), the learned row against the sinusoidal one:

# %% tags=["nbval-check-output"]
stl = load_result("train_short_test_long")
for name in ("learned", "sinusoidal"):
    r = stl["results"][name]
    cells = "  ".join(f"{v:.2f}" if math.isfinite(v) else "refused" for v in r["loss"])
    print(f"{name:<11} at 1x, 2x, 4x, 8x L: {cells}")
print("why learned stops:", stl["results"]["learned"]["reasons"][1])
learned_L, sinusoidal_L = stl["results"]["learned"]["loss"][0], stl["results"]["sinusoidal"]["loss"][0]
assert learned_L < sinusoidal_L and all(math.isnan(v) for v in stl["results"]["learned"]["loss"][1:])

# %% [markdown]
# At $L$ the learned table beats the sinusoids, 1.61 against 1.69 nats per byte, on one seed; past
# $L$ it refuses. One seed is not a verdict, and the comparison has a confound: that run adds the
# sinusoidal table as the formula gives it, rows of norm $\sqrt{32} = 5.7$ at $d_{model} = 64$,
# while the learned table starts at the token rows' size (standard deviation 0.02, norm about $0.02\sqrt{64} = 0.16$),
# 35 times smaller (chapter 2, §7, measured what that mismatch costs on a small task). The
# experiment `python -m experiments.input_schemes_at_train_len` trains the same
# model on three seeds (600 steps, not 1500), with the learned table, the sinusoidal table as it is,
# and the sinusoidal table scaled by $0.02\sqrt 2$ so that its rows start at a token row's norm;
# every arm of a seed trains on the same batches and starts from the same token rows (the learned
# table's own draw changes the weights drawn after it), and all are scored on the same held-out
# windows at $L$:

# %% tags=["nbval-check-output"]
at_L = load_result("input_schemes_at_train_len")
for arm in ("learned", "sinusoidal", "sinusoidal_scaled"):
    print(f"{arm:<18} loss at L, seeds {at_L['seeds']}: "
          + "  ".join(f"{r['loss_at_L']:.3f}" for r in at_L["per_seed"][arm]))
for key in ("learned_minus_sinusoidal", "learned_minus_sinusoidal_scaled", "sinusoidal_scaled_minus_learned"):
    rec = at_L["claims"][key]
    alone = f" (the interval alone: {rec['interval_verdict']})" if "interval_verdict" in rec else ""
    print(f"{key:<32} {stats.format_record(rec, 3)}{alone}, claimed {rec['claimed']} {rec['threshold']:.2f}")
gain = at_L["claims"]["sinusoidal_scaled_minus_learned"]
assert all((at_L["claims"][k]["verdict"], at_L["claims"][k]["interval_verdict"]) == ("not tested here", "reproduces")
           for k in ("learned_minus_sinusoidal", "learned_minus_sinusoidal_scaled")) and min(gain["values"]) > 0.05
assert (gain["verdict"], gain["interval_verdict"]) == ("not tested here", "does not reproduce")  # arms still learning

# %% [markdown]
# Against the table as the formula gives it the learned one is better by 0.251 ± 0.186 nats, but the
# full-size sinusoidal runs scatter (2.107 to 2.243). Against the table scaled to a token row's size,
# which removes the size mismatch at initialisation (not every difference: the learned arm's other weights are drawn
# differently), the learned table is still better, by 0.100 ± 0.014 nats, in every seed. That is
# a lead after 600 steps, not the book's claim, which is about trained models: the arms are still
# learning at 600 steps, so C5a and C5b are not tested here, though the intervals alone say
# "reproduces". The two that the train-short-test-long run above trains for
# 1500 steps end far lower there (learned 1.61 against 1.934 to 1.941 here, sinusoidal 1.69 against
# 2.107 to 2.243), so the gap measures learning speed too. Whether the lead lasts is not tested
# here, nor its size, "slightly" (C5c); read as a gain under 0.05 nats, the interval alone would
# say "does not reproduce". (What the size itself costs
# the sinusoids at $L$, 0.15 ± 0.20 nats over these seeds, is not established: chapter 2, §9.)
#
# ## 10. Check yourself on this chapter
#
# Answer out loud, or on paper, before you open an answer.
#
# **1.** After 150 steps at length 8, rows 8 to 15 were their starting values times 0.99751
# (section 3). Where does that number come from, and why is it the same, to float32 rounding, for
# every entry?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# From AdamW's decoupled weight decay. A row no token used gets a zero gradient, so Adam's
# moments stay zero and the Adam part of the update is zero; what remains is
# $p \leftarrow p - \eta_s\lambda p = (1 - \eta_s\lambda)\,p$ at every step $s$. The product of
# those factors over the 150 steps of the learning-rate schedule ($\lambda = 0.01$, peak
# $\eta = 3\cdot 10^{-3}$ after 10 warmup steps, cosine floor `min_lr=3e-4`) is 0.99751, the number section 3 computed beside the measured ratio,
# and it multiplies every entry alike because it does not depend on the entry. With
# `weight_decay=0` the rows would come out as they went in.
# </details>

# %% [markdown]
# **2.** In section 6, decoding with every offset reset to 0 gave wrong logits from position 4 on
# but the right ones at positions 0 to 3. Why is a test on the prefill alone blind to the bug?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The prefill call runs at offset 0 whatever the bug, and positions 0 to 3 are exactly the
# positions it computes, with the right rows. The bug is in the arithmetic of the *later* calls,
# which a prefill-only test never makes. The test that catches it compares cached decoding with
# the full forward pass at every position, with at least one decoded token.
# </details>

# %% [markdown]
# **3.** Your `cached_decode` uses `offset = number of calls made so far`. With `prefill=1` the
# check against the full forward pass passes. Why, and which case exposes it?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# With a prefill of one token, each call brings one token, so calls and tokens are the same
# count: call $n$ is the token at position $n$. Any prefill longer than 1 breaks the equality:
# after a 4-token prefill the next token is at position 4, but only 1 call has been made. The
# grader names this `counted_in_calls`; a test with one prefill length lets it through.
# </details>

# %% [markdown]
# **4.** In section 6 the model with the offset-ignoring lookup generated the token at position 4
# correctly but those at 5 and 6 wrongly. Which row did each token fed through the cache read,
# and what would it take to show that the rows' cosines cause the pattern?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Every one read row 0: the tokens at 3, 4, 5 and 6, which predict positions 4 to 7, each as a
# query and as the key it left in the cache. Section 5's cosines fit the pattern: rows 3 and 6
# point the way row 0 does ($+0.65$ and $+0.63$), rows 4 and 5 away from it ($-0.26$ and $-0.20$),
# and the predictions made from 3 and 6 survive. Fitting is not a test. A test would change one
# thing, for instance give the cached keys their own rows and only the query row 0, and see whether
# the pattern stays; no such run is made here.
# </details>

# %% [markdown]
# **5.** The book expects the learned model run at length 16 to produce "garbage". The committed
# ten-seed run has 0.45 ± 0.04 accuracy on positions 8 to 15, with chance at 0.09, and a loss there of
# 2.92 ± 0.36 nats, worse than the 2.40 of a guess uniform over the 11 symbols. How can the loss be
# worse than that guess while the accuracy is about five times chance (though below the 0.54 of a
# rule that uses no position, chapter 5, §7)?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Accuracy asks only whether the right token is the most probable one. The loss asks how much
# probability it got, $-\ln p$, which grows without bound as $p \to 0$. A mean loss of 2.92 nats
# is a right token given, on a log average, $e^{-2.92} = 0.054$ of the probability, less than the
# $1/11 = 0.091$ of a uniform guess. A model that is right nearly half the time can still do that,
# if where it is wrong it gives the right token very little. How the probability spreads at each
# position is not measured here.
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
# | C1 | $T_{max}\cdot d$ parameters, 0.8M for GPT-2 small (book §2.2) | $1024 \times 768 = 786\,432$ (§1) | exact §1 | reproduces |
# | C2 | 100M for a 128k context at $d = 8192$ (book §2.2) | $131\,072 \times 8192 = 1.07$ billion, about ten times more; 100M is a 12k-row table (§1) | exact §1 | does not reproduce |
# | C3a | The tail is updated rarely, since most sequences are shorter than $T_{max}$ (book §2.2) | every window here has the training length, so no row is "rarely" updated: rows past it get exactly zero gradient, only weight decay moves them; the book's condition, a spread of lengths, is not in this run (§3) | exact §3 | not tested here |
# | C3b | Untrained positions have no reliable representation (survey §3.1) | rows past the training length stay their random start: after 150 steps they are their start times 0.99751, weight decay alone (§3) | exact §3 | reproduces |
# | C4 | No position past $T_{max}$ (book TL;DR, §2.2) | `TinyGPT` refuses position 16 of a 16-row table; the committed run refuses 2x, 4x, 8x $L$ (§4, §9) | exact §4 | reproduces |
# | C5a | Better in-distribution than sinusoids (book TL;DR, §4), against the table as the formula gives it | the claim needs trained models; these arms are still learning at 600 steps (a decoder on text; §4 speaks of encoders); learned minus sinusoidal: -0.251 ± 0.186 nats at $L = 64$, 3 seeds of 600 steps, so the interval alone says reproduces (§9) | result input_schemes_at_train_len/learned_minus_sinusoidal | not tested here |
# | C5b | ... against the sinusoidal table scaled to a token row's size, without the size mismatch at initialisation (book TL;DR, §4) | the same missing condition as C5a; learned minus scaled sinusoidal: -0.100 ± 0.014 nats, lower in every seed, so the interval alone says reproduces (§9) | result input_schemes_at_train_len/learned_minus_sinusoidal_scaled | not tested here |
# | C5c | ... and only *slightly* better: by under 0.05 nats, the size under which this workbook calls a change in loss small, as for "runs long" (book TL;DR, §4) | the claim needs trained models; these arms are still learning at 600 steps (a decoder on text; §4 speaks of encoders); the gain over the scaled sinusoids, 0.100 ± 0.014 nats over 3 seeds, is over 0.05 in every seed, so the interval alone says does not reproduce (§9) | result input_schemes_at_train_len/sinusoidal_scaled_minus_learned | not tested here |
# | C6a | At 16 after training at 8, a relative bias works: accuracy above 0.9 on positions 8 to 15, chapter 5's bar for "sensible output" (book §7) | T5: all 10 seeds: 1.00 on positions 8 to 15 (§9) | result chapter03_learned/t5_accuracy_beyond_8 | reproduces |
# | C6b | ... and a learned table whose rows 8 to 15 never trained, here a 16-row table, "produces garbage" at 16 (book §7, said of a model with no rows there at all, read by a lookup that does not raise: that model is not tested here, §5): by accuracy on positions 8 to 15, what a reader of its tokens sees, read as worse than ignoring position, below a rule that uses no position, 0.5406, as chapter 5 (C5b) reads it | 0.45 ± 0.04 over 10 seeds of `relative_bias_generalisation`, wholly below the rule's 0.5406, though 0.36 ± 0.04 above chance (0.09), as in chapter 5's C5b (§9) | result relative_bias_generalisation/learned_below_no_position_past_8 | reproduces |
# | C7 | Neighbouring rows are not tied together (survey §3.1), read as: trained, a table's neighbouring rows can end less alike than rows three apart, where the sinusoidal table's are the more alike | mean cosine of neighbouring rows minus that of rows three apart: -1.08 ± 0.08 over five seeds, the sinusoidal table +0.19; the mean cosine of neighbours is negative in every seed (-0.34 to -0.41) (§5, §9) | result chapter03_learned/neighbours_minus_three_apart | reproduces |
# | C8a | A wrong decode offset is silent (book §2.2) | no error is raised; the prefill matches the full forward pass and every decoded position differs from it (§6) | exact §6 | reproduces |
# | C8b | ... and it costs tokens: decoding with the offset ignored gets fewer tokens right than with the right offsets (book §2.2) | greedy from 3-token prompts, five seeds of §3's model: over generated positions 4 to 7, -0.48 ± 0.02 against the right offsets (the first generated token comes from the prompt's own pass); not a steady decline: position 7 right again for 0.81 to 1.00, so the book's "looks fine for a few tokens, then degrades" is not what this row settles (§6, §9) | result chapter03_learned/offset_ignored_minus_right_generated | reproduces |
#
# The "raises an index error" half of C6b is C4: a table with 8 rows refuses position 8.
#
# ## 12. Where next
#
# * Grade your exercises: `python -m exercises grade learned`.
# * The library's table is `mini_transformer/positional/learned.py` (`LearnedPositionalEmbedding.rows`
#   is Exercise 3.1); its cache, which decides every offset so that you cannot get it wrong, is
#   `mini_transformer/model/kv_cache.py`.
# * The interview questions this chapter answers are in
#   [`chapters/cards/03_learned.md`](cards/03_learned.md).
# * Chapter 4 moves position from the input to the attention scores, where a distance can be
#   learned once and used at every position.
