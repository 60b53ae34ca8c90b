r"""Checkpoints: weights, optimiser state and the whole config in one ``.npz``, written atomically.

The config (positional settings included) is stored as JSON inside the file,
so a checkpoint can never be separated from the settings that give its
weights meaning. Loading refuses a model whose positional configuration
differs, and names the field: RoPE weights trained with one base, or position
ids that mean something else, silently produce a different model.

Writes go to a temporary file in the same folder, are flushed to disk, and
only then renamed over the target: an interrupted save leaves the previous
checkpoint untouched.
"""
import json
import os
import tempfile

from .backend import hostnp as np

FORMAT = 1

#: how the model reads position ids; recorded so a checkpoint cannot be reinterpreted silently
POSITION_IDS = "absolute index of the token in the sequence, counted from 0; a cache carries the offset"


def positional_signature(model):
    """The settings that decide what a position means to this model's weights.

    The config's positional fields, plus what the scheme itself reports
    (``scheme.signature()``: for RoPE the base, rotary width, pairing convention,
    original and target length and scaling), plus how position ids are read.
    """
    cfg = model.cfg
    d = cfg.to_dict()
    sig = {"positional": d["positional"], "max_len": d["max_len"], "rope_base": d["rope_base"],
           "rope_scaling": d["rope_scaling"], "sinusoidal_base": d["sinusoidal_base"], "extra": d["extra"],
           "d_head": cfg.d_head, "position_ids": POSITION_IDS}
    sig.update(model.positional.signature())
    return json.loads(json.dumps(sig))  # as it reads back from the file: tuples become lists


def atomic_write(path, write):
    """Call ``write(file_object)`` on a temporary file, fsync it, then rename it to ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; the result is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


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
    """(meta, params, optimizer_state) from a checkpoint file, without building a model."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"No checkpoint at {path!r}.")
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        params = {k[len("param/"):]: z[k] for k in z.files if k.startswith("param/")}
        optim = {k[len("optim/"):]: z[k] for k in z.files if k.startswith("optim/")}
    return meta, params, optim


def load_checkpoint(path, model, optimizer=None):
    """Load a checkpoint into ``model`` (and ``optimizer``); return its metadata.

    Raises ValueError naming the first positional setting that differs between
    the checkpoint and the model.
    """
    meta, params, optim = read_checkpoint(path)
    want, have = meta["positional"], positional_signature(model)
    differ = [k for k in sorted(set(want) | set(have)) if want.get(k) != have.get(k)]
    if differ:
        # name the most telling field: the scheme itself, then a specific setting, then a whole dict
        first = "positional" if "positional" in differ else next(
            (k for k in differ if k not in ("extra", "rope_scaling")), differ[0])
        others = f" (also differing: {', '.join(k for k in differ if k != first)})" if len(differ) > 1 else ""
        raise ValueError(f"The checkpoint {path!r} was trained with {first}={want.get(first)!r}, but the model has "
                         f"{first}={have.get(first)!r}{others}. Build the model from the checkpoint's config "
                         f"(read_checkpoint(path)[0]['config']) or convert the weights deliberately.")
    model.load_state_dict(params)
    if optimizer is not None:
        if "t" in optim:
            optim["t"] = int(optim["t"])
        optimizer.load_state_dict(optim)
    return meta
