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
# # Appendix (chapter 13). The interview cards
#
# The sources end with interview questions. This book answers each one on a card, from its own
# derivations and measurements, and points back to the section that derives the answer. The cards
# live in `chapters/cards/NN_name.md`, one file per chapter. This appendix loads every card, checks
# that each one is well formed and points at a chapter of the book, and shows you how to drill them.
#
# **By the end you can**
#
# * drill the cards from a terminal, one chapter at a time or all of them, in an order you can replay;
# * write a card in the format the drill reads, and read the sentence it gives when a card is malformed;
# * find, for any card, the section of the book that derives its answer.

# %% [markdown]
# ## 1. What a card is
#
# A card is a level-2 heading (the question), a list with `chapter:` and `source:`, and the answer: the
# paragraphs that follow, up to the next level-2 heading (`chapters/README.md`, "Interview cards").
#
# ```markdown
# ## Why does RoPE work with a KV cache more smoothly than T5's relative bias?
#
# - chapter: 6 (§7)
# - source: book chapter, "Interview questions", 1 (follow-up)
#
# A cached key is rotated once, at write time, with its own position ...
# ```
#
# The `chapter:` line is a pointer: chapter numbers separated by commas, each with its sections in
# parentheses, then an optional remark after a semicolon. The parser,
# [exercises/grading/cards.py](../exercises/grading/cards.py), reads every file in `chapters/cards/`:
# nothing is registered, so a new chapter's cards join the deck when its file arrives.

# %%
from exercises.grading import cards

deck = cards.load()  # every card of every chapters/cards/*.md; a malformed card stops here, with its line
chapters_here = cards.chapter_files()  # {chapter number: chapters/NN_name.py}

# %% [markdown]
# ## 2. How many cards each chapter has
#
# The count grows as chapters add cards, so the cell below prints the table and checks it with
# `assert`s rather than against a stored copy: every card file holds at least one card, its name is
# the name of a chapter, and the counts add up to the deck.

# %%
by_file = {}
for card in deck:
    by_file.setdefault(card.file, []).append(card)
for file, its_cards in by_file.items():
    print(f"{file:<42} {len(its_cards):>3} cards")
print(f"{'all':<42} {len(deck):>3} cards")

assert sum(len(c) for c in by_file.values()) == len(deck)
assert set(by_file) == {f"chapters/cards/{p.name}" for p in cards.card_files()}  # no card file is empty
for file in by_file:
    stem = file.rsplit("/", 1)[1][:-3]
    assert (cards.CHAPTERS / f"{stem}.py").is_file(), f"{file} is named after no chapter: rename it NN_name.md"

# %% [markdown]
# ## 3. Every pointer leads to a chapter
#
# A card that points at a chapter nobody wrote sends the reader nowhere. Every chapter number a card
# names must be a chapter file in `chapters/`. The book has chapters 0 to 12 and this appendix; a
# pointer to a chapter of that plan that is not in your copy yet is listed in the next cell, and any
# other number fails here.

# %% tags=["nbval-check-output"]
BOOK = range(0, 14)  # chapters 0 to 12 and this appendix
missing = cards.unresolved(deck, chapters_here)
outside = [f"{c.file}, line {c.line}: chapter {n}" for c, n in missing if n not in BOOK]
assert not outside, "cards point outside the book: " + "; ".join(outside)
assert all(c.chapters and c.source and c.answer for c in deck)
print("every card parses, names a source, and points at chapters of the book: True")

# %%
pending = sorted({n for _, n in missing})
print("chapters pointed at and not in this copy yet:", ", ".join(map(str, pending)) or "none")

# %% [markdown]
# ## 4. One card, drawn
#
# The drill draws cards with Python's `random.Random(seed)`, so a seed replays the same order. Here is
# the card that seed 13 draws from the whole deck. Answer it aloud before you read on.

# %%
from IPython.display import Markdown, display

card = cards.draw(deck, 1, seed=13)[0]
display(Markdown(f"**{card.question}**\n\n*chapter {card.pointer} · `{card.file}`*"))

# %%
display(Markdown(card.answer + f"\n\n*Source: {card.source}*"))

# %% [markdown]
# The same seed draws the same cards, in the same order, every time:

# %% tags=["nbval-check-output"]
first, again = cards.draw(deck, None, seed=13), cards.draw(deck, None, seed=13)
print("the same seed draws the same order:", [c.question for c in first] == [c.question for c in again])
print("every card is drawn exactly once by --all:", sorted(c.question for c in first) == sorted(c.question for c in deck))

# %% [markdown]
# ## 5. A malformed card
#
# The parser refuses a card that breaks the format, with a sentence that names the file, the line and
# what is wrong. Here a card lost its `source:` line, and another points at a section instead of a
# chapter:

# %% tags=["nbval-check-output"]
broken = """# Interview cards: an example

## What does the base of RoPE set?

- chapter: 6 (§5)

The range of the wavelengths.
"""
for text in (broken, broken.replace("- chapter: 6 (§5)", "- chapter: §5\n- source: book")):
    try:
        cards.parse(text, "chapters/cards/99_example.md")
    except cards.CardError as e:
        print(e)

# %% [markdown]
# ## 6. Drill from the terminal
#
# ```bash
# python -m exercises cards                  # one random card: the question, Enter, the answer
# python -m exercises cards 5 --chapter 6    # five cards of chapter 6 (its file, and cards pointing at it)
# python -m exercises cards --all --seed 3   # every card, in an order you can replay with the same seed
# python -m exercises cards --list           # every question, by chapter
# ```
#
# At a terminal the drill waits for Enter before it shows each answer (`q` then Enter stops it); piped
# into another program it prints each question, then its answer. Say the answer aloud, with the number
# the book measured, before you press Enter: the cards are written to be answered in about two minutes.
#
# ## Where next
#
# * The timed retyping drills: `python -m exercises drill` (README, "Drilling").
# * To add a card, write it in `chapters/cards/NN_name.md` of the chapter that derives the answer, then
#   run `python -m pytest tests/grading/test_cards.py`.
# * Teaching the book as a course: [TEACHING.md](TEACHING.md).
