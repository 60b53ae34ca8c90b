r"""``python -m exercises COMMAND``: the workbook's reader and instructor commands.

    grade [MODULE ...] [--file PATH]        grade your exercises (or one file) and print feedback
          [--exercise N.M]                  only this exercise, e.g. 6.2
    drill [NAME] [--grade | --history]      timed retyping drills
          [--torch]                         the same drill in PyTorch (exit code 2 if it is not installed)
    generate [--check] [--force]            regenerate exercises/ from solutions/ (authors)
    refresh-outputs [CHAPTER ...]           re-execute chapters, store their checked outputs (authors)
    release CHAPTER --out DIR               a student notebook without answers or hints (instructors)
    release --repo --out DIR                a student copy of the whole workbook, without solutions/
    release CH1 CH2 ... --out DIR           several chapters; release --all --out DIR: every chapter
    grade-folder DIR --out REPORT           grade a class into REPORT.csv and REPORT.json (instructors)
                 [--all-modules | --module M1 M2 ...]   one gradebook over several exercise modules
                 [--points FILE] [--written NN ...] [--manual CSV] [--feedback DIR] [--level summative]
                 [--canvas CSV] [--roster CSV]          points, written answers, feedback files, Canvas
    gradescope --out DIR [--module M ...]   a Gradescope autograder bundle (setup.sh, run_autograder)
    points --module M ... --out FILE        the default points table (one point a star), to edit
    answers-template NN [--out FILE]        a chapter's written answers to fill (answers/NN.md)
    rubric NN                               a chapter's rubric and model answers (instructors)
    capstone --rubric | --reference         the capstone's rubric, or its reference solution (instructors)
    syllabus [-v]                           every chapter's exercises, stars and minutes (instructors)
    cards [COUNT] [--chapter N ...] [--seed S] [--all] [--list]   drill the interview cards
"""
import argparse
import sys
from typing import Callable, NamedTuple

from exercises.grading.errors import CommandError


def _timeout(args):
    r"""Seconds per exercise: ``--timeout`` where given, else the grader's default."""
    from exercises.grading.grader import DEFAULT_TIMEOUT
    return args.timeout or DEFAULT_TIMEOUT


def _names_of_exercises(module, numbers):
    """The names graded under the labels ``numbers`` ('6.2' or 'Exercise 6.2') in ``module``."""
    from exercises.grading.knowledge import knowledge
    tails = {n.split()[-1] for n in numbers}
    return [name for name, label in knowledge(module).labels.items() if label.split()[-1] in tails]


# ---------------------------------------------------------------------------
# One pair of functions a command: its arguments, then what it does. Each run returns the exit code,
# calls parser.error for a misuse of the command line, and lets a CommandError rise to main.
# ---------------------------------------------------------------------------

def grade_arguments(p):
    p.add_argument("modules", nargs="*", help="exercise modules (default: all), e.g. rope")
    p.add_argument("--file", help="grade this file instead of exercises/MODULE.py (needs one MODULE)")
    p.add_argument("--exercise", action="append", default=[], metavar="N.M",
                   help="grade only this exercise, e.g. 6.2 (repeat for more)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per exercise (default 10)")
    p.add_argument("--feedback", "--level", dest="level", default="formative", choices=("formative", "summative"),
                   help="formative (default): the whole feedback, with hints and inputs; summative: what failed "
                        "and of which kind, no hint, no input, no mutant named")


def run_grade(parser, args):
    from exercises.grading.grader import exercise_module_names, format_results, grade_file
    from exercises.grading.paths import EXERCISES
    modules = args.modules or exercise_module_names()
    if args.file and len(modules) != 1:
        parser.error("--file needs exactly one MODULE, e.g. `grade rope --file my_rope.py`.")
    results = []
    for m in modules:
        names = _names_of_exercises(m, args.exercise) if args.exercise else None
        if names == []:
            continue
        results += grade_file(args.file or EXERCISES / f"{m}.py", m, names=names, timeout=_timeout(args))
    if args.exercise and not results:
        parser.error(f"no exercise {', '.join(args.exercise)} in {', '.join(modules)}; "
                     "give the number the chapter uses, e.g. --exercise 6.2.")
    if args.level != "formative":
        from exercises.grading.feedback import text
        results = [dict(r, message=text(r, args.level)) for r in results]
    print(format_results(results))
    return 0 if all(r["status"] != "fail" for r in results) else 1


