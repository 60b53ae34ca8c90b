"""Checkpoints: a damaged file or a stranger is refused by name, a save that dies midway leaves no wreck, and
every positional setting of every scheme is bound to the weights.

Every way a file can go wrong on its way to disk and back (empty, cut short,
altered, or never a checkpoint) must end in one ValueError that names the file
and says which it is, never in a raw zip or pickle traceback, and never with
advice to unpickle.
"""
import dataclasses
import errno
import io
import json
import os
import re
import traceback
import zipfile

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional import SCHEMES

from random_models import ids, tiny


def small(**kw):
    settings = dict(vocab_size=8, d_model=8, n_layers=1, n_heads=2, max_len=8, positional="rope")
    settings.update(kw)
    return TinyGPT(GPTConfig(**settings))


@pytest.fixture
def saved(tmp_path):
    """(path, model, the file's bytes) of a freshly saved small checkpoint."""
    path = tmp_path / "model.npz"
    model = small()
    save_checkpoint(str(path), model)
    return path, model, path.read_bytes()


def _npz_bytes(**arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _first_weight_bytes():
    """The bytes of the embedding table of ``small()``: the first weight in its checkpoint."""
    return np.ascontiguousarray(small().state_dict()["tok.weight"]).tobytes()


def _flip(raw, offset):
    out = bytearray(raw)
    out[offset] ^= 0xFF
    return bytes(out)


# each entry: the saved file's bytes -> the damaged bytes
DAMAGED = {
    "empty": lambda raw: b"",
    "cut after 3 bytes": lambda raw: raw[:3],
    "cut in half": lambda raw: raw[:len(raw) // 2],
    "last byte missing": lambda raw: raw[:-1],
    # np.savez stores arrays uncompressed, so a weight's bytes, and the config's JSON (a unicode array,
    # 4 bytes a character), can be found in the file
    "a byte of a weight flipped": lambda raw: _flip(raw, raw.index(_first_weight_bytes()) + 5),
    "a byte of the config flipped": lambda raw: _flip(raw, raw.index('"rope_base"'.encode("utf-32-le")) + 8),
    "a name in the zip index flipped": lambda raw: _flip(raw, raw.rindex(b"__meta__.npy") + 3),
}

NOT_A_CHECKPOINT = {
    "a text file": lambda raw: b"step 100: loss 1.23\n",
    "one .npy array": lambda raw: _npy_bytes(np.arange(4.0)),
    "an .npz of other arrays": lambda raw: _npz_bytes(weights=np.ones(3)),
    "an .npz holding a pickled object": lambda raw: _npz_bytes(
        __meta__=np.array(json.dumps({"format": 1, "config": {}, "positional": {}})),
        payload=np.array([{"run": "me"}], dtype=object)),
    "another format": lambda raw: _npz_bytes(__meta__=np.array(json.dumps({"format": 99}))),
    "a record that is a list": lambda raw: _npz_bytes(__meta__=np.array(json.dumps([1, 2]))),
}


def _refusal(path, kind):
    """The start every refusal of this file shares: the file's name in quotes, then what is wrong with it."""
    return re.escape(f"The file {str(path)!r} {kind}:")


# what the refusal says after the file's name, for each kind of damage
REASON = {
    "empty": "it is empty (0 bytes)",
    "cut after 3 bytes": "it ends after 3 bytes, inside the zip archive's first header",
    "cut in half": "it ends early or its zip index is missing, as when a copy or download was cut short",
    "last byte missing": "it ends early or its zip index is missing",
    "a byte of a weight flipped": "the archive does not read back as it was written (BadZipFile: Bad CRC-32 for "
                                  "file 'param/tok.weight.npy')",
    "a byte of the config flipped": "the archive does not read back as it was written (BadZipFile: Bad CRC-32 for "
                                    "file '__meta__.npy')",
    "a name in the zip index flipped": "the archive does not read back as it was written (BadZipFile: File name in "
                                       "directory",
    "the record without its positional settings": "its record of format 1 lacks 'positional'",
    "a record that is not JSON": "its record of the config is not valid JSON",
}
DAMAGED["the record without its positional settings"] = lambda raw: _npz_bytes(
    __meta__=np.array(json.dumps({"format": 1, "config": {}})), **{"param/w": np.ones(2)})
DAMAGED["a record that is not JSON"] = lambda raw: _npz_bytes(__meta__=np.array("{format: 1"))


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_file_is_refused_by_name(damage, saved, tmp_path):
    bad = tmp_path / "copy.npz"
    bad.write_bytes(DAMAGED[damage](saved[2]))
    message = _assert_refused(bad, "is damaged")
    assert message.startswith(f"The file {str(bad)!r} is damaged: {REASON[damage]}"), message
    assert message.endswith(". Nothing was loaded; use another copy of the checkpoint, or save it again from the "
                            "model."), message


@pytest.mark.parametrize("stranger", list(NOT_A_CHECKPOINT))
def test_a_file_that_is_not_a_checkpoint_is_refused_by_name(stranger, saved, tmp_path):
    bad = tmp_path / "other.npz"
    bad.write_bytes(NOT_A_CHECKPOINT[stranger](saved[2]))
    message = _assert_refused(bad, "is not a checkpoint")
    assert message.startswith(f"The file {str(bad)!r} is not a checkpoint: {STRANGER_REASON[stranger]}"), message
    assert message.endswith(". Nothing was loaded; check the path (save_checkpoint writes the files read_checkpoint "
                            "reads)."), message


STRANGER_REASON = {
    "a text file": "it starts with the bytes b'step', and a checkpoint (an .npz zip archive written by "
                   "save_checkpoint) starts with b'PK\\x03\\x04'",
    "one .npy array": "it starts with the bytes b'\\x93NUM'",
    "an .npz of other arrays": "it is a zip archive without the record of a config ('__meta__') that "
                               "save_checkpoint writes",
    "an .npz holding a pickled object": "it holds a Python object array, which a checkpoint never does, and such "
                                        "data is not read",
    "another format": "its record says checkpoint format 99, and this version reads format 1",
    "a record that is a list": "its record says checkpoint format None, and this version reads format 1",
}


def _assert_refused(path, kind):
    with pytest.raises(ValueError, match=_refusal(path, kind)) as info:
        read_checkpoint(str(path))
    shown = "".join(traceback.format_exception(info.value))
    assert "allow_pickle" not in shown and "pickle.load" not in shown, shown   # no advice to load unsafely
    assert "Traceback" in shown and shown.count("Traceback") == 1, shown    # one error, no zip error chained on
    # load_checkpoint says the same and leaves the model as it was
    model = small(seed=5)
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=_refusal(path, kind)):
        load_checkpoint(str(path), model)
    assert all(np.array_equal(before[k], v) for k, v in model.state_dict().items())
    return str(info.value)


def test_a_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(f"No checkpoint at {str(tmp_path / 'gone.npz')!r}")):
        read_checkpoint(str(tmp_path / "gone.npz"))


