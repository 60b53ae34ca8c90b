r"""Synthetic tasks whose answer depends on *where* a token sits.

Copy, reverse, sort, look-k-back, associative recall and passkey retrieval (in
symbols, or in real text): a model without a usable position signal fails them,
which is the point.

Every batch is a pair ``x, y`` of shape ``(B, T)`` for a decoder-only model:
``y[b, t]`` is the target for the prediction made at position ``t``, that is,
the token that comes *next*, ``s[t + 1]`` of the underlying sequence ``s``
(length ``T + 1``, with ``x = s[:T]`` and ``y = s[1:]``). Positions that are not
scored hold ``IGNORE``, which the cross-entropy skips.

Data is built on the host with NumPy and moved once onto the active backend
with ``asarray``, so the same seed gives the same batch on NumPy, CuPy and the
strict stand-in.
"""
from dataclasses import dataclass
from typing import Optional

from ..engine.backend import asarray, hostnp as np, to_numpy
from ..engine.validate import check_int
from .tokenizer import BYTE_VOCAB_SIZE

IGNORE = -1  # target at an unscored position; the cross-entropy uses ignore_index=-1

# Special tokens at the low end of every task vocabulary; symbols come after them.
PAD = 0  # reserved for padding variable-length batches; the tasks here never emit it
SEP = 1  # ends the input half of copy, reverse and sort
QUERY = 2  # "now answer": before the query key (recall) and the passkey answer
KEY_START = 3  # opens the passkey
KEY_END = 4  # closes the passkey
FIRST_SYMBOL = 5  # ids [FIRST_SYMBOL, vocab_size) are ordinary symbols
DIGIT_0 = FIRST_SYMBOL  # passkey digit d is token DIGIT_0 + d
N_DIGIT_TOKENS = 10


@dataclass
class TaskBatch:
    x: object  # (B, T) int64 inputs on the backend
    y: object  # (B, T) int64 next-token targets, IGNORE where unscored
    vocab_size: int  # token ids lie in [0, vocab_size)
    key_pos: Optional[int] = None  # passkey only: index in x of the first key digit


def _check_vocab(task, vocab_size, minimum):
    vocab_size = check_int("vocab_size", vocab_size, minimum=1)
    if vocab_size < minimum:
        raise ValueError(f"{task} needs vocab_size >= {minimum} ({FIRST_SYMBOL} special tokens "
                         f"plus its symbols), got {vocab_size}; raise vocab_size.")
    return vocab_size


def _batch(s, scored_from, vocab_size, key_pos=None):
    """Cut sequences ``s`` (B, T+1) into ``x = s[:, :-1]``, ``y = s[:, 1:]``; score ``y[:, scored_from:]``."""
    x = s[:, :-1].astype(np.int64)
    y = s[:, 1:].astype(np.int64)
    y[:, :scored_from] = IGNORE
    return TaskBatch(asarray(x), asarray(y), vocab_size, key_pos)


def _input_then_answer(task, batch_size, n, vocab_size, seed, answer):
    """``n`` random symbols, SEP, then ``answer(symbols)``; only the answer is scored."""
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n = check_int("n", n, minimum=1)
    vocab_size = _check_vocab(task, vocab_size, FIRST_SYMBOL + 2)
    a = np.random.default_rng(seed).integers(FIRST_SYMBOL, vocab_size, size=(batch_size, n))
    sep = np.full((batch_size, 1), SEP)
    s = np.concatenate([a, sep, answer(a)], axis=1)  # (B, 2n + 1)
    return _batch(s, n, vocab_size)  # x[:, n] is SEP, so y[:, n:] is the answer


def copy_task(batch_size, n, vocab_size=16, seed=0):
    r"""Copy: ``a_1..a_n SEP a_1..a_n``; T = 2n.

    Scored: ``y[:, n + i] = a_{i+1} = x[:, i]`` for ``i < n``; ``y[:, :n]`` is IGNORE.
    """
    return _input_then_answer("copy_task", batch_size, n, vocab_size, seed, lambda a: a)


def reverse_task(batch_size, n, vocab_size=16, seed=0):
    r"""Reverse: ``a_1..a_n SEP a_n..a_1``; T = 2n.

    Scored: ``y[:, n + i] = x[:, n - 1 - i]`` for ``i < n``; ``y[:, :n]`` is IGNORE.
    """
    return _input_then_answer("reverse_task", batch_size, n, vocab_size, seed, lambda a: a[:, ::-1])


