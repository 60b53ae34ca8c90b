r"""A byte-level tokenizer: a token is one UTF-8 byte.

The vocabulary is the 256 byte values, so nothing is ever out of vocabulary and
the real-text corpus (``corpus.py``) and the text passkey (``tasks.py``) need no
trained vocabulary.
"""
from ..engine.backend import hostnp as np, to_numpy

BYTE_VOCAB_SIZE = 256  # one token per byte value


def encode(text: str):
    """UTF-8 bytes of ``text`` as a host int64 array of token ids in [0, 256)."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def decode(ids) -> str:
    """Token ids (host or backend array, or list) back to text.

    A window cut from the corpus can start or end inside a multi-byte
    character, so broken bytes become U+FFFD instead of raising.
    """
    ids = np.asarray(to_numpy(ids)).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= BYTE_VOCAB_SIZE):
        bad = ids[(ids < 0) | (ids >= BYTE_VOCAB_SIZE)][0]
        raise ValueError(f"decode got token id {int(bad)}, but byte tokens lie in "
                         f"[0, {BYTE_VOCAB_SIZE}); pass ids from encode or a byte-level model.")
    return ids.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
