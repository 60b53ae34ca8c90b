r"""Long-context evaluation: does a model *use* a long context, or only accept it?

A model that runs at 8x its training length has shown that its position
function can be computed there, nothing more. The configured length, the
length the model runs at, and the length it actually uses are three different
numbers. These seven measurements tell them apart:

=========================  =====================================================
``loss_by_position``       mean next-token loss per position bucket, at length T
``extrapolation_curve``    mean loss against evaluation length (1x .. 8x training)
``passkey_grid``           key-retrieval accuracy over length x depth, and from it
                           ``effective_context_length``
``retention``              loss at the training length before and after a
                           context-extension method
``attention_mass``         attention on the first tokens, per layer and head (the sink)
``decode_costs``           prefill time, per-token decode time and KV-cache bytes
``permutation_sensitivity``  how much shuffling the input changes the un-shuffled output
=========================  =====================================================

Each returns a small dataclass of host NumPy arrays (the models run on the
active backend; results come back to the host so they print and plot
anywhere), and each has a ``plot_...(result, ax=None)`` helper that returns
the Axes. Every measurement runs the model in eval mode without a graph.

A length the model refuses (a learned table asked for a position past
``max_len`` raises ``ValueError``) is recorded as NaN with the model's message
in ``reasons``: a refusal is a result, not a crash.

Cost: a passkey grid over five lengths and an extrapolation curve to 8x, on a
chapter-sized model, should take well under a minute on two CPU cores; the
calls and what they took are in ``bench_results/cpu_2026-11-30_measures/``.
"""
import contextlib
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field

from ..engine import backend
from ..engine import functional as F
from ..engine.autograd import no_grad
from ..engine.backend import hostnp as np
from ..engine.backend import xp
from ..model.tasks import passkey_task
from ..engine.validate import check_int, check_lengths

# ---------------------------------------------------------------------------
# Shared pieces: argument checks, eval mode, per-token loss, text windows
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _evaluating(model):
    """Eval mode and no graph for the block; the model's training flag is restored afterwards, also when the
    block raises."""
    was_training = model.training
    try:
        model.eval()
        with no_grad():
            yield
    finally:
        model.train(was_training)


def token_losses(model, x, y):
    r"""Per-token next-token loss :math:`\ell_t = -\log \mathrm{softmax}(z_t)_{y_t}`, host float64 ``(B, T)``.

    The log-softmax is taken here, in float64, from the logits ``z`` the model
    returns: :math:`\log \mathrm{softmax}(z)_v = z_v - m - \log \sum_u e^{z_u - m}`
    with :math:`m = \max_u z_u`, so nothing overflows. Call it inside ``no_grad``.
    """
    return backend.to_numpy(F.token_nll(model(x).data, backend.asarray(y)))   # (B, T)


def _token_stream(tokens_or_corpus, split):
    """The text as one host int array: a ``TextCorpus`` split, or a 1-D array of token ids."""
    if hasattr(tokens_or_corpus, "split") and hasattr(tokens_or_corpus, "get_batch"):
        return tokens_or_corpus.split(split)
    stream = np.asarray(backend.to_numpy(tokens_or_corpus))
    if stream.ndim != 1 or stream.dtype.kind not in "iu":
        raise ValueError(f"tokens_or_corpus must be a TextCorpus or a 1-D array of integer token ids, got an "
                         f"array of shape {stream.shape} and dtype {stream.dtype}.")
    return stream


def _check_fits(stream, T):
    if T + 1 > len(stream):
        raise ValueError(f"An evaluation length T={T} needs windows of T + 1 = {T + 1} tokens, but the text "
                         f"holds {len(stream)}; use a shorter T or more text.")


def _windows(stream, T, batch_size, rng):
    """``batch_size`` random windows of ``T + 1`` tokens, cut into ``x, y`` ``(B, T)`` on the backend."""
    starts = rng.integers(0, len(stream) - T, size=batch_size)  # (B,)
    s = stream[starts[:, None] + np.arange(T + 1)].astype(np.int64)  # (B, T + 1)
    return backend.asarray(s[:, :-1]), backend.asarray(s[:, 1:])