def drill_arguments(p):
    p.add_argument("name", nargs="?", help="rope, sinusoidal, alibi or t5; omit to list them")
    p.add_argument("--grade", action="store_true", help="grade the attempt and stop the clock")
    p.add_argument("--history", action="store_true", help="plot your times to a PNG")
    p.add_argument("--out", help="where --history writes the PNG")
    p.add_argument("--attempts-dir", help="folder of attempts (default exercises/drills/attempts, or $PE_DRILL_DIR)")
    p.add_argument("--history-file", help="history JSON (default .drill_history.json, or $PE_DRILL_HISTORY)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per function when grading")
    p.add_argument("--torch", action="store_true",
                   help="the drill in PyTorch: a blank with `import torch`, graded with the same checks on tensors "
                        "(needs PyTorch, never a requirement; without it: how to install it, exit code 2)")


def run_drill(parser, args):
    from exercises.grading import drill
    if args.grade and args.history:
        parser.error("use either --grade or --history, not both.")
    language = "torch" if args.torch else "numpy"
    if not args.name:
        print(drill.listing(args.history_file))
        return 0
    if args.history:
        print(f"wrote {drill.plot_history(args.name, args.history_file, args.out, args.attempts_dir, language)}")
        return 0
    if args.grade:  # without PyTorch, a PyTorch drill stops in drill.need_torch: how to install it, exit code 2
        passed, text = drill.grade(args.name, args.attempts_dir, args.history_file, timeout=_timeout(args),
                                   language=language)
        print(text)
        return 0 if passed else 1
    print(drill.start(args.name, args.attempts_dir, args.history_file, language))
    return 0


def generate_arguments(p):
    p.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")
    p.add_argument("--force", action="store_true", help="overwrite exercise files that hold your code")


def run_generate(parser, args):
    from exercises.grading.generate import generate
    report = generate(force=args.force, check=args.check)
    print("\n".join(report) if report else "exercises/ matches solutions/.")
    if args.check:
        return 1 if report else 0
    return 1 if any("not overwritten" in line for line in report) else 0


def refresh_outputs_arguments(p):
    p.add_argument("chapters", nargs="*", help="e.g. 06_rope (default: all)")


def run_refresh_outputs(parser, args):
    from exercises.grading import notebooks
    for name in args.chapters or notebooks.chapter_names():
        print(f"wrote {notebooks.refresh(name)}")
    return 0


def release_arguments(p):
    p.add_argument("chapters", nargs="*", metavar="chapter", help="e.g. 06_rope, or several (not with --repo)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--all", action="store_true", help="a student notebook of every chapter")
    p.add_argument("--repo", action="store_true", help="write a whole student copy: no solutions/, answers and "
                                                      "hints dropped from the chapters, stored grading data")


def run_release(parser, args):
    from exercises.grading import release
    if sum([args.repo, args.all, bool(args.chapters)]) != 1:
        parser.error("give CHAPTER names (student notebooks), --all (every chapter) or --repo (a whole "
                     "student copy), one of the three.")
    if args.repo:
        print(f"wrote a student copy of the workbook to {release.repository(args.out)}")
    else:
        for path in release.notebooks_for(args.chapters or None, args.out):
            print(f"wrote {path}")
    return 0


def grade_folder_arguments(p):
    p.add_argument("folder")
    p.add_argument("--out", required=True, help="report path without suffix; .csv and .json are written")
    p.add_argument("--module", nargs="+", default=None, metavar="MODULE",
                   help="which exercise module the students wrote (default rope); several, or `all`, give one "
                        "gradebook over all of them")
    p.add_argument("--all-modules", action="store_true", help="one gradebook over every exercise module")
    p.add_argument("--timeout", type=float, default=None, help="seconds per exercise (default 10)")
    p.add_argument("--memory-mb", type=int, default=1024, help="address space of each graded process (default 1024)")
    p.add_argument("--workers", type=int, default=None, help="students graded at once (default: the CPU count)")
    p.add_argument("--wrap", default=None, help="a command to run each graded process under, e.g. a bwrap line "
                                                "(see README.md, 'Grading a class')")
    p.add_argument("--points", default=None, metavar="FILE",
                   help="the points table (JSON, from `python -m exercises points`); default one point a star")
    p.add_argument("--written", nargs="+", default=[], metavar="NN",
                   help="chapters whose written answers (answers/NN.md) are collected and graded")
    p.add_argument("--manual", default=None, metavar="CSV",
                   help="the filled sheet of hand-graded answers (REPORT_written.csv) to merge")
    p.add_argument("--feedback", default=None, metavar="DIR", help="write one feedback file per student "
                                                                   "(Markdown and HTML) into DIR")
    p.add_argument("--level", default="formative", choices=("formative", "summative"),
                   help="the feedback's level in the files (default formative; summative for assessed work)")
    p.add_argument("--canvas", default=None, metavar="CSV", help="also write the gradebook as a Canvas import CSV")
    p.add_argument("--roster", default=None, metavar="CSV",
                   help="student folder -> Canvas name, id, sis_user_id, sis_login_id, section")