def sort_task(batch_size, n, vocab_size=16, seed=0):
    r"""Sort: ``a_1..a_n SEP sorted(a)`` (symbols may repeat); T = 2n.

    Scored: ``y[:, n:] = sort(x[:, :n])``; ``y[:, :n]`` is IGNORE.
    """
    return _input_then_answer("sort_task", batch_size, n, vocab_size, seed,
                              lambda a: np.sort(a, axis=1))


def lookback_task(batch_size, T, k, vocab_size=16, seed=0):
    r"""Look k back: every token repeats the one ``k`` positions earlier, :math:`s_j = s_{j-k}`.

    The first ``k`` tokens are random; the rest follow the rule, so the sequence
    is periodic with period ``k``. Next-token alignment puts the answer to
    position ``t`` at ``t + 1``, so scored targets are
    ``y[:, t] = x[:, t + 1 - k]`` for ``t >= k - 1``; ``y[:, :k - 1]`` is IGNORE.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    T = check_int("T", T, minimum=1)
    k = check_int("k", k, minimum=1)
    if k > T:
        raise ValueError(f"k={k} leaves nothing to score in a sequence of T={T}; k can be at most T.")
    vocab_size = _check_vocab("lookback_task", vocab_size, FIRST_SYMBOL + 2)
    block = np.random.default_rng(seed).integers(FIRST_SYMBOL, vocab_size, size=(batch_size, k))
    s = block[:, np.arange(T + 1) % k]  # (B, T + 1), s[:, j] = s[:, j - k]
    return _batch(s, k - 1, vocab_size)


def associative_recall_task(batch_size, n_pairs, vocab_size=16, seed=0):
    r"""Associative recall: ``k_1 v_1 .. k_n v_n QUERY k_q``, target ``v_q``; T = 2n + 2.

    Keys in a row are distinct symbols, values are any symbols. Only the last
    position is scored: ``y[:, -1] = v_q``, the value that followed the key
    ``x[:, -1]`` in the pairs.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n_pairs = check_int("n_pairs", n_pairs, minimum=1)
    vocab_size = _check_vocab("associative_recall_task", vocab_size, FIRST_SYMBOL + max(n_pairs, 2))
    rng = np.random.default_rng(seed)
    n_symbols = vocab_size - FIRST_SYMBOL
    keys = np.argsort(rng.random((batch_size, n_symbols)), axis=1)[:, :n_pairs] + FIRST_SYMBOL
    values = rng.integers(FIRST_SYMBOL, vocab_size, size=(batch_size, n_pairs))
    q = rng.integers(0, n_pairs, size=batch_size)  # (B,) which pair is asked for
    rows = np.arange(batch_size)
    pairs = np.stack([keys, values], axis=2).reshape(batch_size, 2 * n_pairs)  # k1 v1 k2 v2 ...
    tail = np.stack([np.full(batch_size, QUERY), keys[rows, q], values[rows, q]], axis=1)
    s = np.concatenate([pairs, tail], axis=1)  # (B, 2n + 3)
    return _batch(s, 2 * n_pairs + 1, vocab_size)


def passkey_min_length(n_digits):
    """Shortest ``length`` that holds the key block (markers and digits) and the query."""
    return 2 * n_digits + 2


def _check_passkey(batch_size, length, depth, n_digits):
    """The checks both passkey tasks make: ``(batch_size, length, n_digits)`` as ints, or a ValueError."""
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n_digits = check_int("n_digits", n_digits, minimum=1)
    length = check_int("length", length, minimum=1)
    if not 0.0 <= depth <= 1.0:  # also refuses NaN
        raise ValueError(f"depth must lie in [0, 1] (0 = start, 1 = end), got {depth!r}.")
    if length < passkey_min_length(n_digits):
        raise ValueError(f"length={length} cannot hold a {n_digits}-digit key with its markers and "
                         f"the query; length must be at least {passkey_min_length(n_digits)}.")
    return batch_size, length, n_digits


