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
# # Chapter 13. Positions in today's models
#
# The open models you port today have moved past one RoPE for the whole network. Qwen's vision
# models give every token three position ids; Gemma 4 stops the slowest pairs of its global layers;
# Gemma 3 and GPT-OSS give different layers different attention; Llama 4 leaves every fourth layer
# without RoPE and sharpens its queries far into the context; GPT-OSS gives every head a logit that
# takes weight and returns nothing. A port that gets one of these wrong runs with no error and
# serves garbage in some layers. This chapter derives each from what you built in chapters 6, 8,
# 10 and 11, implements it, checks it on numbers, and reads four models' configurations layer by
# layer, as the library's entries hold them.
#
# **By the end you can**
#
# * compute the three M-RoPE position ids of a text-and-image sequence, and show that on text alone
#   M-RoPE is chapter 6's RoPE;
# * write proportional RoPE's frequencies and tell them from chapter 11's partial rotary at the same
#   factor;
# * read the RoPE of any layer of a transformers 5 `config.json`, and draw a model's layers;
# * implement attention with a learned sink logit, derive the sink's gradient, and write the test
#   that catches the grader's wrong sinks;
# * compute Llama 4's query temperature and FIRE's normalised distance, and say where each departs
#   from what the book had.
#
# ## The claim ledger
#
# Before you run anything, write down for each claim: true here, yes or no? Section 9 settles them
# with the numbers this chapter prints, and the trained claims T1 to T5 with the record of
# `experiments/positions_today.py` (section 7).
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | On text alone, where the three ids are equal, M-RoPE is 1-D RoPE (Qwen2-VL paper, §2.1) | | §1 |
# | C2 | An image costs the position ids of its largest side, not one id a token (Qwen2-VL paper, §2.1) | | §1 |
# | C3 | Proportional RoPE at factor $p$ is not NeoX partial rotary at the same $p$: the turning pairs' frequencies differ (Gemma 4's config, `rope_type: "proportional"`) | | §2 |
# | C4 | Gemma 3 alternates five local layers to one global, and only the global layers get the large base and the linear factor (Gemma 3 report) | | §3 |
# | C5 | Llama 4's query temperature takes its first step at position `floor_scale` − 1 (transformers' `Llama4TextAttention`: $\lfloor (m + 1)/\text{floor\_scale} \rfloor$) | | §4 |
# | C6a | A sink logit makes every row's weights on the tokens sum to less than 1 (GPT-OSS model card) | | §5 |
# | C6b | ... and a sink at $-\infty$ is plain attention (the limit of the GPT-OSS model card's sink logit) | | §5 |
# | T1 | A learned sink logit takes the place of the sink a model grows on BOS (a common reading of the GPT-OSS model card's sinks, chapter 10) | | §7 |
# | T2a | At this chapter's scale (heads of 16, so $p$ 0.25 turns 2 of 8 pairs), p-RoPE's loss at the training length is below full RoPE's (after Barbero et al., 2024, for whom truncating the lowest frequencies keeps Gemma 2B's validation perplexity at 8k context and seems to improve it) | | §7 |
# | T2b | p-RoPE runs past $L$ better than full RoPE (this workbook's reading of Barbero et al., who test no length past training) | | §7 |
# | T3a | The Gemma 3 layout (a local layer with a small base and a window, a global one with a large base) runs past $L$ better than one base (a common reading of the Gemma 3 design, which the report states without a comparison) | | §7 |
# | T3b | The per-layer bases alone, without the window, run past $L$ better than one base (the same reading) | | §7 |
# | T4 | FIRE runs long, by chapter 7's train-short-test-long measure (Li et al., 2023) | | §7 |
# | T5 | Temperature tuning that steps inside the training length (`floor_scale` $L/4$) helps a NoPE model past $L$ (after Llama 4, whose $\tau$ is 1 below position 8191, and Scalable-Softmax) | | §7 |
#
# ## The exercises
#
# You write them in [`exercises/today.py`](../exercises/today.py), each where this chapter has
# taught what it needs. Stars: ★ a formula into code, ★★ a design choice or an edge case, ★★★ a
# derivation or a test of your own.
#
# | Exercise | Function | | minutes |
# |---|---|---|---|
# | 13.1 | `mrope_position_ids(segments)`: the three ids of a text-and-image sequence | ★★ | 15 |
# | 13.2 | `proportional_inv_freq(head_dim, base, partial_rotary_factor)`: p-RoPE's frequencies | ★ | 10 |
# | 13.3 | `layer_inv_freq(config, layer)`: one layer's RoPE from a transformers 5 config | ★★ | 15 |
# | 13.4 | `sink_attention(q, k, v, sinks)`: causal attention with a sink logit per head | ★★ | 15 |
# | 13.5 | `sink_logit_grad(q, k, v, sinks, gy)`: the gradient of the sink logits | ★★★ | 20 |
# | 13.6 | `test_sink_attention(sink_attention)`: a test of your own, scored against wrong sinks | ★★★ | 20 |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work); grade one exercise with
# `python -m exercises grade today --exercise 13.N`. The layout is the book's everywhere: queries
# and keys are `(B, H, T, d_head)`. The attention here runs the reference kernels
# ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)).

