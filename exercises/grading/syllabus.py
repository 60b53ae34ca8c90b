r"""The exercises of every chapter, read from their headings, for planning a course.

    python -m exercises syllabus          # one line per chapter: exercises, stars, minutes, graded modules
    python -m exercises syllabus -v       # and every exercise

Each exercise heading of a chapter reads (``chapters/README.md``, "The parts of a chapter")::

    ### Exercise 6.2: `apply_rotary`   ★ · 10 min
    ### Exercises 6.7 and 6.8: `rotate_interleaved` and `apply_rotary_interleaved`   ★ · 5 min each

The minutes are a first attempt's, as the chapter's author wrote them; the modules that grade a
chapter are those whose solution markers carry its numbers (``Exercise 6.N`` -> ``rope``).
Chapters are found by their file names, so a new chapter's exercises join the table when it is
merged.
"""
import re
from dataclasses import dataclass

from exercises.grading import notebooks

_HEADING = re.compile(r"^#\s*###\s+Exercises?\s+(?P<numbers>\d+\.\d+(?:(?:,\s*|\s+and\s+)\d+\.\d+)*)\s*:?"
                      r"(?P<title>.*?)\s+(?P<stars>[★☆]+)\s*·\s*(?P<minutes>\d+)\s*min(?P<each>\s+each)?\s*$")


@dataclass(frozen=True)
class Exercise:
    number: str  # "6.2"
    title: str  # "`apply_rotary`"
    stars: int  # 1 to 3
    minutes: int  # a first attempt


def exercises_in(text):
    r"""The exercises whose headings are in a chapter's ``text``, in order."""
    out = []
    for line in text.splitlines():
        m = _HEADING.match(line.strip())
        if not m:
            continue
        numbers = re.findall(r"\d+\.\d+", m.group("numbers"))
        minutes = int(m.group("minutes"))
        share = minutes if m.group("each") or len(numbers) == 1 else minutes // len(numbers)
        for n in numbers:
            out.append(Exercise(n, m.group("title").strip(" :"), m.group("stars").count("★"), share))
    return out


def graded_modules_by_chapter():
    r"""``{chapter number: [module, ...]}`` from the labels of every exercise module."""
    from exercises.grading.grader import exercise_module_names
    from exercises.grading.knowledge import knowledge
    out = {}
    for m in exercise_module_names():
        for label in knowledge(m).labels.values():
            tail = label.split()[-1]
            if label.startswith("Exercise") and tail.split(".")[0].isdigit():
                out.setdefault(int(tail.split(".")[0]), [])
                if m not in out[int(tail.split(".")[0])]:
                    out[int(tail.split(".")[0])].append(m)
    return out


def table(verbose=False):
    r"""The syllabus as text: one line per chapter (its exercises, stars, minutes and length in lines), totals at the end."""
    modules = graded_modules_by_chapter()
    lines = [f"{'chapter':<30} {'exercises':>9} {'★/★★/★★★':>9} {'minutes':>8} {'lines':>6}  graded by"]
    total_n = total_min = 0
    for name in notebooks.chapter_names():
        text = notebooks.chapter_path(name).read_text(encoding="utf-8")
        found = exercises_in(text)
        number = int(name.split("_", 1)[0])
        stars = "/".join(str(sum(e.stars == s for e in found)) for s in (1, 2, 3))
        minutes = sum(e.minutes for e in found)
        total_n, total_min = total_n + len(found), total_min + minutes
        graded = ", ".join(modules.get(number, [])) or "-"
        lines.append(f"{name:<30} {len(found):>9} {stars:>9} {minutes:>8} {len(text.splitlines()):>6}  {graded}")
        if verbose:
            lines += [f"    {e.number:<6} {'★' * e.stars:<4} {e.minutes:>3} min  {e.title}" for e in found]
    lines.append(f"{'all':<30} {total_n:>9} {'':>9} {total_min:>8} {'':>6}  ({total_min / 60:.1f} h of exercises)")
    return "\n".join(lines)