@pytest.mark.slow
def test_every_flipped_byte_is_caught_or_changes_nothing(saved, tmp_path):
    # zip stores a CRC-32 of every member and both headers' copies of its name, and a CRC catches every single-byte
    # error: so a flip inside any member's data must be refused, and a flip elsewhere (a header field the reader
    # does not use) may load, but then exactly as saved
    path, _, raw = saved
    meta, params, _ = read_checkpoint(str(path))
    inside = np.zeros(len(raw), dtype=bool)                         # the bytes of the members' data
    with zipfile.ZipFile(path) as z:
        for member in z.infolist():
            # a local header is 30 bytes, then the name and the extra field, whose lengths sit at bytes 26 and 28
            at = member.header_offset
            start = at + 30 + int.from_bytes(raw[at + 26:at + 28], "little") + int.from_bytes(raw[at + 28:at + 30],
                                                                                                "little")
            inside[start:start + member.file_size] = True
    bad = tmp_path / "flipped.npz"
    loaded = []
    for offset in range(0, len(raw), 23):                         # about 500 flips, every region of the file
        bad.write_bytes(_flip(raw, offset))
        try:
            got_meta, got_params, _ = read_checkpoint(str(bad))
        except ValueError as e:
            # a flip in the 4-byte signature makes a file that no longer says it is a zip archive
            kind = "is not a checkpoint" if offset < 4 else "is damaged"
            assert re.match(_refusal(bad, kind), str(e)), (offset, str(e))
            continue
        loaded.append(offset)
        assert got_meta == meta and got_params.keys() == params.keys(), offset
        assert all(np.array_equal(got_params[k], v) for k, v in params.items()), offset
    assert not inside[loaded].any(), [o for o in loaded if inside[o]]
    assert 0 < len(loaded) < 0.5 * len(range(0, len(raw), 23))        # most flips are caught; some are harmless


# ---------------------------------------------------------------------------
# A save that dies midway
# ---------------------------------------------------------------------------