# %%
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import rng, to_numpy, xp
from mini_transformer.engine.functional import scaled_dot_product_attention
from mini_transformer.positional.model_configs import MODELS, layer_rope
from mini_transformer.positional.mrope import mrope_cos_sin
from mini_transformer.positional.rope import RotaryEmbedding
from mini_transformer.positional.rope_scaling import rope_inv_freq

g = rng(0)  # one seeded generator for the chapter's random draws

# %% [markdown]
# ## 1. Three position ids: multimodal RoPE
#
# Chapter 6 turns pair $i$ of a query at position $m$ by the angle $m\theta_i$. An image is a grid,
# and a token in it has a row and a column as well as a place in the sequence. Qwen2-VL's M-RoPE
# gives every token three ids, time $t$, height $h$ and width $w$, and splits the $d/2$ pairs into
# three sections (`mrope_section`, `[16, 24, 24]` for Qwen2.5-VL-7B's 64 pairs): a pair of the time
# section turns by $t\,\theta_i$, of the height section by $h\,\theta_i$, of the width section by
# $w\,\theta_i$. A score between two tokens then depends on the three differences of their ids, each
# through its own pairs: chapter 6's relative property, once an axis.
#
# The ids follow one rule (Qwen2-VL's `get_rope_index`). A text token carries the same id on all
# three axes, one more than the token before. An image of $t \times h \times w$ tokens (the grid after
# patch merging) gives cell $(a, b, c)$ the ids $(s + a, s + b, s + c)$, with $s$ one past the largest
# id so far; the text after it starts one past the largest id of the image.

# %% [markdown]
# ### Exercise 13.1: `mrope_position_ids`   ★★ · 15 min
#
# *Why it matters:* the ids are the part of M-RoPE that lives outside the model, in the processor
# that builds the batch; a port that numbers an image's tokens like text rotates every image token
# by the wrong angle, and nothing fails.
#
# Write `mrope_position_ids(segments)`: `segments` is a list of `("text", n)` and
# `("image", (t, h, w))`; return the `(3, T)` int64 ids (rows: time, height, width) by the rule
# above. Grade it alone: `python -m exercises grade today --exercise 13.1`.

# %%
mrope_position_ids = use("today", "mrope_position_ids")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Keep one running number, where the next segment starts. Build each segment's three rows counting
# from 0, add the start to all of them, then move the start on.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The image's tokens come row by row: within a frame the width id changes fastest. The start moves on
# by one past the largest id the segment used on any axis, so an image of grid `(1, 4, 2)` moves it by
# 4, not by its 8 tokens and not by its last token's width id. Try `[("text", 1), ("image", (1, 4, 2)),
# ("text", 1)]`: the last token's ids are all 5.
# </details>

# %% tags=["answer"]
reveal("today", "mrope_position_ids")

# %% [markdown]
# A sequence of text, an image of one frame of 3 rows and 4 columns, and text again: the three rows
# of ids, printed and drawn.

# %%
segments = [("text", 3), ("image", (1, 3, 4)), ("text", 3)]
ids = mrope_position_ids(segments)                                   # (3, T)

# %% tags=["nbval-check-output"]
for name, row in zip(("time", "height", "width"), to_numpy(ids)):
    print(f"{name:>6}", " ".join(f"{int(x):2d}" for x in row))
image_ids = to_numpy(ids)[:, 3:15]
print("the image's ids run from", int(image_ids.min()), "to", int(image_ids.max()),
      "over", image_ids.shape[1], "tokens; the text after it starts at", int(ids[0, 15]))
assert [int(x) for x in ids[:, 15]] == [7, 7, 7]                     # 3 + max(1, 3, 4)

# %%
fig, ax = plt.subplots(figsize=(9, 2.4))
im = ax.imshow(to_numpy(ids), aspect="auto", cmap="viridis")
for (r, c), value in zip([(r, c) for r in range(3) for c in range(ids.shape[1])], to_numpy(ids).ravel()):
    ax.text(c, r, int(value), ha="center", va="center", color="w", fontsize=8)
ax.axvspan(2.5, 14.5, color="w", alpha=0.15)
ax.set_yticks(range(3), ["time", "height", "width"])
ax.set_xlabel("token (text 0-2, image 3-14, text 15-17)")
ax.set_title("M-RoPE position ids of text, a 1 x 3 x 4 image, text")
fig.colorbar(im, ax=ax, label="position id")
fig.tight_layout()

# %% [markdown]
# Two checks. On text, where the three ids are equal, every pair turns by the same $m\theta_i$ as in
# chapter 6, so M-RoPE's tables must be RoPE's (claim C1). And the image of 12 tokens moved the start
# by 4, its largest side (claim C2): an image costs $\max(t, h, w)$ ids, so a large image stretches the positions far less than its
# token count would (a video's time ids follow other rules: Qwen2.5-VL spaces them by seconds).

# %% tags=["nbval-check-output"]
T = 10
text_ids = xp.broadcast_to(xp.arange(T), (3, T))
for section, interleaved in [([16, 24, 24], False), ([24, 20, 20], True)]:
    cos, sin = mrope_cos_sin(text_ids, 128, 1e6, section, interleaved)
    cos1, sin1 = RotaryEmbedding(128, 1e6)(T)                         # chapter 6's rotate-half tables
    gap = max(float(abs(cos - cos1).max()), float(abs(sin - sin1).max()))
    print(f"mrope_section {section}, interleaved {interleaved}: largest gap to 1-D RoPE on text {gap:.1e}")
    assert gap == 0.0
