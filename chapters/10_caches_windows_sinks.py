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
# # Chapter 10. Caches, windows and sinks
#
# A served model never sees a sequence the way it trained on one. Prompts arrive in padded
# batches, training rows are packed with several documents, the KV cache grows until it must
# forget something, and a conversation can run far past the training length. Each of these
# has its own way of numbering positions, and each can number them wrong without any error.
# This chapter gives every token its position in each layout, writes the eviction policy of a
# streaming cache, and measures the claim behind it: that the first tokens are attention sinks.
#
# **Objectives.** By the end you can
#
# * give every token of a left-padded batch and of a packed row its position, and say which
#   positional schemes a wrong position breaks;
# * write StreamingLLM's eviction policy and run the model on it;
# * tell slot positions from text positions, and predict which one breaks RoPE on a long stream;
# * measure whether a model has attention sinks and what evicting the first token costs;
# * write a test that catches every off-by-one of a cache policy.
#
# You write four functions in [`exercises/caches.py`](../exercises/caches.py):
#
# | Exercise | Function | What it does |
# |---|---|---|
# | 10.1 | `left_padded_position_ids(attention_mask)` | positions of a padded batch |
# | 10.2 | `packed_position_ids(doc_ids)` | positions of packed rows |
# | 10.3 | `keep_indices(n_tokens, window, n_sink)` | which cached tokens a window with sinks keeps |
# | 10.4 | `test_cache_policy(keep_indices)` | a test of 10.3 that the grader scores against mutants |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work);
# grade them with `python -m exercises grade caches`.

# %% [markdown]
# ## The claims this chapter tests
#
# Write your prediction in the third column before you run anything. Section 9 settles each
# claim on the numbers the chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | Prefill, decode, padding, packing and the sliding window must give a token the same logical position; when they do not, nothing crashes (survey §5.4; §11, item 4) | | §2, §3 |
# | C2 | Keys are rotated once, at write time, so cached decoding equals the full forward pass at every step (book §4, the failure table; survey §5.4) | | §1 |
# | C3 | Positions by slot in the cache keep every rotation inside the trained range; positions by place in the text bring extrapolation back (book §2.6; book §6, the sinks follow-up) | | §5 |
# | C4 | Trained models put large attention mass on the first tokens, growing with depth (book §2.6; book exercise 6) | | §7 |
# | C5 | A sliding window that evicts the first tokens collapses; keeping 4 sinks restores it (book §2.6, §4, §5) | | §7 |
# | C6 | Evicting position 0 from the cache raises the loss; in a tiny model the effect is smaller, but its direction reproduces (book exercise 6) | | §7 |
# | C7 | The sink comes from softmax: a row must sum to 1 (book §2.6, §6) | | §7 |

# %%
import json
import math
import os

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine import backend
from mini_transformer.engine.backend import asarray, hostnp as np, to_numpy, xp
from mini_transformer.model import GPTConfig, TinyGPT, document_mask


def show(gap):
    """A gap as printed: rounding-sized gaps (their digits differ between machines) as '< 1e-12'."""
    return f"{gap:.1e}" if gap >= 1e-12 else "< 1e-12"


def random_model(positional, n_layers=2, max_len=32, seed=1):
    """A small TinyGPT in float64 with large random weights: untrained, but every position counts for something."""
    model = TinyGPT(GPTConfig(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=2, max_len=max_len,
                              positional=positional, seed=0)).to_dtype("float64")
    draw = np.random.default_rng(seed)
    for p in model.parameters():
        p.data[...] = asarray(draw.normal(0.0, 0.5, p.shape))
    return model.eval()


tokens = np.random.default_rng(2).integers(0, 16, size=(1, 40))  # one stream of 40 token ids

# %% [markdown]
# ## 1. The cache keeps what the full forward pass would compute
#
# Decoding with a KV cache feeds one token at a time. Each layer appends the new token's key
# and value to the cache and lets its query attend to everything cached. With RoPE the key is
# rotated once, when it is written, by its own position (chapter 6, §7), so the cache never
# touches it again. The one number to get right is the new token's position: how many tokens
# came before it.
#
# The check that catches every cache bug (book §4): the logits of cached decoding must equal
# those of one full forward pass, at every step. `TinyGPT` takes a cache from `model.new_cache()`
# (`mini_transformer/model/kv_cache.py`); its models run the reference kernels, the code of the
# earlier chapters ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)).

# %% tags=["nbval-check-output"]
for scheme in ("learned", "rope", "alibi"):
    model = random_model(scheme)
    full = to_numpy(model(tokens[:, :24]).data)  # (1, 24, vocab) in one pass
    cache = model.new_cache()
    steps = [to_numpy(model(tokens[:, :4], cache=cache).data)]  # prefill 4 tokens
    steps += [to_numpy(model(tokens[:, t:t + 1], cache=cache).data) for t in range(4, 24)]  # then one at a time
    gap = float(np.abs(np.concatenate(steps, axis=1) - full).max())
    print(f"{scheme:>8}: largest gap between cached and full logits over 24 steps: {show(gap)}")
    assert gap < 1e-10

