"""The byte-level tokenizer: a round trip, every token a byte, a cut character replaced.

Each test checks the property that defines the thing (a round trip, one token per
byte), computed here from the inputs, never read back from the code under test.
"""
import numpy as np
import pytest

from mini_transformer.model import tokenizer


@pytest.mark.parametrize("text", ["", "hello", "déjà vu — ∑ θ_i 🙂", "tab\tnew\nline"])
def test_encode_decode_round_trip(text):
    ids = tokenizer.encode(text)
    assert ids.dtype == np.int64  # token ids index an embedding table
    assert list(ids) == list(text.encode("utf-8"))
    assert tokenizer.decode(ids) == text


def test_tokens_are_bytes():
    ids = tokenizer.encode("ÿ€🙂" * 3)
    assert ids.min() >= 0 and ids.max() < tokenizer.BYTE_VOCAB_SIZE == 256
    # both ends of [0, 256) are tokens: byte 0 is NUL, a lone 0xFF is no UTF-8 and becomes U+FFFD
    assert tokenizer.decode([0, 72, 255]) == "\x00H\ufffd"


@pytest.mark.parametrize("ids, bad", [([104, 256], 256), ([0, 300], 300), ([-1], -1), ([0, 5, -2, 999], -2)])
def test_decode_names_the_first_id_outside_the_bytes(ids, bad):
    with pytest.raises(ValueError) as err:
        tokenizer.decode(ids)
    assert str(err.value) == (f"decode got token id {bad}, but byte tokens lie in [0, 256); "
                              "pass ids from encode or a byte-level model.")


def test_decode_replaces_a_cut_character():
    assert tokenizer.decode(tokenizer.encode("é")[:1]) == "\ufffd"

