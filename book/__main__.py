r"""``python -m book --out DIR``: the book as a website, every chapter executed, searchable, offline.

The one command line of ``book/``: it parses the arguments, calls ``site.main`` and turns a refusal
(``CommandError``) into its sentence on stderr and the exit code, as ``python -m exercises`` does.
"""
import argparse
import sys

from exercises.grading.errors import CommandError


def parser():
    p = argparse.ArgumentParser(prog="python -m book",
                                description="The book as a website: every chapter executed, searchable, offline.")
    p.add_argument("--out", required=True, help="the site's folder, e.g. site/ (open its index.html)")
    p.add_argument("--student", action="store_true", help="leave out hints and reference solutions, as the "
                                                          "student release does")
    p.add_argument("--chapters", nargs="+", default=None, metavar="CHAPTER",
                   help="only these chapters, e.g. 02_sinusoidal 07_alibi (default: every chapter)")
    p.add_argument("--work", default=None, help="the build's own folder: source, Sphinx state "
                                                "(default build/site/full or build/site/student)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only warnings, errors and the summary")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    from book import site
    try:
        return site.main(args.out, chapters=args.chapters, student=args.student, work=args.work, quiet=args.quiet)
    except CommandError as e:
        print(e, file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