class _DiesAfter:
    """A file that writes ``limit`` bytes, then raises ``error`` (a full disk, a Ctrl-C)."""

    def __init__(self, f, limit, error):
        self._f, self._left, self._error = f, limit, error

    def write(self, b):
        if len(b) > self._left:
            self._f.write(bytes(b[:self._left]))
            self._left = 0
            raise self._error
        self._left -= len(b)
        return self._f.write(b)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)


def _dies_in_write(limit, error):
    def install(monkeypatch):
        real = os.fdopen
        monkeypatch.setattr(os, "fdopen", lambda fd, mode="r": _DiesAfter(real(fd, mode), limit, error))
    return install


def _raises_in(name, error):
    def install(monkeypatch):
        def fail(*args, **kwargs):
            raise error
        monkeypatch.setattr(os, name, fail)
    return install


CRASHES = {
    "disk full after 100 bytes": (_dies_in_write(100, OSError(errno.ENOSPC, "No space left on device")), OSError),
    "disk full after 3000 bytes": (_dies_in_write(3000, OSError(errno.ENOSPC, "No space left on device")), OSError),
    "Ctrl-C after 1000 bytes": (_dies_in_write(1000, KeyboardInterrupt()), KeyboardInterrupt),
    "fsync fails": (_raises_in("fsync", OSError(errno.EIO, "Input/output error")), OSError),
    "the rename fails": (_raises_in("replace", OSError(errno.EXDEV, "Invalid cross-device link")), OSError),
}


@pytest.mark.parametrize("earlier", [True, False], ids=["over an earlier checkpoint", "first save"])
@pytest.mark.parametrize("crash", list(CRASHES))
def test_a_save_that_dies_midway_leaves_the_earlier_file_whole_and_nothing_else(crash, earlier, tmp_path,
                                                                                monkeypatch):
    path = tmp_path / "model.npz"
    old_model = small(seed=1)
    if earlier:
        save_checkpoint(str(path), old_model)
    before = path.read_bytes() if earlier else None
    install, error = CRASHES[crash]
    with monkeypatch.context() as patch:
        install(patch)
        with pytest.raises(error):
            save_checkpoint(str(path), small(seed=2))
    assert sorted(os.listdir(tmp_path)) == (["model.npz"] if earlier else [])
    if earlier:
        assert path.read_bytes() == before
        reloaded = small(seed=3)
        load_checkpoint(str(path), reloaded)
        x = np.arange(6)[None] % 8
        assert np.array_equal(backend.to_numpy(reloaded(x).data), backend.to_numpy(old_model(x).data))


def test_the_crash_helpers_really_crash_inside_the_write(tmp_path, monkeypatch):
    # the disk-full file must have written part of the archive before failing, or the test above tests nothing
    written = []
    real = os.fdopen

    def spy(fd, mode="r"):
        f = _DiesAfter(real(fd, mode), 3000, OSError(errno.ENOSPC, "full"))
        written.append(f)
        return f
    monkeypatch.setattr(os, "fdopen", spy)
    with pytest.raises(OSError, match="full"):
        save_checkpoint(str(tmp_path / "m.npz"), small())
    assert len(written) == 1 and written[0]._left == 0


# ---------------------------------------------------------------------------
# Every positional setting of every scheme is bound
# ---------------------------------------------------------------------------

# a value unlike the default for every GPTConfig.extra setting a scheme declares and every config field it reads
# (defaults for d_model 8, 2 heads, max_len 9: mem_len 9, window_size 3, d_rope 2, rotary width 4)
CHANGED = {"shaw_k": 3, "shaw_values": False, "mem_len": 5, "num_buckets": 8, "max_distance": 64,
           "bidirectional": True, "rope_interleaved": True, "partial_rotary_factor": 0.5, "window_size": 4,
           "d_rope": 4, "rope_base": 500.0, "sinusoidal_base": 100.0, "max_len": 12,
           "rope_scaling": {"rope_type": "linear", "factor": 2.0}, "mrope_section_t": 0, "mrope_section_h": 0,
           "mrope_interleaved": True, "fire_width": 16, "fire_L": 4.0, "floor_scale": 4, "attn_scale": 0.25}
FIELDS = {f.name for f in dataclasses.fields(GPTConfig)}
BINDINGS = [(name, key) for name, cls in SCHEMES.items() for key in cls.declared()]


def scheme_model(name, cls=TinyGPT, **changes):
    extra = {k: v for k, v in changes.items() if k not in FIELDS}
    fields = {k: v for k, v in changes.items() if k in FIELDS}
    return cls(GPTConfig(**{**dict(vocab_size=8, d_model=8, n_layers=1, n_heads=2, max_len=9, positional=name),
                            **fields, "extra": extra}))


