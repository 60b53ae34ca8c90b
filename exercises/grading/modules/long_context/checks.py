r"""Checks of ``solutions/long_context.py`` (chapter 9): cases and known mistakes for every measurement."""
import math

import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show

IGNORE = -1


def _losses(shape, seed, dtype=np.float64):
    """Positive per-token losses, like a model's: |standard normal| + 1."""
    return (np.abs(normal(shape, seed)) + 1.0).astype(dtype)


# ---------------------------------------------------------------------------
# 9.1 loss_by_position
# ---------------------------------------------------------------------------

def _bucket_cases():
    hand = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    out = [Case("worked example", (hand, 2), show=f"{show('token_losses', hand)}, bucket = 2")]
    for label, shape, bucket, seed, dtype in [
            ("bucket divides T: (4, 64), bucket 8", (4, 64), 8, 1, np.float64),
            ("a short last bucket: (3, 50), bucket 8", (3, 50), 8, 2, np.float64),
            ("bucket 1: every position on its own", (2, 7), 1, 3, np.float64),
            ("bucket longer than T", (5, 6), 10, 4, np.float64),
            ("float32 losses, (3, 20), bucket 6", (3, 20), 6, 5, np.float32)]:
        x = _losses(shape, seed, dtype)
        out.append(Case(label, (x, bucket), show=f"{show('token_losses', x, f'|normal| + 1, seed {seed}')}, "
                                                 f"bucket = {bucket}"))
    return out


def _per_bucket(token_losses, bucket, reduce):
    T = token_losses.shape[1]
    return np.stack([reduce(token_losses[:, s:s + bucket]) for s in range(0, T, bucket)]).astype(token_losses.dtype)