def run_grade_folder(parser, args):
    from exercises.grading.instructor import grade_folder, grade_folder_modules, modules_named
    from exercises.grading.sandbox import Limits
    limits = Limits(memory_mb=args.memory_mb)
    if args.all_modules and args.module:
        parser.error("use either --all-modules or --module, not both.")
    if args.all_modules or (args.module and (len(args.module) > 1 or args.module == ["all"])):
        from exercises.grading.points import fmt
        book = grade_folder_modules(args.folder, args.out, modules_named(args.module or ["all"]),
                                    timeout=_timeout(args), limits=limits, wrap=args.wrap, workers=args.workers,
                                    points=args.points, written=args.written, manual=args.manual,
                                    feedback=args.feedback, level=args.level, canvas=args.canvas,
                                    roster=args.roster)
        for s in book["students"]:
            ungraded = sum(w["ungraded"] for w in s["written"].values())
            print(f"{s['student']:<24} {fmt(s['points'])} of {fmt(s['out_of'])}"
                  + (f"  ({ungraded} written items not graded yet)" if ungraded else ""))
        print(f"wrote {book['csv']} and {book['json']}")
        if "written" in book and args.manual:
            print(f"wrote {book['written']}: the sheet, with the points merged from {args.manual}")
        elif "written" in book:
            print(f"wrote {book['written']}: fill its points column and pass it back with --manual")
        if "feedback" in book:
            print(f"wrote {len(book['feedback'])} feedback files ({args.level}) to {args.feedback}")
        if "canvas" in book:
            print(f"wrote {book['canvas']} (Canvas gradebook import)")
        return 0
    if any((args.points, args.written, args.manual, args.feedback, args.canvas, args.roster)):
        parser.error("--points, --written, --manual, --feedback, --canvas and --roster belong to a gradebook: "
                     "give --module with two or more modules, or --all-modules.")
    report = grade_folder(args.folder, args.out, module=(args.module or ["rope"])[0], timeout=_timeout(args),
                          limits=limits, wrap=args.wrap, workers=args.workers)
    for s in report["students"]:
        print(f"{s['student']:<24} {s['passed']} of {s['total']}")
    print(f"wrote {report['csv']} and {report['json']}")
    return 0


def gradescope_arguments(p):
    p.add_argument("--out", required=True, help="an empty or new folder; DIR.zip is written beside it")
    p.add_argument("--module", nargs="+", default=None, metavar="MODULE",
                   help="the exercise modules graded (default: every one)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per exercise (default 10)")
    p.add_argument("--visibility", default="visible",
                   choices=("visible", "hidden", "after_due_date", "after_published"),
                   help="when students see each exercise's feedback (Gradescope's visibility)")
    p.add_argument("--points", default=None, metavar="FILE", help="the points table (default one point a star)")
    p.add_argument("--level", default="formative", choices=("formative", "summative"),
                   help="the feedback's level in results.json (default formative)")


def run_gradescope(parser, args):
    from exercises.grading import gradescope
    from exercises.grading.instructor import modules_named
    out = gradescope.bundle(args.out, modules_named(args.module or ["all"]), timeout=_timeout(args),
                            visibility=args.visibility, points=args.points, level=args.level)
    print(f"wrote the autograder bundle {out} and {out.with_suffix('.zip')}; upload the .zip to Gradescope")
    return 0


def points_arguments(p):
    p.add_argument("--module", nargs="+", required=True, metavar="MODULE", help="exercise modules, or `all`")
    p.add_argument("--out", default=None, help="the JSON file to write (default: print it)")


def run_points(parser, args):
    from exercises.grading import points
    from exercises.grading.instructor import modules_named
    modules = modules_named(args.module)
    if args.out:
        print(f"wrote {points.write(args.out, modules)}; edit it and give it to grade-folder with --points")
    else:
        import json
        print(json.dumps(points.default_table(modules), indent=1))
    return 0


def answers_template_arguments(p):
    p.add_argument("chapter", help="the chapter's number, e.g. 12")
    p.add_argument("--out", default=None, help="where to write it (default answers/NN.md)")


def run_answers_template(parser, args):
    from exercises.grading import written
    from mini_transformer.engine.files import atomic_write
    from pathlib import Path
    name = written.chapter_name(args.chapter)
    path = Path(args.out or Path("answers") / f"{name.split('_', 1)[0]}.md")
    if path.exists():
        raise CommandError(f"{path} exists; it may hold your answers. Give another --out, or move it first.")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = written.template(args.chapter)
    atomic_write(path, lambda f: f.write(text.encode()))
    print(f"wrote {path}: write your answers under each heading and hand it in with your exercises/")
    return 0


def rubric_arguments(p):
    p.add_argument("chapter", help="the chapter's number, e.g. 12")


