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
# # Chapter 12. Choosing a scheme, and the failure-mode clinic
#
# Eleven chapters built ten of the library's schemes and measured them (chapter 13 adds three more).
# This one uses them. The first half puts the sources' decision guide next to the evidence this
# workbook measured, row by row, with what each scheme costs and the misunderstandings the survey
# warns about. The second half is a clinic: seven small models arrive, one healthy and six with a
# positional bug from the book's failure table planted in them. You write the table's checks, run
# them on every patient, and say which patient has which bug.
#
# **By the end you can**
#
# * choose a positional scheme for a situation and back the choice with a measured number, not
#   only a source's sentence;
# * say what each scheme costs in memory as the context grows, and measure it;
# * tell the survey's common misunderstandings from what the models here actually do;
# * write a check for each row of the failure table that passes on a healthy model and fails on
#   the bug it is for;
# * diagnose unlabelled models from the pattern of checks they fail.
#
# ## The claim ledger
#
# Before you run anything, write down for each claim: true on this workbook's models, yes or
# no? Section 8 settles them with the numbers this chapter prints.
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1a | For a new decoder-only LM choose RoPE: it is cache-compatible, a key rotated once stays valid (book §4) | | §1, §5 |
# | C1b | ... and extendable later: a scaling method beats unscaled RoPE at $4L$ (book §4) | | §1 |
# | C2a | Learned absolute positions are better in-distribution, for fixed-length inputs (book §4) | | §1 |
# | C2b | ... but only marginally: by under 0.05 nats (book §4) | | §1 |
# | C3a | T5's relative bias generalises past the training length: sensible at 16 after training at 8 (book §4, §7 ex. 4) | | §1 |
# | C3b | ... and on text: its rise past $L$ is no larger than a model's with no position at all (book §4, whose row is about encoder-decoders, tested here on a causal decoder) | | §1 |
# | C3c | ... but only modestly: more than "runs long" allows (book §4) | | §1 |
# | C4a | Train short and run longer with ALiBi: its loss barely rises past $L$ (book §4, §2.5) | | §1 |
# | C4b | ... "when perplexity is the metric": its retrieval fails far back in a long context, on long documents (book §4, §6) | | §1 |
# | C5a | To extend a RoPE model 4x, YaRN beats PI (book §4) | | §1 |
# | C5b | ... PI alone already helps past $L$ (book §4, Ex. 3) | | §1 |
# | C5c | ... and a short fine-tune repairs the rest (book §2.6, §4) | | §1 |
# | C5d | ... and repairs PI better than plain RoPE (Chen et al.) | | §1 |
# | C6a | For unbounded streaming: where most queries have nothing to read, the first token becomes an attention sink (book §4, §2.6) | | §1 |
# | C6b | ... a window that evicts the first tokens breaks: its loss rises by more than 0.05 nats (book §2.6, §4, §5) | | §1 |
# | C6c | ... and keeping sinks prevents that (book §4, §2.6) | | §1 |
# | C6d | ... with positions within the cache, not in the text (book §4, §2.6) | | §1 |
# | C7 | RoPE costs a few multiplies per element of q and k (book §4, "Cost") | | §2 |
# | C8a | This chapter's checks, one for each of rows 1 to 5 of the failure table, each catch their planted bug (this workbook, on book §4's table) | | §5 |
# | C8b | ... and row 6's check as written, shuffle the input, outputs must change, catches its bug in a decoder (book §4) | | §3, §5 |
#
# ## The exercises
#
# You write them in [`exercises/clinic.py`](../exercises/clinic.py), in section 5, one check per
# row of the failure table. Each receives `make_patient`, a function that builds the patient to
# examine, and raises `AssertionError` when the patient has its row's bug. The grader runs each
# check on the healthy patient (it must pass) and on the six planted bugs (it must fail on its
# own, and it reports which others it caught as well).
#
# | Exercise | Check | the row it is for | | minutes |
# |---|---|---|---|---|
# | 12.1 | `check_cache(make_patient)` | cached generation degrades after a few tokens | ★★ | 15 |
# | 12.2 | `check_angles(make_patient)` | the loss explodes past the training length | ★★ | 15 |
# | 12.3 | `check_port(make_patient)` | a ported checkpoint produces garbage | ★ | 10 |
# | 12.4 | `check_reach(make_patient)` | retrieval fails while perplexity looks fine | ★★ | 15 |
# | 12.5 | `check_sinks(make_patient)` | sliding-window attention collapses | ★★★ | 20 |
# | 12.6 | `check_shuffle(make_patient)` | the model ignores position entirely | ★★ | 15 |
#
# Grade one with `python -m exercises grade clinic --exercise 12.N`. Every model this chapter
# builds runs the reference kernels ([chapter 0's appendix](00_tiny_transformer.py#Appendix:-the-fast-kernels)).

# %%
import math

import matplotlib.pyplot as plt

from exercises import reveal, use
from mini_transformer.engine.autograd import no_grad
from mini_transformer.engine.backend import rng, xp
from experiments.common import load_result  # results/NAME.json, as the run saved it
from mini_transformer.engine.kernels.tuning import chapter_threads

chapter_threads()  # BLAS on one thread, printed; chapter 0, "How to work", says why

seeded = load_result("short_long_seeds")             # chapter 7, §7.1: train short, test long, 5 seeds
short_long = load_result("train_short_test_long")    # chapter 7's larger bake-off: ONE seed, an illustration
three_seeds = load_result("bake_off_seeds")          # the same bake-off at seeds 0, 1, 2: intervals, no claims
extension = load_result("context_extension")         # chapter 8: RoPE extended 4x, 3 seeds
t5_vs_learned = load_result("relative_bias_generalisation")
inputs = load_result("input_schemes_at_train_len")   # chapter 3: learned against sinusoidal at L, 3 seeds
widths = load_result("pi_head_width")                # chapter 8, §11: PI's cost at L by head width, 3 seeds
retrieval = load_result("long_context")              # chapter 9: passkeys, 5 seeds, 64 keys a cell
sinks = load_result("sink_control")                  # chapter 10, section 7: the sink made to form
permutation = load_result("permutation")

# %% [markdown]
# ## 1. The decision guide, with the evidence beside it
#
# The book's "When to use what" (§4) in seven rows. Each row below has the committed
# experiments that speak to it (full runs, from about a second to over half an hour each, in `experiments/`;
# the chapter reads their JSON and checks every number it quotes). The models are tiny (2 layers,
# `d_model` 32 or 64), trained on byte-level text of the standard library or on small synthetic tasks
# (chapter 5's look-back, chapter 10's sink control), so read the numbers as what *these* models did.
#
# | situation | the book's choice | its reason | the evidence here |
# | --- | --- | --- | --- |
# | new decoder-only LM | RoPE | relative, cache- and fused-kernel-compatible, extendable later | `short_long_seeds` at $L$; `context_extension` at $4L$; §2's cost; §5's cache check |
# | encoder for fixed-length inputs | learned absolute | simple, marginally better in-distribution | `input_schemes_at_train_len` at $L$ |
# | encoder-decoder, variable lengths | T5 relative bias | generalises modestly past the training length | `relative_bias_generalisation` (a task); `short_long_seeds` (text, where it rises more than no position at all and does not run long: C3b, C3c) |
# | windowed 2-D attention | 2-D relative bias | position in a window is small and discrete | none: chapter 5 builds it; nothing here measures the choice |
# | train short, run longer, perplexity | ALiBi | extrapolates without fine-tuning | `short_long_seeds` past $L$; `long_context` (chapter 9) for retrieval |
# | extend a RoPE model 4x to 32x | PI or YaRN, plus fine-tuning | keeps angles in the trained range | `context_extension` at 4x |
# | unbounded streaming | window plus sinks | constant memory, positions in the cache | `sink_control` (chapter 10, §7) |
#
# Every verdict below on a trained model rests on seeds, by the rule of `chapters/README.md` ("Evidence and the verdict
# rule"): a claim record's 95% interval over seeds, printed as `mean ± half-width`. Most rows lean on
# chapter 7's seeded bake-off (§7.1, `short_long_seeds`): each scheme trained at $L = 32$ for 500
# steps, 5 seeds, and run at $4L$. The rise past $L$ is the loss at positions $t \ge L$ with the
# whole prefix minus with only the last $L$ tokens. Chapter 7's larger bake-off ($L = 64$, 1500 steps,
# eight schemes, `train_short_test_long`) is one seed: where this chapter quotes it, it says so and
# draws no verdict from it. The extension rows read chapter 8's three seeds (`context_extension`), and
# retrieval reads chapter 9's five (`long_context`, 64 keys a cell).

# %%
from mini_transformer.evaluation import stats

claims = {"short_long_seeds": seeded["claims"], "context_extension": extension["claims"],
          "relative_bias_generalisation": t5_vs_learned["claims"], "input_schemes_at_train_len": inputs["claims"],
          "long_context": retrieval["claims"], "sink_control": sinks["claims"], "pi_head_width": widths["claims"]}


