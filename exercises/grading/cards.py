r"""Interview cards: parse ``chapters/cards/NN_name.md`` and drill them from the terminal.

    python -m exercises cards                  # one random card: the question, Enter, the answer
    python -m exercises cards 5 --chapter 6    # five of the cards that point at chapter 6
    python -m exercises cards --all --chapter 2 3   # every card of a session on chapters 2 and 3
    python -m exercises cards --all --seed 3   # every card, in an order you can replay
    python -m exercises cards --list           # every question, by card file

The format is the one of ``chapters/README.md`` ("Interview cards"): a level-2 heading is the
question, a list with ``chapter:`` and ``source:`` follows it, and the paragraphs after the list,
up to the next level-2 heading, are the answer::

    ## Why does RoPE work with a KV cache more smoothly than T5's relative bias?

    - chapter: 6 (§7)
    - source: book chapter, "Interview questions", 1 (follow-up)

    A cached key is rotated once, at write time, ...

The ``chapter:`` line is a pointer: chapter numbers separated by commas, each optionally followed
by its sections in parentheses, optionally followed by a remark after a semicolon
(``5 (§4, §6); the RoPE side is chapter 6's card``). A card that breaks the format is refused with
a sentence naming the file, the line and what is wrong (``CardError``), never skipped.

Nothing is registered: every ``chapters/cards/*.md`` is read, so a new chapter's cards join the
drill when its file is merged.
"""
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from exercises.grading.errors import CommandError
from exercises.grading.paths import CHAPTERS, ROOT

CARDS = CHAPTERS / "cards"
_FIELDS = ("chapter", "source")
_ITEM = re.compile(r"^[-*]\s+(\w+)\s*:\s*(.*)$")


class CardError(ValueError):
    r"""A card file that breaks the format; the message names the file, the line and what is wrong."""


@dataclass(frozen=True)
class Card:
    question: str
    pointer: str  # the ``chapter:`` line as written, e.g. "6 (§2, §4, §7)"
    chapters: tuple  # the chapter numbers it names, e.g. (6,) or (1, 6)
    source: str
    answer: str  # markdown, the paragraphs after the list
    file: str  # e.g. "chapters/cards/06_rope.md"
    line: int  # the line of the question's heading, counted from 1

    @property
    def deck(self):
        """The chapter number of the card file (``06_rope.md`` -> 6)."""
        return int(Path(self.file).name.split("_", 1)[0])


def _relative(path):
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)


def chapter_numbers(pointer, where="the card"):
    r"""``"1, 6 (§8); remark"`` -> ``(1, 6)``; a ``CardError`` when an item is not a chapter number."""
    head = pointer.split(";", 1)[0]
    if head.count("(") != head.count(")"):
        raise CardError(f"{where}: the chapter pointer {pointer!r} has unbalanced parentheses; write "
                        "`- chapter: 6 (§2, §4)`.")
    bare = re.sub(r"\([^)]*\)", "", head)
    numbers = []
    for item in bare.split(","):
        item = item.strip()
        if not re.fullmatch(r"\d{1,2}", item):
            raise CardError(f"{where}: the chapter pointer {pointer!r} has {item!r} where a chapter number "
                            "belongs; write chapter numbers separated by commas, each with its sections in "
                            "parentheses, e.g. `- chapter: 6 (§5), 8`.")
        numbers.append(int(item))
    return tuple(numbers)


def parse(text, file="<text>"):
    r"""The cards of one card file's ``text``, in order; ``CardError`` on the first malformed card."""
    cards, lines, fence = [], text.splitlines(), False
    starts = []
    for n, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and line.startswith("## "):
            starts.append(n)
        elif not fence and line.startswith("##") and not line.startswith("###") and line.strip() != "##":
            raise CardError(f"{file}, line {n + 1}: {line.strip()!r} looks like a question heading without the "
                            "space after `##`; write `## The question?`.")
    if fence:
        raise CardError(f"{file}: a code fence (```) is opened and never closed.")
    if not starts:
        raise CardError(f"{file} holds no card: each card starts with a level-2 heading, `## The question?`.")
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        cards.append(_card(lines[start:end], start, file))
    return cards


