r"""Checkpoints: weights, optimiser state and the whole config in one ``.npz``, written atomically.

The config (positional settings included) is stored as JSON inside the file,
so a checkpoint can never be separated from the settings that give its
weights meaning. Loading refuses a model whose positional configuration
differs, in any setting its scheme declares or any config field it reads, and
names the setting: RoPE weights trained with one base, T5 buckets trained for
one direction, or position ids that mean something else silently produce a
different model.

Writes go to a temporary file in the same folder, are flushed to disk, and
only then renamed over the target (``engine.files.atomic_write``): an
interrupted save leaves the previous checkpoint untouched.

Reading never unpickles anything. A file that is empty, cut short, altered
(every array in the archive carries a CRC-32, checked as it is read), or not a
checkpoint at all raises a ValueError that names the file and says which of
these it is.
"""
import json
import os
import zipfile
import zlib

from ..engine.backend import hostnp as np
from ..engine.files import atomic_write

FORMAT = 1

#: how the model reads position ids; recorded so a checkpoint cannot be reinterpreted silently
POSITION_IDS = "absolute index of the token in the sequence, counted from 0; a cache carries the offset"


def positional_signature(model):
    """The settings that decide what a position means to this model's weights.

    The scheme's name, everything the scheme reports (``scheme.signature()``:
    every ``GPTConfig.extra`` setting it declares and every config field it
    reads, as resolved for this model, plus what they imply, e.g. RoPE's rotary
    width and pairing), the head size, and how position ids are read. Settings
    a scheme does not read are left out: an ALiBi checkpoint runs at any
    ``max_len``, and an ``extra`` key spelled out at its default means the
    same as one left out.
    """
    sig = {"positional": model.cfg.positional, "d_head": model.cfg.d_head, "position_ids": POSITION_IDS}
    sig.update(model.positional.signature())
    return json.loads(json.dumps(sig))  # as it reads back from the file: tuples become lists


def save_checkpoint(path, model, optimizer=None, step=0, train_state=None):
    """Save weights, optimiser moments, the step, the config and any JSON-able ``train_state``."""
    arrays = {f"param/{k}": v for k, v in model.state_dict().items()}
    if optimizer is not None:
        for k, v in optimizer.state_dict().items():
            arrays[f"optim/{k}"] = np.asarray(v)
    meta = {"format": FORMAT, "config": model.cfg.to_dict(), "positional": positional_signature(model),
            "model_class": type(model).__name__, "step": int(step), "train_state": train_state or {}}
    arrays["__meta__"] = np.array(json.dumps(meta))
    atomic_write(path, lambda f: np.savez(f, **arrays))


def read_checkpoint(path):
    """(meta, params, optimizer_state) from a checkpoint file, without building a model.

    Raises FileNotFoundError when there is no file, and ValueError naming the
    file when it is damaged or not a checkpoint.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"No checkpoint at {path!r}.")
    with open(path, "rb") as f:
        start = f.read(len(_ZIP_MAGIC))
    if not start:
        raise _unreadable(path, "it is empty (0 bytes): a save that never ran, or a copy that failed")
    if start != _ZIP_MAGIC:
        if _ZIP_MAGIC.startswith(start):
            raise _unreadable(path, f"it ends after {len(start)} bytes, inside the zip archive's first header")
        raise _unreadable(path, f"it starts with the bytes {start!r}, and a checkpoint (an .npz zip archive "
                                f"written by save_checkpoint) starts with {_ZIP_MAGIC!r}", damaged=False)
    try:
        with np.load(path, allow_pickle=False) as z:
            # every member is read, so each one's CRC-32 and its name in both zip headers are checked
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error, ValueError, KeyError, NotImplementedError,
            RuntimeError) as e:                                 # RuntimeError: a flag says "encrypted"
        # from None: numpy's own message for pickled data suggests loading it unsafely, which we never do
        raise _unreadable(path, _reason(e), damaged="pickle" not in str(e)) from None
    if "__meta__" not in arrays:
        if any(k.startswith("param/") for k in arrays):         # weights but no record: the zip index lost it
            raise _unreadable(path, "it holds weights but not the record of their config ('__meta__'), which "
                                    "save_checkpoint always writes")
        raise _unreadable(path, "it is a zip archive without the record of a config ('__meta__') that "
                                "save_checkpoint writes", damaged=False)
    try:
        meta = json.loads(str(arrays["__meta__"]))
    except ValueError as e:
        raise _unreadable(path, f"its record of the config is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _unreadable(path, f"its record says checkpoint format {found!r}, and this version reads "
                                f"format {FORMAT}", damaged=False)
    lacking = [k for k in ("config", "positional") if k not in meta]
    if lacking:
        raise _unreadable(path, f"its record of format {FORMAT} lacks {lacking[0]!r}")
    params = {k[len("param/"):]: v for k, v in arrays.items() if k.startswith("param/")}
    optim = {k[len("optim/"):]: v for k, v in arrays.items() if k.startswith("optim/")}
    return meta, params, optim


_ZIP_MAGIC = b"PK\x03\x04"


def _reason(error):
    """What went wrong, in words, from the exception the zip or npy reader raised."""
    text = str(error)
    if "pickle" in text:
        return "it holds a Python object array, which a checkpoint never does, and such data is not read"
    if isinstance(error, EOFError) or "not a zip file" in text:
        return f"it ends early or its zip index is missing, as when a copy or download was cut short ({text})"
    return f"the archive does not read back as it was written ({type(error).__name__}: {text})"


def _unreadable(path, reason, damaged=True):
    """The ValueError for a file that cannot be read as a checkpoint: which file, what is wrong, what to do."""
    if damaged:
        return ValueError(f"The file {path!r} is damaged: {reason}. Nothing was loaded; use another copy of the "
                          f"checkpoint, or save it again from the model.")
    return ValueError(f"The file {path!r} is not a checkpoint: {reason}. Nothing was loaded; check the path "
                      f"(save_checkpoint writes the files read_checkpoint reads).")


def load_checkpoint(path, model, optimizer=None):
    """Load a checkpoint into ``model`` (and ``optimizer``); return its metadata.

    Raises ValueError naming the first positional setting that differs between
    the checkpoint and the model.
    """
    meta, params, optim = read_checkpoint(path)
    want, have = meta["positional"], positional_signature(model)
    differ = [k for k in sorted(set(want) | set(have)) if want.get(k) != have.get(k)]
    if differ:
        # name the most telling field first: the scheme itself, then a setting the config spells (in the scheme's
        # order), then one derived from them (RoPE's rope_type, pairing), a whole dict (rope_scaling) last
        declared = type(model.positional).declared()
        first = min(differ, key=lambda k: (k != "positional", isinstance(want.get(k, have.get(k)), dict),
                                           k not in declared, declared.index(k) if k in declared else 0, k))
        others = "; ".join(f"{k}={want.get(k)!r} in the checkpoint, {have.get(k)!r} in the model"
                           for k in differ if k != first)
        raise ValueError(f"The checkpoint {path!r} was trained with {first}={want.get(first)!r}, but the model has "
                         f"{first}={have.get(first)!r}" + (f" (also differing: {others})" if others else "") +
                         ". Build the model from the checkpoint's config (read_checkpoint(path)[0]['config']) or "
                         "convert the weights deliberately.")
    model.load_state_dict(params)
    if optimizer is not None:
        optimizer.load_state_dict(optim)
    return meta