def record(cited):
    """The claim record a ledger row cites as 'NAME/KEY'."""
    name, key = cited.split("/")
    return claims[name][key]


def paired_at_L(arm, other):
    """Loss at L of `arm` minus `other` in short_long_seeds, paired by seed: (mean, lo, hi) of the t interval."""
    a, b = seeded["per_seed"][arm], seeded["per_seed"][other]
    assert [r["seed"] for r in a] == [r["seed"] for r in b], "the two arms must share their seeds"
    mean, _, lo, hi = stats.t_interval([x["loss_L"] - y["loss_L"] for x, y in zip(a, b)])
    return mean, lo, hi


methods = extension["methods"]                                          # means over the 3 seeds
one_seed = {s: short_long["results"][s]["loss"][0] for s in ("learned", "sinusoidal", "shaw", "transformer_xl", "t5", "rope")}
relative = ("shaw", "transformer_xl", "t5", "rope")
learned_behind = {s: [run["learned"]["loss"][0] - run[s]["loss"][0] for run in three_seeds["per_seed"].values()]
                  for s in relative}                                    # learned minus s at L, paired by seed

# %% [markdown]
# Now each row on its numbers. The cell after this one prints them (claim records as
# `mean ± half-width (seeds): verdict`, at the digits the text quotes) and asserts every verdict and
# direction the text below states.

# %%
cited = {
    "C1b": "context_extension/C8b", "C2a": "input_schemes_at_train_len/learned_minus_sinusoidal_scaled",
    "C2b": "input_schemes_at_train_len/sinusoidal_scaled_minus_learned",
    "C3a": "relative_bias_generalisation/t5_sensible_at_16", "C3b": "short_long_seeds/t5_generalises_vs_none",
    "C3c": "short_long_seeds/breaks_t5",
    "C4a": "short_long_seeds/runs_long_alibi", "C4b": "long_context/C3b",
    "C5a": "context_extension/C9a", "C5b": "context_extension/C7b", "C5c": "context_extension/C10a",
    "C5d": "context_extension/C10b", "C6a": "sink_control/C4_softmax", "C6b": "sink_control/C5_breaks_softmax",
    "C6c": "sink_control/C5b_restores_softmax", "C6d": "sink_control/C3_sigmoid_normalised",
}
digits = {"C2a": 3, "C2b": 3, "C3b": 3, "C3c": 3, "C4a": 3, "C6b": 3, "C6c": 3, "C6d": 3}               # as the source chapters quote them
beside = {                                                              # records the text quotes beside the cited ones
    "learned on positions 8..15 (relative_bias_generalisation)": "relative_bias_generalisation/learned_garbage_past_8",
    "t5 with max_distance = L: rise past L at 4L": "short_long_seeds/runs_long_t5_max_L",
    "rope unscaled: rise past L at 4L": "short_long_seeds/breaks_rope",
    "rope's rise past L at 4L minus t5's": "short_long_seeds/t5_rises_less_than_rope",
    "alibi: far-context gain at 4L": "short_long_seeds/uses_far_alibi",
    "alibi minus rope, loss at L": "short_long_seeds/alibi_pays_at_L_vs_rope",
    "alibi minus transformer_xl, loss at L": "short_long_seeds/alibi_pays_at_L_vs_transformer_xl",
    "alibi: farthest keys found at 8L": "long_context/C1b",
    "softmax: sinks at text minus slot positions": "sink_control/C3_softmax",
    "late queries inside L, token 0 evicted minus kept": "sink_control/C6_softmax",
    "unnormalised sigmoid: heads over 0.3 on BOS": "sink_control/C7_sigmoid",
    "normalised sigmoid: full attention minus recomputing the window": "sink_control/C3_fails_past_L_sigmoid_normalised",
    "softmax: full attention minus recomputing the window": "sink_control/C3_fails_past_L_softmax",
    "PI minus unscaled at L, zero-shot": "context_extension/C7a",
    "the same, heads of 16 channels": "pi_head_width/zero_shot_d16",
    "the same, heads of 64 channels": "pi_head_width/zero_shot_d64",
    "PI minus unscaled at L, both fine-tuned, heads of 16": "pi_head_width/finetuned_d16",
    "PI minus unscaled at L, both fine-tuned, heads of 64": "pi_head_width/finetuned_d64",
    "PI minus unscaled at L, both fine-tuned": "context_extension/C10c",
}
streams = {}
control = [r for r in sinks["runs"] if r["arm"] == "softmax"]           # the seeds of the softmax control
for k in control[0]["stream_past_L"]:
    streams[k] = sum(r["stream_past_L"][k] for r in control) / len(control)

# %% tags=["nbval-check-output"]
for row, name in cited.items():
    print(f"{row:<4} {name:<58} {stats.format_record(record(name), digits.get(row, 2))}")
for label, name in beside.items():
    three = name.startswith("sink_control/C") and "C4" not in name and "C7" not in name or "rise" in label or "gain" in label
    print(f"     {label:<58} {stats.format_record(record(name), 3 if three else 2)}")
for name in ("long_context/C3b", "long_context/C1b"):
    print(f"     {name} per seed:", "  ".join(f"{v:.2f}" for v in record(name)["values"]))
print("rope minus transformer_xl, shaw, t5 at L (5 seeds, L = 32):",
      ", ".join(stats.format_interval(*paired_at_L("rope", s), 3) for s in ("transformer_xl", "shaw", "t5")))
print("context_extension, means over 3 seeds: unscaled at L {:.2f}, at 4L {:.2f}; YaRN zero-shot at 4L {:.2f}; "
      "PI zero-shot at L {:.2f}, at 4L {:.2f}".format(methods["none"]["loss_at_L"], methods["none"]["loss_at_4L"],
                                                    methods["yarn"]["loss_at_4L"], methods["linear (PI)"]["loss_at_L"],
                                                    methods["linear (PI)"]["loss_at_4L"]))
print("  after the 150-step fine-tune, at 4L: " + ", ".join(f"{m} {v['finetuned_loss_at_4L']:.2f}" for m, v in methods.items()))
print("  after the 150-step fine-tune, at L: " + ", ".join(f"{m} {v['finetuned_loss_at_L']:.2f}" for m, v in methods.items()))
print("chapter 7's one-seed bake-off at L = 64, loss at L: " + ", ".join(f"{s} {v:.2f}" for s, v in one_seed.items()))
print(f"the same bake-off at seeds {three_seeds['seeds']}, learned minus each at L, paired by seed: " + ", ".join(
    f"{s} {stats.format_interval(*[stats.t_interval(d)[i] for i in (0, 2, 3)], 3)}" for s, d in learned_behind.items()))
print(f"sink_control streams of 256 past L = 64, means over {len(control)} seeds: " + ", ".join(f"{k} {v:.3f}" for k, v in streams.items()))
verdicts = {row: record(name)["verdict"] for row, name in cited.items()}
assert verdicts == {"C1b": "reproduces", "C2a": "not tested here", "C2b": "not tested here", "C3a": "reproduces", "C3b": "does not reproduce", "C3c": "reproduces",
                    "C4a": "reproduces", "C4b": "not tested here", "C5a": "reproduces", "C5b": "reproduces",
                    "C5c": "not tested here", "C5d": "not tested here", "C6a": "reproduces",
                    "C6b": "not tested here", "C6c": "not tested here", "C6d": "reproduces"}, verdicts
assert paired_at_L("rope", "transformer_xl")[1] > 0 and paired_at_L("rope", "t5")[2] < 0   # behind XL, ahead of T5
assert paired_at_L("rope", "shaw")[1] < 0 < paired_at_L("rope", "shaw")[2]                   # not distinguishable from Shaw
assert record("short_long_seeds/runs_long_t5_max_L")["verdict"] == "does not reproduce"     # not the empty buckets
assert record("short_long_seeds/alibi_pays_at_L_vs_rope")["verdict"] == "reproduces"
assert [record(f"pi_head_width/{k}")["verdict"] for k in ("zero_shot_d16", "zero_shot_d64", "finetuned_d16", "finetuned_d64")] \
    == ["does not reproduce"] * 2 + ["reproduces"] * 2                  # about a nat at any width, until the fine-tune
assert record("sink_control/C7_sigmoid")["pooled_wilson"]["successes"] == 0 and record("sink_control/C6_softmax")["verdict"] == "reproduces"
assert max(v["finetuned_loss_at_4L"] for v in methods.values()) == methods["linear (PI)"]["finetuned_loss_at_4L"]
assert max(one_seed.values()) == one_seed["sinusoidal"] and one_seed["learned"] > max(
    one_seed[s] for s in ("shaw", "transformer_xl", "t5", "rope"))
assert all(d > 0 for diffs in learned_behind.values() for d in diffs)   # behind all four at every seed
assert max(streams.values()) - min(streams.values()) < 0.01              # every policy within 0.01 nats here

