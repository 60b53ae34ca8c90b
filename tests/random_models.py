"""Small models with O(1) random weights, shared by the test folders that compare a model with itself (a cache with
the full forward pass, a window with a full cache, a stream with one pass): at the library's small init the
differences those tests look for would drown in rounding."""
import numpy as np

from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyGPT


def model_for(positional, max_len=32, n_layers=2, **kw):
    """A float64 TinyGPT (vocabulary 16, d_model 16, 2 heads) with every weight drawn from N(0, 0.5^2), seed 1."""
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=2, max_len=max_len, positional=positional,
                    **kw)
    model = TinyGPT(cfg).to_dtype("float64")
    draw = np.random.default_rng(1)
    for p in model.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return model