# %% [markdown]
# ## 2. A left-padded batch
#
# Prompts of different lengths go into one batch by padding the short ones. For generation the
# padding goes on the **left**, so every row's last real token sits in the last column, where
# the next token is appended. An attention mask marks the real tokens (1) and the padding (0).
#
# A token's **logical position** is the number of real tokens before it in its row. The column
# index is not: in a row with three padding tokens, the first real token sits in column 3 but
# is at position 0. Counted with the cumulative sum of the mask,
#
# $$\text{pos}_{b,t} = \Big(\sum_{s \le t} m_{b,s}\Big) - 1 \ \text{ where } m_{b,t} = 1, \qquad \text{pos}_{b,t} = 0 \ \text{ on padding.}$$
#
# ### Exercise 10.1: `left_padded_position_ids`   ★☆☆ · 10 min
#
# *Why it matters:* batched generation with a learned or sinusoidal table reads garbage when
# positions are counted from the padding, and no shape check notices.
#
# Write `left_padded_position_ids(attention_mask)` for a `(B, T)` mask of 0s and 1s. Return the
# `(B, T)` int64 positions: real tokens counted from 0 in their row, padding 0. Right-padded
# rows must work too.

# %%
left_padded_position_ids = use("caches", "left_padded_position_ids")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# A real token's position is the number of real tokens before it in its row. A running count along the
# row gives that number plus one.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Padding gets position 0, whichever side it is on. Case: the mask `[0, 0, 1, 1, 1]` gives
# `[0, 0, 0, 1, 2]`: the running count minus one would be $-1$ on the padding. The right-padded
# `[1, 1, 0]` gives `[0, 1, 0]`, where the count would repeat the last position.
# </details>

# %% tags=["answer"]
reveal("caches", "left_padded_position_ids")

# %% [markdown]
# Grade it with `python -m exercises grade caches --exercise 10.1`. Check it on a batch with a
# left-padded, an unpadded and a right-padded row:

