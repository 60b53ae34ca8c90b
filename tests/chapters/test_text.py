r"""The book's text files hold no control characters.

A LaTeX command written through a plain Python string loses its backslash: ``"\frac"`` is a form feed and
``rac``, and the rendered formula shows "rac{...}". Chapter 7 carried one for weeks because nothing read the
bytes. This test does.
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOOK = sorted([*ROOT.glob("chapters/*.py"), *ROOT.glob("chapters/*.md"), *ROOT.glob("chapters/cards/*.md"),
               ROOT / "README.md"])
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # everything below a space but tab, newline, return


def control_characters(text):
    """``(line, column, character)`` for each control character in ``text``, 1-based."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): it splits at a form feed too
        found += [(number, m.start() + 1, repr(m.group())) for m in CONTROL.finditer(line)]
    return found


@pytest.mark.parametrize("path", BOOK, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_control_characters_in_the_book(path):
    found = control_characters(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)} holds control characters at (line, column, char): {found[:5]}"


def test_the_check_finds_a_form_feed_where_a_frac_lost_its_backslash():
    planted = "# $$a = " + "\x0c" + "rac{1}{2}$$\n"  # what a plain "\\frac" becomes: a form feed, then "rac"
    assert control_characters(planted) == [(1, 9, repr("\x0c"))]
    assert control_characters(r"# $$a = \frac{1}{2}$$" + "\n\tindented\r\n") == []


def stray_markdown_lines(text):
    """Line numbers of a chapter's markdown cells that lost their ``# ``: jupytext still shows such a line, but the
    chapter is no longer Python (``python chapters/NN.py``, linters and editors' cell runners all stop there)."""
    try:
        compile(text, "<chapter>", "exec")
    except SyntaxError as e:
        return [e.lineno]
    return []


@pytest.mark.parametrize("path", sorted(ROOT.glob("chapters/[0-9][0-9]_*.py")), ids=lambda p: p.name)
def test_every_chapter_is_python(path):
    assert stray_markdown_lines(path.read_text(encoding="utf-8")) == [], \
        f"{path.relative_to(ROOT)} does not parse as Python: a markdown line without its '# '?"


def test_the_check_finds_a_table_row_that_lost_its_hash():
    planted = "# %% [markdown]\n# | C1 | a claim | | §1 |\n| C2 | a row without its hash | | §2 |\n"
    assert stray_markdown_lines(planted) == [3]
    assert stray_markdown_lines("# %% [markdown]\n# | C1 | a claim | | §1 |\n") == []