# %% [markdown]
# Row by row, against those numbers:
#
# * **New decoder-only LM: RoPE** (C1a, C1b). Its reasons hold where this workbook can test them: a key
#   rotated once stays valid in the cache (section 5's `check_cache` passes on a RoPE model, to
#   `1e-9`), its positional memory grows like $T$ (section 2), and it is extendable: NTK's larger base,
#   with no training, lowers its loss at $4L$ by 0.58 ± 0.02 nats (C1b). Its loss does not single it
#   out: at $L$ (5 seeds, $L = 32$) it is not distinguishable from Shaw's (0.002 ± 0.018), behind Transformer-XL's
#   by 0.038 ± 0.010 and ahead of T5's by 0.074 ± 0.013; unscaled past $L$ it rises 0.472 ± 0.118
#   nats at $4L$ (in chapter 8's run, $L = 64$ and 2 heads: 1.48 at $L$, 2.61 at $4L$, means over 3 seeds).
# * **Fixed-length encoder: learned absolute** (C2a, C2b). At $L$, after 600 steps, the learned table
#   is ahead of the sinusoidal table scaled to the token rows by 0.100 ± 0.014 nats (3 seeds, chapter 3).
#   The arms are still learning at 600 steps, so the gap measures learning speed too: whether the
#   lead lasts once trained, and whether it is only "marginally", is not tested (chapter 3, C5b, C5c):
#   C2a and C2b are not tested here, though C2a's interval alone says "reproduces".
#   Whether it also beats the relative schemes is not one of this chapter's claims: in chapter 7's
#   one-seed bake-off its loss at $L$ was 1.61 against 1.50 to 1.55 for all four, and the same run at seeds 0, 1
#   and 2 (`bake_off_seeds`) has it behind each of the four at every seed, by 0.048 ± 0.025 (T5) to
#   0.102 ± 0.058 nats (Transformer-XL). That record draws no verdicts. This is a decoder on text; the book's row is
#   about encoders, which nothing here trains on text.
# * **Variable lengths: T5** (C3a to C3c). On the look-3-back task trained at length 8, T5 is right at
#   every scored position of length 16 on every seed (all 10 seeds: 1.00), the learned table 0.45 ± 0.04 on
#   the positions it never trained. On text it does not generalise by chapter 7's bar: its rise past
#   $L$ at $4L$ is 0.118 ± 0.081 nats above a model's with no position at all, paired by seed. At
#   0.216 ± 0.051 nats it is over the 0.05 that "runs long" allows; with `max_distance` = $L$ (every
#   bucket a distance at $4L$ falls in was trained) it still rises 0.181 ± 0.049, so the untrained far
#   buckets are not the whole cause (chapter 7, §7.1).
# * **Train short, run longer: ALiBi** (C4a, C4b). Its loss past $L$ rises by only 0.006 ± 0.003
#   nats at $4L$: read the other way, the same numbers say it gains nothing from the far context, on a
#   text where no arm shows that far context pays (chapter 7, §8.1; its C8a is not tested here). It
#   pays at $L$ itself, 0.06 ± 0.02 nats above RoPE and 0.10 ± 0.02 above Transformer-XL. The book's
#   qualifier, "when perplexity is the metric", warns that retrieval fails far back in a long context,
#   on long documents; chapter 9's models do not test it (C4b): they reach 256 tokens. There the share of keys found falls
#   from $L$ to $8L$ by 0.08 ± 0.19 (5 seeds), and the farthest keys at $8L$ are found 0.82 ± 0.35
#   of the time: seed 0 found a third, seed 1 most (0.84), seeds 2 to 4 nearly all (0.97 to 1.00).
# * **Extend RoPE 4x: PI or YaRN, plus fine-tuning** (C5a to C5d; means and intervals over 3 seeds).
#   Zero-shot, YaRN beats PI at $4L$ by 0.95 ± 0.19 nats (1.74 against 2.68; unscaled 2.61). PI alone
#   helps past $L$ (unscaled minus PI on those positions, 0.30 ± 0.22), but it costs about a nat at $L$ (2.68 against 1.48,
#   1.20 ± 0.09). After a 150-step fine-tune at $4L$ every method lands at 1.43 to 1.53; whether that
#   repairs "the rest" is not tested here, since no model is trained at $4L$ as the reference (the worst
#   method minus the unextended model at $L$ is 0.05 ± 0.14). Fine-tuned plain RoPE beats fine-tuned PI,
#   by 0.09 ± 0.02 nats, but on a fine-tune of 20% of the pre-training tokens, not Chen et al.'s sliver
#   (C5d not tested here). Chapter 8 (§11) measured PI's cost at $L$ at other head
#   widths: zero-shot it costs 1.15 ± 0.30 nats with heads of 16 channels and 1.14 ± 0.24 with 64, and
#   after the fine-tune 0.08 ± 0.01 and 0.06 ± 0.03.
# * **Unbounded streaming: window plus sinks** (C6a to C6d). Chapter 10's control is a task in which
#   most queries have nothing to read (five seeds, $L = 64$). It forms a sink: 0.44 ± 0.10 of a seed's
#   heads put more than 0.3 of their attention on BOS (35 of 80 pooled). With unnormalised sigmoid
#   attention no head puts 0.3 of its raw weight there (all 5 seeds: 0.00).
#   Yet a 256-token stream through a window of 32 scores nearly the same with and without 4 sinks:
#   2.502 and 2.504. The gap, 0.002 ± 0.003 nats, lies below the 0.05 nats at which chapter 10's C5a
#   calls a window broken (the book's words are "perplexity explodes", §2.6, and "collapses", §4), and far
#   below $\ln 2 = 0.693$, where this workbook puts "explodes".
#   But no arm was trained in which evicting the first tokens is known to cost more than 0.05: with
#   no positive control, C6b is not tested here. Nor is C6c, that keeping sinks prevents the break:
#   nothing broke.
#   Sinks at text positions cost this model 0.004 ± 0.004 nats. Full attention past $L$ minus recomputing
#   the window is 0.005 ± 0.009 nats, so the model's failure past $L$ is not established,
#   and that gap settles nothing. Why evicting the sink costs so little is chapter 10's explanation,
#   not tested here: a dormant head that loses BOS spreads its mass over the window.
#   A model whose rows are normalised sigmoids does fail past $L$, and it pays 0.106 ± 0.021 nats for
#   text positions: C6d reproduces on it.
#   Evicting the first tokens cost 0.4 nats at 160M parameters (StreamingLLM); here it costs
#   0.002 ± 0.003 nats (C6b).
#
# ## 2. What each scheme costs
#
# The book's cost paragraph (§4): sinusoidal and learned positions are one add per token; RoPE is
# two multiplies and an add per element of $q$ and $k$, about $6BTd$ FLOPs a layer against
# the $8BTd^2$ of the layer's four $d \times d$ projections (the score and value products add
# $4BT^2d$ more); T5's bias materialises an $(H, T_q, T_k)$ tensor, $BHT^2$ memory traffic,
# and blocks fused kernels that never form the score matrix; ALiBi's bias is also $T \times T$
# but a kernel can compute it from the indices. `mini_transformer.evaluation.bench_positional` measures the
# bytes each scheme's hooks allocate in one forward pass and the extra parameters, on the
# workbook model. Run small here (the full table: `python -m mini_transformer.evaluation.bench_positional`).

# %%
from mini_transformer.evaluation import bench_positional

costed = ["none", "sinusoidal", "learned", "t5", "alibi", "rope", "decoupled_rope"]
bench = bench_positional.run(costed, Ts=(32, 128), repeats=1)
print(bench_positional.table(bench))   # times are noisy on a busy machine; the bytes are not

# %%
rows = {r["scheme"]: r for r in bench["rows"]}
growth = {s: rows[s]["T"][128]["hook_bytes"] / rows[s]["T"][32]["hook_bytes"] for s in costed if s != "none"}

# %% tags=["nbval-check-output"]
print("extra parameters:", {s: rows[s]["extra_params"] for s in costed})
print(f"a learned table for 131072 positions at d = 8192: {131072 * 8192 / 1e9:.2f} billion parameters (the book says 100M)")
print("bytes the hooks allocate, growth from T = 32 to T = 128 (4x the tokens):")
for s, factor in growth.items():
    kind = "like T^2" if factor > 12 else "faster than T" if factor > 6 else "like T"
    print(f"  {s:<16} x{factor:.0f}, {kind}")
assert growth["rope"] < 4.5 and growth["sinusoidal"] < 4.5 and growth["learned"] < 4.5
assert growth["t5"] > 10 and growth["alibi"] > 6