for grid in [(1, 3, 4), (1, 16, 16), (1, 24, 40)]:
    spent = int(mrope_position_ids([("image", grid), ("text", 1)])[0, -1])
    print(f"image {grid}: {math.prod(grid):5d} tokens, {spent:2d} position ids")
    assert spent == max(grid)

# %% [markdown]
# ## 2. Proportional RoPE is not partial rotary
#
# Chapter 11's partial rotary (GPT-NeoX, Phi-2) turns the first $r = p\,d$ channels of a head with
# $\theta_i = \text{base}^{-2i/r}$ and leaves the rest alone. Barbero et al. (2024, "Round and round
# we go") find that Gemma prefers its slowest pairs, which they suspect carry meaning, and propose to stop them:
# **p-RoPE** keeps the fastest pairs of the *full* head, $\theta_i = \text{base}^{-2i/d}$ for
# $i < \lfloor p\,d/2 \rfloor$, and sets the rest to frequency 0. Gemma 4 ships it in its global
# layers (`rope_type: "proportional"`, `partial_rotary_factor` `0.25`, heads of `512`). Both keep the
# same number of pairs turning. Their speeds differ: NeoX spreads its turning pairs from 1 down to
# just above $\text{base}^{-1}$, p-RoPE keeps full RoPE's fast end and stops at
# $\text{base}^{-2(n-1)/d}$, just above $\text{base}^{-p}$, with $n$ the pairs turning. NeoX's pair
# $i$ turns as fast as p-RoPE's pair $i/p$ would.

# %% [markdown]
# ### Exercise 13.2: `proportional_inv_freq`   ★ · 10 min
#
# *Why it matters:* a port that reads `partial_rotary_factor` as chapter 11 did turns Gemma 4's global
# layers at the wrong speeds, and a model whose global layers misread position serves worse answers
# the longer the context.
#
# Write `proportional_inv_freq(head_dim, base, partial_rotary_factor)`: return the `head_dim // 2`
# frequencies, the first $\lfloor p\,d/2 \rfloor$ as full RoPE's, the rest 0. Grade it alone:
# `python -m exercises grade today --exercise 13.2`.

# %%
proportional_inv_freq = use("today", "proportional_inv_freq")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Start from chapter 6's frequencies of the whole head, one per pair, then zero the pairs that stop.
# The exponent's denominator is the whole head, whatever $p$ is.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The count of turning pairs rounds down, as Hugging Face does: a head of 12 at $p = 0.25$ has 6
# pairs and turns 1 of them (1.5 rounded down). Try `head_dim 8, base 10000, p 0.5`: two pairs
# turn, at 1 and 0.1, and two stop.
# </details>

# %% tags=["answer"]
reveal("today", "proportional_inv_freq")

# %% [markdown]
# Gemma 4's global layer against chapter 11's partial rotary at the same factor, and the largest
# ratio between the two at a turning pair (claim C3):