LOSS_BY_POSITION = Target("loss_by_position", "array", _bucket_cases, [
    Misconception("partial_bucket_dropped", "the short last bucket is dropped",
                  "When bucket does not divide T the last bucket is shorter, not missing: there are "
                  "ceil(T / bucket) buckets, and the last covers positions [b * bucket, T).",
                  lambda x, b: _per_bucket(x[:, :x.shape[1] // b * b], b, np.mean)),
    Misconception("partial_bucket_padded", "the short last bucket is divided by the full bucket size",
                  "Padding the positions up to a multiple of bucket with zeros and reshaping divides the last "
                  "bucket's sum by bucket. Average over the positions the bucket really holds.",
                  lambda x, b: _per_bucket(x, b, lambda a: a.sum() / (a.shape[0] * b))),
    Misconception("sum_not_mean", "bucket sums instead of bucket means",
                  "Each bucket's value is a mean over its sequences and positions, so buckets of different "
                  "sizes and different numbers of sequences compare.",
                  lambda x, b: _per_bucket(x, b, lambda a: a.mean(axis=0).sum())),
    Misconception("per_sequence", "one row of buckets per sequence",
                  "Average over the sequences too (axis 0): the result is one mean per bucket, shape "
                  "(ceil(T / bucket),).",
                  lambda x, b: np.stack([x[:, s:s + b].mean(axis=1) for s in range(0, x.shape[1], b)], axis=1)),
])


# ---------------------------------------------------------------------------
# 9.2 loss_inside_and_beyond
# ---------------------------------------------------------------------------

def _split_cases():
    hand = np.array([[1.0, 1.0, 4.0, 6.0]])
    out = [Case("worked example", (hand, 2), show=f"{show('token_losses', hand)}, train_len = 2")]
    for label, shape, L, seed, dtype in [
            ("(4, 20), train_len 8", (4, 20), 8, 11, np.float64),
            ("4x the training length: (2, 64), train_len 16", (2, 64), 16, 12, np.float64),
            ("train_len 2", (3, 9), 2, 13, np.float64),
            ("two positions past train_len", (3, 10), 8, 14, np.float64),
            ("float32 losses", (2, 12), 5, 15, np.float32)]:
        x = _losses(shape, seed, dtype)
        out.append(Case(label, (x, L), show=f"{show('token_losses', x, f'|normal| + 1, seed {seed}')}, "
                                            f"train_len = {L}"))
    return out


def _split_at(shift=0, swap=False, overall=False):
    def split(token_losses, train_len):
        t = train_len + shift
        inside, beyond = token_losses[:, :t].mean(), token_losses[:, t:].mean()
        if overall:
            beyond = token_losses.mean()
        pair = [beyond, inside] if swap else [inside, beyond]
        return np.array(pair, dtype=token_losses.dtype)
    return split


LOSS_INSIDE_AND_BEYOND = Target("loss_inside_and_beyond", "array", _split_cases, [
    Misconception("beyond_from_target", "position train_len - 1 counted as beyond",
                  "The loss at position t belongs to the query at t, which predicts token t + 1. A model "
                  "trained at length L made that prediction from position L - 1 in every training window, "
                  "so L - 1 is inside; beyond starts at t = train_len.", _split_at(shift=-1)),
    Misconception("beyond_from_one", "positions counted from 1",
                  "Positions count from 0, so a model trained at length L saw 0 .. L - 1 and the first new "
                  "position is t = L itself: token_losses[:, train_len:].", _split_at(shift=+1)),
    Misconception("sides_swapped", "returned [beyond, inside]",
                  "Return the mean over the trained positions first: [inside, beyond].", _split_at(swap=True)),
    Misconception("beyond_is_overall", "the whole window's mean reported as beyond",
                  "The mean over the whole long window mixes in the positions the model trained on, which "
                  "hides how bad the new ones are. Beyond is the mean over t >= train_len only.",
                  _split_at(overall=True)),
])


# ---------------------------------------------------------------------------
# 9.3 passkey_accuracy
# ---------------------------------------------------------------------------

def _passkey_case(B, T, V, n_scored, right_rows, one_wrong_rows, seed, dtype=np.float64, scattered=False):
    """Targets scored at ``n_scored`` positions; logits whose argmax is right for some rows, off by one digit for
    others, and random elsewhere."""
    g = np.random.default_rng(seed)
    targets = np.full((B, T), IGNORE, dtype=np.int64)
    cols = np.sort(g.choice(T, n_scored, replace=False)) if scattered else np.arange(T - n_scored, T)
    targets[:, cols] = g.integers(0, V, size=(B, n_scored))
    logits = g.standard_normal((B, T, V))
    for b in range(B):
        for j, t in enumerate(cols):
            want = targets[b, t]
            if b in right_rows or (b in one_wrong_rows and j != 0):
                logits[b, t, want] = logits[b, t].max() + 1.0  # the right token wins
            else:
                logits[b, t, want] = logits[b, t].min() - 1.0  # the right token loses
    return logits.astype(dtype), targets


def _passkey_cases():
    hand_logits = np.zeros((2, 3, 4))
    hand_logits[0, 1, 2] = hand_logits[0, 2, 3] = 1.0  # row 0 predicts 2 then 3: right
    hand_logits[1, 1, 2] = hand_logits[1, 2, 1] = 1.0  # row 1 predicts 2 then 1: one digit wrong
    hand_targets = np.array([[IGNORE, 2, 3], [IGNORE, 2, 3]])
    out = [Case("worked example: one row right, one with a wrong digit", (hand_logits, hand_targets),
                show=f"argmax(logits) = [[0, 2, 3], [0, 2, 1]]; {show('targets', hand_targets)}")]
    for label, args, seed in [
            ("3-digit keys at the end, 8 rows", dict(B=8, T=12, V=16, n_scored=3, right_rows={0, 1, 2},
                                                     one_wrong_rows={3, 4}), 21),
            ("scored positions scattered", dict(B=6, T=10, V=8, n_scored=4, right_rows={0, 5},
                                                one_wrong_rows={1, 2}, scattered=True), 22),
            ("every row right", dict(B=4, T=6, V=5, n_scored=2, right_rows={0, 1, 2, 3}, one_wrong_rows=set()), 23),
            ("one scored position per row", dict(B=5, T=7, V=6, n_scored=1, right_rows={1, 3},
                                                 one_wrong_rows=set()), 24),
            ("float32 logits", dict(B=6, T=9, V=10, n_scored=3, right_rows={2}, one_wrong_rows={0, 1},
                                    dtype=np.float32), 25)]:
        logits, targets = _passkey_case(seed=seed, **args)
        out.append(Case(label, (logits, targets),
                        show=f"{show('logits', logits, f'seed {seed}, the right token made the argmax in some rows')}; "
                             f"targets: shape {targets.shape}, IGNORE except {args['n_scored']} position(s) per row"))
    return out


def _rows_right(pred, targets):
    return ((pred == targets) | (targets == IGNORE)).all(axis=1)


def _shifted_again(logits, targets):
    pred = logits.argmax(-1)[:, :-1]
    return float(_rows_right(pred, targets[:, 1:]).mean())


def _per_token(logits, targets):
    scored = targets != IGNORE
    return float((logits.argmax(-1) == targets)[scored].mean())


PASSKEY_ACCURACY = Target("passkey_accuracy", "float", _passkey_cases, [
    Misconception("per_token_accuracy", "the share of right digits, not of right keys",
                  "A key with one wrong digit is a wrong key. Count a row only when every scored position in it "
                  "is right, then average over rows.", _per_token),
    Misconception("shifted_again", "predictions shifted by one a second time",
                  "targets are already the next tokens: the prediction at position t, argmax(logits[:, t]), is "
                  "compared with targets[:, t], not with targets[:, t + 1].", _shifted_again),
    Misconception("ignored_compared", "IGNORE positions compared too",
                  "Positions whose target is IGNORE (-1) are not scored; no prediction equals -1, so comparing "
                  "them makes every row wrong. Leave them out of the all-right test.",
                  lambda logits, targets: float((logits.argmax(-1) == targets).all(axis=1).mean())),
    Misconception("last_position_only", "only the last position checked",
                  "The key has several digits: check every scored position of the row, not only the last.",
                  lambda logits, targets: float((logits.argmax(-1)[:, -1] == targets[:, -1]).mean())),
])


# ---------------------------------------------------------------------------
# 9.4 effective_context_length
# ---------------------------------------------------------------------------

def _ecl_cases():
    L4 = np.array([8, 16, 32, 64])
    out = []
    for label, lengths, acc, kw in [
            ("a longer length passes after a shorter one failed", L4, [0.9, 0.8, 0.2, 0.9], {}),
            ("the shortest fails", L4, [0.3, 0.9, 0.9, 0.9], {}),
            ("every length passes", L4, [0.9, 0.7, 0.6, 0.55], {}),
            ("a cell exactly at the threshold", L4, [0.5, 0.5, 0.45, 0.5], {}),
            ("a refused length (NaN)", L4, [1.0, 1.0, math.nan, 1.0], {}),
            ("lengths x depths: one depth fails at 32", L4,
             [[1.0, 1.0, 1.0], [0.9, 0.6, 0.9], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]], {}),
            ("depths whose mean passes but one fails at 16", L4,
             [[1.0, 1.0], [1.0, 0.2], [1.0, 1.0], [0.0, 0.0]], {}),
            ("threshold 0.8", np.array([64, 128, 256]), [0.9, 0.75, 0.9], {"threshold": 0.8}),
            ("one length", np.array([64]), [0.7], {})]:
        acc = np.array(acc, dtype=np.float64)
        kws = "".join(f", {k}={v}" for k, v in kw.items())
        out.append(Case(label, (lengths, acc), kw,
                        show=f"lengths = {lengths.tolist()}, accuracy = {acc.tolist()}{kws}"))
    return out


def _ecl_with(slip):
    def ecl(lengths, accuracy, threshold=0.5):
        acc = np.asarray(accuracy, dtype=np.float64).reshape(len(lengths), -1)
        if slip == "nan_passes":
            acc = np.where(np.isnan(acc), 1.0, acc)
        if slip == "mean_over_depths":
            acc = acc.mean(axis=1, keepdims=True)
        passes = (acc > threshold).all(axis=1) if slip == "strict_threshold" else (acc >= threshold).all(axis=1)
        if slip == "longest_passing":
            return int(lengths[passes].max()) if passes.any() else 0
        n = len(passes) if passes.all() else int(np.argmin(passes))
        if slip == "first_failing":
            return int(lengths[min(n, len(lengths) - 1)])
        return int(lengths[n - 1]) if n else 0
    return ecl


EFFECTIVE_CONTEXT_LENGTH = Target("effective_context_length", "float", _ecl_cases, [
    Misconception("longest_passing", "the longest length that passes, wherever it is",
                  "The effective length is where performance first breaks: stop at the first length that fails, "
                  "even when a longer one passes again.", _ecl_with("longest_passing")),
    Misconception("first_failing", "the first failing length instead of the last passing one",
                  "Return the length before the first failure (or 0 when the shortest fails): off by one in the "
                  "index.", _ecl_with("first_failing")),
    Misconception("mean_over_depths", "depths averaged before the threshold",
                  "A length passes when every depth passes: a key that is never found at one depth is a failure "
                  "there, whatever the other depths do. Threshold each cell, then require all of them.",
                  _ecl_with("mean_over_depths")),
    Misconception("strict_threshold", "accuracy exactly at the threshold counted as a failure",
                  "A cell passes when its accuracy is at least the threshold: >=, not >.",
                  _ecl_with("strict_threshold")),
    Misconception("nan_passes", "a refused length (NaN) counted as a pass",
                  "NaN marks a length the model refused to run; that is a failure. Comparisons with NaN are False, "
                  "so test acc >= threshold (not 'not acc < threshold').", _ecl_with("nan_passes")),
])


TARGETS = [LOSS_BY_POSITION, LOSS_INSIDE_AND_BEYOND, PASSKEY_ACCURACY, EFFECTIVE_CONTEXT_LENGTH]


# ---------------------------------------------------------------------------
# Held-out cases: other shapes, seeds and grids, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _bucket_held_out():
    return [Case(f"held-out {i}", (_losses(shape, seed, dtype), bucket), show="(held out)")
            for i, (shape, bucket, seed, dtype) in enumerate([((5, 33), 4, 101, np.float64), ((1, 9), 9, 102, np.float64),
                                                              ((6, 40), 7, 103, np.float32)])]


def _split_held_out():
    return [Case(f"held-out {i}", (_losses(shape, seed, dtype), L), show="(held out)")
            for i, (shape, L, seed, dtype) in enumerate([((3, 40), 10, 111, np.float64), ((2, 9), 4, 112, np.float64),
                                                         ((4, 24), 3, 113, np.float32)])]


def _passkey_held_out():
    out = []
    for i, (args, seed) in enumerate([
            (dict(B=10, T=14, V=12, n_scored=5, right_rows={0, 3, 9}, one_wrong_rows={1, 2, 4}), 121),
            (dict(B=3, T=8, V=7, n_scored=2, right_rows=set(), one_wrong_rows={0, 1, 2}, scattered=True), 122),
            (dict(B=7, T=11, V=9, n_scored=3, right_rows={1, 2, 3, 4, 5, 6}, one_wrong_rows={0}), 123)]):
        logits, targets = _passkey_case(seed=seed, **args)
        out.append(Case(f"held-out {i}", (logits, targets), show="(held out)"))
    return out


def _ecl_held_out():
    L5 = np.array([16, 32, 64, 128, 256])
    return [Case(f"held-out {i}", (lengths, np.array(acc, dtype=np.float64)), kw, show="(held out)")
            for i, (lengths, acc, kw) in enumerate([
                (L5, [0.9, 0.9, 0.9, 0.4, 0.9], {}),
                (L5, [[1.0, 0.9], [1.0, 1.0], [0.6, 0.59], [1.0, 1.0], [0.0, 1.0]], {"threshold": 0.6}),
                (L5, [1.0, math.nan, 1.0, 1.0, 1.0], {}),
                (np.array([32, 64]), [0.1, 0.9], {})])]


HELD_OUT = {"loss_by_position": _bucket_held_out, "loss_inside_and_beyond": _split_held_out,
            "passkey_accuracy": _passkey_held_out, "effective_context_length": _ecl_held_out}