# %% [markdown]
# RoPE's and the additive encodings' positional memory grows with $T$ (x4 for 4x the tokens);
# T5's bias grows nearly like $T^2$ (x14, short of x16), ALiBi's faster than $T$ but short of that (x7);
# why is not tested here. From $T = 64$ to 256 chapter 5 measures x15.5 for T5 and x15.8 for ALiBi.
# Decoupled RoPE grows faster than $T$ too (x9):
# this library computes its rotary part as a score term, an $(H, T_q, T_k)$ tensor, where MLA
# computes it inside attention. The learned table pays in parameters instead
# ($T_{max} \cdot d$: 8192 at `max_len` 128 and $d = 64$; at 128k and $d = 8192$ it is 1.07 billion,
# not the book's 100M, as chapter 3, §1 works out); T5 needs 32 buckets x 4 heads = 128; decoupled RoPE its two projections per layer.
# The bench counts bytes, not operations, so claim C7 (a few multiplies per element) is not tested
# here. That T5's bias must be materialised is chapter 7's C4b, and does not reproduce: a kernel can
# look its table up inside each tile (chapter 7, §5); this library's attention always forms the score
# matrix, so the time column cannot speak to fused kernels.
#
# ## 3. Common misunderstandings, on numbers
#
# The survey's list (§10), each against what this workbook measured:
#
# 1. *"Self-attention does not see order at all."* Without an encoding a bidirectional encoder
#    is permutation-equivariant exactly, but a causal decoder is not: the mask tells a token how
#    many came before it.
# 2. *"The sinusoidal encoding is absolute, so it carries no relative information."*
#    $PE(m)^\top PE(n) = \sum_i \cos((m-n)\theta_i)$ depends on $m - n$ only.
# 3. *"RoPE is relative, so it encodes no absolute position."* A single rotated query
#    $R_m q$ depends on $m$; only the dot product forgets it.
# 4. *"The position function computes to 128K, so the model has a 128K context."* Computable is
#    not usable.
# 5. *"RoPE makes attention decay monotonically with distance."* Its score oscillates.
# 6. *"Raising rope_theta is the whole extension."* It is the first step.

# %%
from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary
from mini_transformer.positional.sinusoidal import sinusoidal_positional_encoding

g = rng(0)
pe = sinusoidal_positional_encoding(200, 64)                 # (200, 64)
rope64 = RotaryEmbedding(64)
q = g.normal(size=(1, 64), dtype="float64")


def at(x, p):
    cos, sin = rope64(1, offset=p)
    return apply_rotary(x, cos, sin)[0]


self_scores = [float(at(q, 0) @ at(q, d)) for d in range(200)]   # q against itself, d tokens apart
rises = sum(b > a for a, b in zip(self_scores, self_scores[1:]))
ntk_gain = stats.t_interval([r["methods"]["ntk"]["loss_at_4L"] - r["methods"]["ntk"]["finetuned_loss_at_4L"]
                             for r in extension["per_seed"]])     # the fine-tune's drop, paired by seed: (mean, hw, lo, hi)
misread = {
    "1. change under a shuffle: TinyEncoder/none, TinyGPT/none (min..max)": (
        permutation["relative_change"]["TinyEncoder/none"]["max"], permutation["relative_change"]["TinyGPT/none"]["min"],
        permutation["relative_change"]["TinyGPT/none"]["max"]),
    "2. PE(3).PE(1), PE(103).PE(101), PE(3).PE(2)": (float(pe[3] @ pe[1]), float(pe[103] @ pe[101]),
                                                     float(pe[3] @ pe[2])),
    "3. |R_3 q - R_103 q|, with |q|": (float(xp.linalg.norm(at(q, 3) - at(q, 103))), float(xp.linalg.norm(q))),
    "4. alibi trained at L = 32: farthest keys found at 8L, per seed (chapter 9)": tuple(
        record("long_context/C1b")["values"]),
    "5. score of q with itself: steps up among 199, score at 0, 10, 50": (
        rises, self_scores[0], self_scores[10], self_scores[50]),
    "6. NTK (a larger base) at 4L, means over 3 seeds: zero-shot, after 150 steps at 4L": (
        methods["ntk"]["loss_at_4L"], methods["ntk"]["finetuned_loss_at_4L"]),
}

# %% tags=["nbval-check-output"]
for label, values in misread.items():
    print(f"{label:<84} " + "  ".join(f"{v:.3g}" for v in values))
usable = {"4. rope, trained at L = 32: rise past L at 4L": "short_long_seeds/breaks_rope",
          "4. rope: loss beyond L minus inside L, windows of 8L (chapter 9)": "long_context/C2a",
          "4. alibi: share of the farthest keys found at 8L (chapter 9)": "long_context/C1b"}
for label, name in usable.items():
    print(f"{label:<84} {stats.format_record(record(name))}")
print(f"{'(section 4) a pair with theta = 1 at offset 44: cos, sin (at offset 0: 1, 0)':<84} "
      f"{math.cos(44):.4f}  {math.sin(44):.4f}")
print(f"{'6. NTK at 4L: zero-shot minus after 150 steps at 4L, paired by seed (chapter 8)':<84} "
      f"{stats.format_interval(ntk_gain[0], ntk_gain[2], ntk_gain[3])} ({len(extension['per_seed'])} seeds)")
assert abs(math.sin(44)) < 0.02 and math.cos(44) > 0.999                  # 44 is 7.003 turns: aliased with 0
m = misread
assert m["1. change under a shuffle: TinyEncoder/none, TinyGPT/none (min..max)"][0] < 1e-12 < 0.3 < \
    m["1. change under a shuffle: TinyEncoder/none, TinyGPT/none (min..max)"][1]
p = m["2. PE(3).PE(1), PE(103).PE(101), PE(3).PE(2)"]
assert math.isclose(p[0], p[1], rel_tol=1e-9) and not math.isclose(p[0], p[2], rel_tol=1e-3)
assert m["3. |R_3 q - R_103 q|, with |q|"][0] > 1
assert [record(n)["verdict"] for n in usable.values()] == ["reproduces", "reproduces", "not established"]
far = m["4. alibi trained at L = 32: farthest keys found at 8L, per seed (chapter 9)"]
assert [v > 0.9 for v in far] == [False, False, True, True, True]    # nearly all on seeds 2 to 4 only
assert 0.3 < far[0] < 0.35 and 0.8 < far[1]                           # seed 0 a third; seed 1 most of them
assert record("long_context/C1b")["interval"][0] > 0 and min(far) * 64 >= 21  # keys at 8L found: 21+ of 64 a seed
assert m["5. score of q with itself: steps up among 199, score at 0, 10, 50"][0] > 50
assert ntk_gain[2] > 0                                  # the fine-tune lowers NTK's loss at 4L: wholly above 0

# %% [markdown]
# Each correction holds here: an encoder with no position changes by 6.5e-16 under a shuffle
# while a decoder changes by 0.35 to 0.72; the sinusoidal dot product is the same at offsets
# (3, 1) and (103, 101); a rotated query moves with its position; RoPE computes past $L$, but its
# loss past $L$ rises 0.47 ± 0.12 nats at $4L$ (5 seeds) and 1.27 ± 0.34 beyond $L$ in windows of
# $8L$ (chapter 9, 5 seeds); the score of a vector against itself goes *up* at 66 of 199 steps (53.5
# at distance 0, 43.3 at 10, 24 at 50); and NTK's larger base leaves 2.02 nats at $4L$ (mean of 3
# seeds) until a fine-tune brings it to 1.44, a drop of 0.58 ± 0.35 nats over 3 seeds, paired by seed and
# wholly above 0, where the same fine-tune brings plain RoPE too (1.44, section 1). ALiBi, whose loss
# barely rises at $4L$ (section 1), does find keys at $8L$: its farthest keys there are found 0.82 ± 0.35
# of the time over 5 seeds, wholly above 0, and every seed finds at least 21 of the 64 (seed 0: 0.33;
# seed 1: 0.84; seeds 2 to 4: 0.97 to 1.00). Whether it finds fewer than half of them, chapter 9's
# question, is not established: the interval holds 0.5.
#
# ## 4. Open problems, and where this workbook touched them
#
# The survey closes (§11) with seven open problems. Where the chapters met one, the number:
#
# | open problem (survey §11) | what this workbook saw |
# | --- | --- |
# | nominal length is not effective length | RoPE's loss climbs past $L$ (1.27 ± 0.34 nats beyond $L$ in windows of $8L$); ALiBi's barely rises at $4L$ (section 1), and it still finds its farthest keys at $8L$ on every seed: 0.82 ± 0.35 over 5 seeds of 64 keys a cell, seed 0 a third, seed 1 most (0.84), seeds 2 to 4 nearly all; whether it finds fewer than half of them is not established (chapter 9, §6) |
# | periodicity brings aliasing | one pair with $\theta = 1$ barely tells offset 44 from offset 0: cos 0.9998 and sin 0.0177 against 1 and 0 (section 3; chapter 6) |
# | extension fights short-range ability | PI zero-shot: 2.68 nats at $L$ against 1.48 unscaled, a cost of 1.20 ± 0.09; after a fine-tune 1.57 against plain RoPE's 1.47 fine-tuned alike (the printed losses are rounded), a cost of 0.09 ± 0.01, and whether it is under 0.1 nats is not established (chapter 8, C10c, 3 seeds) |
# | system implementations break position semantics | the clinic below: six bugs, none of which crashes |
# | one-dimensional distance cannot express structure | only the 2-D window bias (chapter 5); nothing measured beyond it |
# | position encoding and efficient attention lack a joint design | the bias schemes' $T^2$ bytes (section 2) |
# | evaluation is weak | the only retrieval probe here is chapter 9's passkey grid (64 keys a cell); with 5 seeds it could not settle whether ALiBi finds fewer than half of its farthest keys at $8L$ (0.82 ± 0.35; seed 0 a third, the others most or nearly all); multi-hop and code tasks are out of reach of these models |