# %% tags=["nbval-check-output"]
d, base, p = 512, 1e6, 0.25
prope = proportional_inv_freq(d, base, p)                            # (256,) Gemma 4's global layer
neox = rope_inv_freq(d, base, partial_rotary_factor=p)[0]            # (64,) chapter 11's partial rotary
library = rope_inv_freq(d, base, {"rope_type": "proportional"}, partial_rotary_factor=p)[0]
n = int((prope > 0).sum())
print(f"turning pairs: p-RoPE {n} of {prope.shape[0]}, NeoX partial {neox.shape[0]}")
print(f"slowest turning pair: p-RoPE {float(prope[n - 1]):.3e}, NeoX partial {float(neox[-1]):.3e}")
ratio = float((prope[:n] / neox).max())
print(f"largest ratio p-RoPE / NeoX at a turning pair: {ratio:.1f}")
assert xp.allclose(prope, library) and n == neox.shape[0] and ratio > 10

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.semilogy(range(n), to_numpy(prope[:n]), ".", label="p-RoPE (Gemma 4), base^(-2i/512)")
ax.semilogy(range(n), to_numpy(neox), ".", label="NeoX partial rotary, base^(-2i/128)")
ax.semilogy(range(n, d // 2), [1e-7] * (d // 2 - n), "|", color="grey", label="p-RoPE pairs at frequency 0 (drawn at 1e-7)")
ax.set_xlabel("pair i")
ax.set_ylabel("theta_i (radians per position)")
ax.set_title("Head of 512 at p = 0.25, base 1e6: same pairs turning, different speeds")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 3. A RoPE for each layer
#
# Chapter 11 read one `rope_theta` for a whole model. Gemma-3-4B gives its sliding-window layers
# (a window of `1024` tokens) base `10000` and its global layers base `1000000` with a linear factor
# `8`, five local layers to one global (`sliding_window_pattern` `6`). The report states this design
# and gives no comparison with one base.
# transformers 5 writes this as `layer_types`, one name a layer, and `rope_parameters` keyed by those
# names; older configs use `rope_local_base_freq` and `sliding_window_pattern`.
# `model_configs.layer_rope(config)` reads either into one entry per layer, `None` where a layer has no
# RoPE (Llama 4's `no_rope_layers`). Scout's RoPE layers carry `llama3` scaling, factor 16, as its
# published `config.json` does.

# %%
models = ["Gemma-3-4B", "Gemma-4-E2B", "GPT-OSS-20B", "Llama-4-Scout-17B-16E"]
layers = {name: layer_rope(MODELS[name]) for name in models}


def layer_label(entry):
    """What one layer's RoPE is, in a few words."""
    if entry is None:
        return "NoPE"
    extra = f", p {entry['partial_rotary_factor']}" if entry["rope_type"] == "proportional" else ""
    return f"{entry['layer_type'].split('_')[0]}, base {entry['rope_theta']:g}, {entry['rope_type']}{extra}"


# %% tags=["nbval-check-output"]
for name in models:
    kinds = {}
    for entry in layers[name]:
        kinds[layer_label(entry)] = kinds.get(layer_label(entry), 0) + 1
    print(f"{name} ({len(layers[name])} layers):")
    for label, count in kinds.items():
        print(f"    {count:2d} x {label}")
gemma3 = layers["Gemma-3-4B"]
is_global = [e["layer_type"] == "full_attention" for e in gemma3]
assert [i for i, x in enumerate(is_global) if x] == [5, 11, 17, 23, 29]          # every sixth layer
assert all((e["rope_theta"], e["rope_type"]) == ((1e6, "linear") if x else (1e4, "default"))
           for e, x in zip(gemma3, is_global))

# %% [markdown]
# Each model as a strip of its layers: colour for the base, a hatch for the layers without RoPE.

# %%
fig, axes = plt.subplots(len(models), 1, figsize=(10, 4.2))
for ax, name in zip(axes, models):
    entries = layers[name]
    bases = [math.log10(e["rope_theta"]) if e else float("nan") for e in entries]
    ax.imshow([bases], aspect="auto", cmap="coolwarm", vmin=4, vmax=6.2)
    for i, e in enumerate(entries):
        if e is None:
            ax.text(i, 0, "NoPE", rotation=90, ha="center", va="center", fontsize=6)
        elif e["layer_type"] == "full_attention":
            ax.text(i, 0, "G", ha="center", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
axes[-1].set_xlabel("layer (G: global attention; colour: log10 of the RoPE base, blue 1e4, red 1e6)")
axes[0].set_title("Per-layer RoPE in four configurations, as the library's entries hold them")
fig.tight_layout()

# %% [markdown]
# ### Exercise 13.3: `layer_inv_freq`   ★★ · 15 min
#
# *Why it matters:* this is the function a port needs for every layer, and Gemma 4 breaks two
# assumptions at once: its global layers have wider heads (`global_head_dim`) and proportional RoPE.
#
# Write `layer_inv_freq(config, layer)`: from a transformers 5 config (`layer_types`,
# `rope_parameters` keyed by layer type, `head_dim`, maybe `global_head_dim` and
# `max_position_embeddings`), return layer `layer`'s frequencies, computed with the library's
# `rope_inv_freq`. Grade it alone: `python -m exercises grade today --exercise 13.3`.

# %%
layer_inv_freq = use("today", "layer_inv_freq")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Two look-ups and one call: the layer's type, then that type's parameters, then `rope_inv_freq`.
# The parameters dict carries two things that `rope_inv_freq` takes as arguments of their own.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Take `rope_theta` and `partial_rotary_factor` out of a copy of the type's dict (the config must stay
# as it was), and pass what is left as `rope_scaling`. The head width is `global_head_dim` only on the
# `full_attention` layers of a config that has it. Try Gemma 4's layer 4: 256 frequencies, 64 of them
# nonzero; its layer 0: 128, none zero.
# </details>

# %% tags=["answer"]
reveal("today", "layer_inv_freq")

# %% tags=["nbval-check-output"]
gemma4 = MODELS["Gemma-4-E2B"]
for layer in range(gemma4["num_hidden_layers"]):
    assert xp.array_equal(layer_inv_freq(gemma4, layer), layers["Gemma-4-E2B"][layer]["inv_freq"])
for layer in (0, 4):
    f = layer_inv_freq(gemma4, layer)
    print(f"Gemma 4 E2B layer {layer} ({gemma4['layer_types'][layer]}): {f.shape[0]} frequencies, "
          f"{int((f > 0).sum())} turning, slowest turning {float(f[f > 0].min()):.2e}")
print("every one of the 35 layers agrees with layer_rope")

# %% [markdown]
# ## 4. Llama 4: NoPE layers with a temperature
#
# Chapter 11 built a model that mixes NoPE and RoPE layers. Llama 4 Scout does that (every fourth of
# its `48` layers has no RoPE, the strip above), and adds one thing to the NoPE layers: their queries
# are multiplied by
#
# $$\tau(m) = 1 + \text{attn\_scale}\cdot\ln\Big(\Big\lfloor \frac{m + 1}{\text{floor\_scale}} \Big\rfloor + 1\Big)$$
#
# at the query's absolute position $m$ (`floor_scale` `8192`, `attn_scale` `0.1`). Chapter 8's YaRN
# scales every logit by a constant chosen for the extended length; this grows with the position, in
# steps, after Scalable-Softmax (Nakanishi, 2025): a softmax over $n$ keys flattens as $n$ grows, and
# a larger multiplier on the logits keeps it peaked.

# %%
from mini_transformer.positional.temperature import llama4_attention_scales

scout = MODELS["Llama-4-Scout-17B-16E"]
positions = xp.array([0, 8190, 8191, 16382, 16383, 65535, 131071, 1048575])
tau = llama4_attention_scales(positions, scout["floor_scale"], scout["attn_scale"])

# %% tags=["nbval-check-output"]
for m, t in zip(to_numpy(positions), to_numpy(tau)):
    print(f"position {int(m):8d}: tau {float(t):.4f}")
first_above_one = int(xp.argmax(llama4_attention_scales(xp.arange(20000), 8192, 0.1) > 1))
print("tau is 1 for positions 0 to", first_above_one - 1, f"({first_above_one} positions); floor_scale is 8192")
assert first_above_one == 8191

# %% [markdown]
# Claim C5 is the formula read at its first step: at $m = 8191$, $(m + 1)/8192 = 1$ and the first
# step is taken, so $\tau$ is 1 for positions 0 to 8190, the 8191 printed, one fewer than
# `floor_scale`. A port that counts positions from 1 instead of 0 moves every step by one token.

# %%
m = xp.arange(0, 262144, 64)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(to_numpy(m), to_numpy(llama4_attention_scales(m, 8192, 0.1)), lw=1)
ax.axvline(8191, color="k", ls="--", lw=0.7, label="first step (m = 8191)")
ax.set_xscale("symlog", linthresh=8192)
ax.set_xlabel("query position m")
ax.set_ylabel("tau(m)")
ax.set_title("Llama 4's query temperature in its NoPE layers (floor_scale 8192, attn_scale 0.1)")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 5. A sink built in: the sink logit
#
# Chapter 10 watched softmax models form sink heads: on its control task a share of the heads put over
# 0.3 of their attention on BOS, averaged over a sequence's queries. The sources' explanation is that a
# row must sum to 1, so a head with nothing to read parks its weight somewhere, and BOS is where; chapter
# 10 tests its first half (rows that need not sum to 1 put no large raw weight on BOS), not the second. GPT-OSS gives
# every head $h$ a learned logit $s_h$ that joins every row's softmax as one more column and has no
# value:
#
# $$p_{ij} = \frac{e^{S_{ij}}}{e^{s_h} + \sum_{j' \le i} e^{S_{ij'}}}, \qquad y_i = \sum_{j \le i} p_{ij} v_j,$$
#
# so row $i$ puts $1 - p_{\text{sink}, i}$ on the tokens, with $p_{\text{sink}, i} = e^{s_h}/(\ldots)$
# the same denominator. A row with nothing to read can now put its weight nowhere, without a token to
# park it on.

# %% [markdown]
# ### Exercise 13.4: `sink_attention`   ★★ · 15 min
#
# *Why it matters:* GPT-OSS's attention is this function, and the sink is the easiest part of a port
# to drop: a model whose sinks are left out still runs, with rows that sum to 1 where it was trained
# on rows that did not.
#
# Write `sink_attention(q, k, v, sinks)`: causal attention, scores divided by $\sqrt{d_{head}}$,
# with `sinks[h]` as one more logit in every row of head `h`, and no value for it. Grade it alone:
# `python -m exercises grade today --exercise 13.4`.

# %%
sink_attention = use("today", "sink_attention")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Build the scores as chapter 0 does, masked, then glue one more column to the right of every row
# before the softmax, and drop it again before multiplying by the values.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The column holds head $h$'s logit in every row of head $h$: reshape `sinks` to `(H, 1, 1)` and
# broadcast it to `(B, H, T, 1)`. It is a logit already, so it is not divided by $\sqrt{d_{head}}$.
# Try one query and one key with score 0 and a sink of $\ln 2$: the row's weights are 1/3 on the
# token and 2/3 on the sink, so $y = v/3$.
# </details>

# %% tags=["answer"]
reveal("today", "sink_attention")

# %% [markdown]
# Check it against the library's `scaled_dot_product_attention(..., sinks=s)` (the op the model runs,
# with its own backward), and on the two limits of claims C6a and C6b: every row sums to less than 1, and a sink
# at $-\infty$ is plain attention.

# %% tags=["nbval-check-output"]
B, H, T, d_head = 2, 3, 8, 4
q, k, v = (g.normal(size=(B, H, T, d_head), dtype="float64") for _ in range(3))
sinks = xp.array([-1.0, 0.5, 2.0])
causal = xp.tril(xp.ones((T, T), dtype=bool))
theirs = scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), mask=causal, sinks=Tensor(sinks)).data
mine = sink_attention(q, k, v, sinks)
rows = sink_attention(q, k, xp.ones_like(v), sinks)[..., 0]          # (B, H, T): each row's weight on the tokens
plain = scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), mask=causal).data
print(f"largest gap to the library: {float(abs(mine - theirs).max()):.1e}")
for h in range(H):
    print(f"head {h}, sink {float(sinks[h]):+.1f}: row sums from {float(rows[:, h].min()):.3f} to {float(rows[:, h].max()):.3f}")
