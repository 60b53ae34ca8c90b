r"""``python -m exercises COMMAND``: see ``exercises/grading/cli.py`` or ``python -m exercises --help``."""
import sys

from exercises.grading.cli import main

sys.exit(main())
