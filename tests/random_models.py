"""The model tests' smallest config and seeded ids (``tiny``, ``ids``), and small models with O(1) random weights, shared by the test folders that compare a model with itself (a cache with
the full forward pass, a window with a full cache, a stream with one pass): at the library's small init the
differences those tests look for would drown in rounding."""
import numpy as np

from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyGPT


def tiny(positional="rope", **kw):
    """The config of the model tests' smallest TinyGPT: vocabulary 16, d_model 16, 2 layers, 2 heads, max_len 16."""
    cfg = dict(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=16, positional=positional)
    cfg.update(kw)
    return GPTConfig(**cfg)


def ids(B, T, vocab=16, seed=0):
    """Seeded token ids ``(B, T)`` on the host."""
    return np.random.default_rng(seed).integers(0, vocab, (B, T))


# settings that make a scheme act within these models' few positions: at Llama 4's floor_scale 8192 the
# temperature scale is 1 at every position the tests reach, and the scheme would be NoPE
ACTIVE = {"temperature": {"floor_scale": 2, "attn_scale": 0.5}}      # tau steps at positions 1, 3, 5, ...


def model_for(positional, max_len=32, n_layers=2, **kw):
    """A float64 TinyGPT (vocabulary 16, d_model 16, 2 heads) with every weight drawn from N(0, 0.5^2), seed 1;
    a scheme in ``ACTIVE`` gets those settings unless ``extra`` is given."""
    kw.setdefault("extra", dict(ACTIVE.get(positional, {})))
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=2, max_len=max_len, positional=positional,
                    **kw)
    model = TinyGPT(cfg).to_dtype("float64")
    draw = np.random.default_rng(1)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model