print(f"sink at -inf, largest gap to plain attention: "
      f"{float(abs(sink_attention(q, k, v, xp.full(H, -xp.inf)) - plain).max()):.1e}")
assert xp.allclose(mine, theirs, atol=1e-12) and float(rows.max()) < 1

# %% [markdown]
# The sink's weight row by row, for the three heads of the first sequence: an early row has few
# tokens to share with the sink, so the sink takes more of it.

# %%
fig, ax = plt.subplots(figsize=(6, 3.2))
for h in range(H):
    ax.plot(range(T), to_numpy(1 - rows[0, h]), "o", label=f"head {h}, sink {float(sinks[h]):+.1f}")
ax.set_xlabel("query position i")
ax.set_ylabel("p_sink (weight on no token)")
ax.set_ylim(0, 1)
ax.set_title("The sink's weight in each row (random q, k; d_head 4)")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ### Exercise 13.5: `sink_logit_grad`   ★★★ · 20 min
#
# *Why it matters:* the sink is learned, so its gradient is what decides how much weight a head learns
# to throw away; deriving it is the interview version of this section.
#
# Derive $\partial L / \partial s_h$ from the equations above, given $gy = \partial L/\partial y$, and
# write `sink_logit_grad(q, k, v, sinks, gy)`, returning one number a head, `(H,)`. You may call your
# `sink_attention`. Grade it alone: `python -m exercises grade today --exercise 13.5`.