def _card(block, start, file):
    question = block[0][3:].strip()
    at = f"{file}, line {start + 1}"
    if not question:
        raise CardError(f"{at}: the heading has no question; write it after `## `.")
    fields, n = {}, 1
    while n < len(block) and not block[n].strip():
        n += 1
    while n < len(block) and block[n].strip():
        m = _ITEM.match(block[n].strip())
        where = f"{file}, line {start + n + 1}"
        if not m:
            if not fields:
                raise CardError(f"{where}: the card {question!r} must start with the list `- chapter: N (§k)` "
                                f"and `- source: ...` right under its heading; found {block[n].strip()[:60]!r}.")
            break  # the list ended without a blank line: the answer starts here
        key, value = m.group(1).lower(), m.group(2).strip()
        if key not in _FIELDS:
            raise CardError(f"{where}: the card {question!r} has a field {key!r}; a card's list has exactly "
                            "`chapter:` and `source:`.")
        if key in fields:
            raise CardError(f"{where}: the card {question!r} gives `{key}:` twice.")
        if not value:
            raise CardError(f"{where}: the card {question!r} has an empty `{key}:`.")
        fields[key] = (value, start + n + 1)
        n += 1
    for key in _FIELDS:
        if key not in fields:
            raise CardError(f"{at}: the card {question!r} has no `- {key}:` line; a card's list has "
                            "`- chapter: N (§k)` and `- source: ...`.")
    answer = "\n".join(block[n:]).strip()
    if not answer:
        raise CardError(f"{at}: the card {question!r} has no answer; write it as paragraphs after the list.")
    pointer, line = fields["chapter"]
    numbers = chapter_numbers(pointer, f"{file}, line {line}")
    return Card(question, pointer, numbers, fields["source"][0], answer, file, start + 1)


def card_files(folder=None):
    r"""Every card file, ``chapters/cards/NN_name.md``, in chapter order."""
    return sorted(Path(folder or CARDS).glob("[0-9]*.md"))


def load(folder=None):
    r"""Every card of every card file, in file order; ``CardError`` on the first malformed one."""
    cards = []
    for path in card_files(folder):
        cards += parse(path.read_text(encoding="utf-8"), _relative(path))
    return cards


def chapter_files(folder=None):
    r"""``{chapter number: chapters/NN_name.py}`` for every chapter in this copy."""
    out = {}
    for path in sorted(Path(folder or CHAPTERS).glob("[0-9]*.py")):
        head = path.stem.split("_", 1)[0]
        if head.isdigit():
            out[int(head)] = path
    return out


def unresolved(cards, chapters=None):
    r"""``[(card, number)]`` for every chapter a card points at that has no chapter file here."""
    chapters = chapter_files() if chapters is None else chapters
    return [(c, n) for c in cards for n in c.chapters if n not in chapters]


def select(cards, chapter=None):
    r"""The cards of ``chapter`` (a number or several): those in its card file and those whose pointer names it."""
    if chapter is None:
        return list(cards)
    wanted = {chapter} if isinstance(chapter, int) else set(chapter)
    return [c for c in cards if c.deck in wanted or wanted & set(c.chapters)]


def draw(cards, count=1, seed=None):
    r"""``count`` cards (all of them when ``count`` is None) in a random order; ``seed`` replays it."""
    order = list(cards)
    random.Random(seed).shuffle(order)
    return order if count is None else order[:count]


def question_text(card):
    return f"[{card.file}, chapter {card.pointer}]\n\n{card.question}\n"


def answer_text(card):
    return f"{card.answer}\n\n(source: {card.source})\n"


def listing(cards):
    r"""Every question, grouped by card file, with its chapter pointer."""
    out, last = [], None
    for c in cards:
        if c.file != last:
            out.append(f"{'' if last is None else chr(10)}{c.file}")
            last = c.file
        out.append(f"  - {c.question}  (chapter {c.pointer})")
    return "\n".join(out)


def run(cards, stdin=None, stdout=None):
    r"""Show each card's question, wait for Enter when ``stdin`` is a terminal, then show the answer.

    Off a terminal (a pipe, a test) nothing waits: the question is printed, then the answer. At a
    terminal, ``q`` then Enter stops the drill.
    """
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    interactive = hasattr(stdin, "isatty") and stdin.isatty()
    for i, card in enumerate(cards):
        if len(cards) > 1:
            stdout.write(f"\n--- card {i + 1} of {len(cards)} ---\n")
        stdout.write(question_text(card))
        if interactive:
            stdout.write("\nAnswer it aloud, then press Enter (q to stop) ")
            stdout.flush()
            reply = stdin.readline()
            if reply.strip().lower() == "q" or not reply:
                return i
        stdout.write("\n" + answer_text(card))
        stdout.flush()
    return len(cards)


def main(count=None, chapter=None, seed=None, every=False, list_only=False):
    r"""The ``cards`` command; returns its exit status."""
    try:
        cards = load()
    except CardError as e:
        raise CommandError(f"The interview cards do not parse: {e}") from None
    chosen = select(cards, chapter)
    if not chosen:
        decks = sorted({c.deck for c in cards} | {n for c in cards for n in c.chapters})
        asked = chapter if isinstance(chapter, int) else " or ".join(map(str, chapter))
        raise CommandError(f"No card points at chapter {asked}; chapters with cards: "
                         f"{', '.join(map(str, decks))}.")
    if list_only:
        print(listing(chosen))
        print(f"\n{len(chosen)} cards.")
        return 0
    try:
        run(draw(chosen, None if every else (count or 1), seed))
    except KeyboardInterrupt:  # Ctrl-C at the prompt ends the drill, without a traceback
        print()
    return 0
