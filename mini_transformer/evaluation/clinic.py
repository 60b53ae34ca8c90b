r"""The failure-mode clinic: a healthy model as it is served, and six copies with one positional bug each.

The book's failure table (chapter 12) has six rows, each a symptom, its cause and a check; each
planted bug here is one row's cause:

* ``position_reset``: cached generation degrades after a few tokens (the position index resets
  to 0 during decode); check that cached logits equal the full forward's at every step.
* ``angles_out_of_range``: the loss explodes past the training length (RoPE angles the model
  never saw: the checkpoint's scaling block was dropped when the model was rebuilt); evaluate
  at 1x, 1.5x, 2x the training length, or check the angles.
* ``pairing_mismatch``: a ported checkpoint produces garbage (the RoPE pairing convention
  differs); compare with the reference implementation.
* ``recency_bias``: retrieval fails while perplexity looks fine (a monotone distance penalty on
  the scores); probe with a needle, not perplexity.
* ``sinks_evicted``: sliding-window attention collapses (the first tokens are evicted); keep
  the first 4 tokens.
* ``position_ignored``: the model ignores position entirely (the encoding never reaches
  attention); shuffle the input, and the outputs must change.

A **patient** (``Patient``) is what a check examines: the served ``model``, the ``source`` it
was loaded from (the checkpoint as trained, in its own code), the length it was trained at,
the length it is served at, and its streaming policy. ``make_patient()`` builds the healthy
one; ``plant(patient, bug)`` returns a copy with one bug. The models are tiny and untrained
(one layer, two heads of 8 channels, float64, seeded), with the query and key weights drawn
large enough that attention is far from uniform: the point is the checks, which must tell
the models apart without any training. ``ward(seed)`` hands out all seven under letters, in
a shuffled order, for the chapter's diagnosis.

Every bug is planted in the serving path, the way such bugs happen: a cache that numbers
positions afresh at every call, a config rebuilt without its ``rope_scaling``, code of the
other pairing convention, a scheme with an extra recency penalty, a cache that ignores
``n_sink``, and rotations that receive position 0 for every token.
"""
from dataclasses import dataclass, replace

from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import rng, xp
from mini_transformer.model.kv_cache import KVCache
from mini_transformer.model import GPTConfig, TinyGPT
from mini_transformer.positional.alibi import ALiBi
from mini_transformer.positional.base import PositionalScheme

TRAIN_LEN = 16      # the length the patients were trained at (their max_len)
SERVE_LEN = 64      # the length they are served at: position interpolation by 4 covers it
WINDOW, N_SINK = 8, 4

#: the planted bugs, in the order of the book's failure table
BUGS = ("position_reset", "angles_out_of_range", "pairing_mismatch", "recency_bias", "sinks_evicted",
        "position_ignored")

#: each bug's row of the failure table: (symptom, cause, check)
FAILURE_TABLE = {
    "position_reset": ("cached generation degrades after a few tokens", "position index reset to 0 during decode",
                       "assert cached logits equal full-forward logits at each step"),
    "angles_out_of_range": ("perplexity explodes past the training length",
                            "out-of-range RoPE angles or missing learned positions",
                            "evaluate at 1x, 1.5x, 2x training length and plot"),
    "pairing_mismatch": ("ported checkpoint produces garbage",
                         "RoPE pairing convention mismatch (adjacent versus half)",
                         "compare one layer's q after rotation against the reference"),
    "recency_bias": ("long-context retrieval fails while perplexity looks fine",
                     "recency bias (ALiBi) or over-interpolated high frequencies",
                     "needle-in-a-haystack style probe, not perplexity"),
    "sinks_evicted": ("sliding-window attention collapses", "evicted attention-sink tokens",
                      "keep the first 4 tokens permanently"),
    "position_ignored": ("model ignores position entirely", "encoding added after the projection, or zeroed by a norm",
                         "check permutation sensitivity: shuffle input, outputs must change"),
}