# %%
sink_logit_grad = use("today", "sink_logit_grad")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Differentiate one weight first: $\partial p_{ij}/\partial s_h$. Only the denominator holds $s_h$,
# and its derivative with respect to $s_h$ is $e^{s_h}$.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# $\partial p_{ij}/\partial s_h = -p_{ij}\,p_{\text{sink},i}$, so $\partial y_i/\partial s_h =
# -p_{\text{sink},i}\,y_i$: raising the sink shrinks each row's output in proportion. Then chain with
# $gy$ and sum over everything that shares $s_h$. You can get $1 - p_{\text{sink}}$ of every row from
# `sink_attention` with values of ones. Check on one query and one key with score 0, sink $\ln 2$,
# $v = gy = (1, 0, \dots)$: $y = 1/3$ and the gradient is $-(2/3)(1/3)$.
# </details>

# %% tags=["answer"]
reveal("today", "sink_logit_grad")

# %% [markdown]
# Check it against the library's autograd (the backward of the op the model runs), in float64:

# %% tags=["nbval-check-output"]
gy = g.normal(size=(B, H, T, d_head), dtype="float64")
s = Tensor(sinks.copy(), requires_grad=True)
y = scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), mask=causal, sinks=s)
(y * Tensor(gy)).sum().backward()
mine = sink_logit_grad(q, k, v, sinks, gy)
print("autograd      ", " ".join(f"{float(x):+.6f}" for x in s.grad))
print("sink_logit_grad", " ".join(f"{float(x):+.6f}" for x in mine))
assert xp.allclose(mine, s.grad, atol=1e-12)

# %% [markdown]
# ### Exercise 13.6: a test of your own   ★★★ · 20 min
#
# *Why it matters:* a wrong sink passes a shape check and a "rows sum to less than 1" check alike.
# Which checks catch which mistake is the skill.
#
# Write `test_sink_attention(sink_attention)` in `exercises/today.py`: raise `AssertionError` when the
# function it receives is wrong. The grader runs it on the reference (it must pass) and on five wrong
# sinks, and tells you which got away. Grade it alone: `python -m exercises grade today --exercise 13.6`.

# %%
test_sink_attention = use("today", "test_sink_attention")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# A row summing to less than 1 is true of any finite sink: of the right size, of the wrong sign, of
# another head. A check that catches those needs the exact number for one small case.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Work one case by hand, per head, with a different sink in each head and $d_{head} > 1$: one query,
# one key, score 0, sinks $\ln 2$ and $\ln 3$ give $y = v/3$ and $y = v/4$. Then compare a sink at
# $-\infty$ with plain causal attention you compute yourself, and check that a later key changes no
# earlier row.
# </details>

# %% tags=["answer"]
reveal("today", "test_sink_attention")

# %% tags=["nbval-check-output"]
test_sink_attention(sink_attention)
print("the test passes on the sink attention this chapter runs")

# %% [markdown]
# ## 6. A learned function of distance: FIRE
#
# Chapter 7's bake-off has ALiBi's fixed line and T5's fixed buckets (each bucket with a learned value). FIRE
# (Li et al., 2023) learns the whole bias as a small MLP $f$ of a normalised distance,
#
# $$S_{ij} = \frac{q_i\cdot k_j}{\sqrt{d_{head}}} + f\!\left(\frac{\psi(i - j)}{\psi(\max(L, i))}\right),
# \qquad \psi(x) = \ln(c\,x + 1),$$
#
# and with suitable weights $f$ is, within $L$, ALiBi's line or T5's steps (`tests/positional/test_fire.py`
# builds both). Li et al. argue that the input lets it run past its training length ("progressive
# interpolation"): dividing by $\psi(i)$, the query's own position, maps every key of every query into
# $[0, 1]$, so a query at $4L$ asks $f$ about inputs it was trained on, spaced more finely. Whether it
# runs long here is T4 (section 7). Below $L$ the divisor is $\psi(L)$, so within $L$ the bias
# depends on the distance alone, as T5's and ALiBi's do. $c$ and the threshold $L$ are learned too; here is that input at the starting $c$ with $L$
# at 16:

# %%
from mini_transformer.positional.fire import FIRE

fire = FIRE(n_heads=1, n_layers=1, L0=16.0, rng=rng(0))
T_long = 64
x = fire.layers[0].normalised_distance(xp.arange(T_long), xp.arange(T_long), "float64").data   # (T, T)

# %% tags=["nbval-check-output"]
for i in (8, 16, 32, 63):
    row = x[i, : i + 1]
    print(f"query {i:2d}: input for distance 1 {float(row[i - 1]):.3f}, for its farthest key {float(row[0]):.3f}")
