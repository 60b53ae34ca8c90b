r"""The one error the workbook's commands refuse with.

A module the command line calls raises ``CommandError`` with a sentence for the person at the
keyboard (what was given, what is allowed); only ``cli.py`` turns it into that message on stderr and
an exit code. Raising ``SystemExit`` deep inside a module would end a notebook's kernel, a test
run or an instructor's script that called it, so nothing outside the command line does.
"""


class CommandError(Exception):
    """A refusal meant for the person at the keyboard: its message is a whole sentence; ``code`` is the exit code."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code