def run_rubric(parser, args):
    from exercises.grading import written
    print(written.rubric(args.chapter))
    return 0


def capstone_arguments(p):
    p.add_argument("--rubric", action="store_true", help="print the rubric")
    p.add_argument("--reference", action="store_true", help="run the reference solution and print its ledger")
    p.add_argument("--steps", type=int, default=150, help="training steps of the reference (default 150)")


def run_capstone(parser, args):
    from exercises.grading.paths import INSTRUCTOR_ONLY
    folder = INSTRUCTOR_ONLY / "capstone"
    if not folder.is_dir():
        raise CommandError("this copy of the workbook has no instructor_only/ folder (a student copy): the capstone's "
                           "rubric and reference are in the instructor's copy.")
    if args.rubric == args.reference:
        parser.error("give --rubric or --reference, one of the two.")
    if args.rubric:
        print((folder / "rubric.md").read_text())
        return 0
    import importlib.util
    spec = importlib.util.spec_from_file_location("capstone_reference", folder / "reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    return reference.main(["--steps", str(args.steps)])


def syllabus_arguments(p):
    p.add_argument("-v", "--verbose", action="store_true", help="list every exercise too")


def run_syllabus(parser, args):
    from exercises.grading.syllabus import table
    print(table(args.verbose))
    return 0


def cards_arguments(p):
    p.add_argument("count", nargs="?", type=int, default=None, help="how many cards (default 1)")
    p.add_argument("--chapter", type=int, nargs="+", default=None, metavar="N",
                   help="only the cards of chapter N (or of several: --chapter 2 3)")
    p.add_argument("--seed", type=int, default=None, help="draw the same cards again")
    p.add_argument("--all", action="store_true", help="every card (of the chapter), in a random order")
    p.add_argument("--list", action="store_true", help="list every question, by chapter, and stop")


def run_cards(parser, args):
    from exercises.grading import cards
    if args.all and args.count:
        parser.error("use either a COUNT or --all, not both.")
    if args.count is not None and args.count < 1:
        parser.error(f"COUNT is how many cards to draw, 1 or more; got {args.count}.")
    return cards.main(count=args.count, chapter=args.chapter, seed=args.seed, every=args.all,
                      list_only=args.list)


# ---------------------------------------------------------------------------
# The table, and the one place a refusal becomes a message and an exit code
# ---------------------------------------------------------------------------

class Command(NamedTuple):
    help: str                                                   # the line `python -m exercises --help` shows
    add_arguments: Callable[[argparse.ArgumentParser], None]    # the command's flags, on its subparser
    run: Callable[[argparse.ArgumentParser, argparse.Namespace], int]  # (top parser, arguments) -> exit code


COMMANDS = {
    "grade": Command("grade your exercises and print layered feedback", grade_arguments, run_grade),
    "drill": Command("timed drills: blank file, clock, grade, history", drill_arguments, run_drill),
    "generate": Command("write exercises/ from solutions/", generate_arguments, run_generate),
    "refresh-outputs": Command("execute chapters and store their checked outputs", refresh_outputs_arguments,
                               run_refresh_outputs),
    "release": Command("student notebooks, or with --repo a student copy of the workbook", release_arguments,
                       run_release),
    "grade-folder": Command("grade one entry per student into CSV and JSON", grade_folder_arguments, run_grade_folder),
    "gradescope": Command("write a Gradescope autograder bundle (instructors)", gradescope_arguments, run_gradescope),
    "points": Command("write the default points table (one point a star), to edit", points_arguments, run_points),
    "answers-template": Command("a chapter's written answers to fill: answers/NN.md", answers_template_arguments,
                                run_answers_template),
    "rubric": Command("a chapter's rubric with its model answers (instructors)", rubric_arguments, run_rubric),
    "capstone": Command("the capstone's rubric, or its reference solution (instructors)", capstone_arguments,
                        run_capstone),
    "syllabus": Command("every chapter's exercises, stars and minutes, for planning a course", syllabus_arguments,
                        run_syllabus),
    "cards": Command("drill the interview cards: a question, Enter, the answer", cards_arguments, run_cards),
}


def build_parser():
    top = argparse.ArgumentParser(prog="python -m exercises", description=__doc__.split("\n\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(sub.add_parser(name, help=command.help))
    return top


def main(argv=None):
    r"""Run one command; its exit code. A refusal (``CommandError``, or an unknown module or chapter named in a
    ``LookupError``) is printed as its sentence on stderr, never as a traceback."""
    top = build_parser()
    args = top.parse_args(argv)
    try:
        return COMMANDS[args.command].run(top, args)
    except CommandError as e:
        print(e, file=sys.stderr)
        return e.code
    except LookupError as e:
        print(e.args[0] if e.args else e, file=sys.stderr)
        return 1