assert abs(float(x[63, 0]) - 1.0) < 1e-5 and float(x[8, 0]) < 1.0

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.3))
for i in (8, 16, 32, 63):
    ax.plot(range(i + 1), to_numpy(x[i, i::-1]), ".", ms=3, label=f"query at {i}")
ax.axvline(16, color="k", ls="--", lw=0.7, label="L = 16")
ax.set_xlabel("distance i - j")
ax.set_ylabel("FIRE's input psi(i-j) / psi(max(L, i))")
ax.set_title("FIRE's normalised distance: every query past L reaches 1")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 7. The claims on trained models
#
# Claims T1 to T5 need trained models, several seeds each; training belongs to
# `experiments/positions_today.py` (`python -m experiments.positions_today`), whose record
# `experiments/results/positions_today.json` this cell reads: for each claim the effect, its
# interval over seeds and the verdict by the rule of
# [chapters/README.md](README.md#Evidence-and-the-verdict-rule).

# %% tags=["nbval-check-output"]
from experiments.common import load_result
from mini_transformer.evaluation import stats

# each ledger row's claim and the record that tests its words
TRAINED = {"T1": "C1_sink", "T2a": "C2_prope_at_L", "T2b": "C2_prope", "T3a": "C3_per_layer_base",
           "T3b": "C3_bases_alone", "T4": "C4_fire_runs_long", "T5": "C5_temperature"}
claims = load_result("positions_today")["claims"]
labels = {key: label for label, key in TRAINED.items()}
for key, record in claims.items():                # every record, the claims and their controls
    print(f"{labels.get(key, ''):3} {key}: {record['effect']}\n    {stats.format_record(record, 3)}")
# T1's records are shares of a seed's 16 heads: the rule's pooled Wilson interval beside them, for reading
for key in ("C1_sink", "C1_control_bos_sink"):
    heads = [round(share * 16) for share in claims[key]["values"]]
    share, lo, hi = stats.wilson_interval(sum(heads), 16 * len(heads))
    print(f"    {key}: {sum(heads)} of {16 * len(heads)} heads pooled, Wilson 95% [{lo:.3f}, {hi:.3f}]")
assert [claims[key]["verdict"] for key in TRAINED.values()] == [
    "reproduces", "does not reproduce", "reproduces", "reproduces", "not established", "not established",
    "not established"]

# %% [markdown]
# ## 8. Check yourself on this chapter
#
# **1.** Section 1's image of 12 tokens moved the next text's ids by 4. What would a port that numbers
# the image's tokens as text (one id a token, equal on the three axes) do to the text after it?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The image's tokens would lose their rows and columns (equal ids on the three axes), and the text
# would start 12 ids after the image's start instead of 4: every later token 8 ids further from the
# text before the image than the model was trained on. Within the later text the shift cancels
# (chapter 6's relative property); between it and everything before, it does not. Nothing fails; the
# answers get worse.
# </details>

# %% [markdown]
# **2.** Section 2 printed the slowest turning pair of Gemma 4's global layer for p-RoPE and for NeoX
# partial rotary. Which of the two has turning pairs whose wavelength exceeds a million positions?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# NeoX partial rotary: its slowest pair turns at $\text{base}^{-2 \cdot 63/128}$, the printed
# 1.241e-06 radians a position, a wavelength $2\pi/\theta$ of over five million positions. p-RoPE's slowest
# turning pair turns at $\text{base}^{-2 \cdot 63/512}$, the printed 3.338e-02, a wavelength under two
# hundred positions; every pair slower than that is stopped at 0. The same number of pairs turns in both, 64, though
# not the same channels, which is why a port that confuses them raises no error: it turns the wrong
# channels at the wrong speeds.
# </details>

# %% [markdown]
# **3.** Your `test_sink_attention` checks only that every row's weights sum to less than 1. Which of
# the grader's wrong sinks get through, and why?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The sink of the wrong sign, the sink divided by $\sqrt{d_{head}}$ and the heads' sinks swapped: each
# still adds a finite logit to every row, so every row still sums to less than 1. Only an exact value
# (the hand-worked case of one key with score 0) tells their sizes apart. The missing sink (rows of
# exactly 1) and the sink's weight given to a value (values of ones give rows of exactly 1 again) are
# caught.
# </details>

# %% [markdown]
# **4.** Section 4 printed $\tau$ at position 8190 and at 8191. Why do they differ, when `floor_scale`
# is 8192?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# The formula counts $m + 1$ tokens, so at $m = 8191$ it has seen 8192, one full step: $\tau = 1 +
# 0.1 \ln 2$, the printed 1.0693. Positions count from 0.
# </details>

