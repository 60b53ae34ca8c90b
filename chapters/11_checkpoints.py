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
# # Chapter 11. Positions in real checkpoints
#
# A checkpoint is a pile of numbers. What a position means to those numbers is not in them: it
# lives in a handful of settings (the base, the rotary width, which channels pair up, the scaling
# it was extended with, and the length the model was trained at, which this library's RoPE reads
# only under a scaling block). Lose one on the way from the training run to the serving code and
# nothing crashes; the model just computes something else. This chapter reads those settings off
# real checkpoints and published configs, ports weights between the two RoPE conventions, and
# looks at what partial rotary, decoupled RoPE and models that mix NoPE and RoPE layers do with
# the channels of a head.
#
# **By the end you can**
#
# * read a checkpoint's positional signature, show which settings change what its weights
#   compute, and make the library refuse a model that reads positions differently;
# * port a model's query and key weights from interleaved to rotate-half RoPE, and write the
#   test that catches each of the grader's wrong ports;
# * say which channels partial rotary and decoupled RoPE turn, and what an MLA cache stores per
#   token;
# * build a model whose layers mix NoPE and RoPE from the scheme hooks, and measure where order
#   reaches it;
# * read a published `config.json`: head size, rotary width, frequencies and critical pair.
#
# ## The claim ledger
#
# Before you run anything, write down for each claim: true on this workbook's models, yes or
# no? Section 9 settles them with the numbers this chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | The base, the rotary dimension, the scaling, the training length and what a position id means each change how a RoPE model behaves (survey, Table 4's closing paragraph) | | §1 |
# | C2 | The two pairing conventions are the same model up to a fixed permutation of channels, and weights are not interchangeable between them (book §2.4, survey §5.3) | | §3 |
# | C3 | Values are usually not rotated (survey §5.3), so a port leaves them alone | | §3 |
# | C4 | Decoupling the rotary subspace is what keeps MLA compatible with low-rank KV compression (survey Table 4, DeepSeek-V2/V3) | | §5 |
# | C5 | An attention layer without any position encoding can be order-sensitive when another layer supplies position (survey Table 4: Kimi K3's NoPE attention and its Delta Attention layers) | | §6 |
# | C6 | For Llama 2 ($d_h = 128$, $T_{train} = 4096$) $d_{extra} = 92$: the last 36 dimensions never see a full period (survey §6.2) | | §7 |
# | C7 | "Uses RoPE" is not a complete configuration (survey, Table 4's closing paragraph) | | §7 |
#
# ## The exercises
#
# You write them in [`exercises/checkpoints.py`](../exercises/checkpoints.py), each where this
# chapter has taught what it needs. Stars: ★ a formula into code, ★★ a design choice or an edge
# case, ★★★ a test or a derivation of your own.
#
# | Exercise | Function | | minutes |
# |---|---|---|---|
# | 11.1 | `port_qk_weights(W_qkv, n_heads, d_head, rotary_dim, n_kv_heads)`: interleaved weights into rotate-half code | ★★ | 20 |
# | 11.2 | `test_port(port_qk_weights)`: a test of your own, scored against wrong ports | ★★★ | 25 |
# | 11.3 | `rope_frequencies(config)`: the frequencies of a published model, from its `config.json` | ★ | 10 |
# | 11.4 | `critical_pair(config)`: the first pair that never completed a turn in training | ★★ | 10 |
#
# How to work: as in [chapter 0](00_tiny_transformer.py#How-to-work); grade one exercise with
# `python -m exercises grade checkpoints --exercise 11.N`. The layout is the book's everywhere:
# queries and keys are `(B, H, T, d_head)`. The models run the reference kernels ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)).

# %%
import math
import os
import tempfile
from dataclasses import replace

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.autograd import Tensor, no_grad
from mini_transformer.engine.backend import rng, to_numpy, xp
from mini_transformer.evaluation.clinic import sharpen  # weights whose attention is far from uniform (chapter 12)
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

g = rng(0)  # one seeded generator for the chapter's random draws


def randn(*shape):
    """Standard normal float64 numbers on the active backend."""
    return g.normal(size=shape, dtype="float64")


def logits(model, ids, **kwargs):
    with no_grad():
        return model(ids, **kwargs).data


# %% [markdown]
# ## 1. What a position means to the weights
#
# The survey lists what a decoder-only checkpoint must carry about positions (§9.1): the
# RoPE base (`rope_theta`), the rotary width (full or partial), the pairing layout, the original
# training length and the target length, the scaling type and its factors, and what a position
# id means under packing, prefix caches and sliding windows.
#
# This library writes the first five into every checkpoint, and for the last one fixed sentence:
# `checkpoint.positional_signature(model)` is the scheme's name, every setting the scheme declares
# and every config field it reads, what they imply, the head size, and a sentence on how position
# ids are read, the same whatever packing, prefix-cache or window policy serves the model. Here is
# a RoPE model's.

# %%
from mini_transformer.model.checkpoint import load_checkpoint, positional_signature, read_checkpoint, save_checkpoint

cfg = GPTConfig(vocab_size=32, d_model=32, n_layers=2, n_heads=2, max_len=32, positional="rope")
model = sharpen(TinyGPT(cfg))
signature = positional_signature(model)

# %% tags=["nbval-check-output"]
for key, value in signature.items():
    print(f"{key:<32} {value!r}")

# %% [markdown]
# Each item of the survey's list, and where it sits in the signature:
#
# | the survey's item (§9.1) | in the signature |
# | --- | --- |
# | rope_theta or base frequency | `rope_base`, `rope_theta` |
# | rotary dimension: full or partial | `partial_rotary_factor`, `rotary_dim` |
# | dimension pairing layout | `rope_interleaved`, `pairing` |
# | original training length and target length | `max_len`, `original_max_position_embeddings`, `target_max_position_embeddings` |
# | scaling type, factor, attention factor, per-dimension factors | `rope_scaling` (the whole block), `rope_type` |
# | what a position id means | `position_ids`: one fixed sentence, no policy |
#
# The survey's Table 4 closes by saying that the base, the rotary dimension, the scaling, the
# training length and what a position id means all change how a RoPE model behaves (claim C1). The
# models of this chapter are untrained, and on the weights as the library draws them the six
# setting changes below move the logits by at most 7.7e-04 (the cell's last line);
# `clinic.sharpen(model)` redraws `W_qkv` at standard deviation `0.5` and the biases at `0.1`, so
# that attention is far from uniform. Measure it: load the same
# weights into a model with one setting changed, feed both the same 32 tokens, and take the
# largest change of any logit. (The untrained output layer keeps every logit small, so the largest
# logit is printed too: a change as large as the logits themselves is a different model.)

# %%
ids = rng(1).integers(0, 32, (2, 32))  # (B, T)
reference = logits(model, ids)
state = model.state_dict()
yarn = {"rope_type": "yarn", "factor": 4.0}
changed = {  # label: (the model as saved, the model it is loaded into)
    "rope_base 10000 -> 500000": (cfg, replace(cfg, rope_base=500000.0)),
    "partial_rotary_factor 1 -> 0.5": (cfg, replace(cfg, extra={"partial_rotary_factor": 0.5})),
    "rope_interleaved False -> True": (cfg, replace(cfg, extra={"rope_interleaved": True})),
    "rope_scaling None -> linear x4": (cfg, replace(cfg, rope_scaling={"rope_type": "linear", "factor": 4.0})),
    "max_len 32 -> 64, no scaling": (cfg, replace(cfg, max_len=64)),
    "max_len 32 -> 64, under yarn x4": (replace(cfg, rope_scaling=yarn), replace(cfg, max_len=64, rope_scaling=yarn)),
}
drawn = TinyGPT(cfg).to_dtype("float64").state_dict()  # the control: the same weights before sharpen
effect, as_drawn = {}, {}
for label, (saved_cfg, loaded_cfg) in changed.items():
    saved, loaded = (TinyGPT(c).to_dtype("float64") for c in (saved_cfg, loaded_cfg))
    for weights, out in ((state, effect), (drawn, as_drawn)):
        saved.load_state_dict(weights)
        loaded.load_state_dict(weights)
        out[label] = float(xp.abs(logits(loaded, ids) - logits(saved, ids)).max())
effect["position ids shifted by 5 (RoPE)"] = float(xp.abs(logits(model, ids, offset=5) - reference).max())
learned = sharpen(TinyGPT(replace(cfg, positional="learned", max_len=64)))
effect["position ids shifted by 5 (learned table)"] = float(
    xp.abs(logits(learned, ids, offset=5) - logits(learned, ids)).max())

