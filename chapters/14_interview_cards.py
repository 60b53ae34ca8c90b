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
# # Appendix (chapter 14). The interview cards
#
# The cards answer the book chapter's six interview questions and their follow-ups, other questions
# from both sources (the book's failure table and exercises, the survey's common misunderstandings) and,
# for chapter 13, from the papers, model cards and configs each card names as its source, each
# from this workbook's own derivations and measurements, with a pointer back to the section that derives
# the answer. Below are all of them, chapter by chapter: read the question, answer it aloud with the
# number this workbook measured, then open the answer.
#
# Drill them from a terminal, in a random order a seed replays:
# `python -m exercises cards 5 --chapter 6` (five of the cards that point at chapter 6; `--all --seed 3` for every card,
# `--list` for the questions only).

# %% tags=["nbval-check-output"]
from IPython.display import Markdown, display

from exercises.grading import cards

deck_all = cards.load()  # every card of chapters/cards/*.md
decks = sorted({c.deck for c in deck_all})
print(f"cards for chapters {decks[0]} to {decks[-1]}, each with a question, a pointer, a source and an answer")
assert set(decks) <= set(cards.chapter_files())
assert all(c.question and c.chapters and c.source and c.answer for c in deck_all)

# %%
for chapter, path in cards.chapter_files().items():
    deck = [c for c in deck_all if c.deck == chapter]
    if not deck:
        continue
    display(Markdown(f"## Chapter {chapter}: `{path.name}`"))
    for card in deck:
        display(Markdown(f"**{card.question}**  \n*chapter {card.pointer}; {card.source}*\n\n"
                         f"<details><summary>Answer</summary>\n\n{card.answer}\n\n</details>"))

# %% [markdown]
# ## Where next
#
# * The timed retyping drills: `python -m exercises drill` (the repository's `README.md`, section "Drilling").
# * To add a card, write it in `chapters/cards/NN_name.md` of the chapter that derives the answer
#   (the format is in [README.md](README.md), "Interview cards"), then run
#   `python -m pytest tests/grading/test_cards.py`.
# * Teaching the book as a course: [TEACHING.md](TEACHING.md).