@dataclass
class Patient:
    r"""A model as it is served, with what a check needs to know about how."""
    model: TinyGPT      # the model that answers requests
    source: TinyGPT     # the checkpoint it was loaded from, run by the code it was trained with
    train_len: int      # the length it was trained at (RoPE's angles of positions 0 .. train_len - 1)
    serve_len: int      # the longest input it is served with
    window: int         # streaming policy: the most recent `window` tokens ...
    n_sink: int         # ... plus the first `n_sink` tokens, with positions by slot in the cache


def _config(seed):
    # the bugs that change the config (no scaling, interleaved pairs) derive theirs in plant, by replace
    return GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=TRAIN_LEN, positional="rope",
                     rope_scaling={"rope_type": "linear", "factor": SERVE_LEN / TRAIN_LEN}, seed=seed)


def _model(cfg, state):
    model = TinyGPT(cfg).to_dtype("float64").eval()
    model.load_state_dict(state)
    return model


def sharpen(model, seed=0):
    r"""Give ``model`` weights whose attention is far from uniform, in float64; return it.

    At the default N(0, 0.02^2) an untrained model's scores are all near 0 and attention is
    nearly uniform, so a change of position changes almost nothing. Drawing ``W_qkv`` from
    N(0, 0.5^2) and every bias from N(0, 0.1^2) (from ``rng(seed)``) makes the scores of order
    one and attention sharp, as in a trained model. The other weights stay as they were.
    """
    model.to_dtype("float64")
    g = rng(seed)
    state = model.state_dict()
    for name, value in state.items():
        if name.endswith("W_qkv.weight"):
            state[name] = g.host.normal(0.0, 0.5, size=value.shape)
        elif name.endswith("bias"):
            state[name] = g.host.normal(0.0, 0.1, size=value.shape)
    model.load_state_dict(state)
    return model


def _checkpoint(seed):
    """The healthy weights: the library's initialisation, sharpened (``sharpen``) from seed ``1000 + seed``."""
    return sharpen(TinyGPT(_config(seed)), 1000 + seed).state_dict()


def make_patient(seed=0):
    r"""The healthy patient: served exactly as it was trained, with PI by ``SERVE_LEN / TRAIN_LEN`` for long inputs."""
    cfg, state = _config(seed), _checkpoint(seed)
    return Patient(model=_model(cfg, state), source=_model(cfg, state), train_len=TRAIN_LEN, serve_len=SERVE_LEN,
                   window=WINDOW, n_sink=N_SINK)


# ---------------------------------------------------------------------------
# The planted bugs
# ---------------------------------------------------------------------------

class _ResetCache(KVCache):
    """A cache whose every call numbers its new tokens from 0: the decode step's position resets."""

    def query_and_key_positions(self, T):
        q_pos = xp.arange(T)                                    # the bug: the step forgets the tokens before it
        return q_pos, xp.concatenate([xp.zeros(len(self), dtype="int64"), q_pos])  # cached keys stay visible

    @property
    def next_position(self):
        return 0


class _Wrapped(PositionalScheme):
    """A scheme that runs ``inner`` and changes one thing; every other attribute is ``inner``'s."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        if name == "inner":                     # not set yet (copying): no inner to ask
            raise AttributeError(name)
        return getattr(self.inner, name)


class _RecencyBiased(_Wrapped):
    """The served scheme plus ALiBi's penalty -m_h (i - j): a recency prior the checkpoint never had."""

    def __init__(self, inner, n_heads):
        super().__init__(inner)
        self.recency = ALiBi(n_heads)

    def rotate(self, x, pos, layer):
        return self.inner.rotate(x, pos, layer)

    def score_bias(self, q, k, q_pos, k_pos, layer):
        return self.recency.score_bias(q, k, q_pos, k_pos, layer)   # (1, H, T_q, T_k)


class _PositionLost(_Wrapped):
    """The served scheme, but every rotation receives position 0: the encoding never reaches attention."""

    def rotate(self, x, pos, layer):
        return self.inner.rotate(x, pos * 0, layer)


def _new_cache_without_sinks(model):
    full = model.new_cache

    def new_cache(window=None, n_sink=0, positions="text"):
        return full(window=window, n_sink=0, positions=positions)   # the bug: n_sink is dropped
    return new_cache


