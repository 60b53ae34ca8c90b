"""``python -m mini_transformer.model.train``: trains, saves, resumes from its checkpoint, and refuses bad input in a sentence."""
import pytest

from mini_transformer.model import train
from mini_transformer.model.checkpoint import read_checkpoint

SMALL = ["--d-model", "16", "--layers", "1", "--heads", "2", "--max-len", "8", "--batch", "2",
         "--corpus-bytes", "300000", "--no-progress"]


def test_train_then_resume_to_a_later_step(tmp_path, capsys):
    path = str(tmp_path / "run.npz")
    first = train.main(["--positional", "alibi", "--steps", "2", "--out", path] + SMALL)
    meta = read_checkpoint(path)[0]
    assert meta["step"] == 2 and meta["config"]["positional"] == "alibi" and len(first.losses) == 2
    second = train.main(["--resume", path, "--steps", "3"] + SMALL)
    assert read_checkpoint(path)[0]["step"] == 3 and len(second.losses) == 1     # only the step that was left
    assert "saved" in capsys.readouterr().out


def test_a_missing_checkpoint_is_one_sentence(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train.main(["--resume", str(tmp_path / "nowhere.npz")] + SMALL)
    assert "No checkpoint at" in capsys.readouterr().err
