r"""The model floor: attention, the Transformer, its cache, checkpoints, data and training.

``transformer`` (``GPTConfig``, ``TinyGPT``, ``TinyEncoder``), ``attention``, ``kv_cache``,
``checkpoint``, the data (``tokenizer``, ``corpus``, ``tasks``) and ``train``
(``python -m mini_transformer.model.train``). It builds on ``engine`` and ``positional`` and
imports nothing from ``evaluation``.
"""
from .transformer import (GPTConfig, TinyEncoder, TinyGPT, Transformer, batch_mask, document_mask,  # noqa: F401
                          left_padded_positions)