def _new_cache_that_resets(model):
    def new_cache(window=None, n_sink=0, positions="text"):
        return _ResetCache(model.cfg.n_layers, window=window, n_sink=n_sink, positions=positions)
    return new_cache


def plant(patient, bug):
    r"""A copy of ``patient`` whose served model has ``bug`` (one of ``BUGS``); the source is shared."""
    if bug not in BUGS:
        raise ValueError(f"plant: unknown bug {bug!r}; the planted bugs are {', '.join(BUGS)}.")
    m = patient.model
    state = m.state_dict()
    if bug == "angles_out_of_range":          # the model rebuilt from a config that lost its rope_scaling block
        model = _model(replace(m.cfg, rope_scaling=None), state)
    elif bug == "pairing_mismatch":           # weights trained rotate-half, run by interleaved code, not ported
        model = _model(replace(m.cfg, extra={**m.cfg.extra, "rope_interleaved": True}), state)
    else:
        model = _model(m.cfg, state)
        if bug == "position_reset":
            model.new_cache = _new_cache_that_resets(model)
        elif bug == "sinks_evicted":
            model.new_cache = _new_cache_without_sinks(model)
        elif bug == "recency_bias":
            model.positional = _RecencyBiased(model.positional, m.cfg.n_heads)
        else:                                 # position_ignored
            model.positional = _PositionLost(model.positional)
    return replace(patient, model=model)


def make_planted(bug, seed=0):
    """The healthy patient of ``seed`` with ``bug`` planted."""
    return plant(make_patient(seed), bug)


def ward(seed=0):
    r"""Seven patients under the letters A to G, in an order fixed by ``seed``: the healthy one and every bug.

    Returns ``({letter: make}, {letter: diagnosis})``, where ``make()`` builds that patient and a
    diagnosis is ``"healthy"`` or the key of its bug. The chapter keeps the second dict for
    the answer.
    """
    names = ("healthy",) + BUGS
    order = [int(i) for i in rng(seed).host.permutation(len(names))]
    letters = "ABCDEFG"
    makers, key = {}, {}
    for letter, i in zip(letters, order):
        name = names[i]
        makers[letter] = (lambda: make_patient()) if name == "healthy" else (lambda name=name: make_planted(name))
        key[letter] = name
    return makers, key


# ---------------------------------------------------------------------------
# A probe of the positional mechanism, for the needle check
# ---------------------------------------------------------------------------

def attention_probe(model, q, k, q_pos, k_pos, layer=0):
    r"""Attention probabilities ``(B, H, T_q, T_k)`` of raw queries and keys through ``model``'s scheme.

    ``q`` ``(B, H, T_q, d_head)`` and ``k`` ``(B, H, T_k, d_head)`` are arrays you choose (a
    needle, distractors); ``q_pos`` and ``k_pos`` their integer positions. The scheme rotates
    them and adds its score bias exactly as attention does in ``layer``; keys after a query
    are masked. This is the model's attention with the projections taken out, so a probe
    can put a key that matches the query anywhere it likes.
    """
    scheme = model.positional
    q_pos, k_pos = xp.asarray(q_pos), xp.asarray(k_pos)
    qr = scheme.rotate(Tensor(q), q_pos, layer).data                        # (B, H, T_q, d_head)
    kr = scheme.rotate(Tensor(k), k_pos, layer).data                        # (B, H, T_k, d_head)
    scores = qr @ xp.swapaxes(kr, -1, -2) / q.shape[-1] ** 0.5              # (B, H, T_q, T_k)
    bias = scheme.score_bias(Tensor(qr), Tensor(kr), q_pos, k_pos, layer)
    if bias is not None:
        scores = scores + (bias.data if isinstance(bias, Tensor) else bias)
    scores = xp.where(k_pos[None, :] <= q_pos[:, None], scores, -xp.inf)    # causal
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = xp.exp(scores)
    return p / p.sum(axis=-1, keepdims=True)