# %% [markdown]
# ## 5. The clinic
#
# The book's failure table (§4) lists six symptoms, their cause, and a check. Here it is as the
# clinic stores it (`mini_transformer/evaluation/clinic.py`):

# %%
from mini_transformer.evaluation import clinic

# %% tags=["nbval-check-output"]
for bug, (symptom, cause, check) in clinic.FAILURE_TABLE.items():
    print(f"{symptom}\n    cause: {cause}\n    check: {check}")

# %% [markdown]
# A **patient** is a model as it is served: `make_patient()` builds one (`clinic.Patient`) with
#
# * `model`: the served `TinyGPT`, one layer, two heads of 8 channels, RoPE, float64, untrained
#   but with query and key weights large enough that attention is far from uniform;
# * `source`: the checkpoint it was loaded from, run by the code it was trained with; the
#   checkpoint was extended with position interpolation and ships with its `rope_scaling`;
# * `train_len` = 16 and `serve_len` = 64: trained at 16 tokens, served at 64 with position
#   interpolation by 4 (`rope_scaling={"rope_type": "linear", "factor": 4}`, in both);
# * `window` = 8 and `n_sink` = 4: how it streams, positions by slot in the cache.
#
# `clinic.plant(patient, bug)` returns the same patient with one bug in its serving path, the way
# such bugs happen: a cache that numbers every call's tokens from 0, a model rebuilt from a
# config that lost its `rope_scaling`, weights run by the other pairing convention, a recency
# penalty on the scores, a cache that ignores `n_sink`, rotations that receive position 0. None
# of them crashes, and on these patients none shows in a loss: they are untrained. So each check
# looks at what the bug breaks on any weights. Only row 1's check is the table's as written;
# each exercise says how the others differ.

# %%
patient = clinic.make_patient()
print(patient.model.cfg.n_layers, "layer,", patient.model.cfg.n_heads, "heads of", patient.model.cfg.d_head,
      "channels; trained at", patient.train_len, "tokens, served at", patient.serve_len)

# %% [markdown]
# ### Exercise 12.1: `check_cache`   ★★ · 15 min
#
# *Why it matters:* the position of a decoded token is the classic silent bug of generation
# (chapter 6's `decode`), and it only shows after the prompt.
#
# Row 1: *cached generation degrades after a few tokens*. The table's check: cached logits equal
# full-forward logits at each step. Write `check_cache(make_patient)`: run a sequence through the
# served model once as a full forward pass, and once as generation runs it, a short prefill
# through `model.new_cache()` and then one token per call with the same cache; assert the logits
# agree at every position (to `1e-9`: the patients are float64). Grade it alone:
# `python -m exercises grade clinic --exercise 12.1`.

# %%
check_cache = use("clinic", "check_cache")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Run the model twice on the same ids: once over the whole sequence, once the way generation runs it
# (a prefill of a few tokens into a fresh cache, then one token per call), and compare the logits of
# every position.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The prefill must be shorter than the sequence: a bug in the decode path leaves the prefill's
# positions right, so a check that only runs the prefill passes on it. Run under `no_grad()`.
# Case: 10 tokens with a prefill of 4 make 7 cached calls, whose logits, joined along time, are
# `(B, 10, V)` like the full pass's, and equal to it to about `1e-9`.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_cache")

# %% tags=["nbval-check-output"]
check_cache(clinic.make_patient)
print("check_cache passes on the healthy patient")

# %% [markdown]
# ### Exercise 12.2: `check_angles`   ★★ · 15 min
#
# *Why it matters:* dropping a checkpoint's scaling block is one way a long-context model loses
# its long context, and the config it was rebuilt from looks fine.
#
# Row 2: *the loss explodes past the training length* (out-of-range RoPE angles). The table's
# check is to evaluate the loss at 1x, 1.5x and 2x the training length; on a trained model that
# is what you do (`evaluate.extrapolation_curve`, chapter 9; section 1 shows unscaled RoPE's loss
# past $L$ rising 0.472 ± 0.118 nats at $4L$ over 5 seeds). An untrained patient has no loss to watch, so check the
# cause: a pair that never completed a turn in training saw only the angles of positions below
# `train_len`; served at `serve_len` it must not turn past the angle of position `train_len` itself
# (position interpolation puts the last served position just below it),
#
# $$(\mathrm{serve\_len} - 1)\,\theta'_i \le \mathrm{train\_len}\cdot\theta_i \quad\text{for every pair with } 2\pi/\theta_i > \mathrm{train\_len},$$
#
# where $\theta_i = \mathrm{base}^{-2i/d_{head}}$ are the frequencies of training
# (`model.cfg.rope_base`) and $\theta'_i$ those the served model uses
# (`model.positional.rotary.inv_freq`). Write `check_angles(make_patient)`. Grade it alone:
# `python -m exercises grade clinic --exercise 12.2`.

# %%
check_angles = use("clinic", "check_angles")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Position interpolation by $s$ takes the last served position, $sL - 1$, to $(sL-1)/s = L - 1/s$:
# between the trained positions $L - 1$ and $L$. Compare with $L\,\theta_i$, not $(L-1)\,\theta_i$,
# or the healthy patient fails.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Only the pairs that never made a full turn in training matter: those whose wavelength $2\pi/\theta_i$
# exceeds the training length. For them, the largest angle served, $(\text{serve\_len} - 1)\,\theta'_i$,
# must stay within $L\,\theta_i$. Case: $L = 64$ served at 256 with $s = 4$:
# $255\,\theta/4 = 63.75\,\theta \le 64\,\theta$, healthy; the same model served unscaled reaches $255\,\theta$, sick.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_angles")

# %% tags=["nbval-check-output"]
check_angles(clinic.make_patient)
print("check_angles passes on the healthy patient")

# %% [markdown]
# ### Exercise 12.3: `check_port`   ★ · 10 min
#
# *Why it matters:* chapter 11 in one assert; a served model that is not the model you trained
# fails here whatever the reason.
#
# Row 3: *a ported checkpoint produces garbage* (the pairing convention differs). The table's
# check compares one layer's rotated queries against the reference implementation; here the
# reference is `patient.source`, the checkpoint run by its own code. Write
# `check_port(make_patient)`: on the same `train_len` tokens, the served model's logits must equal
# the source's. Grade it alone: `python -m exercises grade clinic --exercise 12.3`.

# %%
check_port = use("clinic", "check_port")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Use several tokens: at position 0 every rotation is the identity, so one token cannot show a
# pairing mismatch.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# The served model and the checkpoint's own code must give the same logits on the same ids, to rounding:
# a batch of two sequences at the training length, and the largest difference below about `1e-9`. Case: a
# port with the wrong pairing agrees at position 0 and differs from position 1 on, by far more than `1e-9`.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_port")

# %% tags=["nbval-check-output"]
check_port(clinic.make_patient)
print("check_port passes on the healthy patient")

# %% [markdown]
# ### Exercise 12.4: `check_reach`   ★★ · 15 min
#
# *Why it matters:* a recency prior can keep perplexity fine and quietly make the far end of a long
# context unreachable. The book's reason (§4, the decision procedure) is that perplexity on long
# documents is dominated by local context; chapter 9 does not test that on long text (its curve
# stops at $L$).
#
# Row 4: *long-context retrieval fails while perplexity looks fine* (a recency bias such as
# ALiBi's, or over-interpolated high frequencies). The table's check is a needle-in-a-haystack
# probe; chapter 9 runs it on trained models (ALiBi trained at $L = 32$ found nearly all its farthest keys
# at $8L$ on three seeds of five, most on a fourth and a third on the fifth: 0.82 ± 0.35 over 5 seeds). On an untrained patient, probe the positional mechanism itself: switch the content
# off (zero queries and keys, so every score is whatever position adds) and ask whether a query
# at position `serve_len - 1` still reaches the first token in every head, with at least half the
# uniform weight `1 / serve_len`. This stand-in covers the row's first cause only: with the content
# off a rotation has nothing to turn, so over-interpolated frequencies cannot show in it.
# `clinic.attention_probe(model, q, k, q_pos, k_pos)` is the
# model's attention with the projections taken out. Write `check_reach(make_patient)`. Grade it
# alone: `python -m exercises grade clinic --exercise 12.4`.