# %% tags=["nbval-check-output"]
print(f"largest |logit| of the model: {float(xp.abs(reference).max()):.2f}")
for label, change in effect.items():
    print(f"{label:<44} largest logit change {change:.2e}")
assert min(effect[k] for k in list(changed)[:4]) > 0.1
assert effect["max_len 32 -> 64, no scaling"] == 0.0 and effect["max_len 32 -> 64, under yarn x4"] > 0.01
assert effect["position ids shifted by 5 (RoPE)"] < 1e-12 < 0.1 < effect["position ids shifted by 5 (learned table)"]
print(f"the same six changes on the weights before sharpen: largest logit change {max(as_drawn.values()):.1e}")
assert max(as_drawn.values()) < 1e-3

# %% [markdown]
# On this one draw of sharpened weights, the base, the rotary width, the pairing and the scaling
# each change the logits by 0.20 to 0.30, of the same order as the logits themselves (at most 0.32): the
# same weights, a different model.
# Two results are subtler than the survey's list.
#
# * The `max_len` field matters through the scaling. With no scaling block, `max_len` changes
#   nothing RoPE computes (0.0); with YaRN it sets where the ramp between interpolated and kept
#   pairs sits, and the logits move. The signature records it either way, which is the safe side.
#   This changes a config field on fixed weights; the survey's training length is the length the
#   weights were trained at, which this section does not vary.
# * What a position id means matters differently per scheme. Shifting every id by 5 is a packed
#   document that does not restart at 0, seen through its block mask (chapter 10's packing case,
#   its §3). It changes a RoPE model by rounding only, because RoPE sees offsets, and a learned
#   table by 0.35. For RoPE, what breaks is ids whose *differences* change, as in the decode bug
#   of chapter 6. The survey's other cases, prefix caches and sliding windows, are not run here.
#
# Now the refusal. Save the model, then load the file into a model whose only difference is
# the pairing. `load_checkpoint` compares the two signatures and names the first setting that
# differs (here the configured one, with what it implies after it).

# %%
folder = tempfile.mkdtemp()
path = os.path.join(folder, "model.npz")
save_checkpoint(path, model)
interleaved = TinyGPT(replace(cfg, extra={"rope_interleaved": True}))
try:
    load_checkpoint(path, interleaved)
    refusal = None
except ValueError as e:
    refusal = str(e).replace(path, "model.npz")

# %% tags=["nbval-check-output"]
print(refusal)
assert refusal is not None and "rope_interleaved=False" in refusal and "rope_interleaved=True" in refusal

# %% [markdown]
# The message says what to do: build the model from the checkpoint's own config, which the file
# carries beside the weights.

# %% tags=["nbval-check-output"]
meta, params, _ = read_checkpoint(path)
rebuilt = TinyGPT(GPTConfig(**meta["config"])).to_dtype("float64")
load_checkpoint(path, rebuilt)
same = float(xp.abs(logits(rebuilt, ids) - reference).max())
print(f"rebuilt from the checkpoint's config: largest logit change {same:.1e}")
assert same < 1e-6  # the file stores float64 weights as float64

# %% [markdown]
# ## 2. The channels a checkpoint's weights feed
#
# To port weights you need to know which column of which matrix feeds which channel. This
# library's attention computes queries, keys and values with one fused weight,
#
# $$[\,q \mid k \mid v\,] = x\,W_{qkv} + b, \qquad W_{qkv} \in \mathbb{R}^{d_{model} \times 3 d_{model}},$$
#
# three column blocks in that order. Inside a block, column $h\,d_{head} + j$ is channel $j$ of
# head $h$ (`attention.py` reshapes each block to `(B, T, H, d_head)`). RoPE then turns pairs
# of channels of every query and key head (chapter 6): $(2i, 2i+1)$ in the interleaved
# convention of the RoFormer paper and Meta's original LLaMA code, $(i, i + r/2)$ in the
# rotate-half convention of GPT-NeoX and Hugging Face's LLaMA.
#
# ### Partial rotary
#
# With `partial_rotary_factor` $f$ only the first $r = \lfloor f\,d_{head} \rfloor$ channels of a
# head turn; the other $d_{head} - r$ carry content with no position at all. A score splits in two:
#
# $$s(m, n) = \underbrace{q_{[:r]}^\top R_{n-m}\, k_{[:r]}}_{\text{rotary: depends on } n - m} \;+\; \underbrace{q_{[r:]}^\top k_{[r:]}}_{\text{content: no position}}.$$
#
# The survey lists the rotary width among the settings to record (§9.1), and Phi-2 is a
# published example: 32 of its 80 channels turn (section 7). Check the split on a head of 16
# with $r = 8$: the last 8 channels come out of the rotation as they went in, and only the
# rotary part of the score moves with the offset.

# %%
from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary

d_head, r = 16, 8
partial = RotaryEmbedding(d_head, partial_rotary_factor=0.5)
q1, k1 = randn(1, d_head), randn(1, d_head)


def rotated(x, p):
    cos, sin = partial(1, offset=p)  # (1, r) each: the tables cover the rotary channels only
    return apply_rotary(x, cos, sin)


def split_score(m, n):
    a, b = rotated(q1, m)[0], rotated(k1, n)[0]
    return float(a[:r] @ b[:r]), float(a[r:] @ b[r:])


# %% tags=["nbval-check-output"]
print(f"rotary width of a 16-channel head with factor 0.5: {partial.rotary_dim}")
print(f"channels 8..15 after the rotation at position 7, largest change: "
      f"{float(xp.abs(rotated(q1, 7)[0, r:] - q1[0, r:]).max()):.1e}")
for m, n in [(3, 1), (103, 101), (3, 2)]:
    rot, content = split_score(m, n)
    print(f"score(m={m:>3}, n={n:>3}): rotary part {rot:+.6f}, content part {content:+.6f}")
assert partial.rotary_dim == 8 and xp.array_equal(rotated(q1, 7)[0, r:], q1[0, r:])
assert math.isclose(split_score(3, 1)[0], split_score(103, 101)[0], rel_tol=1e-9)
assert split_score(3, 1)[1] == split_score(3, 2)[1] == split_score(103, 101)[1]

# %% [markdown]
# ## 3. Porting between the conventions
#
# Chapter 6 showed the fact that makes a port possible: the two conventions are one rotation
# seen through a fixed channel permutation,
#
# $$P = (0, 2, 4, \dots, r-2,\; 1, 3, \dots, r-1), \qquad \mathrm{RoPE_{half}}(x[P]) = \mathrm{RoPE_{interleaved}}(x)[P].$$
#
# If the queries and keys of every head come out in the order $P$, every score is what it was,
# and so is everything after it (claim C2). Values are not rotated (survey §5.3: "usually";
# in this library, never), so they keep their order (claim C3).
#
# First the bug. A model built with interleaved RoPE (untrained, its weights sharpened as in
# section 1), its weights loaded as they are into the same model with rotate-half code:

# %%
original = sharpen(TinyGPT(replace(cfg, extra={"rope_interleaved": True})), seed=1)
checkpoint = original.state_dict()
served = TinyGPT(cfg).to_dtype("float64")
served.load_state_dict(checkpoint)  # shapes match, nothing complains
naive = float(xp.abs(logits(served, ids) - logits(original, ids)).max())

# %% tags=["nbval-check-output"]
print(f"weights loaded as they are: largest logit change {naive:.3f}")
assert naive > 0.1

# %% [markdown]
# ### Exercise 11.1: `port_qk_weights`   ★★ · 20 min
#
# *Why it matters:* checkpoints from code that rotates neighbouring channels as complex numbers
# (Meta's original LLaMA release, among others) use the other convention, and this is the whole
# fix, for the layout of the model you actually load.
#
# Write `port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None)`: return a
# new array whose last axis is reordered so that, in every head of the query block and of the
# key block, new channel $c$ holds old channel $P[c]$ for $c < r$ (`rotary_dim`, all of the
# head when `None`); channels from $r$ on and the whole value block stay. Work on the last axis
# only, so that the same call ports the weight `(d_model, 3 d_model)` and its bias
# `(3 d_model,)`. Do not write into `W_qkv`.
#
# Real checkpoints often use grouped-query attention (Llama 2 70B, Llama 3, Mistral): several
# query heads share one key-value head, so the query block has `n_heads` heads and the key and
# value blocks `n_kv_heads` heads each, of `d_head` channels, and the last axis is
# $(n_\text{heads} + 2\,n_\text{kv heads})\,d_\text{head}$ long. The queries are permuted per
# query head and the keys per key-value head: Hugging Face's Llama conversion script permutes
# `k_proj` with `num_key_value_heads`, not with the query head count. `n_kv_heads=None` means
# `n_heads`; refuse, with a sentence, a count that does not divide `n_heads` or a width that does
# not match. Grade it alone: `python -m exercises grade checkpoints --exercise 11.1`.

