"""atomic_write: a file is written whole or not at all, beside its target, as an ordinary file."""
import os
import stat

import pytest

from mini_transformer.engine.files import atomic_write


def test_a_write_that_raises_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "result.json"
    atomic_write(path, lambda f: f.write(b"first"))

    def half(f):
        f.write(b"sec")
        raise RuntimeError("disk full")
    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, half)
    assert path.read_bytes() == b"first"
    assert os.listdir(tmp_path) == ["result.json"]


def test_the_file_is_made_in_a_new_folder_with_the_umask_s_permissions(tmp_path):
    path = tmp_path / "a" / "b" / "out.txt"
    old = os.umask(0o027)
    try:
        atomic_write(str(path), lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert path.read_bytes() == b"x"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # 0o666 less the umask, not mkstemp's private 0o600