# %%
check_reach = use("clinic", "check_reach")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# `q` is `(1, H, 1, d_head)` at `q_pos = [serve_len - 1]`, `k` is `(1, H, serve_len, d_head)` at
# `k_pos = 0 .. serve_len - 1`; the probe returns `(1, H, 1, serve_len)` probabilities.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# A rotation of a zero vector is zero, so a scheme that only rotates leaves every score 0 and
# attention uniform. A scheme that adds a distance penalty pushes the first key down in its
# steepest head: there, its weight is far below `1 / serve_len`.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_reach")

# %% tags=["nbval-check-output"]
check_reach(clinic.make_patient)
print("check_reach passes on the healthy patient")

# %% [markdown]
# ### Exercise 12.5: `check_sinks`   ★★★ · 20 min
#
# *Why it matters:* a streaming policy is a few lines of index arithmetic, and an off-by-one or a
# dropped argument in them never raises.
#
# Row 5: *sliding-window attention collapses* (evicted attention-sink tokens). The table's check:
# keep the first 4 tokens permanently. Write `check_sinks(make_patient)`: stream more than
# `n_sink + window` tokens, one per call, through
# `model.new_cache(window=window, n_sink=n_sink, positions="slot")`; the last token's logits must
# equal a fresh forward pass over what the cache should hold when that token arrives: the first
# `n_sink` tokens, the `window` tokens before it, and itself. Grade it alone:
# `python -m exercises grade clinic --exercise 12.5`.

# %%
check_sinks = use("clinic", "check_sinks")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# With slot positions the cached tokens sit at positions 0, 1, 2, ..., so a fresh forward over
# the kept tokens, in order, gives every one of them the position the cache gives it.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Stream well past `n_sink + window`, so the window has slid. When token $t$ arrives, the cache holds the
# sinks and the `window` tokens before $t$, not $t$ itself; a fresh forward over those tokens and $t$, in
# order, must give the streamed logits of $t$. Case: `n_sink = 2`, `window = 3`, at $t = 9$ the cache
# holds tokens 0, 1, 6, 7, 8, and the fresh input is tokens 0, 1, 6, 7, 8, 9.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_sinks")

# %% tags=["nbval-check-output"]
check_sinks(clinic.make_patient)
print("check_sinks passes on the healthy patient")

# %% [markdown]
# ### Exercise 12.6: `check_shuffle`   ★★ · 15 min
#
# *Why it matters:* a model that ignores position still trains, and on many tasks still looks
# plausible; the shuffle check takes seconds.
#
# Row 6: *the model ignores position entirely* (an encoding added after the projection, or zeroed
# by a norm). The table's check: shuffle the input, the outputs must change. In a causal model
# the mask leaks order by itself (section 3: 0.35 to 0.72 for a decoder with no position at all),
# so a careless shuffle check passes on a position-blind decoder. Shuffle only the tokens before
# the last one and compare the last position's logits: in a one-layer model that ignores
# position, the last query sees the same set of keys and values either way. Write
# `check_shuffle(make_patient)`. Grade it alone: `python -m exercises grade clinic --exercise 12.6`.

# %%
check_shuffle = use("clinic", "check_shuffle")

# %% [markdown] tags=["hint"]
# <details><summary>Hint 1: a nudge</summary>
#
# Position-blind, the last logits agree to rounding ($10^{-16}$ relative); with position they move
# by a lot. A threshold of `1e-6` relative separates the two.
# </details>

# %% [markdown] tags=["hint"]
# <details><summary>Hint 2: the key idea</summary>
#
# Shuffle every token but the last, keep the last in place, and compare the last position's logits before
# and after, relative to their size. Case: a one-layer model with no positions gives the same last
# logits for every order of the earlier tokens (its attention sums over them); a shuffle that moves
# nothing proves nothing, so make sure yours moves something.
# </details>

# %% tags=["answer"]
reveal("clinic", "check_shuffle")

# %% tags=["nbval-check-output"]
check_shuffle(clinic.make_patient)
print("check_shuffle passes on the healthy patient")

# %% [markdown]
# How does an encoding get *zeroed by a norm*? One way, on numbers: a position signal that is
# the same in every channel, $x_t + p_t\,\mathbf{1}$, is exactly what LayerNorm subtracts (the mean
# over channels). The planted patient of row 6 loses its positions a different way, on the way
# to the rotation; the symptom and the check are the same.

# %%
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.nn import LayerNorm

norm = LayerNorm(16)
x = g.normal(size=(1, 5, 16), dtype="float64")
p = xp.arange(5, dtype="float64")[None, :, None] * xp.ones((1, 1, 16))   # (1, T, d): position t in every channel
with no_grad():
    lost = float(xp.abs(norm(Tensor(x + p)).data - norm(Tensor(x)).data).max())

# %% tags=["nbval-check-output"]
print(f"LayerNorm(x + p_t * ones) - LayerNorm(x): largest difference {lost:.1e}")
assert lost < 1e-12

# %% [markdown]
# ### The ward: seven patients, no labels
#
# `clinic.ward()` hands out seven patients under the letters A to G: the healthy one and the six
# bugs, in a shuffled order. Run your six checks on every patient. `answer_key` is in your hands
# too, so a course can only grade the diagnosis formatively (its grader compares your `answers/12.md`
# with this same key): read it only after you have written yours down.

# %%
makers, answer_key = clinic.ward()
checks = {"cache": check_cache, "angles": check_angles, "port": check_port, "reach": check_reach,
          "sinks": check_sinks, "shuffle": check_shuffle}
failed = {}
for letter, make in makers.items():
    for name, check in checks.items():
        try:
            check(make)
            failed[letter, name] = False
        except AssertionError:
            failed[letter, name] = True

# %% tags=["nbval-check-output"]
print("patient " + "".join(f"{name:>9}" for name in checks))
for letter in makers:
    print(f"{letter:<8}" + "".join(f"{'FAIL' if failed[letter, name] else 'pass':>9}" for name in checks))
patterns = [frozenset(n for n in checks if failed[letter, n]) for letter in makers]
assert len(set(patterns)) == len(makers)  # every patient fails a different set of checks

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
grid = [[1.0 if failed[letter, name] else 0.0 for letter in makers] for name in checks]
ax.imshow(grid, cmap="Reds", vmin=0, vmax=1.4)
ax.set_xticks(range(len(makers)))
ax.set_xticklabels(list(makers))
ax.set_yticks(range(len(checks)))
ax.set_yticklabels([f"check_{n}" for n in checks])
for i, name in enumerate(checks):
    for j, letter in enumerate(makers):
        ax.text(j, i, "FAIL" if failed[letter, name] else "", ha="center", va="center", fontsize=7)
ax.set(xlabel="patient", title="Which check fails on which patient")
fig.tight_layout()

# %% [markdown]
# **Diagnose.** For each letter write down *healthy* or the bug (`position_reset`,
# `angles_out_of_range`, `pairing_mismatch`, `recency_bias`, `sinks_evicted`, `position_ignored`).
# One check fails on four patients; another on two. Which checks are specific, and which only say
# "something differs"?

# %% [markdown] tags=["answer"]
# <details><summary>Answer: how to read the grid</summary>
#
# The patient that fails nothing is healthy. `check_port` fails on four patients, because any
# served model that computes something other than its checkpoint fails it: it says "something
# differs", not what. The specific checks sort them: the patient failing `check_port` alone has
# the pairing mismatch; with `check_angles`, the scaling was dropped; with `check_reach`, a recency
# bias; with `check_shuffle`, position never reaches attention. `check_sinks` fails on two: the
# patient that also fails `check_cache` has the position reset (its cache numbers tokens wrongly in
# any mode), the other evicted its sinks. The next cell prints the key.
# </details>

# %% tags=["answer", "nbval-check-output"]
for letter, diagnosis in answer_key.items():
    caught_by = [f"check_{n}" for n in checks if failed[letter, n]] or ["nothing"]
    print(f"{letter}: {diagnosis:<20} fails {', '.join(caught_by)}")
T_serve = patient.serve_len
zero = xp.zeros((1, 2, T_serve, 8))
for name, sick in [("healthy", clinic.make_patient()), ("recency_bias", clinic.make_planted("recency_bias"))]:
    first = clinic.attention_probe(sick.model, zero[:, :, -1:], zero, xp.arange(T_serve - 1, T_serve),
                                   xp.arange(T_serve))[0, :, 0, 0]
    print(f"{name}: attention on the first of {T_serve} tokens, per head, content off:",
          [round(float(w), 4) for w in first])

# %% [markdown] tags=["answer"]
# That is also the grader's report for the reference checks: each check catches the bug it is
# for; `check_port` also catches `angles_out_of_range`, `recency_bias` and `position_ignored`, and
# `check_sinks` also catches `position_reset`.

