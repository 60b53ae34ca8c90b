r"""What the grader reads from a student's folder: the one rule for exercises and written answers alike.

No link is followed: not the student's folder itself, not a folder inside it, not the file. A folder
handed in as a link to another student's holds nothing of this student's; a file or folder linked from
elsewhere may lead anywhere on the machine. So the only files read are the student's own, and every
link met on the way is refused in a sentence that names it. The shallowest match wins, ties by name.

Each refusal is a ``Problem``: its ``sentence`` is what the student reads (report, sheet, feedback),
its ``link`` says whether a link was refused or the file is simply not there, so no caller reads the
kind out of the words.
"""
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    r"""Why no file was read from a student's folder."""
    sentence: str  # what the student reads, word for word
    link: bool  # a link was refused (said on every item it costs), not just a file not handed in


def student_file(entry, name, folder=None):
    r"""``(path, None)`` or ``(None, Problem)``: the shallowest file ``name`` inside one student's folder ``entry``.

    ``folder`` (default: the one holding ``entry``) is where the names in the sentence start.
    """
    own = Path(entry).parent.resolve() / Path(entry).name  # the student's folder, its own link not followed
    base = Path(folder).resolve() if folder else own.parent

    def shown(p):
        return str(p.relative_to(base)) if base in p.parents else str(p)

    if own.is_symlink():  # a folder handed in as a link to another student's: nothing in it is theirs
        return None, Problem(f"{shown(own)} is a link, not a folder; hand in the folder itself.", link=True)
    found = sorted(own.rglob(name), key=lambda p: (len(p.parts), str(p)))
    if found and (found[0].is_symlink() or own not in found[0].resolve().parents):
        return None, Problem(f"{shown(found[0])} is a link; hand in the file itself.", link=True)
    if found:
        return found[0], None
    hidden = sorted(shown(p) for p in own.rglob("*") if p.is_symlink() and not p.is_file())  # rglob skips these
    if not hidden:
        return None, Problem(f"no {name} in this student's folder", link=False)
    return None, Problem(f"no {name} in this student's folder; {', '.join(hidden)} "
                         + ("is a link, which the grader does not follow: hand in the folder itself."
                            if len(hidden) == 1 else
                            "are links, which the grader does not follow: hand in the folders themselves."),
                         link=True)  # the file may be behind a link: refused, whether one link or several