def _mean_loss_per_position(model, stream, T, n_batches, batch_size, seed):
    """Mean loss at each position ``(T,)`` over ``n_batches`` batches of windows drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    batches = [_windows(stream, T, batch_size, rng) for _ in range(n_batches)]  # drawn before the model runs
    with _evaluating(model):
        return np.mean([token_losses(model, x, y).mean(axis=0) for x, y in batches], axis=0)


def _refused(run):
    """``run()``, or ``(None, message)`` when the model refuses the length with a ValueError."""
    try:
        return run(), None
    except ValueError as e:
        return None, str(e)


def axes_or_new(ax, figsize=(6, 3.5)):
    """``ax``, or a new figure's Axes. matplotlib is imported here, only when a plot is drawn."""
    if ax is not None:
        return ax
    import matplotlib
    chosen = getattr(matplotlib.rcParams, "_get_backend_or_none", lambda: None)()
    if chosen is None and not os.environ.get("MPLBACKEND") and "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")  # a headless script or test; a notebook has already chosen its backend
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=figsize, layout="constrained")[1]


# ---------------------------------------------------------------------------
# 1. Loss by position
# ---------------------------------------------------------------------------

@dataclass
class PositionLoss:
    T: int               # evaluation length
    bucket: int          # positions per bucket (the last bucket may be shorter)
    starts: object       # (n_buckets,) first position of each bucket
    loss: object         # (n_buckets,) mean next-token loss in the bucket, nats
    per_position: object  # (T,) mean loss at each position
    n_sequences: int     # windows averaged at each position


