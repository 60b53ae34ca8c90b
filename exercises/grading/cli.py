r"""``python -m exercises COMMAND``: the workbook's reader and instructor commands.

    grade [MODULE ...] [--file PATH]        grade your exercises (or one file) and print feedback
          [--exercise N.M]                  only this exercise, e.g. 6.2
    drill [NAME] [--grade | --history]      timed retyping drills
    generate [--check] [--force]            regenerate exercises/ from solutions/ (authors)
    refresh-outputs [CHAPTER ...]           re-execute chapters, store their checked outputs (authors)
    release CHAPTER --out DIR               a student notebook without answers or hints (instructors)
    release --repo --out DIR                a student copy of the whole workbook, without solutions/
    grade-folder DIR --out REPORT           grade a class into REPORT.csv and REPORT.json (instructors)
"""
import argparse


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m exercises", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="grade your exercises and print layered feedback")
    p.add_argument("modules", nargs="*", help="exercise modules (default: all), e.g. rope")
    p.add_argument("--file", help="grade this file instead of exercises/MODULE.py (needs one MODULE)")
    p.add_argument("--exercise", action="append", default=[], metavar="N.M",
                   help="grade only this exercise, e.g. 6.2 (repeat for more)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per exercise (default 10)")

    p = sub.add_parser("drill", help="timed drills: blank file, clock, grade, history")
    p.add_argument("name", nargs="?", help="rope, sinusoidal, alibi or t5; omit to list them")
    p.add_argument("--grade", action="store_true", help="grade the attempt and stop the clock")
    p.add_argument("--history", action="store_true", help="plot your times to a PNG")
    p.add_argument("--out", help="where --history writes the PNG")
    p.add_argument("--attempts-dir", help="folder of attempts (default exercises/drills/attempts, or $PE_DRILL_DIR)")
    p.add_argument("--history-file", help="history JSON (default .drill_history.json, or $PE_DRILL_HISTORY)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per function when grading")

    p = sub.add_parser("generate", help="write exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")
    p.add_argument("--force", action="store_true", help="overwrite exercise files that hold your code")

    p = sub.add_parser("refresh-outputs", help="execute chapters and store their checked outputs")
    p.add_argument("chapters", nargs="*", help="e.g. 06_rope (default: all)")

    p = sub.add_parser("release", help="a student notebook, or with --repo a student copy of the workbook")
    p.add_argument("chapter", nargs="?", help="e.g. 06_rope (not with --repo)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--repo", action="store_true", help="write a whole student copy: no solutions/, answers and "
                                                      "hints dropped from the chapters, stored grading data")

    p = sub.add_parser("grade-folder", help="grade one entry per student into CSV and JSON")
    p.add_argument("folder")
    p.add_argument("--out", required=True, help="report path without suffix; .csv and .json are written")
    p.add_argument("--module", default="rope", help="which exercise module the students wrote (default rope)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per exercise (default 10)")
    p.add_argument("--memory-mb", type=int, default=1024, help="address space of each graded process (default 1024)")
    p.add_argument("--workers", type=int, default=None, help="students graded at once (default: the CPU count)")
    p.add_argument("--wrap", default=None, help="a command to run each graded process under, e.g. a bwrap line "
                                                "(see README.md, 'Grading a class')")

    args = parser.parse_args(argv)
    from exercises.grading.grader import DEFAULT_TIMEOUT
    timeout = getattr(args, "timeout", None) or DEFAULT_TIMEOUT
    try:
        return _run(parser, args, timeout)
    except LookupError as e:  # an unknown module or chapter: a sentence, not a traceback
        raise SystemExit(str(e.args[0] if e.args else e)) from None


def _names_of_exercises(module, numbers):
    """The names graded under the labels ``numbers`` ('6.2' or 'Exercise 6.2') in ``module``."""
    from exercises.grading.knowledge import knowledge
    tails = {n.split()[-1] for n in numbers}
    return [name for name, label in knowledge(module).labels.items() if label.split()[-1] in tails]


def _run(parser, args, timeout):
    if args.command == "grade":
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
            results += grade_file(args.file or EXERCISES / f"{m}.py", m, names=names, timeout=timeout)
        if args.exercise and not results:
            parser.error(f"no exercise {', '.join(args.exercise)} in {', '.join(modules)}; "
                         "give the number the chapter uses, e.g. --exercise 6.2.")
        print(format_results(results))
        return 0 if all(r["status"] != "fail" for r in results) else 1

    if args.command == "drill":
        from exercises.grading import drill
        if args.grade and args.history:
            parser.error("use either --grade or --history, not both.")
        if not args.name:
            print(drill.listing(args.history_file))
            return 0
        if args.history:
            print(f"wrote {drill.plot_history(args.name, args.history_file, args.out, args.attempts_dir)}")
            return 0
        if args.grade:
            passed, text = drill.grade(args.name, args.attempts_dir, args.history_file, timeout=timeout)
            print(text)
            return 0 if passed else 1
        print(drill.start(args.name, args.attempts_dir, args.history_file))
        return 0

    if args.command == "generate":
        from exercises.grading.generate import generate
        report = generate(force=args.force, check=args.check)
        print("\n".join(report) if report else "exercises/ matches solutions/.")
        if args.check:
            return 1 if report else 0
        return 1 if any("not overwritten" in line for line in report) else 0

    if args.command == "refresh-outputs":
        from exercises.grading import notebooks
        for name in args.chapters or notebooks.chapter_names():
            print(f"wrote {notebooks.refresh(name)}")
        return 0

    if args.command == "release":
        from exercises.grading import release
        if args.repo == bool(args.chapter):
            parser.error("give either a CHAPTER (one student notebook) or --repo (a whole student copy).")
        if args.repo:
            print(f"wrote a student copy of the workbook to {release.repository(args.out)}")
        else:
            print(f"wrote {release.notebook(args.chapter, args.out)}")
        return 0

    if args.command == "grade-folder":
        from exercises.grading.instructor import grade_folder
        from exercises.grading.sandbox import Limits
        report = grade_folder(args.folder, args.out, module=args.module, timeout=timeout,
                              limits=Limits(memory_mb=args.memory_mb), wrap=args.wrap, workers=args.workers)
        for s in report["students"]:
            print(f"{s['student']:<24} {s['passed']} of {s['total']}")
        print(f"wrote {report['csv']} and {report['json']}")
        return 0
    return 2