# %% tags=["nbval-check-output"]
mask = asarray([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
pos = left_padded_position_ids(mask)
print(to_numpy(pos))
assert to_numpy(pos).tolist() == [[0, 0, 0, 0, 1, 2], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 0, 0]]

# %% [markdown]
# Now inside the model. `TinyGPT` takes a padded batch as Hugging Face models do:
# `model(ids, attention_mask=mask, position_ids=pos)`, the mask `(B, T)` with 0 on padding (no
# query attends to a padding key) and `pos` `(B, T)` each token's position in its own row. Pad
# three prompts of different lengths on the left into one batch, give it your position ids, and
# compare each row's logits at its real tokens with the same prompt run alone. Then run the batch
# again with positions counted from the padding (no `position_ids`: every row at columns
# 0, 1, ..., as without a mask).

# %% tags=["nbval-check-output"]
lengths = (6, 9, 4)
T_pad = max(lengths)
batch = np.zeros((len(lengths), T_pad), dtype=np.int64)       # pad id 0, under the mask
mask_batch = np.zeros((len(lengths), T_pad), dtype=np.int64)
for row, n in enumerate(lengths):
    batch[row, T_pad - n:], mask_batch[row, T_pad - n:] = to_numpy(tokens[0, :n]), 1
pos_batch = left_padded_position_ids(asarray(mask_batch))     # your function feeds the model
print("prompt lengths:", lengths)
print("attention mask:", mask_batch.tolist())
print("your position ids:", to_numpy(pos_batch).tolist())


def padded_gap(model, **positions):
    """Largest difference between each row's real-token logits in the batch and its prompt run alone."""
    out = to_numpy(model(batch, attention_mask=mask_batch, **positions).data)
    return max(float(np.abs(out[row, T_pad - n:] - to_numpy(model(tokens[:, :n]).data)[0]).max())
               for row, n in enumerate(lengths))


padding_gap = {}
print(f"{'scheme':>10}{'yours':>10}{'from padding':>14}")
for scheme in ("learned", "sinusoidal", "rope", "alibi", "t5"):
    model = random_model(scheme)
    padding_gap[scheme] = (padded_gap(model, position_ids=pos_batch), padded_gap(model))
    print(f"{scheme:>10}{show(padding_gap[scheme][0]):>10}{show(padding_gap[scheme][1]):>14}")
assert all(yours < 1e-10 for yours, _ in padding_gap.values())
assert all(padding_gap[s][1] > 1e-3 for s in ("learned", "sinusoidal"))
assert all(padding_gap[s][1] < 1e-10 for s in ("rope", "alibi", "t5"))

# %% [markdown]
# With your positions every row of the batch computes what its prompt computes alone, to
# rounding, in all five schemes. Counted from the padding, learned and sinusoidal tables add the
# wrong position vector to each token, so every output changes. RoPE, ALiBi and T5 do not change
# at all (to rounding): their scores depend only on distances, and a shift of the whole row keeps
# every distance. For them the bug stays hidden until the shift pushes positions past the trained
# length, which a long padded prompt can do. The survey's rule holds for every scheme: one token,
# one position.
#
# `generate` serves such a batch too: `model.generate(batch, n, attention_mask=mask_batch)` gives
# each row the positions above and extends its mask and positions by one real token a step, so
# every row continues as its prompt does alone. Greedy, with the learned table (where a wrong
# position shows at once), row by row:

# %% tags=["nbval-check-output"]
model = random_model("learned")
together = to_numpy(model.generate(batch, 5, greedy=True, attention_mask=mask_batch))
same = [together[row, T_pad - n:].tolist() == to_numpy(model.generate(tokens[:, :n], 5, greedy=True))[0].tolist()
        for row, n in enumerate(lengths)]
print("new tokens, batched:", together[:, T_pad:].tolist())
print("each row equals its prompt generated alone:", same)
assert all(same)

# %% [markdown]
# ## 3. Packed rows
#
# Training packs documents end to end into rows of fixed length, so no column is wasted on
# padding. Each document must start again at position 0, and (with a block-diagonal mask) see
# only itself. The document ids of a row say where documents start: a new run of ids is a new
# document.
#
# ### Exercise 10.2: `packed_position_ids`   ★★☆ · 15 min
#
# *Why it matters:* a packed row without reset positions trains the second document at
# positions it would never have at inference, and every row of a packed batch does it.
#
# Write `packed_position_ids(doc_ids)` for a `(B, T)` array of document ids. Return the
# `(B, T)` int64 positions: each token's distance from the first token of its run. Every row
# starts at 0.

# %%
packed_position_ids = use("caches", "packed_position_ids")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Mark where a run starts: column 0, and every column whose id differs from its left neighbour.
# A token's position is its column minus the column where its run started.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Flatten the rows end to end (every row's column 0 is marked, so no run crosses a row); a running count
# of the marks numbers each token's run, and the marked columns say where each run begins. Case:
# `[[7, 7, 3, 3, 3]]` gives `[[0, 1, 0, 1, 2]]`; `[[5, 5], [5, 5]]` gives `[[0, 1], [0, 1]]`: the second
# row starts a new run although its id is the same.
# </details>

# %% tags=["answer"]
reveal("caches", "packed_position_ids")

# %% [markdown]
# Grade it with `python -m exercises grade caches --exercise 10.2`. By hand: `[7, 7, 7, 2, 2, 5]`
# is three documents, `[0, 1, 2, 0, 1, 0]`; an id that comes back after another document starts
# a new one.

# %% tags=["nbval-check-output"]
docs = asarray([[7, 7, 7, 2, 2, 5], [1, 1, 2, 2, 1, 1]])
print(to_numpy(packed_position_ids(docs)))
assert to_numpy(packed_position_ids(docs)).tolist() == [[0, 1, 2, 0, 1, 0], [0, 1, 0, 1, 0, 1]]

# %% [markdown]
# In the model: pack three documents, of 5, 7 and 4 tokens, into one row. The positions are
# your `packed_position_ids`, restarting at 0 in each document; the block-diagonal mask is
# `document_mask(doc_ids)` `(B, T, T)`, 1 where query and key belong to the same document (the
# model adds the causal mask). This is the workbook's convention for a packed row: Hugging Face
# passes the same block-diagonal mask as a 4-D `(B, 1, T, T)` mask, which the model takes too.
# Compare each document's logits with the document run alone; then drop the reset positions,
# then the mask.

# %% tags=["nbval-check-output"]
doc_lengths = (5, 7, 4)
starts = np.cumsum((0,) + doc_lengths[:-1])
row = tokens[:, :sum(doc_lengths)]
row_ids = asarray([sum(([d] * n for d, n in enumerate(doc_lengths)), [])])
pos_packed = packed_position_ids(row_ids)                    # your function feeds the model
block = document_mask(row_ids)                               # (1, T, T) same document
print("document lengths:", doc_lengths)
print("document ids:", to_numpy(row_ids).tolist())
print("your position ids:", to_numpy(pos_packed).tolist())


def packed_gap(model, **how):
    """Largest difference between each packed document's logits and the document run alone."""
    out = to_numpy(model(row, **how).data)[0]
    return max(float(np.abs(out[a:a + n] - to_numpy(model(tokens[:, a:a + n]).data)[0]).max())
               for a, n in zip(starts, doc_lengths))


packing_gap = {}
print(f"{'scheme':>10}{'yours':>10}{'not reset':>12}{'no block mask':>15}")
for scheme in ("learned", "sinusoidal", "rope", "alibi", "t5"):
    model = random_model(scheme)
    packing_gap[scheme] = (packed_gap(model, attention_mask=block, position_ids=pos_packed),
                           packed_gap(model, attention_mask=block),
                           packed_gap(model, position_ids=pos_packed))
    print(f"{scheme:>10}" + "".join(f"{show(g):>{w}}" for g, w in zip(packing_gap[scheme], (10, 12, 15))))
assert all(gap[0] < 1e-10 and gap[2] > 1e-3 for gap in packing_gap.values())
assert all(packing_gap[s][1] > 1e-3 for s in ("learned", "sinusoidal"))
assert all(packing_gap[s][1] < 1e-10 for s in ("rope", "alibi", "t5"))

# %% [markdown]
# With reset positions and the block mask each document of the row is computed as if alone. The
# same split as with padding: positions not reset break the absolute schemes and leave the
# relative ones alone, while a missing block mask breaks all of them, because the later
# documents read the earlier ones.
#
# ## 4. What a streaming cache keeps
#
# A cache that keeps every token grows without bound: chapter 9 measured its bytes. A
# **sliding window** keeps the `window` most recent tokens. StreamingLLM (Xiao et al., 2023;
# book §2.6) keeps, next to the window, the first `n_sink` tokens of the stream forever. When
# the cache holds `n` tokens, oldest first, the policy keeps
#
# $$\text{keep}(n) = \begin{cases} [0, n) & n \le n_{sink} + W \\ [0, n_{sink}) \cup [n - W, n) & \text{otherwise.}\end{cases}$$
#
# ### Exercise 10.3: `keep_indices`   ★★☆ · 15 min
#
# *Why it matters:* this is the whole of StreamingLLM's cache, and the function an
# interviewer asks for after "explain attention sinks".
#
# Write `keep_indices(n_tokens, window, n_sink)`: the increasing int64 indices of the kept
# tokens, `window=None` meaning the full cache.

# %%
keep_indices = use("caches", "keep_indices")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Handle "nothing to evict yet" first: no window at all, or no more tokens than the sinks and the
# window hold together.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Otherwise keep the first `n_sink` tokens and the last `window`, in that order. Case: `n_sink = 2`,
# `window = 3`, `n_tokens = 8` keeps `[0, 1, 5, 6, 7]`; `n_tokens = 5` keeps all of `[0, 1, 2, 3, 4]`;
# at `n_tokens = 4` the two ranges would overlap (`[0, 1]` and `[1, 2, 3]`), which is why the first case
# comes first.
# </details>

# %% tags=["answer"]
reveal("caches", "keep_indices")

# %% [markdown]
# Grade it with `python -m exercises grade caches --exercise 10.3`. By hand: 10 tokens, a window
# of 4 and 2 sinks keep `[0, 1, 6, 7, 8, 9]`. Then the picture: the tokens held at each step of a
# stream of 24 tokens, one row per step.

# %% tags=["nbval-check-output"]
print("keep_indices(10, 4, 2) =", [int(i) for i in keep_indices(10, 4, 2)])
assert [int(i) for i in keep_indices(10, 4, 2)] == [0, 1, 6, 7, 8, 9]
assert [int(i) for i in keep_indices(5, 4, 2)] == [0, 1, 2, 3, 4]  # not full yet: all, once each


# %%
def held_tokens(n_steps, window, n_sink, policy):
    """(n_steps, n_steps) 0/1: row t marks the text positions in the cache after token t is stored."""
    held, cache = np.zeros((n_steps, n_steps)), []
    for t in range(n_steps):
        cache.append(t)  # text position of the new token
        cache = [cache[int(i)] for i in policy(len(cache), window, n_sink)]
        held[t, cache] = 1
    return held


fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, (W, S) in zip(axes, [(8, 0), (6, 2)]):
    ax.imshow(held_tokens(24, W, S, keep_indices), cmap="Greys", aspect="auto")
    ax.set(xlabel="text position of the token", ylabel="step (token just stored)",
           title=f"window {W}, {S} sinks: {W + S} tokens held")
fig.tight_layout()

# %% [markdown]
# Now your policy inside the model. `streaming.stream_loss` reads a stream one token at a time
# and scores each next token; `keep_indices=` makes the model's cache run your function instead
# of the library's (`kv_cache.keep_indices`). With a correct policy the two runs give the same
# loss at every step.

# %%
from mini_transformer.model.kv_cache import keep_indices as library_keep_indices
from mini_transformer.evaluation.streaming import stream_loss

stream_model = random_model("rope", max_len=16)
policy = dict(window=8, n_sink=4, positions="slot")
library_run = stream_loss(stream_model, tokens, **policy).losses
yours_run = stream_loss(stream_model, tokens, keep_indices=keep_indices, **policy).losses
apart = np.flatnonzero(np.abs(yours_run - library_run) > 1e-9)
print("your policy and the library's agree at every step" if not len(apart) else
      f"they part at step {apart[0]}: yours {yours_run[apart[0]]:.4f}, the library's {library_run[apart[0]]:.4f}")
assert not len(apart)

# %% [markdown]
# A policy one token off shows up only once the cache overflows. Token 12 is the thirteenth, the
# first that the library evicts for (4 sinks + a window of 8); the query of token 13 is the first
# to see a different cache:

# %% tags=["nbval-check-output"]
def one_extra(n_tokens, window, n_sink):
    """A mutant: keeps window + 1 recent tokens."""
    return keep_indices(n_tokens, window + 1, n_sink)


wrong_run = stream_loss(stream_model, tokens, keep_indices=one_extra, **policy).losses
apart = np.flatnonzero(np.abs(wrong_run - library_run) > 1e-9)
print(f"window + 1: the first {apart[0]} steps agree, step {apart[0]} differs by {abs(wrong_run - library_run)[apart[0]]:.3f}")
assert apart[0] == 13

# %% [markdown]
# ## 5. Slot positions and text positions
#
# Which position does a cached token have once the tokens before it are gone? Two answers
# (`positions=` in `model.new_cache`):
#
# * **text**: its place in the stream, as in a full forward pass. A query at step 1000 sits at
#   position 1000, and the kept sinks at 0 .. 3: RoPE sees distances near 1000.
# * **slot**: its index in the cache. The sinks sit at 0 .. n_sink - 1, the window right after,
#   and the query at `len(cache)`, never past `n_sink + window` (StreamingLLM's choice; book §2.6).
#   Keys are then stored unrotated and rotated for their current slot at every step.
#
# Read the query's position under each at every step of a stream of 40:

# %% tags=["nbval-check-output"]
query_positions = {}
for positions in ("text", "slot"):
    cache = stream_model.new_cache(window=8, n_sink=4, positions=positions)
    seen = []
    for t in range(40):
        seen.append(int(to_numpy(cache.query_and_key_positions(1)[0])[0]))
        stream_model(tokens[:, t:t + 1], cache=cache)
    query_positions[positions] = seen
    print(f"{positions:>5}: query positions {seen[:3]} ... {seen[-3:]}, largest {max(seen)}")
assert max(query_positions["slot"]) == 4 + 8 and max(query_positions["text"]) == 39

# %% [markdown]
# With a plain window, RoPE does not care which numbering runs: a window keeps distances, and
# RoPE scores depend only on distances. With sinks it cares: at text positions the sinks drift
# ever further from the query. The experiment `attention_sinks` (section 7) trained a RoPE model
# at L = 32 on the library's source (its first setting) and streamed held-out text four times
# longer than L through each policy:

# %% tags=["nbval-check-output"]
from mini_transformer.evaluation.experiments.common import RESULTS

with open(os.path.join(RESULTS, "attention_sinks_settings.json")) as f:
    sinks = json.load(f)
first = sinks["settings"][0]
print(f"{first['name']}: trained at L = {first['train_len']}, window {sinks['window']}, "
      f"streams of {sinks['stream_len']} tokens; mean loss (nats per byte)")
for name, loss in first["stream_loss"].items():
    print(f"  {name:<36} {loss:.3f}")

# %%
s = first["stream_loss"]
assert s["full"] > s["window"] + 0.5                                                  # full attention past L breaks
assert s["window + 4 sinks (text positions)"] > s["window + 4 sinks (slot positions)"] + 0.1  # text positions drift
assert abs(s["window"] - s["window (slot positions)"]) < 1e-4                          # a window keeps distances

# %% [markdown]
# Full attention meets distances up to 4L and collapses; sinks at text positions pull the
# model past L too; slot positions keep everything inside the trained range.
#
# One more property, and its limit. With one layer, a cached window with slot positions
# computes exactly what a full forward pass over the kept tokens computes: a layer's keys and
# values depend only on its input tokens. With two layers they do not: a cached value of layer
# 2 was computed when its token still saw tokens that are now evicted.

# %% tags=["nbval-check-output"]
for n_layers in (1, 2):
    model = random_model("rope", n_layers=n_layers, max_len=16)
    cache = model.new_cache(window=6, n_sink=2, positions="slot")
    gaps = []
    for t in range(30):
        cached = to_numpy(model(tokens[:, t:t + 1], cache=cache).data)[:, -1]
        visible = np.append(to_numpy(library_keep_indices(t, 6, 2)), t)  # text positions the query sees
        gaps.append(float(np.abs(cached - to_numpy(model(tokens[:, visible]).data)[:, -1]).max()))
    print(f"{n_layers} layer(s): largest gap to the full pass over the kept tokens, before eviction "
          f"{show(max(gaps[:9]))}, after {show(max(gaps[9:]))}")

# %% [markdown]
# This is why "recompute the window" (run the model afresh on the kept tokens at every step)
# is a different baseline from "cache the window", and why section 7 measures both.
#
# ## 6. A test you write
#
# The policy has properties any correct version must have, whatever its code: the kept indices
# are distinct and increasing, they lie in the cache, there are never more than
# `n_sink + window` of them (so a query at slot `len(kept)` never leaves `[0, n_sink + window]`),
# and the sinks and the most recent `window` tokens are always among them.
#
# ### Exercise 10.4: `test_cache_policy`   ★★★ · 20 min
#
# *Why it matters:* every bug in section 4's policy passes the first `n_sink + window` steps,
# so a test that streams a few tokens and looks at the output sees nothing.
#
# Write `test_cache_policy(keep_indices)` in [`exercises/caches.py`](../exercises/caches.py): it
# receives an implementation and raises `AssertionError` when it is wrong. The grader runs it on
# the reference (it must pass) and on mutants: the sinks forgotten, the sinks counted in the
# window, a window one too long, duplicates before the cache fills, the window before the sinks.

# %%
test_cache_policy = use("caches", "test_cache_policy")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Loop over windows, sink counts (0 included) and every `n_tokens` from 0 to a few past
# `n_sink + window`, and assert the properties above on each.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Count exactly: the number kept is the smaller of `n_tokens` and `n_sink + window`, which catches a
# window one too long and one that counts the sinks; and the kept indices equal their own sorted copy
# without repeats, which catches duplicates and the wrong order. Case worked by hand:
# `keep_indices(10, 4, 2)` is `[0, 1, 6, 7, 8, 9]`, and `keep_indices(5, 4, 2)` is `[0, 1, 2, 3, 4]`.
# </details>

# %% tags=["answer"]
reveal("caches", "test_cache_policy")

# %% [markdown]
# Run it on the policy the chapter uses (yours or the reference): it passes. Then on the
# window-plus-one mutant of section 4: it fails.

# %% tags=["nbval-check-output"]
test_cache_policy(keep_indices)
print("passes on the policy above")
try:
    test_cache_policy(one_extra)
    print("the window + 1 mutant got away")
except AssertionError as e:
    print("the window + 1 mutant is caught:", e)

# %% [markdown]
# ## 7. Are the first tokens sinks?
#
# The sources' explanation: a softmax row sums to 1, so a head with nothing relevant to look
# at must still put its mass somewhere, and trained models learn to park it on the first
# tokens. Evict them and that mass lands on real tokens (book §2.6). The sources' exercise 6:
# train the tiny GPT on a repetitive corpus, plot the attention on position 0 per layer, drop
# the first token from the cache and watch the loss.
#
# The first edition's experiment did the first half on the library's source, not a repetitive
# corpus: one RoPE model, 2 layers, trained at L = 64 for 2000 steps (its result is kept as
# `attention_sinks.json`, because other chapters cite it):

# %% tags=["nbval-check-output"]
with open(os.path.join(RESULTS, "attention_sinks.json")) as f:
    first_edition = json.load(f)
print(f"first edition, L = {first_edition['train_len']}, {first_edition['steps']} steps: share on position 0 by layer "
      f"and head", [[round(m, 3) for m in layer] for layer in first_edition["mass_on_position_0"]],
      f"; uniform causal attention {first_edition['uniform_mass_on_position_0']:.3f}")
assert max(max(h) for h in first_edition["mass_on_position_0"]) < first_edition["uniform_mass_on_position_0"]

# %% [markdown]
# No sink: every head puts less on position 0 than uniform attention would. So the experiment
# `python -m mini_transformer.evaluation.experiments.attention_sinks` now tries what the sources and the
# literature say makes sinks appear. Each setting trains a RoPE `TinyGPT` at L = 32 (d_model
# 64, 4 heads, 2000 steps; the full mode takes about five minutes on two cores) and measures
# three things:
#
# * the share of each head's attention on position 0, averaged over queries, against uniform
#   causal attention ($H_{32}/32 = 0.127$), and the share of heads above 0.3, the sink
#   threshold of Gu et al. (2024);
# * what evicting token 0 costs: held-out windows of length L read one token at a time, token 0
#   dropped from the cache right after it is read (every position stays inside L), against the
#   control of dropping token 1 instead; the loss on the late queries, t >= 16;
# * streams of 4L through a window of 16, with and without 4 sinks (slot positions).
#
# The settings, in the order tried: the library's source text with 2 layers (the first
# edition); a repetitive corpus (eight short sentences in random order, `data.repetitive_corpus`)
# with 2 and 4 layers; that with a fixed first token (BOS) in every row, as real language
# models have; and that model with softmax replaced by an unnormalised sigmoid,
# $P_{ij} = \sigma(q_i \cdot k_j/\sqrt{d} - \ln T)$, where Gu et al. saw no sink form.

# %% tags=["nbval-check-output"]
print(f"uniform causal attention on position 0 at L = {sinks['train_len']}: {sinks['uniform_mass_on_position_0']:.3f}")
print(f"{'setting':<36}{'layer means':>26}{'max head':>10}{'sink heads':>12}{'s':>7}")
for st in sinks["settings"]:
    layers = [sum(h) / len(h) for h in st["mass_on_position_0"]]
    top = max(max(h) for h in st["mass_on_position_0"])
    print(f"{st['name']:<36}{' '.join(f'{m:.2f}' for m in layers):>26}{top:>10.2f}{st['sink_heads']:>12.2f}"
          f"{st['seconds']:>7.0f}")

# %% tags=["nbval-check-output"]
print("loss on late queries (t >= L/2) of windows of L, nats per byte; and streams of 4L")
print(f"{'setting':<36}{'kept':>7}{'-tok 0':>8}{'-tok 1':>8}{'window':>8}{'+4 sinks':>10}")
for st in sinks["settings"]:
    e, s = st["eviction"]["late queries"], st["stream_loss"]
    print(f"{st['name']:<36}{e['kept']:>7.3f}{e['token 0 evicted']:>8.3f}{e['token 1 evicted']:>8.3f}"
          f"{s['window']:>8.3f}{s['window + 4 sinks (slot positions)']:>10.3f}")

# %% [markdown]
# Compare the columns within a row. The eviction windows are the first 512 bytes of each held-out
# split; for the library's source that is a module docstring, prose that these code-trained
# models predict worse (2.69 nats) than the code the streams read (1.71).

# %%
from mini_transformer.evaluation.experiments import attention_sinks

attention_sinks.plot(sinks)
plt.show()

# %% [markdown]
# The same run, settled in asserts: no head of any setting passes the sink threshold, evicting
# token 0 costs the late queries no more than evicting token 1, and the sinks do not help the
# window.

# %%
for st in sinks["settings"]:
    heads = [m for layer in st["mass_on_position_0"] for m in layer]
    late, stream = st["eviction"]["late queries"], st["stream_loss"]
    assert st["sink_heads"] == 0 and max(heads) < 0.15                               # no sink, anywhere
    assert abs(late["token 0 evicted"] - late["kept"]) < 0.005                       # token 0 is worth nothing
    assert abs(late["token 0 evicted"] - late["token 1 evicted"]) < 0.005            # ... no more than token 1
    assert abs(stream["window"] - stream["window + 4 sinks (slot positions)"]) < 0.01  # sinks do not help
print("no sink in any setting: every head under 0.15, eviction of token 0 within 0.005 of keeping it")

# %% [markdown]
# **No setting formed a sink.** Every head of every setting put between 0.06 and 0.15 of its
# attention on position 0, around the 0.127 that uniform causal attention gives and far under
# the 0.3 of Gu et al.'s threshold. Neither the repetitive corpus (the sources' recipe), nor
# four layers instead of two, nor a fixed first token in every row, nor four times the training
# (8000 steps) changed that: the layer means stay flat with depth, where the sources expect
# them to grow.
#
# With no sink there is nothing for eviction to break. Late queries (t >= 16, inside L) lose at
# most 0.003 nats when token 0 is evicted, within 0.005 of what evicting token 1 instead costs.
# Over all queries both evictions cost something, 0.05 to 0.13 nats, and evicting token 1 costs
# about as much as evicting token 0 or more (on the repetitive 2-layer model, 0.051 for token 0
# and 0.106 for token 1): that is content the first queries lose, not a sink. A window of 16 streams as well with 4 sinks as without (1.710 against 1.711 on
# text; 0.113 and 0.113 on the repetitive corpus). Slot positions matter; sinks, here, do not.
#
# The sigmoid model formed no sink either, as Gu et al. report, but neither did any softmax
# model, so this run cannot tell whether softmax is the cause: the test of C7 needs a softmax
# model that forms a sink first.
#
# Why none formed here, as far as these runs can say: Gu et al. saw sinks emerge in models of
# about 60M parameters only after enough optimisation on enough data. These models have 0.13M
# (2 layers) and 0.23M parameters (4 layers); the longest run saw 8000 steps of 16 rows of 32
# bytes, about 4M bytes. And a byte model of repetitive lines always has something to read:
# every byte is fixed by the few before it, so no head is ever left with nothing relevant, the
# condition the sources' explanation needs. To try next: a model hundreds of times larger,
# far more data, and a task in which some heads have nothing to look up (a head that only
# fires on a rare token).

# %% [markdown]
# ## 8. Check yourself
#
# **1.** A batch of prompts is left-padded and positions are counted from the padding. The
# model uses RoPE. What goes wrong, and when?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Within the trained length, nothing: every token of a row shifts by the same number of
# padding tokens, every distance stays, and RoPE scores depend on distances only (section 2
# printed a change under 1e-12, rounding). It goes wrong when the shift pushes positions past the
# trained length: a long prompt behind a lot of padding reaches angles the model never saw.
# With a learned or sinusoidal table it goes wrong at once (changes of 0.4 and 1.5 in section 2).
# </details>

# %% [markdown]
# **2.** Why does the cache with slot positions store keys unrotated, when chapter 6's cache
# stored them rotated?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# A key's slot changes whenever tokens before it are evicted, so a rotation done at write time
# would be for the wrong slot later. With text positions a key's position never changes, so it
# is rotated once. The price of slots is one rotation of every cached key per step.
# </details>

# %% [markdown]
# **3.** A window cache and "recompute the window" keep the same tokens. Why do they give
# different numbers for a 2-layer model and the same for a 1-layer one?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The cached keys and values of layer 2 come from layer 1's output at the time their token
# was read, when it still saw tokens now evicted; recomputing gives them only the kept tokens
# as context. Layer 1's keys and values depend on the tokens alone. Section 5 printed gaps of
# under 1e-12 for one layer and 0.045 for two, once eviction starts.
# </details>

# %% [markdown]
# **4.** Your `keep_indices` keeps `window + 1` recent tokens. Which check catches it, and at
# which step does a streaming run first differ?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# `len(kept) == min(n_tokens, n_sink + window)`, or "the query's slot never passes
# n_sink + window". A stream differs first once the cache overflows: with 4 sinks and a window
# of 8, storing token 12 evicts for the first time, so the query of token 13 is the first to
# see a different cache (section 4).
# </details>

# %% [markdown]
# **5.** What did this workbook find about attention sinks in tiny models, and what would you
# try next?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# None formed: on the library's source and on a repetitive corpus, with 2 and 4 layers, with and
# without a fixed first token, for 2000 and for 8000 steps, every head put 0.06 to 0.15 of its
# attention on position 0, around uniform (0.127), none near the 0.3 threshold; evicting token 0
# cost late queries at most 0.003 nats, about what evicting token 1 costs (section 7). So the sources' "the direction reproduces in a
# tiny model" did not hold for these tiny models and this much training. Next: train far longer and
# larger (Gu et al. saw sinks only after enough optimisation, at about 60M parameters), give some
# heads nothing to look up, and only once a softmax model has a sink, swap in sigmoid attention to
# test whether softmax is the cause.
# </details>

# %% [markdown]
# ## 9. The ledger, settled
#
# | # | claim (source) | what this model did | verdict |
# | --- | --- | --- | --- |
# | C1 | padding, packing, decode must give a token one logical position; when they do not, nothing crashes (survey §5.4, §11) | on the model, a left-padded batch and a packed row with your position ids (and the block mask) equal their prompts run alone to rounding in all five schemes tried, and `generate` continues each padded row as alone (sections 2, 3); positions counted from the padding change learned and sinusoidal logits at once and leave RoPE, ALiBi and T5 unchanged inside L; positions not reset in a packed row do the same; a missing block mask changes every scheme; none raises an error | reproduces |
# | C2 | keys rotated once at write time: cached decoding equals the full pass (book §4; survey §5.4) | learned, RoPE and ALiBi: cached and full logits agree to below 1e-10 over 24 steps in float64 (section 1) | reproduces |
# | C3 | slot positions keep rotations in range; text positions bring extrapolation back (book §2.6, §6) | text, 2 layers, streams of 4L: window + 4 sinks 2.442 at text positions, 1.711 at slot positions; full attention 3.480; the query's slot never passes 12 with 4 sinks and a window of 8, its text position reaches 39 (section 5) | reproduces |
# | C4 | trained models put large mass on the first tokens, growing with depth (book §2.6, exercise 6) | six settings (text; repetitive corpus, 2 and 4 layers; a fixed first token; sigmoid; 4x the steps): every head 0.06 to 0.15 on position 0 against 0.127 for uniform attention; no sink head; flat with depth (section 7); the first edition (L = 64, 2000 steps): 0.02 to 0.05 against 0.074 | does not reproduce (models of 0.13M to 0.23M parameters, up to 8000 steps) |
# | C5 | a window that evicts the first tokens collapses; 4 sinks restore it (book §2.6, §4, §5) | window 1.710, window + 4 sinks 1.711 on text; 0.113 and 0.113 on the repetitive corpus; a window of 16 does not collapse here, because no head leans on token 0 | does not reproduce |
# | C6 | evicting position 0 raises the loss; smaller in a tiny model, same direction (book exercise 6) | late queries: at most 0.003 nats, and evicting token 1 instead costs about the same (within 0.005) | does not reproduce |
# | C7 | the sink comes from softmax normalisation (book §2.6, §6) | the sigmoid model formed no sink, but no softmax model did either, so the run cannot separate the two | not tested (needs a softmax model with a sink) |
#
# ## 10. Where next
#
# * The exercises: [`exercises/caches.py`](../exercises/caches.py), 10.1 to 10.4. Grade with
#   `python -m exercises grade caches`; your test (10.4) is scored by the mutants it catches.
# * The library: `mini_transformer/model/kv_cache.py` (the cache, its policy `keep_indices`, text and
#   slot positions), `mini_transformer/evaluation/streaming.py` (`stream_loss`), `model.generate(...,
#   window=W, n_sink=4, positions="slot")`.
# * The experiment: `python -m mini_transformer.evaluation.experiments.attention_sinks` (`--quick` in
#   seconds); its settings, seeds and seconds are in
#   `mini_transformer/evaluation/experiments/results/attention_sinks_settings.json`, the first edition's run
#   in `attention_sinks.json` beside it.