def test_every_setting_of_every_scheme_is_listed_here():
    assert {key for _, key in BINDINGS} <= set(CHANGED), "add a changed value for the new setting"
    assert {name for name, _ in BINDINGS} == set(SCHEMES) - {"none", "alibi"}      # the two with no setting


@pytest.mark.parametrize("name,key", BINDINGS, ids=[f"{n}-{k}" for n, k in BINDINGS])
def test_a_checkpoint_refuses_a_model_with_any_one_positional_setting_changed(name, key, tmp_path):
    path = str(tmp_path / f"{name}.npz")
    save_checkpoint(path, scheme_model(name))
    saved = read_checkpoint(path)[0]["positional"]
    model = scheme_model(name, seed=4, **{key: CHANGED[key]})
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError) as info:
        load_checkpoint(path, model)
    message = str(info.value)
    want = json.loads(json.dumps(CHANGED[key]))                          # as the signature stores it
    assert f"{key}={saved[key]!r}" in message and f"{want!r}" in message, message
    assert all(np.array_equal(before[k], v) for k, v in model.state_dict().items())   # nothing was loaded


@pytest.mark.parametrize("name,key,in_decoder", [("t5", "bidirectional", False), ("alibi", "bidirectional", False),
                                                 ("transformer_xl", "causal", True)])
def test_a_decoder_checkpoint_refuses_an_encoder_and_back(name, key, in_decoder, tmp_path):
    # the encoder form reads positions in both directions: the same weights would mean something else
    path = str(tmp_path / f"{name}.npz")
    decoder, encoder = f"{key}={in_decoder}", f"{key}={not in_decoder}"
    save_checkpoint(path, scheme_model(name))
    with pytest.raises(ValueError, match=re.escape(f"trained with {decoder}, but the model has {encoder}")):
        load_checkpoint(path, scheme_model(name, TinyEncoder))
    save_checkpoint(path, scheme_model(name, TinyEncoder))
    with pytest.raises(ValueError, match=re.escape(f"trained with {encoder}, but the model has {decoder}")):
        load_checkpoint(path, scheme_model(name))


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_same_settings_load_however_they_are_spelled(name, tmp_path):
    # another seed, and every declared setting written out at the value the saved model resolved it to
    path = str(tmp_path / f"{name}.npz")
    model = scheme_model(name)
    save_checkpoint(path, model)
    names = [f.name for f in dataclasses.fields(type(model.positional).Settings)]
    spelled = {k: v for k, v in model.positional.signature().items() if k in names}
    twin = scheme_model(name, seed=7, **spelled)
    load_checkpoint(path, twin)
    x = np.arange(9)[None] % 8
    assert np.array_equal(backend.to_numpy(twin(x).data), backend.to_numpy(model(x).data))


def test_a_scheme_that_does_not_read_max_len_runs_a_checkpoint_at_any_length(tmp_path):
    # ALiBi trains short and runs long: its checkpoint must load into the same model built for a longer max_len
    path = str(tmp_path / "alibi.npz")
    save_checkpoint(path, scheme_model("alibi"))
    load_checkpoint(path, scheme_model("alibi", max_len=64))