# %% [markdown]
# ## 9. The ledger, settled
#
# C1 to C6 are settled by computations without sampling: identities checked on numbers and counts read
# from configurations; evidence `exact §N` names the section whose cell asserts it. T1 to T5 are claims
# about trained models, settled by the records section 7 printed (the rule:
# [chapters/README.md](README.md#Evidence-and-the-verdict-rule)).
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1 | On text alone M-RoPE is 1-D RoPE (Qwen2-VL paper, §2.1) | the tables of both Qwen sections, chunked and interleaved, equal RoPE's on text, gap 0.0e+00 | exact §1 | reproduces |
# | C2 | An image costs the ids of its largest side, not one id a token (Qwen2-VL paper, §2.1) | images of 12, 256 and 960 tokens use 4, 16 and 40 ids | exact §1 | reproduces |
# | C3 | p-RoPE at factor $p$ is not NeoX partial rotary at the same $p$ (Gemma 4's config) | head of `512`, $p$ `0.25`: 64 pairs turn in both, p-RoPE's up to 26896.0 times as fast as NeoX's | exact §2 | reproduces |
# | C4 | Gemma 3: five local layers to one global, only the global ones with the large base and the linear factor (Gemma 3 report) | Gemma-3-4B's 34 layers: 29 local at base `1e4`, 5 global (layers 5, 11, 17, 23, 29) at base `1e6`, linear | exact §3 | reproduces |
# | C5 | Llama 4's temperature takes its first step at position `floor_scale` − 1 (transformers' `Llama4TextAttention`) | 1 for positions 0 to 8190, at position 8191 1.0693 | exact §4 | reproduces |
# | C6a | A sink logit makes every row's weights on the tokens sum to less than 1 (GPT-OSS model card) | row sums on the tokens from 0.087 to 0.991 across three heads, sinks `-1`, `0.5` and `2` | exact §5 | reproduces |
# | C6b | ... and a sink at $-\infty$ is plain attention (the limit of the GPT-OSS model card's sink logit) | largest gap to plain causal attention 0.0e+00 | exact §5 | reproduces |
# | T1 | With a learned sink logit no BOS sink forms: at most 0.1 of a seed's 16 heads put over 0.3 of their attention on BOS (a common reading of the GPT-OSS model card's sinks, chapter 10) | share of such heads with the logit, all 5 seeds: 0.000 (0 of 80 heads pooled, Wilson 95% [0.000, 0.046]); without it 0.412 ± 0.088 over 5 seeds (33 of 80, Wilson [0.311, 0.522]), the positive control (§7) | result positions_today/C1_sink | reproduces |
# | T2a | At this chapter's scale, p-RoPE's loss at the training length $L$ is below full RoPE's (after Barbero et al., 2024, for whom truncating the lowest frequencies keeps Gemma 2B's validation perplexity at 8k context and seems to improve it) | a 2-layer byte model with heads of 16, so $p$ 0.25 turns 2 of 8 pairs, trained 500 steps at $L$ = 32: full RoPE minus p-RoPE at $L$: -0.057 ± 0.020 nats over 5 seeds (§7) | result positions_today/C2_prope_at_L | does not reproduce at this scale |
# | T2b | p-RoPE runs past $L$ better than full RoPE, a lower loss at $t \ge L$ of $4L$ windows (this workbook's reading of Barbero et al., 2024, who test no length past training) | full RoPE minus p-RoPE: 0.160 ± 0.079 nats over 5 seeds (§7); at $2L$ 0.036 ± 0.111, not established (`C2_prope_2L`) | result positions_today/C2_prope | reproduces at $4L$ |
# | T3a | The Gemma 3 layout, the local layer at a small base with a window of $L/2$ and the global one at a large base, runs past $L$ better than one base (a common reading of the Gemma 3 design, which its report states without a comparison) | one base minus per-layer at $4L$: 0.431 ± 0.089 nats over 5 seeds (§7); the window alone at one base gives 0.421 ± 0.082 (`C3_window_alone`), so the gain comes with the window | result positions_today/C3_per_layer_base | reproduces |
# | T3b | The per-layer bases alone (10,000 and 1,000,000, no window) run past $L$ better than one base (the same reading) | one base minus per-layer bases at $4L$: 0.022 ± 0.065 nats over 5 seeds (§7) | result positions_today/C3_bases_alone | not established |
# | T4 | FIRE runs long: its rise past $L$ at $4L$ is under 0.05 nats (Li et al., 2023) | rise 0.052 ± 0.005 nats over 5 seeds (§7) | result positions_today/C4_fire_runs_long | not established |
# | T5 | Temperature tuning that steps inside the training length (`floor_scale` $L/4$) lowers a NoPE model's loss past $L$ (after Llama 4, whose $\tau$ is 1 below position 8191, and Scalable-Softmax) | $\tau$ steps four times inside training at $L$ = 32: NoPE minus NoPE with tuning at $4L$: 0.003 ± 0.012 nats over 5 seeds (§7) | result positions_today/C5_temperature | not established |
#
# ## 10. Where next
#
# * The exercises: [`exercises/today.py`](../exercises/today.py), 13.1 to 13.6. Grade them with
#   `python -m exercises grade today` (one at a time with `--exercise 13.N`). The drill
#   (`python -m exercises drill today`) times the ids, p-RoPE and sink attention.
# * The library's side: `positional/mrope.py` (the ids, the tables, the `"mrope"` scheme),
#   `positional/rope_scaling.py` (`proportional_inv_freq`), `positional/model_configs.py`
#   (`layer_rope`, the entries with their sources), `positional/temperature.py`,
#   `positional/fire.py`, and `engine/functional.py` (`scaled_dot_product_attention(..., sinks=)`;
#   `GPTConfig(attention_sinks=True)` gives every layer its sinks).
# * The interview questions on today's models, answered from this chapter's numbers:
#   [cards/13_positions_today.md](cards/13_positions_today.md).
# * Next: [chapter 14](14_interview_cards.py), every card of the book in one place, and the drill that
#   asks them.
