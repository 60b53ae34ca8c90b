r"""A LongRoPE-style search for per-pair rescale factors, on the tiny model.

Position interpolation divides every frequency by the same s. LongRoPE (Ding et
al., 2024) observes that the pairs are not alike: fast pairs already turned
many times in training and need little or no interpolation, slow pairs never
completed a turn and need the full factor. So it searches a factor
\lambda_i \ge 1 per pair,

.. math:: \theta_i' = \theta_i / \lambda_i,

scoring each candidate by the model's loss at the target length, with no
training. This is an evolutionary search: keep the best candidates, mutate
them, repeat. LongRoPE2 adds a constraint on the pairs past the critical
dimension (the "out-of-distribution" pairs, whose period exceeds the training
length): their factors must not decrease with the pair index, since a slower
pair never needs less stretching than a faster one.

The search starts from the methods it competes with (PI: every \lambda_i = s;
NTK-aware; YaRN's by-parts ramp), so its best is never worse than theirs on
the data it scores; the question the experiment asks is whether it wins on
held-out data.
"""
from dataclasses import dataclass, field

from ..engine import backend
from ..engine.autograd import no_grad
from ..model import GPTConfig, TinyGPT
from ..positional.rope_scaling import critical_dimension, rope_inv_freq, thetas


@dataclass
class SearchResult:
    factors: list            # best lambda_i, one per pair (d_head / 2)
    loss: float              # its loss at the target length on the search batches
    pi_loss: float           # position interpolation's loss on the same batches
    start_losses: dict       # loss of each starting method (pi, ntk, yarn) on the same batches
    history: list = field(default_factory=list)  # best loss after each generation
    critical_pair: int = 0   # first out-of-distribution pair: the monotone constraint starts here


def with_rope_scaling(model, rope_scaling):
    """A copy of ``model`` with the same weights and another ``rope_scaling``."""
    cfg = GPTConfig(**{**model.cfg.to_dict(), "rope_scaling": rope_scaling})
    twin = TinyGPT(cfg)
    if model.parameters()[0].dtype != twin.parameters()[0].dtype:
        twin.to_dtype(model.parameters()[0].dtype)
    twin.load_state_dict(model.state_dict())
    return twin


def longrope_scaling(factors, train_len, s):
    """The rope_scaling dict for fixed per-pair factors, with no attention temperature (factors only)."""
    factors = [float(f) for f in factors]
    return {"rope_type": "longrope", "short_factor": factors, "long_factor": factors,
            "original_max_position_embeddings": train_len, "factor": s, "attention_factor": 1.0}


def mean_loss(model, batches):
    """Mean next-token loss over fixed ``(x, y)`` batches, without a graph."""
    with no_grad():
        return sum(float(model.loss(x, y).item()) for x, y in batches) / len(batches)


def monotone_from(factors, start):
    """LongRoPE2's constraint: factors never decrease from pair ``start`` on (a running maximum)."""
    out = list(factors)
    for i in range(max(start, 1), len(out)):
        out[i] = max(out[i], out[i - 1]) if i > start else out[i]
    return out


def starting_points(d_head, base, train_len, s):
    """lambda for PI, NTK-aware and YaRN's by-parts, from the same formulas as ``rope_scaling``."""
    theta = backend.to_numpy(thetas(d_head, base))
    starts = {"pi": [float(s)] * (d_head // 2)}
    for name, cfg in (("ntk", {"rope_type": "ntk", "factor": s}),
                      ("yarn", {"rope_type": "ntk_by_parts", "factor": s, "original_max_position_embeddings": train_len})):
        inv, _ = rope_inv_freq(d_head, base, cfg)
        starts[name] = [float(t / i) for t, i in zip(theta, backend.to_numpy(inv))]
    return starts


def search(model, batches, target_len, generations=8, population=12, parents=4, sigma=0.15, seed=0, progress=None):
    r"""Search per-pair factors for ``model`` (a RoPE TinyGPT trained at ``model.cfg.max_len``).

    ``batches`` are ``(x, y)`` pairs at ``target_len``: the loss on them is the
    score. Returns a ``SearchResult``.
    """
    cfg = model.cfg
    if cfg.positional != "rope":
        raise ValueError(f"search needs a RoPE model, got positional={cfg.positional!r}.")
    L = cfg.max_len
    if target_len <= L:
        raise ValueError(f"target_len={target_len} must exceed the trained length max_len={L}.")
    if generations < 1 or population < parents or parents < 1:
        raise ValueError(f"need generations >= 1 and population >= parents >= 1; got generations={generations}, "
                         f"population={population}, parents={parents}.")
    s = target_len / L
    d_head = cfg.d_head
    crit = critical_dimension(d_head, cfg.rope_base, L).pair
    rng = backend.rng(seed).host

    def score(f):
        return mean_loss(with_rope_scaling(model, longrope_scaling(f, L, s)), batches)

    def legal(f):
        f = [min(max(x, 1.0), 4 * s) for x in f]   # never speed a pair up; never stretch past 4s
        return monotone_from(f, crit)

    starts = starting_points(d_head, cfg.rope_base, L, s)
    start_losses = {name: score(legal(f)) for name, f in starts.items()}
    scored = [(start_losses[name], legal(f)) for name, f in starts.items()]
    history = [min(loss for loss, _ in scored)]
    for _ in range(generations):
        scored.sort(key=lambda t: t[0])
        elite = scored[:parents]
        children = []
        while len(children) < population - len(elite):
            _, parent = elite[int(rng.integers(len(elite)))]
            noise = rng.normal(0.0, sigma, len(parent)) * (rng.random(len(parent)) < 0.5)
            children.append(legal([p * float(backend.hostnp.exp(n)) for p, n in zip(parent, noise)]))
        scored = elite + [(score(c), c) for c in children]
        history.append(min(loss for loss, _ in scored))
        if progress:
            progress(history[-1])
    best_loss, best = min(scored, key=lambda t: t[0])
    return SearchResult(best, best_loss, start_losses["pi"], start_losses, history, crit)
