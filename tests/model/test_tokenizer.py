"""The byte-level tokenizer: a round trip, every token a byte, a cut character replaced.

Each test checks the property that defines the thing (a round trip, one token per
byte), computed here from the inputs, never read back from the code under test.
"""
import pytest

from mini_transformer.model import tokenizer


@pytest.mark.parametrize("text", ["", "hello", "déjà vu — ∑ θ_i 🙂", "tab\tnew\nline"])
def test_encode_decode_round_trip(text):
    ids = tokenizer.encode(text)
    assert list(ids) == list(text.encode("utf-8"))
    assert tokenizer.decode(ids) == text


def test_tokens_are_bytes():
    ids = tokenizer.encode("ÿ€🙂" * 3)
    assert ids.min() >= 0 and ids.max() < tokenizer.BYTE_VOCAB_SIZE == 256
    with pytest.raises(ValueError, match="256"):
        tokenizer.decode([104, 256])


def test_decode_replaces_a_cut_character():
    assert tokenizer.decode(tokenizer.encode("é")[:1]) == "\ufffd"

