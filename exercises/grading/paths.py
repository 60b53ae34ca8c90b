r"""Where the workbook's folders are: the one place that knows the repository's layout."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"  # the reference answers (absent from a student copy)
EXERCISES = ROOT / "exercises"  # the reader's files
CHAPTERS = ROOT / "chapters"
GRADING = EXERCISES / "grading"
STORED = GRADING / "stored"  # a student copy's compiled checks (written by `release --repo`)
