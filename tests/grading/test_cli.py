r"""``python -m exercises``: one table of subcommands, and the one place a refusal becomes a message and an exit code."""
import re

import pytest

from exercises.grading import cli, drill
from exercises.grading.errors import CommandError


def test_every_command_of_the_table_is_in_the_docstring_and_the_help(capsys):
    listed = {m.group(1) for m in re.finditer(r"^    ([a-z-]+) ", cli.__doc__, re.M)}
    assert listed == set(cli.COMMANDS) and len(cli.COMMANDS) == 13
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    shown = capsys.readouterr().out
    for name, command in cli.COMMANDS.items():
        assert name in shown and command.help in " ".join(shown.split())


@pytest.mark.parametrize("code", [1, 2, 3])
def test_a_refusal_becomes_its_sentence_on_stderr_and_its_exit_code(monkeypatch, capsys, code):
    def refuse(parser, args):
        raise CommandError("--out x is not empty; give a new folder.", code=code)
    monkeypatch.setitem(cli.COMMANDS, "rubric", cli.COMMANDS["rubric"]._replace(run=refuse))
    assert cli.main(["rubric", "12"]) == code
    assert capsys.readouterr() == ("", "--out x is not empty; give a new folder.\n")


def test_an_unknown_chapter_is_a_sentence_and_exit_code_1(capsys):
    assert cli.main(["rubric", "99"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("no chapter '99'; give its number, e.g. 12 (the chapters are 00_tiny_transformer")


def test_a_misused_command_line_is_argparse_s_usage_error_exit_code_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["cards", "2", "--all"])
    assert e.value.code == 2
    assert "python -m exercises: error: use either a COUNT or --all, not both." in capsys.readouterr().err


def test_a_pytorch_drill_without_pytorch_is_refused_with_exit_code_2(monkeypatch, capsys):
    monkeypatch.setattr(drill, "torch_available", lambda: False)
    with pytest.raises(CommandError) as e:
        drill.need_torch()
    assert e.value.code == 2 and str(e.value) == drill.INSTALL_TORCH
    monkeypatch.setattr(drill, "torch_available", lambda: True)
    assert drill.need_torch() is None