def test_a_checkpoint_records_what_it_says_it_does(tmp_path):
    from mini_transformer.model.checkpoint import POSITION_IDS
    from mini_transformer.engine.optim import AdamW
    path = str(tmp_path / "m.npz")
    model = small()
    save_checkpoint(path, model)                                         # step 0, no optimiser, no train state
    meta, params, optim = read_checkpoint(path)
    assert (meta["format"], meta["model_class"], meta["step"], meta["train_state"], optim) == (1, "TinyGPT", 0, {}, {})
    assert {k: meta["positional"][k] for k in ("positional", "d_head", "position_ids")} == {
        "positional": "rope", "d_head": 4, "position_ids": POSITION_IDS}
    assert params.keys() == model.state_dict().keys()
    # with an optimiser after one step: its moments and its step count come back, the count as an int
    opt = AdamW(model.parameters(), lr=1e-2)
    model.zero_grad()
    model(np.arange(6)[None] % 8).sum().backward()
    opt.step()
    save_checkpoint(path, model, opt, step=7, train_state={"seen": [1, 2]})
    meta, _, optim = read_checkpoint(path)
    assert (meta["step"], meta["train_state"]) == (7, {"seen": [1, 2]})
    state = opt.state_dict()
    assert optim.keys() == state.keys() and all(np.array_equal(optim[k], np.asarray(v)) for k, v in state.items())
    twin_model = small(seed=2)
    twin = AdamW(twin_model.parameters(), lr=1e-2)
    load_checkpoint(path, twin_model, twin)
    assert twin.t == opt.t == 1 and type(twin.t) is int
    for a, b in zip(twin.state_dict().values(), state.values()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_save_writes_a_hidden_temporary_file_beside_its_target(tmp_path, monkeypatch):
    # the rename is atomic only within one folder, and a half-written file must not look like a checkpoint
    seen = []
    real = os.fdopen

    def spy(fd, mode="r"):
        seen.append(sorted(os.listdir(tmp_path)))
        return real(fd, mode)
    monkeypatch.setattr(os, "fdopen", spy)
    save_checkpoint(str(tmp_path / "model.npz"), small())
    assert len(seen) == 1 and len(seen[0]) == 1
    assert seen[0][0].startswith(".tmp-") and seen[0][0].endswith("model.npz")
    assert os.listdir(tmp_path) == ["model.npz"]


def test_a_refusal_names_the_first_declared_setting_and_lists_the_others(tmp_path):
    path = str(tmp_path / "t5.npz")
    save_checkpoint(path, scheme_model("t5"))
    with pytest.raises(ValueError) as info:
        load_checkpoint(path, scheme_model("t5", num_buckets=8, max_distance=64))
    assert f"The checkpoint {path!r} was trained with num_buckets=32, but the model has num_buckets=8 (also " \
           "differing: max_distance=128 in the checkpoint, 64 in the model). Build the model from the checkpoint's " \
           "config (read_checkpoint(path)[0]['config']) or convert the weights deliberately." == str(info.value)
    # another scheme: the scheme is named first, and settings only one side has are listed with None
    with pytest.raises(ValueError) as info:
        load_checkpoint(path, scheme_model("alibi"))
    message = str(info.value)
    assert "trained with positional='t5', but the model has positional='alibi' (also differing: " in message
    assert "num_buckets=32 in the checkpoint, None in the model" in message


def test_a_model_on_your_own_rope_functions_records_which_functions(tmp_path):
    # from_functions.rope (the chapter's side-by-side training) binds the function that turns q and k by name, so
    # its weights never load silently into the library's RoPE, nor the library's into it
    from exercises.adapters import from_functions
    from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary
    mine = scheme_model("rope")
    mine.positional = from_functions.rope(RotaryEmbedding(4), apply_rotary)
    assert mine.positional.signature() == {"from_functions": "mini_transformer.positional.rope.apply_rotary"}
    path = str(tmp_path / "mine.npz")
    save_checkpoint(path, mine)
    assert read_checkpoint(path)[0]["positional"]["from_functions"] == "mini_transformer.positional.rope.apply_rotary"
    with pytest.raises(ValueError, match=r"from_functions='mini_transformer\.positional\.rope\.apply_rotary' in the "
                                         r"checkpoint, None in the model"):
        load_checkpoint(path, scheme_model("rope"))


# ---------------------------------------------------------------------------
# A round trip, a save interrupted inside np.savez, the saved file's permissions
# ---------------------------------------------------------------------------

def test_checkpoint_round_trip_and_positional_mismatch(tmp_path):
    path = str(tmp_path / "model.npz")
    model = TinyGPT(tiny("rope", rope_base=500.0))
    save_checkpoint(path, model)
    twin = TinyGPT(tiny("rope", rope_base=500.0, seed=3))
    load_checkpoint(path, twin)
    x = ids(1, 5)
    assert np.array_equal(model(x).numpy(), twin(x).numpy())
    meta, _, _ = read_checkpoint(path)
    assert meta["config"]["rope_base"] == 500.0 and meta["positional"]["d_head"] == 8
    with pytest.raises(ValueError, match=r"rope_base=500.0.*rope_base=10000.0"):
        load_checkpoint(path, TinyGPT(tiny("rope")))
    with pytest.raises(ValueError, match=r"positional='rope'.*positional='learned'"):
        load_checkpoint(path, TinyGPT(tiny("learned", rope_base=500.0)))


def test_interrupted_save_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    path = str(tmp_path / "model.npz")
    model = TinyGPT(tiny("rope"))
    save_checkpoint(path, model)
    before = open(path, "rb").read()
    from mini_transformer.model import checkpoint

    def crash(f, **arrays):
        f.write(b"half a file")
        raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint.np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["model.npz"]


def test_saved_files_get_ordinary_permissions(tmp_path):
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), TinyGPT(tiny("rope")))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
