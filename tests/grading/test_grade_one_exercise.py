"""``python -m exercises grade --exercise N.M``: one exercise alone, its module found from the number."""
import pytest

from exercises.grading.cli import main
from exercises.grading.generate import generated_text
from exercises.grading.modules.exercise_text import fill


def test_grading_one_exercise_reports_that_exercise_alone(tmp_path, capsys):
    path = tmp_path / "rope.py"
    body = "h = x.shape[-1] // 2\nreturn xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)"
    path.write_text(fill(generated_text("rope"), "Exercise 6.1", body))
    assert main(["grade", "rope", "--exercise", "6.1", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Exercise 6.1" in out and "rotate_half" in out and "pass" in out
    assert "Exercise 6.2" not in out and "1 of 1 pass." in out


def test_an_unknown_exercise_number_is_one_sentence(capsys):
    with pytest.raises(SystemExit):
        main(["grade", "rope", "--exercise", "6.99"])
    assert "no exercise 6.99 in rope" in capsys.readouterr().err