# %%
port_qk_weights = use("checkpoints", "port_qk_weights")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Only the column axis changes: the answer is `W_qkv` with its columns in a new order. Write the order
# out for one head of 4 channels first: `[0, 2, 1, 3]`.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The permutation acts inside each head, one head at a time, on the query block and on the key block
# (the key block has one head per key-value head); the values are never rotated and keep their order.
# Case: 2 heads of 4 channels ($d_{model} = 8$, 24 columns): the queries' columns become
# `0, 2, 1, 3, 4, 6, 5, 7`, the keys' the same plus 8, and `16 .. 23` stay. One permutation across all
# 8 channels of a block would give `0, 2, 4, 6, 1, 3, 5, 7`: right for one head only. With
# `rotary_dim` below `d_head`, only the first `rotary_dim` channels of each head move.
# </details>

# %% tags=["answer"]
reveal("checkpoints", "port_qk_weights")

# %% [markdown]
# Port the checkpoint: every `W_qkv` weight and bias of the state dict, nothing else.

# %%
def port_state(state, n_heads, d_head, rotary_dim=None):
    """A state dict with every fused query-key-value weight and bias ported; the rest as it is."""
    return {name: port_qk_weights(value, n_heads, d_head, rotary_dim) if ".W_qkv." in name else value
            for name, value in state.items()}


served.load_state_dict(port_state(checkpoint, cfg.n_heads, cfg.d_head))
ported = float(xp.abs(logits(served, ids) - logits(original, ids)).max())

qkv_order = to_numpy(port_qk_weights(xp.arange(3.0 * cfg.d_model), cfg.n_heads, cfg.d_head)).astype(int)
values_too = list(qkv_order[:2 * cfg.d_model]) + [2 * cfg.d_model + c for c in qkv_order[:cfg.d_model]]  # P on v too
values_port = TinyGPT(cfg).to_dtype("float64")
values_port.load_state_dict({n: v[..., values_too] if ".W_qkv." in n else v for n, v in checkpoint.items()})
values_permuted = float(xp.abs(logits(values_port, ids) - logits(original, ids)).max())

partial_cfg = replace(cfg, extra={"partial_rotary_factor": 0.5})
trained_partial = sharpen(TinyGPT(replace(cfg, extra={"rope_interleaved": True, "partial_rotary_factor": 0.5})), seed=2)
served_partial = TinyGPT(partial_cfg).to_dtype("float64")
served_partial.load_state_dict(port_state(trained_partial.state_dict(), cfg.n_heads, cfg.d_head, 8))
ported_partial = float(xp.abs(logits(served_partial, ids) - logits(trained_partial, ids)).max())
served_partial.load_state_dict(port_state(trained_partial.state_dict(), cfg.n_heads, cfg.d_head))  # whole head
whole_head = float(xp.abs(logits(served_partial, ids) - logits(trained_partial, ids)).max())

# %% tags=["nbval-check-output"]
print(f"ported, every channel turns:            largest logit change {ported:.1e}")
print(f"ported, partial rotary (8 of 16 turn):  largest logit change {ported_partial:.1e}")
print(f"partial model ported as if all turned:  largest logit change {whole_head:.3f}")
print(f"ported, the values permuted too:        largest logit change {values_permuted:.3f}")
assert ported < 1e-10 and ported_partial < 1e-10 and whole_head > 0.1 and values_permuted > 0.1

# %% [markdown]
# Now a grouped-query checkpoint: 4 query heads of 8 channels sharing 2 key-value heads, so its
# `W_qkv` has $(4 + 2 \cdot 2) \cdot 8 = 64$ columns instead of 96. This library's attention has one
# key-value head per query head, but a grouped-query layer is exactly that layer with each
# key-value head's columns repeated for the query heads it serves (query head $h$ reads
# key-value head $\lfloor h / 2 \rfloor$), so the checkpoint runs here once `widen` repeats them.
# The port must reorder the keys inside each of the 2 heads of 8; a port that cuts the 16 key
# columns into 4 heads of 4 (the query head count, the slip a conversion script makes when it
# permutes `k_proj` with `n_heads`) pairs channels that RoPE never paired.