def passkey_task(batch_size, length, depth, vocab_size=16, seed=0, n_digits=5):
    r"""Passkey retrieval: find ``n_digits`` digits hidden at relative depth ``depth`` in filler.

    With :math:`H = \text{length} - n` (n = ``n_digits``) the sequence is

    ``x[:, :H]``   filler symbols, with ``KEY_START d_1..d_n KEY_END`` at offset
                  :math:`p = \mathrm{round}(\text{depth}\,(H - n - 2))`,
    ``x[:, H]``    QUERY,
    ``x[:, H+1:]`` ``d_1 .. d_{n-1}`` (the answer so far, as in generation).

    Depth 0 puts KEY_START at index 0; depth 1 puts KEY_END right before QUERY.
    Scored: ``y[:, H:] = d_1..d_n``, equal to ``x[:, key_pos:key_pos + n]``
    with ``key_pos = p + 1``; everything else is IGNORE. Digits are tokens
    ``DIGIT_0 + d``; filler is drawn from the symbols above the digits, so only
    the key holds digits. The digits differ per row, the position does not.
    """
    batch_size, length, n_digits = _check_passkey(batch_size, length, depth, n_digits)
    vocab_size = _check_vocab("passkey_task", vocab_size, FIRST_SYMBOL + N_DIGIT_TOKENS + 1)
    rng = np.random.default_rng(seed)
    H = length - n_digits  # haystack length: everything before QUERY
    p = int(np.floor(depth * (H - n_digits - 2) + 0.5))  # where KEY_START goes
    digits = DIGIT_0 + rng.integers(0, N_DIGIT_TOKENS, size=(batch_size, n_digits))
    s = rng.integers(DIGIT_0 + N_DIGIT_TOKENS, vocab_size, size=(batch_size, length + 1))
    s[:, p] = KEY_START
    s[:, p + 1:p + 1 + n_digits] = digits
    s[:, p + 1 + n_digits] = KEY_END
    s[:, H] = QUERY
    s[:, H + 1:] = digits  # (B, length + 1)
    return _batch(s, H, vocab_size, key_pos=p + 1)


DIGIT_BYTE_0 = ord("0")  # in text, a passkey digit d is the byte of the character str(d)


def text_passkey_task(batch_size, length, depth, vocab_size=BYTE_VOCAB_SIZE, seed=0, n_digits=5, text=None):
    r"""Passkey retrieval in real text: ``passkey_task``'s layout with bytes of ``text`` as the filler.

    ``text`` is a 1-D array of byte ids (a ``TextCorpus`` split). Each row is a
    window of it with the key block ``KEY_START d_1..d_n KEY_END`` spliced in at
    :math:`p = \mathrm{round}(\text{depth}\,(H - n - 2))`, :math:`H = \text{length} - n`,
    then ``QUERY`` at ``x[:, H]`` and the answer so far, exactly as in
    ``passkey_task`` (the markers are the control bytes 2, 3 and 4, which source
    text never holds; the digits are the characters ``'0'..'9'``). The text on
    both sides of the key is one unbroken window, so a language model can
    predict it. Scored: every text byte, and the answer ``y[:, H:]``; the key
    block and ``QUERY`` (which nothing predicts) are IGNORE. The signature is
    ``passkey_task``'s, so ``evaluate.passkey_grid(..., task=partial(text_passkey_task, text=t))`` runs it.
    """
    if text is None:
        raise ValueError("text_passkey_task needs text=, a 1-D array of byte ids to use as the haystack "
                         "(for example stdlib_corpus().val).")
    batch_size, length, n_digits = _check_passkey(batch_size, length, depth, n_digits)
    if vocab_size != BYTE_VOCAB_SIZE:
        raise ValueError(f"text_passkey_task works on bytes, so vocab_size must be {BYTE_VOCAB_SIZE}, got {vocab_size}.")
    text = np.asarray(to_numpy(text))
    H = length - n_digits  # haystack length: everything before QUERY
    n_text = H - n_digits - 2  # text bytes around the key block
    if len(text) < n_text + 1:
        raise ValueError(f"text holds {len(text)} bytes; length={length} needs at least {n_text + 1}.")
    rng = np.random.default_rng(seed)
    digits = DIGIT_BYTE_0 + rng.integers(0, N_DIGIT_TOKENS, size=(batch_size, n_digits))
    starts = rng.integers(0, len(text) - n_text + 1, size=batch_size)
    filler = text[starts[:, None] + np.arange(n_text)].astype(np.int64)  # (B, n_text)
    p = int(np.floor(depth * n_text + 0.5))  # where KEY_START goes
    block = np.concatenate([np.full((batch_size, 1), KEY_START), digits, np.full((batch_size, 1), KEY_END)], axis=1)
    s = np.concatenate([filler[:, :p], block, filler[:, p:], np.full((batch_size, 1), QUERY), digits], axis=1)
    x = s[:, :-1].astype(np.int64)  # (B, length)
    y = s[:, 1:].astype(np.int64)
    y[:, max(0, p - 1):p + n_digits + 1] = IGNORE  # the key block: KEY_START, the digits, KEY_END
    y[:, H - 1] = IGNORE  # QUERY
    return TaskBatch(asarray(x), asarray(y), BYTE_VOCAB_SIZE, p + 1)


TASKS = {
    "copy": copy_task,
    "reverse": reverse_task,
    "lookback": lookback_task,
    "associative_recall": associative_recall_task,
    "sort": sort_task,
    "passkey": passkey_task,
}