# %% [markdown]
# Grade your own checks with `python -m exercises grade clinic`: for each check it says whether it
# passed on the healthy patient, whether it caught its bug, and which others it caught as well.
#
# ## 6. Check yourself on this chapter
#
# **1.** The book recommends ALiBi to "train short, run longer". Section 1's numbers support it;
# what do they say it costs, and where else in this workbook does that cost show?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Its loss at the training length: at $L = 32$, over 5 seeds, 0.06 ± 0.02 nats above RoPE and
# 0.10 ± 0.02 above Transformer-XL. Past $L$ its loss rises only 0.006 ± 0.003 nats at $4L$, which
# also says it gains nothing from the far context, on a text where no arm shows that far
# context pays (chapter 7, §8.1). Its distance penalty is
# the recency prior that makes the clinic's `recency_bias` patient fail `check_reach`: with the
# content switched off, its head of slope 1/16 gives the first of 64 tokens 0.0012 of its attention,
# against $0.0156$ for uniform attention (the key to the ward prints it). On chapter 9's passkeys the
# penalty does not keep ALiBi from far context: at $8L$ = 256 tokens every seed finds at least 21 of
# its 64 farthest keys, 0.82 ± 0.35 over 5 seeds (section 3). Why not is an argument not run: at that
# length the flattest head charges a key at most $255/256$ of a nat. One cost stays unsettled: whether
# the penalty costs ALiBi far context it would otherwise use (chapter 7's C8a and C8b, measured on a
# text where no arm gains from far context: not tested here, and no scheme without a penalty was
# trained on passkeys to compare). Whether its retrieval fails far back
# in a long context is not tested either: chapter 9's models reach 256 tokens (C4b).
# </details>

# %% [markdown]
# **2.** Streaming with a window and 4 sinks scored nearly the same as the window alone here (2.502
# and 2.504). Does that refute StreamingLLM?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# No: with no positive control (no arm known to break when its first tokens are evicted), C6b is not
# tested here. And not because no sink formed: the model has one (0.44 of its heads put more than 0.3 of their
# attention on BOS). Evicting it costs this model little, 0.002 ± 0.003 nats past $L$ and 0.002 ± 0.001
# inside it (chapter 10, section 7; why so little is chapter 10's explanation, not tested here).
# Evicting it cost about 0.4 nats on a 160M-parameter model (StreamingLLM). The positional half shows on a
# model whose rows are normalised sigmoids: sinks kept at their text positions cost it
# 0.106 ± 0.021 nats over slot positions. (The softmax control's gaps are printed in section 1.)
# </details>

# %% [markdown]
# **3.** A reader's `check_shuffle` shuffles every token and asserts that the logits at some
# position changed. Why does the grader call it weak, and which patient gets past it?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# In a causal model each position sees a different prefix after a full shuffle, so its output
# changes even with no position at all (by 0.35 to 0.72 in section 3): the check passes on
# `position_ignored`, the bug it is for. Keep the last token in place, shuffle the ones before it, and compare the last position,
# where a one-layer position-blind model sees the same set either way.
# </details>

# %% [markdown]
# **4.** `check_port` failed on four patients. Why is it still worth running, and why is it not
# enough?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# It catches anything that makes the served model differ from its checkpoint, including bugs no
# specific check was written for: a cheap first test after any port or config change. But it
# does not say which bug, and it cannot see bugs in paths it does not run: it uses one full
# forward pass, so the cache bugs (`position_reset`, `sinks_evicted`) get past it.
# </details>

# %% [markdown]
# **5.** Why does section 2 find T5's positional bytes growing about 14-fold for 4 times the
# tokens, and what would a fused attention kernel change?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# T5's bias is one number per head and pair of positions, $(H, T_q, T_k)$, built from bucket
# indices of shape $(T_q, T_k)$: both grow with $T^2$, 16-fold for 4x the tokens (why section 2
# measures a little less is not tested here). A fused kernel need not form it: it can look T5's table up inside each tile
# (section 2; chapter 7, §5); a dense bias passed in costs $BHT^2$ memory traffic. ALiBi's bias can be computed inside one from the indices, and RoPE never
# touches the scores.
# </details>

# %% [markdown]
# **6.** A reader's `check_cache` compares the greedy tokens (the argmax of the logits) of the
# cached and the full run, since generation only keeps those. The grader calls it weak: on the
# test's one sequence of 10 tokens, the position-reset patient gets past it. How can a reset that
# moves the decoded logits leave the greedy tokens nearly alone?

# %% tags=["answer", "nbval-check-output"]
def generated(model, ids, prefill=4):
    """Logits the way generation computes them: a prefill, then one token per call, one cache."""
    with no_grad():
        cache = model.new_cache()
        steps = [model(ids[:, :prefill], cache=cache).data]
        steps += [model(ids[:, t:t + 1], cache=cache).data for t in range(prefill, ids.shape[1])]
    return xp.concatenate(steps, axis=1)                                   # (B, T, vocab)


ids16 = rng(1).integers(0, 16, (2, 16))
for name, sick in [("healthy", clinic.make_patient()), ("position_reset", clinic.make_planted("position_reset"))]:
    with no_grad():
        full = sick.model(ids16).data
    cached = generated(sick.model, ids16)
    drift = float(xp.abs(cached - full).max())
    same = int((cached.argmax(-1) == full.argmax(-1)).sum())
    shown = f"{drift:.2g}" if drift > 1e-12 else "below 1e-12"   # rounding's last bits differ between machines
    print(f"{name:<15} largest logit change {shown} (logits up to {float(xp.abs(full).max()):.2f}); "
          f"greedy token the same at {same} of {full.shape[0] * full.shape[1]} positions")
    assert (drift < 1e-12 and same == 32) if name == "healthy" else (drift > 0.1 and 28 <= same < 32)

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# On the cell's two sequences the reset moves the logits by up to 0.15, more than half their size
# (up to 0.25), yet the greedy token changes at one position of 32: a greedy check on these
# sequences catches it, on the test's it does not. The argmax is a coarse summary: a change can be large and
# still leave the largest logit on top. The table's symptom, generation that degrades, is the
# book's, not measured here: no run here puts this reset into a trained model. A check has to see
# the cause on any weights, so compare the logits themselves, to `1e-9`.
# </details>