# %%
gqa_cfg = replace(cfg, n_heads=4)                      # d_model 32: 4 query heads of 8
n_kv_heads, d_q = 2, gqa_cfg.d_model
d_kv = n_kv_heads * gqa_cfg.d_head                     # 16 key columns, 16 value columns
widen = xp.concatenate([xp.arange(d_q)] + [start + (h // 2) * gqa_cfg.d_head + xp.arange(gqa_cfg.d_head)
                                           for start in (d_q, d_q + d_kv) for h in range(gqa_cfg.n_heads)])
# a grouped checkpoint to port: key-value heads 0 and 2 of a sharpened 4-head model, every query head
keep = xp.concatenate([xp.arange(d_q)] + [start + kv * 2 * gqa_cfg.d_head + xp.arange(gqa_cfg.d_head)
                                          for start in (d_q, 2 * d_q) for kv in range(n_kv_heads)])
mha = sharpen(TinyGPT(replace(gqa_cfg, extra={"rope_interleaved": True})), seed=3).state_dict()
grouped = {name: value[..., keep] if ".W_qkv." in name else value for name, value in mha.items()}
trained_gqa = TinyGPT(replace(gqa_cfg, extra={"rope_interleaved": True})).to_dtype("float64")
trained_gqa.load_state_dict({n: v[..., widen] if ".W_qkv." in n else v for n, v in grouped.items()})
served_gqa = TinyGPT(gqa_cfg).to_dtype("float64")


def serve_grouped(port):
    """Largest logit change of the rotate-half model served with ``port`` applied to the grouped weights."""
    served_gqa.load_state_dict({n: port(v)[..., widen] if ".W_qkv." in n else v for n, v in grouped.items()})
    return float(xp.abs(logits(served_gqa, ids) - logits(trained_gqa, ids)).max())


gqa_ported = serve_grouped(lambda v: port_qk_weights(v, 4, 8, n_kv_heads=2))
by_query_heads = to_numpy(port_qk_weights(xp.arange(96.0), 4, 8)).astype(int)   # the multi-head order ...
slip = xp.asarray(list(by_query_heads[:d_q])                                     # ... with the keys cut into
                  + [d_q + c for c in to_numpy(port_qk_weights(xp.arange(48.0), 4, 4)).astype(int)[:16]]
                  + list(range(d_q + d_kv, d_q + 2 * d_kv)))                     # 4 heads of 4
gqa_slip = serve_grouped(lambda v: v[..., slip])
try:
    port_qk_weights(grouped["blocks.0.attn.W_qkv.weight"], 4, 8)                # n_kv_heads forgotten
    refused = None
except ValueError as e:
    refused = str(e)

# %% tags=["nbval-check-output"]
print(f"grouped-query W_qkv: {grouped['blocks.0.attn.W_qkv.weight'].shape[-1]} columns, widened to {d_q + 2 * d_q}")
print(f"ported with n_kv_heads=2:          largest logit change {gqa_ported:.1e}")
print(f"keys permuted by the 4 query heads: largest logit change {gqa_slip:.3f}")
print(f"n_kv_heads left out: {refused}")
assert gqa_ported < 1e-10 and gqa_slip > 0.1
assert refused is not None and "64 columns" in refused and "= 96 expected" in refused

# %% [markdown]
# The port with `n_kv_heads=2` serves the grouped-query checkpoint to rounding; the keys cut by
# the query head count change the logits by more than 0.1, and nothing crashes; a port that
# forgets `n_kv_heads` is refused, because the keys and values are narrower than the queries.

# %% [markdown]
# Look at the port: which old column feeds each new column of `W_qkv`, for 2 heads of 8
# channels. Inside each head of the query and key blocks the even channels move to the front;
# the value block stays on the diagonal.

# %%
order = to_numpy(port_qk_weights(xp.arange(48.0), 2, 8)).astype(int)  # porting a row of column numbers
fig, ax = plt.subplots(figsize=(6, 3.2))
for start, colour, block in [(0, "C0", "queries"), (16, "C1", "keys"), (32, "C2", "values")]:
    cols = range(start, start + 16)
    ax.plot(list(cols), [order[c] for c in cols], marker="o", linestyle="none", markersize=4, color=colour, label=block)
for edge in (8, 16, 24, 32, 40):
    ax.axvline(edge - 0.5, color="gray", linewidth=0.5, linestyle=":" if edge % 16 else "-")
ax.set(xlabel="new column of W_qkv", ylabel="old column it holds", title="The port, 2 heads of 8 (dotted: head edges)")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ### Exercise 11.2: a test of your own   ★★★ · 25 min
#
# *Why it matters:* a wrong port crashes nothing and passes every shape check. Several wrong
# ports even pass a test that looks reasonable: one head, or heads of 4 channels, or a fresh
# model, or a comparison of attention scores alone, or a model whose every channel turns, or a
# checkpoint with one key-value head per query head each hide at least one of them (one head
# hides two).
#
# Write `test_port(port_qk_weights)` in `exercises/checkpoints.py`: build an interleaved
# `TinyGPT`, give it weights, port its state dict into a rotate-half `TinyGPT` of the same
# config, and assert that the logits agree; do the same for a grouped-query checkpoint, run
# widened as above. The grader runs your test on the reference port (it must pass) and on
# eight wrong ports, and tells you which got away. Grade it alone:
# `python -m exercises grade checkpoints --exercise 11.2`.

# %%
test_port = use("checkpoints", "test_port")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Each wrong port is invisible on some model. A port across all heads at once is right for one
# head; the inverse of $P$ equals $P$ for 4 channels; a value block permuted too leaves every
# attention score as it was; a forgotten bias is harmless while the bias is zero, as in a fresh
# model; ignoring `rotary_dim` is harmless when every channel turns; the keys permuted by the
# query head count are right when there are as many key-value heads as query heads.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Compare the models' outputs (logits), not their scores, and do it on more than one model:
# several heads of at least 8 channels, every weight and bias drawn at random (0.5 is a good
# scale), a second model with `partial_rotary_factor` below 1 whose `rotary_dim` you pass, and a
# grouped-query checkpoint (4 query heads, 2 key-value heads) widened to run in `TinyGPT`.
# </details>

# %% tags=["answer"]
reveal("checkpoints", "test_port")

# %% [markdown]
# Your test must pass on the port this chapter runs:

# %% tags=["nbval-check-output"]
test_port(port_qk_weights)
print("the test passes on the port this chapter runs")

# %% [markdown]
# One more step closes the loop: save the ported model. Its checkpoint now records the
# rotate-half pairing, so the library refuses to load it back into interleaved code, the bug
# of this section caught at the door.

# %%
ported_path = os.path.join(folder, "ported.npz")
save_checkpoint(ported_path, served)  # the full-rotary model, ported above
try:
    load_checkpoint(ported_path, TinyGPT(replace(cfg, extra={"rope_interleaved": True})))
    back = None
except ValueError as e:
    back = str(e).replace(ported_path, "ported.npz")

# %% tags=["nbval-check-output"]
print("pairing recorded:", read_checkpoint(ported_path)[0]["positional"]["pairing"])
print(back.split(" (also")[0])
assert "rope_interleaved=False" in back

# %% [markdown]
# ## 4. A layer-by-layer check for a real port
#
# In a real port you also convert names and layouts (a PyTorch weight is `(out, in)`, the
# transpose of this book's `x @ W`), and a logit mismatch at the end does not say where it
# started. The book's failure table suggests the local check: compare one layer's query after
# rotation against the reference implementation. Here the two codebases are the interleaved and
# the rotate-half model: layer 0's rotated queries must agree once you read them in the same
# channel order, $P$ inside every head.

# %%
def rotated_queries(model, ids, layer=0):
    """Layer ``layer``'s queries after the rotation, (B, H, T, d_head), captured from the scheme's hook."""
    seen = {}
    hook = model.positional.rotate

    def spy(x, pos, at):
        out = hook(x, pos, at)
        if at == layer and "q" not in seen:  # attention rotates q first, then k
            seen["q"] = out.data
        return out
    model.positional.rotate = spy
    try:
        logits(model, ids)
    finally:
        del model.positional.rotate
    return seen["q"]


P = to_numpy(port_qk_weights(xp.arange(3.0 * cfg.d_model), cfg.n_heads, cfg.d_head)).astype(int)[:cfg.d_head]
q_old = rotated_queries(original, ids)           # interleaved code, old channel order
q_new = rotated_queries(served, ids)             # rotate-half code, ported weights
q_naive = TinyGPT(cfg).to_dtype("float64")
q_naive.load_state_dict(checkpoint)
q_bad = rotated_queries(q_naive, ids)

# %% tags=["nbval-check-output"]
print(f"layer 0, rotated q, ported:    largest difference {float(xp.abs(q_new - q_old[..., P]).max()):.1e}")
print(f"layer 0, rotated q, unported:  largest difference {float(xp.abs(q_bad - q_old[..., P]).max()):.2f}")
assert xp.allclose(q_new, q_old[..., P], atol=1e-12) and not xp.allclose(q_bad, q_old[..., P], atol=1e-3)

# %% [markdown]
# ## 5. Decoupled RoPE, as in multi-head latent attention
#
# DeepSeek-V2 and V3 (and LongCat-Flash and GLM-5, per the survey's Table 4) use multi-head
# latent attention (MLA), which caches a small latent $c_j$ per token instead of every head's
# key and value, and decompresses keys as $k_j = W^{UK} c_j$. The survey says MLA "decouples the
# query/key subspace carrying RoPE from the content compression subspace" to stay compatible
# with the compression (claim C4). Here is why, on numbers.
#
# Without RoPE a query never needs the decompressed key:
# $q_i^\top k_j = q_i^\top W^{UK} c_j = (W^{UK\top} q_i)^\top c_j$. Move $W^{UK}$ onto the
# query once and score against the cached latents. With RoPE on the keys the matrix between
# them is $R_i^\top R_j W^{UK} = R_{j-i} W^{UK}$: it changes with $j - i$, so no single matrix
# serves every distance, and you would have to recompute every prefix token's keys at each step
# (DeepSeek-V2 §2.1.3) or cache every head's rotated keys. The cell also tries the shortcut with
# the rotation dropped: one wrong choice, not the best one matrix can do.

# %%
d_model5, d_c, d_head5, T5 = 32, 8, 16, 6
W_DKV = randn(d_model5, d_c) / d_model5 ** 0.5   # layer input -> latent, the only thing cached
W_UK = randn(d_c, d_head5) / d_c ** 0.5          # latent -> key
W_Q = randn(d_model5, d_head5) / d_model5 ** 0.5
h = randn(T5, d_model5)
c = h @ W_DKV                                    # (T, d_c) the cache
k5, q5 = c @ W_UK, h @ W_Q                       # (T, d_head) each
rope16 = RotaryEmbedding(d_head5)
cos5, sin5 = rope16(T5)

content = q5 @ k5.T
content_absorbed = (q5 @ W_UK.T) @ c.T           # never decompresses a key
with_rope = apply_rotary(q5, cos5, sin5) @ apply_rotary(k5, cos5, sin5).T
rope_absorbed = (apply_rotary(q5, cos5, sin5) @ W_UK.T) @ c.T   # the shortcut with R_j dropped

# %% tags=["nbval-check-output"]
print(f"no RoPE, scored against the cached latents: largest error {float(xp.abs(content - content_absorbed).max()):.1e}")
print(f"RoPE on the keys, R_j dropped, against latents: largest error {float(xp.abs(with_rope - rope_absorbed).max()):.2f}"
      f" (scores up to {float(xp.abs(with_rope).max()):.2f})")
assert float(xp.abs(content - content_absorbed).max()) < 1e-12 < 0.1 < float(xp.abs(with_rope - rope_absorbed).max())

# %% [markdown]
# So MLA keeps the compressed part position-free and adds a separate rotary part of width
# $d_{rope}$: a rotary query per head and **one rotary key per token, shared by all heads**,
#
# $$s_{ij} = \frac{q_i^{C\top} k_j^{C} + (R_i q_i^{R})^\top (R_j k_j^{R})}{\sqrt{d_{head} + d_{rope}}}.$$
#
# The rotary key depends on token $j$ alone, so it is rotated once, when the token arrives, and
# cached beside the latent: the cache holds $d_c + d_{rope}$ numbers per token and layer. This
# library's `decoupled_rope` scheme (`positional/decoupled_rope.py`) computes this rotary part,
# with the differences below; `rotary_query` and `rotary_key` give its two factors. Check: their product is the
# scheme's score term, the key is `(B, 1, T, d_rope)`, and the rotary keys of a 6-token prefix are
# the first rows of the 10-token sequence's: each depends on its own token only, so MLA can rotate
# and cache each once.

# %%
mla_cfg = GPTConfig(vocab_size=32, d_model=32, n_layers=1, n_heads=4, max_len=32, positional="decoupled_rope",
                    extra={"d_rope": 4})
mla = TinyGPT(mla_cfg).to_dtype("float64").positional
qc, kc = Tensor(randn(1, 4, 10, 8)), Tensor(randn(1, 4, 10, 8))   # content queries and keys, (B, H, T, d_head)
pos10 = xp.arange(10)
key_R = mla.rotary_key(kc, pos10, 0).data                          # (B, 1, T, d_rope)
from_parts = mla.rotary_query(qc, pos10, 0).data @ xp.swapaxes(key_R, -1, -2)
prefix_keys = mla.rotary_key(Tensor(kc.data[:, :, :6]), pos10[:6], 0).data   # from the first 6 tokens alone

# %% tags=["nbval-check-output"]
print("rotary key shape (B, 1, T, d_rope):", tuple(key_R.shape))
score_gap = float(xp.abs(from_parts - mla.score_bias(qc, kc, pos10, pos10, 0).data).max())
cache_gap = float(xp.abs(prefix_keys - key_R[:, :, :6]).max())
print(f"rotary query x rotary key against the scheme's score term: largest difference {score_gap:.1e}")
print(f"keys computed at 6 tokens against the first 6 keys at 10:   largest difference {cache_gap:.1e}")
assert key_R.shape == (1, 1, 10, 4) and score_gap < 1e-12 and cache_gap < 1e-14

# %% [markdown]
# What that buys at DeepSeek-V3's size (`model_configs.MODELS`: 128 heads, 128 content and 64
# rotary channels per query-key head, values of 128, latent width 512), per token and layer:

# %%
from mini_transformer.positional.model_configs import MODELS, describe_model

v3 = MODELS["DeepSeek-V3"]
per_head = v3["qk_nope_head_dim"] + v3["qk_rope_head_dim"]
every_head = v3["num_attention_heads"] * (per_head + v3["v_head_dim"])     # cache every head's key and value
mla_cache = v3["kv_lora_rank"] + v3["qk_rope_head_dim"]                     # the latent and the shared rotary key

# %% tags=["nbval-check-output"]
print(f"every head's key and value: {v3['num_attention_heads']} x ({per_head} + {v3['v_head_dim']}) = {every_head} numbers")
print(f"MLA: latent {v3['kv_lora_rank']} + shared rotary key {v3['qk_rope_head_dim']} = {mla_cache} numbers"
      f" ({every_head / mla_cache:.0f}x fewer)")
assert (every_head, mla_cache) == (40960, 576)

# %% [markdown]
# Three differences of this library's scheme from MLA. The content part is attention's own
# per-head queries and keys, not a compressed latent, and $q^R$, $k^R$ are linear maps of them.
# Both terms are divided by $\sqrt{d_{head}}$, not their sum by $\sqrt{d_{head} + d_{rope}}$. And
# its cache stores the content keys and recomputes the rotary key from them at each step instead
# of caching it (the docstring names these last two). The memory saving is not reproduced here.
#
# ## 6. NoPE and RoPE in one model
#
# What the survey reports about models that leave position out of some attention (its Table 4):
# Kimi K3 injects no position into its MLA queries and keys at all, and gets order from Kimi
# Delta Attention layers, whose recursive gating and decay depend on it; DeepSeek, LongCat and
# GLM-5 split each head into a RoPE subspace and a NoPE subspace (section 5); Qwen3.6 mixes full
# attention layers, which carry partially rotated M-RoPE, with linear attention layers.
#
# The survey's table names no model that interleaves whole NoPE attention layers with RoPE
# layers, but released models do, and their configs write the pattern down layer by layer:
#
# * **Llama 4** (Meta calls it iRoPE): most layers rotate and attend within fixed chunks; every
#   fourth layer has no RoPE and attends over the whole context. Its Hugging Face config stores
#   `no_rope_layers`, one entry a layer (1 for RoPE, 0 for NoPE), built from
#   `no_rope_layer_interval` when the list is absent, and the chunk length in
#   `attention_chunk_size`; Meta's reference code names the interval `nope_layer_interval`.
# * **Command R7B** (Cohere): three sliding-window layers with RoPE, then one global layer
#   without positional embeddings (Hugging Face's Cohere 2 documentation); its `config.json`
#   sets `sliding_window_pattern` to 4 and `order_of_interleaved_layers` to `"local_attn_first"`.
# * **SmolLM3** (Hugging Face): NoPE in every fourth layer; its `config.json` sets
#   `no_rope_layer_interval` to 4 and spells out `no_rope_layers`.
#
# These layouts are read from the models' documentation and released configs; this chapter
# measures none of those models. The three share one rule, the one Hugging Face uses to build
# `no_rope_layers` from the interval: layer $l$ (counting from 0) has no RoPE when $l + 1$ is a
# multiple of the interval.

# %%
def no_rope_layers(n_layers, interval):
    """The per-layer list of the Hugging Face configs: 1 where the layer rotates, 0 where it is NoPE."""
    return [int((layer + 1) % interval != 0) for layer in range(n_layers)]


pattern = no_rope_layers(36, 4)                    # SmolLM3-3B: 36 layers, interval 4
nope_layers = [layer for layer, rotates in enumerate(pattern) if not rotates]

# %% tags=["nbval-check-output"]
print(f"no_rope_layers(36, 4) starts {pattern[:8]}")
print(f"NoPE layers: {nope_layers}, {len(nope_layers)} of {len(pattern)}")
assert pattern[:4] == [1, 1, 1, 0] and nope_layers == list(range(3, 36, 4)) and len(nope_layers) == 9

# %% [markdown]
# This library has no per-layer switch, but the hooks make one a few lines: `rotate(x, pos,
# layer)` gets the layer's index, so a RoPE that returns `x` unchanged in some layers is a NoPE
# layer there, and the layers where `pattern` holds a 1 are the `layers` to pass. Claim C5
# says a NoPE layer can still be order-sensitive when another layer supplies position. Measure
# it where order has nowhere else to hide: a bidirectional `TinyEncoder` (no causal mask), two
# layers, whose inputs are shuffled. A layer that sees no position at all is
# permutation-equivariant: its output is the input's shuffled the same way.

# %%
from mini_transformer.positional.rope import RoPE


class RoPEInLayers(RoPE):
    """RoPE in the layers listed, NoPE (no rotation, no bias) in the others."""

    def __init__(self, d_head, layers, base=10000.0):
        super().__init__(d_head, base)
        self.rope_layers = set(layers)

    def rotate(self, x, pos, layer):
        return super().rotate(x, pos, layer) if layer in self.rope_layers else x


enc_cfg = GPTConfig(vocab_size=16, d_model=32, n_layers=2, n_heads=2, max_len=16, positional="rope")
enc_ids = rng(2).integers(0, 16, (2, 12))
shuffle = rng(3).permutation(12)


def layer_outputs(encoder, ids):
    """The output of each block, (B, T, d_model), for ids at positions 0 .. T - 1."""
    x, pos, outs = encoder.positional.embed(encoder.tok(ids), 0), xp.arange(ids.shape[1]), []
    with no_grad():
        for block in encoder.blocks:
            x = block(x, encoder.positional, pos, pos, None, None)
            outs.append(x.data)
    return outs


order_change = {}
for name, layers in [("NoPE in both layers", []), ("RoPE in layer 0, NoPE in layer 1", [0]),
                     ("NoPE in layer 0, RoPE in layer 1", [1]), ("RoPE in both layers", [0, 1])]:
    encoder = sharpen(TinyEncoder(enc_cfg))
    encoder.positional = RoPEInLayers(enc_cfg.d_head, layers)
    plain, mixed = layer_outputs(encoder, enc_ids), layer_outputs(encoder, enc_ids[:, shuffle])
    order_change[name] = [float(xp.abs(b - a[:, shuffle]).max() / xp.abs(a).max()) for a, b in zip(plain, mixed)]

# %% tags=["nbval-check-output"]
print("relative change of each layer's output under a shuffle, beyond the shuffle itself")
for name, (first, second) in order_change.items():
    print(f"{name:<36} layer 0: {first:.2g}   layer 1: {second:.2g}")
gap = order_change
assert max(gap["NoPE in both layers"]) < 1e-12 and gap["NoPE in layer 0, RoPE in layer 1"][0] < 1e-12
assert gap["RoPE in layer 0, NoPE in layer 1"][1] > 0.1 and gap["NoPE in layer 0, RoPE in layer 1"][1] > 0.1

# %%
fig, ax = plt.subplots(figsize=(6, 3))
for i, (name, values) in enumerate(order_change.items()):
    ax.bar([i - 0.2, i + 0.2], [max(v, 1e-17) for v in values], width=0.4, color=["C0", "C1"],
           label=["layer 0", "layer 1"] if i == 0 else None)
ax.set_xticks(range(len(order_change)))
ax.set_xticklabels([n.replace(", ", ",\n") for n in order_change], fontsize=7)
ax.set(yscale="log", ylabel="change under a shuffle", title="Where order reaches a two-layer encoder")
ax.axhline(1e-12, color="gray", linestyle=":", linewidth=1)
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# A block's output carries its input through the residual stream, so layer 1's 0.51 above a RoPE
# layer is partly layer 0's change passed on. The attention itself, what the NoPE layer adds:

# %%
def attention_outputs(encoder, ids):
    """What each layer's attention adds to the residual stream, (B, T, d_model), at positions 0 .. T - 1."""
    x, pos, outs = encoder.positional.embed(encoder.tok(ids), 0), xp.arange(ids.shape[1]), []
    with no_grad():
        for block in encoder.blocks:
            outs.append(block.attn(block.norm1(x), encoder.positional, pos, pos, None, None).data)
            x = block(x, encoder.positional, pos, pos, None, None)
    return outs


encoder = sharpen(TinyEncoder(enc_cfg))            # the weights of the loop above
encoder.positional = RoPEInLayers(enc_cfg.d_head, [0])
a, b = attention_outputs(encoder, enc_ids)[1], attention_outputs(encoder, enc_ids[:, shuffle])[1]
nope_attention = float(xp.abs(b - a[:, shuffle]).max() / xp.abs(a).max())

# %% tags=["nbval-check-output"]
print(f"RoPE in layer 0, NoPE in layer 1: layer 1's attention output changes by {nope_attention:.2f} of its largest value")
assert nope_attention > 0.1

# %% [markdown]
# Above a RoPE layer, the NoPE layer's own attention output is order-sensitive (0.60); below the
# RoPE layer, the NoPE layer is equivariant to rounding (3.2e-16). Kimi K3's recipe, per the survey, relies on the first fact
# with a different supplier of order (a gated recurrence instead of a rotation), which this
# library does not have; the measurement here is the mechanism, not that model. Attention
# without position is permutation-equivariant in its own input, so all of that 0.60 reaches the
# NoPE layer through its input, layer 0's order-dependent output.
#
# ## 7. Published models, side by side
#
# `model_configs.MODELS` stores the positional settings of published models with the keys of
# their own `config.json`, each with its source; `describe_model(name)` turns one into numbers.
# One row departs from the survey: its Table 4 puts Falcon under ALiBi, but the released Falcon-7B
# rotates (its model card: rotary; its `config.json`: `"alibi": false`), and only the Falcon-RW
# research models, stored here as Falcon-RW-1B, use ALiBi. Here they are together, with chapter 8's model (two heads of 32, trained at 64) for scale. $r$ is
# the rotary width, $L$ the length the config names (`original_max_position_embeddings` where it
# has one, else `max_position_embeddings`), not always a pretraining length: for Code Llama and
# Qwen2 (survey Table 4) and Qwen3 (its report's long-context stage) it is already a length they
# were extended to, and LongCat-Flash's, whose config names no original length, is its maximum
# position (survey Table 4). `max pos` is `max_position_embeddings` (`?` for DeepSeek-V2-Lite:
# `model_configs` does not store it and lists it as absent), and $r_{crit}$ the critical pair:
# the first pair whose wavelength $2\pi/\theta_i$ reaches $L$ (survey §6.1, eq. 39).
# From $r_{crit}$ on, pairs never completed a turn within $L$; `no full turn` is their share.
# The rows of the models stored as `per_layer_rope` or `mrope` stay blank: `describe_model` returns their RoPE
# layer by layer (`layers`), not as one setting. Chapter 13 reads four of the per-layer ones layer by layer.

# %%
rows = []
for name in MODELS:
    info = describe_model(name)
    if "rotary_dim" not in info:
        rows.append((name, info["mechanism"], None))
        continue
    scaling = info.get("rope_scaling") or {}
    rows.append((name, info["mechanism"], dict(
        r=info["rotary_dim"], theta=info["rope_theta"], L=info["train_len"],
        serves=info.get("max_position_embeddings"), scaling=scaling.get("rope_type", scaling.get("type", "-")),
        crit=info["critical_dimension"].pair, shortest=float(info["base_wavelengths"][0]),
        longest=float(info["base_wavelengths"][-1]), wavelengths=to_numpy(info["base_wavelengths"]))))
from mini_transformer.positional.rope_scaling import by_parts_ramp, critical_dimension, wavelengths

tiny = dict(r=32, theta=10000.0, L=64, serves=64, scaling="-", crit=critical_dimension(32, 10000.0, 64).pair,
            shortest=float(wavelengths(32, 10000.0)[0]), longest=float(wavelengths(32, 10000.0)[-1]),
            wavelengths=to_numpy(wavelengths(32, 10000.0)))
rows.append(("chapter 8's TinyGPT", "rope", tiny))

# %% tags=["nbval-check-output"]
print(f"{'model':<26}{'mechanism':<17}{'r':>4}{'theta':>8}{'L':>8}{'max pos':>8}{'scaling':>9}"
      f"{'r_crit':>7}{'no full turn':>14}{'longest':>10}")
for name, mech, x in rows:
    if x is None:
        print(f"{name:<26}{mech:<17}")
        continue
    never = (x["r"] // 2 - x["crit"]) / (x["r"] // 2)
    serves = "?" if x["serves"] is None else x["serves"]
    print(f"{name:<26}{mech:<17}{x['r']:>4}{x['theta']:>8.0e}{x['L']:>8}{serves!s:>8}{x['scaling']:>9}"
          f"{x['crit']:>7}{never:>14.0%}{x['longest']:>10.3g}")
published = {name: x for name, mech, x in rows if x is not None and name in MODELS}
crits = sorted((x["crit"], name) for name, x in published.items())
nevers = sorted((x["r"] // 2 - x["crit"]) / (x["r"] // 2) for x in published.values())
blocks = {name: (x["scaling"], MODELS[name]["rope_scaling"].get("factor")) for name, x in published.items()
          if x["scaling"] != "-"}  # the block's own factor; LongRoPE's per-pair lists are not stored
# the no-full-turn share, derived: pair i completes a turn in training when 2 pi base^(2i/r) < L, so about
# 1 - ln(L / 2 pi) / ln(base) of the pairs never do (up to one pair of rounding)
gaps = [abs((x["r"] // 2 - x["crit"]) / (x["r"] // 2) - (1 - math.log(x["L"] / (2 * math.pi)) / math.log(x["theta"])))
        * (x["r"] // 2) for x in published.values()]
print(f"{len(published)} published, one RoPE each: critical pairs {crits[0]} .. {crits[-1]}; no full turn {nevers[0]:.0%} .. {nevers[-1]:.0%}")
print("scaling blocks (type, factor):", ", ".join(f"{n} {t} {'-' if f is None else f'x{f:g}'}"
                                                  for n, (t, f) in blocks.items()))
print(f"the share against 1 - ln(L / 2 pi) / ln(base): at most {max(gaps):.2f} of a pair apart")
assert (len(published), crits[0][0], crits[-1][0], round(nevers[0], 2), round(nevers[-1], 2)) == (14, 11, 100, 0.22, 0.45)
assert blocks == {"Llama-3.1-8B": ("llama3", 8.0), "Qwen2-7B-Instruct": ("yarn", 4.0), "Qwen3-0.6B": ("yarn", 4.0),
                  "Phi-3-mini-128k-instruct": ("longrope", None), "DeepSeek-V2-Lite": ("yarn", 40),
                  "DeepSeek-V3": ("yarn", 40)} and max(gaps) <= 1

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
rope_rows = [(name, x) for name, mech, x in rows if x is not None]
bases = sorted({x["theta"] for _, x in rope_rows})
for k, base in enumerate(bases):  # on the axis i / (r/2) a wavelength depends on the base alone: one curve per base
    widest = max((x for _, x in rope_rows if x["theta"] == base), key=lambda x: x["r"])
    n = widest["r"] // 2
    ax.semilogy([i / n for i in range(n)], widest["wavelengths"], marker=".", linestyle="none", markersize=3,
                color=f"C{k}", label=f"base {base:.0e}")
stars = {}  # (where, L) -> the models there; several share a point
for name, x in rope_rows:
    stars.setdefault((round(x["crit"] / (x["r"] // 2), 4), x["L"], x["theta"]), []).append(name)
placed = sorted(stars.items(), key=lambda item: (item[0][1], item[0][0]))  # by L, then along the axis
for j, ((at, L, base), names) in enumerate(placed):
    ax.plot([at], [L], marker="*", markersize=9, color=f"C{bases.index(base)}", markeredgecolor="black",
            linestyle="none")
    label_y = 10 ** (1.0 + 2.6 * j / max(1, len(placed) - 1))   # a column of labels in the empty lower right
    ax.annotate(f"{', '.join(names)}: L = {L}", (at, L), xytext=(0.78, label_y), textcoords="data", fontsize=6,
                va="center", arrowprops=dict(arrowstyle="-", linewidth=0.4, color="gray"))
ax.set(xlabel="pair index i / (r / 2)", ylabel="wavelength 2 pi / theta_i (tokens)",
       title="Published RoPE models: star = training length L, at the model's critical pair")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()

# %% [markdown]
# ### Exercise 11.3: `rope_frequencies`   ★ · 10 min
#
# *Why it matters:* before you extend, port or debug a model you read its config, and configs
# state the rotary width three different ways.
#
# Write `rope_frequencies(config)`: the `(r/2,)` float64 frequencies
# $\theta_i = \mathrm{rope\_theta}^{-2i/r}$ a model was trained with, before any `rope_scaling`,
# from a dict with the keys of its `config.json`. The rotary width $r$ is `qk_rope_head_dim` when present (decoupled RoPE);
# otherwise the head size (`head_dim` when present, else `hidden_size // num_attention_heads`)
# times `partial_rotary_factor` (default 1), rounded down. `rope_theta` defaults to 10000; leave
# any `rope_scaling` out. Grade it alone: `python -m exercises grade checkpoints --exercise 11.3`.

# %%
rope_frequencies = use("checkpoints", "rope_frequencies")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Three configs to try by hand: Gemma-7B says `head_dim` 256 although 3072 / 16 = 192; Phi-2 turns
# `int(80 * 0.4) = 32` channels; DeepSeek-V3 turns `qk_rope_head_dim = 64`.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Settle the rotated width $r$ first (`qk_rope_head_dim` when the config has it; otherwise the head size
# times `partial_rotary_factor`, the head size being `head_dim` when given and the hidden size over the
# head count when not), then the base (`rope_theta`, 10000 when absent), then $\theta_i =
# \mathrm{base}^{-2i/r}$ for $r/2$ pairs. Case: Phi-2 (hidden size 2560, 32 heads, factor 0.4,
# base 10000): 16 frequencies, the first 1, the second $10000^{-2/32} \approx 0.562$.
# </details>

# %% tags=["answer"]
reveal("checkpoints", "rope_frequencies")

# %% [markdown]
# Check yours on every stored RoPE model against the library's base wavelengths, and by hand on
# the smallest case: a head of 8 with base 10000 has frequencies exactly $1, 0.1, 0.01, 0.001$.

# %% tags=["nbval-check-output"]
small = {"hidden_size": 32, "num_attention_heads": 4, "max_position_embeddings": 64}
print("head of 8, base 10000:", [f"{float(t):.4g}" for t in rope_frequencies(small)])
assert xp.allclose(rope_frequencies(small), xp.asarray([1.0, 0.1, 0.01, 0.001]), rtol=1e-12)
agree = {name: bool(xp.allclose(2 * math.pi / rope_frequencies(MODELS[name]), describe_model(name)["base_wavelengths"],
                                rtol=1e-12))
         for name, mech, x in rows if x is not None and name in MODELS}
print(f"rope_frequencies agrees with describe_model on {sum(agree.values())} of {len(agree)} published RoPE models")
assert all(agree.values())

# %% [markdown]
# ### Exercise 11.4: `critical_pair`   ★★ · 10 min
#
# *Why it matters:* from the critical pair on, pairs never completed a turn in training, the
# dimensions the survey calls more prone to instability past the training length (§6.2), and
# the ones YaRN (with $\alpha = 1$) interpolates fully (chapter 8); reading the wrong length from
# the config moves it by several pairs.
#
# Write `critical_pair(config)`: $r_{crit} = \min\{i : 2\pi/\theta_i \ge L\}$ with the
# frequencies of Exercise 11.3 and $L$ the length the model was *trained* at:
# `rope_scaling["original_max_position_embeddings"]` when present, else a top-level
# `original_max_position_embeddings` (Phi-3 writes it there), else `max_position_embeddings`.
# Return an `int`, a pair index. Grade it alone:
# `python -m exercises grade checkpoints --exercise 11.4`.

# %%
critical_pair = use("checkpoints", "critical_pair")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# The wavelengths grow with $i$, so the first one that reaches $L$ sits right after all the ones
# that fall short of it: count those.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# $L$ is the length the model was trained at: `original_max_position_embeddings` (inside `rope_scaling`
# when it is there, else at the top level), and `max_position_embeddings` only when neither exists.
# Case: $r = 4$, base 10000, $L = 100$: the wavelengths are $6.28$ and $628.3$; one falls short of 100, so
# the critical pair is 1.
# </details>

# %% tags=["answer"]
reveal("checkpoints", "critical_pair")

# %% [markdown]
# The survey works one case by hand (§6.2): Llama 2, $d_h = 128$, $T_{train} = 4096$, gives
# $d_{extra} = 2\lceil \tfrac{d_h}{2}\log_{10000}\tfrac{T_{train}}{2\pi}\rceil = 92$ dimensions, that
# is 46 pairs, and the remaining 36 dimensions never see a full period (claim C6). Llama 3.1's
# config names 8192 as its original length and 131072 as its maximum position: its critical pair
# comes from 8192.

# %% tags=["nbval-check-output"]
d_extra = 2 * math.ceil(128 / 2 * math.log(4096 / (2 * math.pi), 10000))
print(f"the survey's formula for Llama 2: d_extra = {d_extra}; yours: critical pair {critical_pair(MODELS['Llama-2-7B'])}"
      f", so {128 - 2 * critical_pair(MODELS['Llama-2-7B'])} dimensions never complete a turn")
print(f"Llama 3.1 (original 8192, maximum 131072): critical pair {critical_pair(MODELS['Llama-3.1-8B'])}"
      f"; read at 131072 it would be {critical_pair(dict(MODELS['Llama-3.1-8B'], rope_scaling=None))}")
ramp = [float(k) for k in by_parts_ramp(128, 10000.0, 4096)]  # YaRN's share kept per pair, alpha 1, beta 32
print(f"YaRN's ramp for Llama 2: pairs 0 .. {ramp.index(next(k for k in ramp if k < 1)) - 1} kept, "
      f"fully interpolated from pair {ramp.index(0.0)}")
assert d_extra == 92 and critical_pair(MODELS["Llama-2-7B"]) == 46 == ramp.index(0.0)
assert all(critical_pair(MODELS[name]) == describe_model(name)["critical_dimension"].pair for name in agree)

# %% [markdown]
# Read the table against claim C7. The same word, RoPE, covers models whose critical pairs run
# from 11 (Phi-2, 32 rotary channels) to 100 (Gemma-7B, 256), and whose share of pairs that
# never complete a turn runs from 22% to 45%. The share is about
# $1 - \ln(L/2\pi)/\ln\mathrm{base}$ (pair $i$ completes a turn in training when
# $2\pi\,\mathrm{base}^{2i/r} < L$; the cell checks it to within one pair), so at a given training length
# raising the base (Code Llama $10^6$, Llama 3 500 000) *raises* that share
# (the slow pairs slow down further, so more of them never finish a turn in training), and a
# longer $L$ lowers it. And six of the entries carry a scaling block, printed with its own factor (Phi-3's
# LongRoPE block has per-pair factor lists instead, not stored here), and a port must carry it along
# (section 1): dropping it is the `angles_out_of_range` bug planted in chapter 12's clinic. The two
# Qwen blocks are opt-in: the shipped `config.json` has none, and the block is added by hand for long
# inputs (`model_configs` notes say so). Qwen3-0.6B's own card gives a context length of 32,768 and no
# YaRN setting: its block is the one Qwen documents for the Qwen3 family (chapter 8, §10).
#
# ## 8. Check yourself on this chapter
#
# **1.** Section 1 shifted every position id by 5 and the RoPE model's logits did not move,
# while the learned table's moved by 0.35. Why, and which position-id change *does* break a RoPE
# model?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# RoPE scores depend on $n - m$ only, and a shift adds the same number to every id, so every
# offset, every score and every logit stays (to 3e-16). A learned table looks each id up
# absolutely. What breaks RoPE is a change in the *differences* between ids: a decode step whose
# position resets to 0 (chapter 6), or a window that renumbers cached tokens by slot while keys
# were rotated with their text positions (chapter 10).
# </details>

# %% [markdown]
# **2.** Your test of Exercise 11.2 uses a model with one head of 4 channels and a fresh model's
# zero biases. Which wrong ports get through, and why?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Six of the grader's eight. One head: a permutation across all heads at once is the same as one
# inside the head, and a port of the first head only is complete. Four channels: $P = (0, 2, 1,
# 3)$ is its own inverse, so the inverse permutation is right too. Zero biases: a bias left
# unported changes nothing. Such a model also turns every channel and has a key-value head per
# query head, so a port that ignores `rotary_dim` or cuts the keys by the query head count is
# right on it. Add several heads of 8 or more, random biases, a partial-rotary model and a
# grouped-query checkpoint.
# </details>

# %% [markdown]
# **3.** A port that permutes the value block too leaves every attention score unchanged. Why
# does section 3's logit comparison still catch it?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Values are not rotated, so their channel order means something to the next matrix, $W_o$,
# which reads channel $j$ of head $h$ from column $h\,d_{head} + j$. Permuting them reorders the
# attention output that $W_o$ mixes, and the logits change; only a comparison of outputs sees it.
# </details>

# %% [markdown]
# **4.** Why can MLA not apply RoPE to its decompressed keys and keep caching only the latent?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Without RoPE the score is $(W^{UK\top} q_i)^\top c_j$: the up-projection moves onto the query
# once and the cached latent is enough (section 5: error 3e-15). With RoPE the matrix between
# query and latent is $R_{j-i} W^{UK}$, different for every distance, so no single matrix serves
# every distance; you would have to recompute every prefix token's keys at each step (DeepSeek-V2
# §2.1.3) or cache every head's rotated keys.
# The decoupled rotary key is one vector per token of width $d_{rope}$, rotated once: DeepSeek-V3
# caches 512 + 64 = 576 numbers per token and layer instead of 40 960.
# </details>

# %% [markdown]
# **5.** In section 6 the NoPE layer *below* a RoPE layer is exactly equivariant, the one above
# it is not. Would the same hold in a causal `TinyGPT`?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# No. In a causal model the mask already tells a token how many tokens precede it (the first
# token sees only itself), so even a NoPE layer below every RoPE layer changes under a shuffle
# (the permutation experiment of chapter 1 measures 0.35 to 0.72 for a TinyGPT with no position
# at all). The encoder is where the equivariance is exact and the measurement clean.
# </details>

# %% [markdown]
# ## 9. The ledger, settled
#
# Every claim here is settled by a computation without sampling: an identity checked on numbers
# (a port, a cache, a shuffle) or a count read from configs. None is a claim about a trained
# model, so none needs seeds; where a claim says a setting *changes* what weights compute, one
# set of weights that changes is the proof (the sizes printed are those of one draw), and where it says a setting changes *nothing*, the
# change is exactly zero or rounding ($10^{-16}$), as the derivation says. Evidence `exact §N` names the
# section whose cell asserts it (the verdict rule: [chapters/README.md](README.md#Evidence-and-the-verdict-rule)).
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1a | the base, the rotary dimension and the scaling each change how a model behaves (survey, Table 4's closing paragraph) | on one draw of sharpened weights, each changes the logits by 0.20 to 0.30, of the same order as that draw's logits themselves (at most 0.32) | exact §1 | reproduces |
# | C1b | the training length changes how a model behaves (survey, Table 4's closing paragraph), under a scaling block | not the length the weights trained at: only the config field `max_len`, 32 to 64 under YaRN x4 on fixed weights, moves the logits by 0.16 | exact §1 | not tested here |
# | C1c | the same, without a scaling block | the config field alone, 32 to 64: 0.0 exactly, nothing RoPE computes reads it | exact §1 | not tested here |
# | C1d | what a position id means changes how a model behaves, for a learned table, under packing (this workbook: the survey's sentence, Table 4's closing paragraph, is about RoPE) | a packed document whose ids do not restart at 0 (every id shifted by 5, chapter 10's C1c case) moves the logits by 0.35; prefix caches and windows not run | exact §1 | reproduces |
# | C1e | the same, for RoPE (survey, Table 4's closing paragraph), in the one packing case run here: a packed document's ids all shifted by 5, with its block mask, a shift that moves no difference of ids | the shift moves the logits by 3.3e-16, since RoPE sees differences of ids only (as chapter 10's C1c finds); this row tests only that invariant case: ids whose differences change move RoPE's logits (chapter 10's C1f, decode positions restarting at 0: reproduces); prefix caches and windows not run here | exact §1 | does not reproduce |
# | C2a | the two pairings are one model up to a fixed channel permutation (book §2.4, survey §5.3) | ported per head: 3.3e-16 (4.4e-16 with partial rotary, 3.1e-16 grouped-query); ported as if every channel turned: 0.30; keys permuted by the query head count: 0.35; layer 0's rotated queries agree after $P$ to 0.0e+00 (§4) | exact §3 | reproduces |
# | C2b | ... and the weights are not interchangeable (book §2.4, survey §5.3) | loaded as they are, without the permutation: logits off by 0.37 (§3) | exact §3 | reproduces |
# | C3 | values are usually not rotated, so a port leaves them alone (survey §5.3) | the port that leaves the value block matches to 3.3e-16; the same port with the values permuted too moves the logits by 0.45 | exact §3 | reproduces |
# | C4 | decoupling the rotary subspace keeps MLA compatible with low-rank KV compression (survey Table 4) | content scores from cached latents: error 3e-15; with RoPE on the keys the matrix between query and latent changes with $j - i$ (the derivation of §5); no cell scores from a latent-only cache plus a cached rotary key (this library's `decoupled_rope` caches content keys), and 576 numbers instead of 40 960 at DeepSeek-V3's size is arithmetic on its config | exact §5 | not tested here |
# | C5 | a NoPE attention layer can be order-sensitive when another layer supplies position (survey Table 4, Kimi K3) | in a two-layer encoder, the NoPE layer's attention output above a RoPE layer changes by 0.60 under a shuffle, order reaching it only through its input; the NoPE layer below it by 3.2e-16 | exact §6 | reproduces (the supplier here is a RoPE layer: the survey's, Kimi Delta Attention, is not in this library) |
# | C6 | Llama 2: $d_{extra} = 92$, the last 36 dimensions never see a full period (survey §6.2) | the survey's formula gives 92; the critical pair is 46, so 36 dimensions never complete a turn | exact §7 | reproduces |
# | C7 | "uses RoPE" is not a complete configuration (survey, Table 4's closing paragraph) | 14 published models with one RoPE setting (the table's filled rows): critical pairs from 11 to 100, shares of pairs with no full turn from 22% to 45%, six with a scaling block as stored here (factors 4 to 40 where it has one; the two Qwen blocks are opt-in, not in the shipped `config.json`, and Qwen3-0.6B's is documented for the Qwen3 family, not on its own card) and eight without | exact §7 | reproduces |
#
# ## 10. Where next
#
# * The exercises: [`exercises/checkpoints.py`](../exercises/checkpoints.py), 11.1 to 11.4. Grade
#   them with `python -m exercises grade checkpoints` (one at a time with `--exercise 11.N`). The
#   drills (`python -m exercises drill rope`) keep RoPE itself, both halves of every port, in your
#   fingers.
# * The library's side: `checkpoint.py` (the signature and the refusal), `positional/rope.py`
#   (`rope_channel_permutation`, the permutation of one head), `positional/decoupled_rope.py`,
#   `model_configs.py` (`MODELS`, `describe_model`).
# * The interview questions on checkpoints and porting, answered from this chapter's numbers:
#   [`chapters/cards/11_checkpoints.md`](cards/11_checkpoints.md).
# * Chapter 12 puts the book together: which scheme to choose, with the evidence this workbook
#   measured, and a clinic of models with the failure table's bugs planted in them.
