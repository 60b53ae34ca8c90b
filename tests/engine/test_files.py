"""atomic_write: a file is written whole or not at all, beside its target, as an ordinary file."""
import glob
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


@pytest.mark.parametrize("umask, mode", [(0o027, 0o640), (0o022, 0o644), (0o000, 0o666)])
def test_the_file_is_made_in_a_new_folder_with_the_umask_s_permissions(tmp_path, umask, mode):
    path = tmp_path / "a" / "b" / "out.txt"
    old = os.umask(umask)
    try:
        atomic_write(str(path), lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert path.read_bytes() == b"x"
    # 0o666 less the umask, worked by hand: not mkstemp's private 0o600, and never executable
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_while_writing_the_temporary_is_a_hidden_file_beside_the_target_named_after_it(tmp_path):
    # beside it, so the rename stays in one folder; hidden (".tmp-"), so a glob for results never picks up
    # half a file; named after the target, so a leftover says what it was (the grader's sandbox and the
    # remake look for ".tmp-" leftovers by that prefix)
    path = tmp_path / "result.json"
    seen = []

    def write(f):
        f.write(b"{}")
        seen.append((os.listdir(tmp_path), glob.glob(str(tmp_path / "*.json"))))
    atomic_write(path, write)
    (names, globbed), = seen
    assert len(names) == 1 and names[0].startswith(".tmp-") and names[0].endswith("result.json")
    assert globbed == []
    assert os.listdir(tmp_path) == ["result.json"]