# %% [markdown]
# ## 7. What the clinic could not show
#
# Only row 1's check is the table's. The planted patients are untrained, so two are replaced by a
# check of their cause: row 2's loss at 1x, 1.5x and 2x the training length by the angles, row 4's
# needle search by the positional mechanism with the content switched off, which sees a recency
# penalty but not over-interpolated frequencies. Row 3's compares the whole model's logits, not one
# layer's rotated queries, so it fails on four patients, `recency_bias` among them, which rotates
# exactly as the healthy patient does: the table's check would pass it. Row 5's entry, keep the first 4 tokens, is a fix, so its check is this
# workbook's; row 6's keeps the last token in place. On trained models the
# behavioural checks are the ones to run, and chapter 9 runs them; here a bug must show on any
# weights. And the grid's multiple failures are real: a check is a test of a property, and
# several bugs can break one property.
#
# ## 8. The ledger, settled
#
# Each row cites its evidence: `result NAME/KEY` is the claim record `KEY` in
# `experiments/results/NAME.json` (the record the chapter that ran the
# experiment cites for the same claim), printed in section 1 or 3; `exact §N` is a computation
# without sampling asserted in section N. The verdicts follow the rule in `chapters/README.md`.
# Two parts of the guide leave the ledger without a row: "RoPE for a new LM" is a recommendation, and
# of its reasons only the ones below can be measured here (its loss at $L$, not distinguishable from Shaw's and
# 0.038 ± 0.010 behind Transformer-XL's, is this workbook's observation, not a claim of the book);
# the windowed 2-D bias has no measurement here at all. The cost paragraph's T5 half, that its bias
# must be materialised, is settled in chapter 7 (C4b; section 2 here).
#
# | # | claim (source) | what this model did | evidence | verdict |
# | --- | --- | --- | --- | --- |
# | C1a | RoPE is cache-compatible: a key rotated once stays valid for every later query (book §4) | on the clinic's healthy RoPE patient, cached decoding equals the full forward pass at every position to `1e-9` (`check_cache`, §5) | exact §5 | reproduces |
# | C1b | RoPE is extendable later: a scaling method beats unscaled RoPE at $4L$ (book §4) | NTK's larger base, no training: unscaled minus NTK at $4L$, 0.58 ± 0.02 nats over 3 seeds (§1; chapter 8, C8b) | result context_extension/C8b | reproduces |
# | C2a | learned absolute positions are better in-distribution (book §4) | a gap between trained models, and the arms are still learning at 600 steps; learned minus sinusoidal scaled to the token rows at $L = 64$: -0.100 ± 0.014 nats over 3 seeds, so the interval alone says reproduces (§1; chapter 3, C5b); a decoder on text, not an encoder | result input_schemes_at_train_len/learned_minus_sinusoidal_scaled | not tested here |
# | C2b | ... but only marginally: by under 0.05 nats, the size under which this workbook calls a change in loss small, as for "runs long" (book §4) | a size of the gap between trained models, and the arms are still learning at 600 steps; the learned table's gain, 0.100 ± 0.014 nats over 3 seeds, is over 0.05 in every seed, so the interval alone says does not reproduce (§1; chapter 3, C5c) | result input_schemes_at_train_len/sinusoidal_scaled_minus_learned | not tested here |
# | C3a | T5's bias generalises past the training length on a task: accuracy at 16 after training at 8 above 0.9 (book §4, §7 ex. 4) | look-3-back: all 10 seeds: 1.00; the learned table 0.45 ± 0.04 on the positions it never trained (§1; chapter 5, C5a) | result relative_bias_generalisation/t5_sensible_at_16 | reproduces |
# | C3b | T5's bias generalises past $L$ on text: its rise at $4L$ is no larger than a model's with no position at all, paired by seed (book §4, whose row is about encoder-decoders, tested here on a causal decoder) | T5's rise minus no position's: 0.118 ± 0.081 nats over 5 seeds (§1; chapter 7, C7a). The decoder is one of the two stacks the book's row says the bias handles (T5's decoder self-attention adds it under the causal mask), so the stack is not a missing condition. The bar, no larger rise than no position at all, is this workbook's reading of "generalises"; against unscaled RoPE, a scheme that breaks, T5 rises 0.256 ± 0.133 less (chapter 7, §7.1), so the verdict says T5 rises more past L than no position does, not that it rises as much as unscaled RoPE | result short_long_seeds/t5_generalises_vs_none | does not reproduce |
# | C3c | ... modestly: its rise stays over the 0.05 nats that "runs long" allows (book §4) | rise 0.216 ± 0.051 nats over 5 seeds; with `max_distance` = $L$ 0.181 ± 0.049 (§1; chapter 7, C7b). Any scheme that breaks meets this bar, no position too: with C3b failing, it says only that T5 does not run long | result short_long_seeds/breaks_t5 | reproduces |
# | C4a | train short, run longer with ALiBi: the rise past $L$ at $4L$ is under 0.05 nats (book §4, §2.5) | rise 0.006 ± 0.003 nats over 5 seeds; it pays at $L$, 0.06 ± 0.02 nats above RoPE (§1; chapter 7, C5) | result short_long_seeds/runs_long_alibi | reproduces |
# | C4b | "when perplexity is the metric": on long documents its retrieval far back in the context collapses, the share of keys found falling by at least 0.5 (book §4, §6) | fall 0.08 ± 0.19 over 5 seeds of 64 keys a cell: seed 0 fell by 0.34, seeds 1 to 4 by -0.01 to 0.04; farthest keys at $8L$ 0.82 ± 0.35 (§1, §3; chapter 9, C3b). Missing condition: long documents, retrieval far back in a long context (book §4); these runs reach $8L$ = 256 tokens. The flattest head (slope 1/256) penalises a key there by at most $255/256$ of a nat (arithmetic); that this is why no collapse shows at 256 tokens is an argument not run (the steeper heads penalise far more, and seed 0 lost most of its farthest keys within 256 tokens) | result long_context/C3b | not tested here (the interval's own verdict: does not reproduce) |
# | C5a | to extend RoPE 4x, YaRN (per band) beats PI (one factor) at $4L$ (book §4, §5) | zero-shot, PI minus YaRN at $4L$: 0.95 ± 0.19 nats over 3 seeds (§1; chapter 8, C9a) | result context_extension/C9a | reproduces |
# | C5b | PI alone helps: better than unscaled past $L$ (book §4, Ex. 3) | zero-shot, unscaled minus PI on the positions past $L$: 0.30 ± 0.22 nats over 3 seeds (§1; chapter 8, C7b) | result context_extension/C7b | reproduces |
# | C5c | plus fine-tuning: a short fine-tune repairs the rest (book §2.6, §4) | "the rest" needs a model trained at $4L$ as the reference, and none is trained; beside it, after 150 steps the worst method at $4L$ minus the unextended model at $L$: 0.05 ± 0.14 nats over 3 seeds (§1; chapter 8, C10a) | result context_extension/C10a | not tested here |
# | C5d | the fine-tune repairs PI better than plain RoPE (Chen et al.) | Chen et al.'s fine-tunes are a sliver of pre-training, the one here is 20% of its tokens; beside it, after the fine-tune, unscaled minus PI at $4L$: -0.09 ± 0.02 nats over 3 seeds (the interval's verdict: does not reproduce) (§1; chapter 8, C10b) | result context_extension/C10b | not tested here |
# | C6a | streaming: a softmax model trained where most queries have nothing to read makes the first token an attention sink, over 0.1 of the heads putting over 0.3 on it (book §4, §2.6) | chapter 10's control: a seed's share of heads over 0.3 on BOS 0.44 ± 0.10 over 5 seeds (35 of 80 pooled) (§1; chapter 10, C4a). Not on text (chapter 10, C4c: not tested here, far less data than the literature's) nor in the book's exercise-6 setting (chapter 10, C4d: not established) | result sink_control/C4_softmax | reproduces |
# | C6b | a window that evicts the first tokens breaks: its loss rises by more than 0.05 nats (book §2.6, §4, §5) | past $L$, window of 32 without sinks minus with 4: 0.002 ± 0.003 nats over 5 seeds, below 0.05 and below $\ln 2 = 0.693$, where the workbook puts "explodes" (chapter 7, C6a); but no positive control: no arm was trained in which evicting the first tokens is known to cost more than 0.05; StreamingLLM's 160M model lost about 0.4 (§1; chapter 10, C5a) | result sink_control/C5_breaks_softmax | not tested here |
# | C6c | ... and keeping sinks prevents it: window + 4 sinks within 0.05 nats of recomputing the window (book §4, §2.6) | -0.002 ± 0.003 nats over 5 seeds, but the window without sinks is as close: nothing broke (C6b), so the test could not fail (§1; chapter 10, C5b) | result sink_control/C5b_restores_softmax | not tested here |
# | C6d | positions within the cache, not in the text (book §4, §2.6) | chapter 10's normalised-sigmoid model, which fails past $L$ (full attention minus recomputing the window, chapter 10 §7: 0.123 ± 0.019): sinks at text minus slot positions 0.106 ± 0.021 nats over 5 seeds, wholly above 0; the softmax control's failure past $L$ is not established (full attention minus recomputing the window 0.005 ± 0.009), so its 0.004 ± 0.004 settles nothing (§1; chapter 10, C3b) | result sink_control/C3_sigmoid_normalised | reproduces |
# | C7 | RoPE costs a few multiplies per element of $q$ and $k$ (book §4, "Cost") | the bench measures bytes, not operations: RoPE's positional bytes grow x4 (like $T$) when the tokens grow 4x (§2) | exact §2 | not tested here |
# | C8a | this chapter's checks, one for each of rows 1 to 5 of the failure table, each catch their planted bug (this workbook, on book §4's table) | each of the five checks passes on the healthy patient and fails on its own bug; rows 2 and 4 through a cause, not their symptom (row 4 through the recency penalty only), row 3 through the whole model's logits, row 5 through this workbook's check (§5). Only row 1's check is the table's own: the table's checks for rows 2 to 5 are not run here (§7) | exact §5 | reproduces |
# | C8b | ... and row 6's check as written, shuffle the input, outputs must change, catches its bug in a decoder (book §4) | it does not: the mask alone changes a decoder's outputs, by 0.35 to 0.72 with no position at all (§3), so the check passes with the bug in (chapter 1, C8c). `check_shuffle` is the workbook's own variant, shuffling the tokens before the last and comparing the last position: it catches the bug in the one-layer patients (§5), not in two layers (chapter 1, §7) | exact §3 | does not reproduce |
#
# ## 9. Where next
#
# * The exercises: [`exercises/clinic.py`](../exercises/clinic.py), 12.1 to 12.6. Grade them
#   with `python -m exercises grade clinic` (one at a time with `--exercise 12.N`): each check is
#   run on the healthy patient and on all six planted bugs.
# * The patients and their bugs: `mini_transformer/evaluation/clinic.py` (`make_patient`, `plant`, `ward`,
#   `attention_probe`). The cost bench: `mini_transformer/evaluation/bench_positional.py`. The experiments
#   behind section 1: `experiments/`, each with `--quick` for a short run.
# * The interview questions on choosing a scheme and debugging position bugs, answered from these
#   numbers: [`chapters/cards/12_choosing_and_clinic.md`](cards/12_choosing_and_clinic.md).
# * Next: [chapter 13](13_positions_today.py), positions in today's models. The drills
#   (`python -m exercises drill`) keep the implementations in your fingers; chapter 0's engine is the
#   place to start again with a scheme of your own.