def loss_by_position(model, tokens_or_corpus, T, n_batches=4, bucket=8, seed=0, batch_size=8, split="val"):
    r"""Mean next-token loss per bucket of positions, on held-out text at evaluation length ``T``.

    Bucket b covers positions :math:`[bT_b, \min((b+1)T_b, T))` with
    :math:`T_b` = ``bucket``, and its value is :math:`\frac{1}{|b|\,N}\sum_{t \in b}\sum_{n} \ell_{n,t}`
    over the N = ``n_batches * batch_size`` windows. A model that uses its
    context gets better (lower) as t grows; past the training length a scheme
    that does not extrapolate turns back up.

    ``tokens_or_corpus``: a ``TextCorpus`` (its ``split`` is used) or a 1-D
    array of token ids. Windows start at random offsets drawn with ``seed``.
    """
    T = check_int("T", T, minimum=1)
    n_batches = check_int("n_batches", n_batches, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    bucket = check_int("bucket", bucket, minimum=1)
    stream = _token_stream(tokens_or_corpus, split)
    _check_fits(stream, T)
    per_position = _mean_loss_per_position(model, stream, T, n_batches, batch_size, seed)   # (T,)
    starts = np.arange(0, T, bucket)
    loss = np.array([per_position[s:s + bucket].mean() for s in starts])
    return PositionLoss(T, bucket, starts, loss, per_position, n_batches * batch_size)


def plot_loss_by_position(result, ax=None):
    """Bucket means against position (each drawn across its bucket)."""
    ax = axes_or_new(ax)
    edges = np.append(result.starts, result.T)
    ax.stairs(result.loss, edges, baseline=None, label="bucket mean")
    ax.plot(np.arange(result.T), result.per_position, lw=0.5, alpha=0.5, label="per position")
    ax.set(xlabel="position t", ylabel="loss (nats)", title=f"Loss by position, T = {result.T}")
    ax.legend()
    return ax


# ---------------------------------------------------------------------------
# 2. Extrapolation curve
# ---------------------------------------------------------------------------

@dataclass
class ExtrapolationCurve:
    train_len: int       # the length the model was trained at
    lengths: object      # (n,) evaluation lengths, round(multiple * train_len)
    loss: object         # (n,) mean loss over all positions; NaN where the model refused the length
    loss_beyond: object  # (n,) mean loss over positions >= train_len only; NaN when there are none
    reasons: list        # per length: None, or the model's message when it refused


def extrapolation_curve(model, corpus, train_len, multiples=(1, 1.5, 2, 4, 8), n_batches=2, batch_size=8,
                        seed=0, split="val"):
    r"""Loss against evaluation length :math:`L = \mathrm{round}(m \cdot \text{train\_len})` for each multiple m.

    ``loss`` averages every position of the window, so at 2x half of it lies
    inside the trained range; ``loss_beyond`` averages only positions
    :math:`t \ge` ``train_len``, the ones the model never saw. Every length uses
    windows drawn with the same ``seed``. A length the model cannot encode
    gives NaN and the model's message in ``reasons``.
    """
    train_len = check_int("train_len", train_len, minimum=1)
    multiples = list(multiples)
    if not multiples:
        raise ValueError("multiples must hold at least one multiple of train_len, got an empty sequence.")
    for m in multiples:
        if not isinstance(m, numbers.Real) or not m > 0:
            raise ValueError(f"multiples must be positive numbers, got {m!r} in multiples={multiples!r}.")
    lengths = [max(1, int(math.floor(m * train_len + 0.5))) for m in multiples]
    n_batches = check_int("n_batches", n_batches, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    stream = _token_stream(corpus, split)
    _check_fits(stream, max(lengths))  # a too-short text is the caller's error, not the model's
    loss, beyond, reasons = [], [], []
    for L in lengths:
        per_position, reason = _refused(lambda: _mean_loss_per_position(model, stream, L, n_batches,
                                                                         batch_size, seed))
        if per_position is None:
            per_position = np.full(L, np.nan)
        loss.append(per_position.mean())
        beyond.append(per_position[train_len:].mean() if L > train_len else np.nan)
        reasons.append(reason)
    return ExtrapolationCurve(train_len, np.array(lengths), np.array(loss), np.array(beyond), reasons)


def plot_extrapolation_curve(result, ax=None):
    """Loss against length (log-2 axis); the training length dashed, refused lengths dotted."""
    ax = axes_or_new(ax)
    ax.plot(result.lengths, result.loss, "o-", label="all positions")
    ax.plot(result.lengths, result.loss_beyond, "s--", label=f"positions >= {result.train_len}")
    ax.axvline(result.train_len, color="k", ls="--", lw=0.8, label="training length")
    refused = [L for L, r in zip(result.lengths, result.reasons) if r is not None]
    for i, L in enumerate(refused):
        ax.axvline(L, color="tab:red", ls=":", label="model refused" if i == 0 else None)
    ax.set_xscale("log", base=2)
    ax.set_xticks(result.lengths, [str(L) for L in result.lengths])
    ax.set(xlabel="evaluation length L", ylabel="mean loss (nats)", title="Extrapolation")
    ax.legend()
    return ax


# ---------------------------------------------------------------------------
# 3. Passkey grid and effective context length
# ---------------------------------------------------------------------------

@dataclass
class PasskeyGrid:
    lengths: object          # (n_lengths,) strictly increasing context lengths (the task's T)
    depths: object           # (n_depths,) where the key sits, in [0, 1]: 0 at the start, 1 at the end
    accuracy: object         # (n_lengths, n_depths) fraction of trials with every digit right; NaN if refused
    digit_accuracy: object = None  # (n_lengths, n_depths) fraction of key digits right
    threshold: float = 0.5   # the accuracy a cell needs to count as retrieved
    n_trials: int = 0        # keys per cell
    reasons: dict = field(default_factory=dict)  # length -> the model's message, for refused lengths

    def __post_init__(self):
        self.lengths = np.asarray(self.lengths)
        self.depths = np.asarray(self.depths, dtype=np.float64)
        self.accuracy = np.asarray(self.accuracy, dtype=np.float64)
        shape = (len(self.lengths), len(self.depths))
        if self.accuracy.shape != shape:
            raise ValueError(f"PasskeyGrid: accuracy has shape {self.accuracy.shape}, expected "
                             f"(len(lengths), len(depths)) = {shape}.")
        if len(self.lengths) > 1 and not (np.diff(self.lengths) > 0).all():
            raise ValueError(f"PasskeyGrid: lengths must be strictly increasing, got {self.lengths.tolist()}.")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold!r}.")


def _greedy_key(model, x, n_digits):
    r"""Greedy decoding of the key: prefill through QUERY, then feed back each argmax digit.

    The prompt is ``x[:, :H + 1]`` (H = T - n_digits, the QUERY index); the
    i-th guess is predicted at position H + i, so the last one sits at T - 1,
    the same positions the task's teacher-forced targets use.
    """
    H = x.shape[1] - n_digits
    cache = model.new_cache()
    logits = model(x[:, :H + 1], cache=cache)                   # (B, H + 1, V)
    guesses = []
    for i in range(n_digits):
        guess = logits.data[:, -1].argmax(axis=-1).astype(x.dtype)  # (B,)
        guesses.append(guess)
        if i + 1 < n_digits:
            logits = model(guess[:, None], cache=cache)        # (B, 1, V)
    return xp.stack(guesses, axis=1)                            # (B, n_digits)


def passkey_grid(model, lengths, depths=(0.0, 0.25, 0.5, 0.75, 1.0), n_trials=8, seed=0, threshold=0.5,
                 n_digits=5, vocab_size=None, task=passkey_task):
    r"""Passkey retrieval accuracy over (context length x depth), by greedy decoding of the key.

    Each cell is one ``data.passkey_task(n_trials, length, depth, vocab_size,
    seed, n_digits)`` batch. The model reads the prompt up to QUERY and
    decodes the digits greedily through its KV cache, each guess fed back as
    the next input (not the true digit): exactly what generation does, so an
    early wrong digit can spoil the rest. A trial counts only if all
    ``n_digits`` digits are right (``accuracy``); ``digit_accuracy`` counts
    single digits. Every cell uses the same ``seed``, so the same keys appear
    at every length and depth. ``lengths`` are sorted; a length the model
    refuses gives NaN and a reason. ``task`` builds each cell's batch with
    ``passkey_task``'s signature (``data.text_passkey_task`` with its ``text``
    bound hides the key in real text instead of random symbols).
    """
    if not getattr(model, "causal", True):
        raise TypeError(f"passkey_grid decodes left to right, so it needs a causal model such as TinyGPT, "
                        f"got {type(model).__name__}.")
    lengths = sorted(set(check_lengths("lengths", lengths)))
    depths = list(depths)
    if not depths:
        raise ValueError("depths must hold at least one depth in [0, 1], got an empty sequence.")
    for d in depths:
        if not isinstance(d, numbers.Real) or not 0.0 <= d <= 1.0:   # also refuses NaN
            raise ValueError(f"depths must lie in [0, 1] (0 = start, 1 = end), got {d!r} in depths={depths!r}.")
    n_trials = check_int("n_trials", n_trials, minimum=1)
    vocab_size = model.cfg.vocab_size if vocab_size is None else vocab_size
    exact = np.full((len(lengths), len(depths)), np.nan)
    digits = np.full((len(lengths), len(depths)), np.nan)
    reasons = {}
    with _evaluating(model):
        for i, L in enumerate(lengths):
            for j, d in enumerate(depths):
                batch = task(n_trials, L, d, vocab_size, seed, n_digits)
                guess, reason = _refused(lambda: _greedy_key(model, batch.x, n_digits))
                if guess is None:
                    reasons[L] = reason
                    break                                   # the same length refuses at every depth
                right = backend.to_numpy(guess == batch.y[:, L - n_digits:])  # (B, n_digits)
                exact[i, j], digits[i, j] = right.all(axis=1).mean(), right.mean()
    return PasskeyGrid(np.array(lengths), depths, exact, digits, threshold, n_trials, reasons)


def effective_context_length(grid, threshold=None):
    r"""The largest length up to which the key is retrieved everywhere, or 0.

    Precisely: the largest :math:`L^*` in ``grid.lengths`` such that every
    cell with length :math:`L \le L^*`, at every depth, has accuracy
    :math:`\ge` ``threshold`` (default ``grid.threshold``). NaN (a refused
    length) counts as a failure. A length that passes after a shorter one
    failed does not count: the effective length is where performance first
    breaks, not the longest length that happens to work. 0 if the shortest
    length already fails.
    """
    threshold = grid.threshold if threshold is None else threshold
    if not isinstance(threshold, numbers.Real) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1], got {threshold!r}.")
    passes = (grid.accuracy >= threshold).all(axis=1)          # (n_lengths,), NaN >= t is False
    n = len(passes) if passes.all() else int(np.argmin(passes))  # leading run of passing lengths
    return int(grid.lengths[n - 1]) if n else 0


def plot_passkey_grid(result, ax=None, threshold=None):
    """Heat map: context length across, depth down (0 = key at the start), accuracy in each cell."""
    ax = axes_or_new(ax, figsize=(max(4.5, 1.5 + 0.7 * len(result.lengths)), max(3.0, 1.0 + 0.5 * len(result.depths))))
    im = ax.imshow(result.accuracy.T, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
    for (i, j), a in np.ndenumerate(result.accuracy):
        ax.text(i, j, "-" if np.isnan(a) else f"{a:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(result.lengths)), [str(L) for L in result.lengths])
    ax.set_yticks(range(len(result.depths)), [f"{d:.2f}" for d in result.depths])
    L_eff = effective_context_length(result, threshold)
    ax.set(xlabel="context length", ylabel="depth of the key", title=f"Passkey accuracy (effective length {L_eff})")
    ax.figure.colorbar(im, ax=ax)
    return ax


# ---------------------------------------------------------------------------
# 4. Retention
# ---------------------------------------------------------------------------

@dataclass
class Retention:
    train_len: int       # the short context both models are measured at
    loss_before: float   # mean loss of the model before the context extension
    loss_after: float    # mean loss after it
    difference: float    # loss_after - loss_before: > 0 means the extension cost short-context quality


def retention(model_before, model_after, corpus, train_len, n_batches=4, batch_size=8, seed=0, split="val"):
    r"""Short-context loss at the training length, before and after a context-extension method.

    Both models see the same windows (same ``seed``). Perplexity is
    :math:`e^{\text{loss}}`, so the perplexity ratio after/before is
    :math:`e^{\text{difference}}`.
    """
    train_len = check_int("train_len", train_len, minimum=1)
    n_batches = check_int("n_batches", n_batches, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    stream = _token_stream(corpus, split)
    _check_fits(stream, train_len)
    before, after = (float(_mean_loss_per_position(m, stream, train_len, n_batches, batch_size, seed).mean())
                     for m in (model_before, model_after))
    return Retention(train_len, before, after, after - before)


def plot_retention(result, ax=None):
    """Two bars: loss before and after, at the training length."""
    ax = axes_or_new(ax, figsize=(3.5, 3.5))
    ax.bar(["before", "after"], [result.loss_before, result.loss_after], color=["tab:blue", "tab:orange"])
    ax.set(ylabel="loss (nats)", title=f"Retention at T = {result.train_len} (diff {result.difference:+.3f})")
    return ax


# ---------------------------------------------------------------------------
# 5. Attention mass on the first tokens (the sink)
# ---------------------------------------------------------------------------

@dataclass
class AttentionMass:
    position0: object    # (n_layers, H) mean attention probability on key position 0
    first_k: object      # (n_layers, H) mean attention probability on key positions 0 .. k-1
    k: int


def attention_mass(model, x, first_k=1, normalise=False):
    r"""Per layer and head, the mean attention mass on position 0 and on the first ``k`` positions.

    With :math:`P^{(l,h)}_{ij}` the attention of query i on key j,
    ``position0[l, h]`` is :math:`\frac{1}{BT}\sum_{b,i} P_{i0}` and
    ``first_k[l, h]`` is :math:`\frac{1}{BT}\sum_{b,i}\sum_{j<k} P_{ij}`, over
    every query of the batch ``x`` ``(B, T)``. Under a causal mask query 0 can
    only look at position 0, so uniform attention already gives
    :math:`\frac{1}{T}H_T` (H_T the harmonic number); a sink is mass well above that.
    With ``normalise=True`` each row is first divided by its sum, for attention whose
    rows need not sum to 1 (sigmoid attention): the share of what a query spends at all.
    The layers' ``record_attention`` flags are restored afterwards.
    """
    x = backend.asarray(backend.to_numpy(x))
    if x.ndim != 2:
        raise ValueError(f"attention_mass takes token ids of shape (B, T), got shape {x.shape}.")
    first_k = check_int("first_k", first_k, minimum=1)
    if first_k > x.shape[1]:
        raise ValueError(f"first_k={first_k} is longer than the sequence, T={x.shape[1]}; first_k must be at most T.")
    layers = [block.attn for block in model.blocks]
    saved = [(a.record_attention, a.last_attention) for a in layers]
    try:
        for a in layers:
            a.record_attention = True
        with _evaluating(model):
            model(x)
        probs = [backend.to_numpy(a.last_attention) for a in layers]  # each (B, H, T, T)
    finally:
        for a, (flag, last) in zip(layers, saved):
            a.record_attention, a.last_attention = flag, last
    if normalise:
        probs = [p / p.sum(axis=-1, keepdims=True) for p in probs]
    position0 = np.stack([p[..., 0].mean(axis=(0, 2)) for p in probs])                     # (n_layers, H)
    first = np.stack([p[..., :first_k].sum(axis=-1).mean(axis=(0, 2)) for p in probs])   # (n_layers, H)
    return AttentionMass(position0, first, first_k)


def plot_attention_mass(result, ax=None):
    """Heat map of the mass on position 0: layers down, heads across."""
    n_layers, H = result.position0.shape
    ax = axes_or_new(ax, figsize=(max(4.0, 1.5 + 0.6 * H), max(2.5, 1.0 + 0.5 * n_layers)))
    im = ax.imshow(result.position0, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set(xlabel="head", ylabel="layer", title="Mean attention on position 0")
    ax.figure.colorbar(im, ax=ax)
    return ax


# ---------------------------------------------------------------------------
# 6. Decode costs
# ---------------------------------------------------------------------------

@dataclass
class DecodeCosts:
    lengths: object          # (n,) prompt lengths
    prefill_s: object        # (n,) seconds to run the prompt and fill the cache; NaN if refused
    decode_s_per_token: object  # (n,) mean seconds per decoded token after the prefill; NaN if refused
    cache_bytes: object      # (n,) KV-cache bytes after the prefill: 2 L B H T d_head itemsize
    batch_size: int
    reasons: list            # per length: None, or the model's message when it refused


def _time_decode(model, ids, n_decode):
    """(prefill seconds, seconds per decoded token, cache bytes after the prefill) for one prompt."""
    backend.synchronize()
    t0 = time.perf_counter()
    cache = model.new_cache()
    logits = model(ids, cache=cache)
    backend.synchronize()
    prefill = time.perf_counter() - t0
    nbytes = cache.nbytes()
    t0 = time.perf_counter()
    for _ in range(n_decode):
        nxt = logits.data[:, -1].argmax(axis=-1).astype(ids.dtype)  # (B,)
        logits = model(nxt[:, None], cache=cache)
    backend.synchronize()
    return prefill, (time.perf_counter() - t0) / n_decode, nbytes


def decode_costs(model, lengths, batch_size=1, n_decode=8, seed=0):
    r"""Prefill time, per-token decode time and KV-cache bytes as the prompt grows.

    For each length L: a random prompt ``(batch_size, L)`` is run through a
    fresh cache (prefill), then ``n_decode`` greedy tokens are decoded one at a
    time. The cache holds keys and values for every layer, so its size is
    :math:`2 \cdot n_{layers} \cdot B \cdot H \cdot L \cdot d_{head}` numbers:
    linear in L, while each decoded token's attention costs O(L). Decoding uses
    positions up to L + n_decode - 1; a model that refuses them gives NaN.
    """
    lengths = check_lengths("lengths", lengths)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n_decode = check_int("n_decode", n_decode, minimum=1)
    draw = np.random.default_rng(seed)
    out = np.full((len(lengths), 3), np.nan)
    reasons = []
    with _evaluating(model):
        _refused(lambda: model(backend.asarray(np.zeros((1, 1), dtype=np.int64))))   # warm-up, untimed
        for i, L in enumerate(lengths):
            ids = backend.asarray(draw.integers(0, model.cfg.vocab_size, size=(batch_size, L)))
            costs, reason = _refused(lambda: _time_decode(model, ids, n_decode))
            if costs is not None:
                out[i] = costs
            reasons.append(reason)
    return DecodeCosts(np.array(lengths), out[:, 0], out[:, 1], out[:, 2], batch_size, reasons)


def plot_decode_costs(result, ax=None):
    """Times (left axis, ms) and cache size (right axis, MiB) against prompt length."""
    ax = axes_or_new(ax)
    ax.plot(result.lengths, 1e3 * result.prefill_s, "o-", label="prefill")
    ax.plot(result.lengths, 1e3 * result.decode_s_per_token, "s-", label="decode, per token")
    ax.set(xlabel="prompt length L", ylabel="milliseconds", title=f"Decode costs, batch {result.batch_size}")
    ax.legend(loc="upper left")
    right = ax.twinx()
    right.plot(result.lengths, result.cache_bytes / 2 ** 20, "k:", label="KV cache")
    right.set_ylabel("KV cache (MiB)")
    right.legend(loc="lower right")
    return ax


# ---------------------------------------------------------------------------
# 7. Permutation sensitivity
# ---------------------------------------------------------------------------

@dataclass
class PermutationSensitivity:
    permutation: object  # (T,) the permutation pi: the shuffled input is x[:, pi]
    max_abs: float       # max over batch, positions and outputs of |f(x)_t - f(x_pi)_{pi^{-1}(t)}|
    mean_abs: float      # the mean of the same
    relative: float      # max_abs / max |f(x)|
    per_position: object  # (T,) mean abs change at each position of the original order


def permutation_sensitivity(model, x, seed=0):
    r"""The permutation probe: shuffle the tokens, run the model, un-shuffle, compare.

    With :math:`x_\pi[t] = x[\pi(t)]` and :math:`y = f(x)`, :math:`y' = f(x_\pi)`,
    the un-shuffled output is :math:`y'[\pi^{-1}(t)]`, the output for the
    token that sat at t. A model with no position signal and no mask is
    permutation-equivariant, :math:`f(x_\pi) = f(x)_\pi`, so the change is 0
    (to rounding). Position, or a causal mask, makes it nonzero. ``pi`` is
    fixed by ``seed`` and never the identity (T >= 2 is required).
    """
    x = backend.to_numpy(x)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"permutation_sensitivity takes token ids of shape (B, T) with T >= 2, got shape "
                         f"{x.shape}; a single position has nothing to permute.")
    T = x.shape[1]
    pi = np.random.default_rng(seed).permutation(T)
    if (pi == np.arange(T)).all():
        pi = np.roll(pi, 1)                                   # a shuffle that moves nothing tests nothing
    with _evaluating(model):
        y = backend.to_numpy(model(backend.asarray(x)).data).astype(np.float64)              # (B, T, V)
        y_pi = backend.to_numpy(model(backend.asarray(x[:, pi])).data).astype(np.float64)    # (B, T, V)
    change = np.abs(y - y_pi[:, np.argsort(pi)])             # argsort(pi) is pi^{-1}
    return PermutationSensitivity(pi, float(change.max()), float(change.mean()),
                                  float(change.max() / np.abs(y).max()), change.mean(axis=(0, 2)))


def plot_permutation_sensitivity(result, ax=None):
    """Mean absolute change of the output at each position (log scale when anything changed)."""
    ax = axes_or_new(ax)
    ax.bar(np.arange(len(result.per_position)), result.per_position)
    if result.max_abs > 0:
        ax.set_yscale("log")
    ax.set(xlabel="position t", ylabel="mean |change|", title=f"Permutation probe (max {result.max_abs:.2e})")
    return ax
