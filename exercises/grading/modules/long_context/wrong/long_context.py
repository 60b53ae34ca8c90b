"""Wrong long-context measurements (chapter 9), as readers write them: one mistake each."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("by_position_reshape", "long_context.loss_by_position", "shape", "partial_bucket_dropped"),
    ("by_position_zero_padded", "long_context.loss_by_position", "misconception", "partial_bucket_padded"),
    ("by_position_per_sequence", "long_context.loss_by_position", "shape", "per_sequence"),
    ("by_position_sums", "long_context.loss_by_position", "misconception", "sum_not_mean"),
    ("by_position_float64", "long_context.loss_by_position", "dtype", None),
    ("by_position_in_place", "long_context.loss_by_position", "mutated", None),
    ("split_at_target", "long_context.loss_inside_and_beyond", "misconception", "beyond_from_target"),
    ("split_one_based", "long_context.loss_inside_and_beyond", "misconception", "beyond_from_one"),
    ("split_whole_window", "long_context.loss_inside_and_beyond", "misconception", "beyond_is_overall"),
    ("split_tuple", "long_context.loss_inside_and_beyond", "type", None),
    ("passkey_per_digit", "long_context.passkey_accuracy", "misconception", "per_token_accuracy"),
    ("passkey_shifted", "long_context.passkey_accuracy", "misconception", "shifted_again"),
    ("passkey_with_ignored", "long_context.passkey_accuracy", "misconception", "ignored_compared"),
    ("passkey_row_array", "long_context.passkey_accuracy", "type", None),
    ("ecl_longest", "long_context.effective_context_length", "misconception", "longest_passing"),
    ("ecl_mean_depth", "long_context.effective_context_length", "misconception", "mean_over_depths"),
    ("ecl_strict", "long_context.effective_context_length", "misconception", "strict_threshold"),
    ("ecl_not_less", "long_context.effective_context_length", "misconception", "nan_passes"),
    ("ecl_off_by_one", "long_context.effective_context_length", "misconception", "first_failing"),
    ("ecl_two_axes_only", "long_context.effective_context_length", "raised", None),
]


def by_position_reshape(token_losses, bucket):
    N, T = token_losses.shape
    n = T // bucket  # the short last bucket falls off the reshape
    return token_losses[:, :n * bucket].reshape(N, n, bucket).mean(axis=(0, 2))


def by_position_zero_padded(token_losses, bucket):
    N, T = token_losses.shape
    n = -(-T // bucket)
    padded = xp.concatenate([token_losses, xp.zeros((N, n * bucket - T), dtype=token_losses.dtype)], axis=1)
    return padded.reshape(N, n, bucket).mean(axis=(0, 2))  # zeros pull the last bucket down


def by_position_per_sequence(token_losses, bucket):
    T = token_losses.shape[1]
    return xp.stack([token_losses[:, s:s + bucket].mean(axis=1) for s in range(0, T, bucket)], axis=1)


def by_position_sums(token_losses, bucket):
    per_position = token_losses.mean(axis=0)
    return xp.stack([per_position[s:s + bucket].sum() for s in range(0, len(per_position), bucket)])


def by_position_float64(token_losses, bucket):
    per_position = token_losses.astype("float64").mean(axis=0)
    return xp.stack([per_position[s:s + bucket].mean() for s in range(0, len(per_position), bucket)])


def by_position_in_place(token_losses, bucket):
    token_losses /= 1.0 * token_losses.shape[0]  # sums over sequences later, divided up front, in place
    per_position = token_losses.sum(axis=0)
    return xp.stack([per_position[s:s + bucket].mean() for s in range(0, len(per_position), bucket)])


def split_at_target(token_losses, train_len):
    t = train_len - 1  # "the loss at L - 1 is for token L, which is beyond"
    return xp.stack([token_losses[:, :t].mean(), token_losses[:, t:].mean()])


def split_one_based(token_losses, train_len):
    beyond = xp.arange(token_losses.shape[1]) + 1 > train_len + 1  # positions 1 .. T, past L + 1
    return xp.stack([token_losses[:, ~beyond].mean(), token_losses[:, beyond].mean()])


def split_whole_window(token_losses, train_len):
    return xp.stack([token_losses[:, :train_len].mean(), token_losses.mean()])


def split_tuple(token_losses, train_len):
    return token_losses[:, :train_len].mean(), token_losses[:, train_len:].mean()


def passkey_per_digit(logits, targets):
    scored = targets != -1
    return float((logits.argmax(axis=-1) == targets)[scored].mean())


def passkey_shifted(logits, targets):
    predicted = logits.argmax(axis=-1)[:, :-1]  # the prediction at t is for t + 1 ... shifted once more
    wanted = targets[:, 1:]
    return float(((predicted == wanted) | (wanted == -1)).all(axis=1).mean())


def passkey_with_ignored(logits, targets):
    return float((logits.argmax(axis=-1) == targets).all(axis=1).mean())


def passkey_row_array(logits, targets):
    right = (logits.argmax(axis=-1) == targets) | (targets == -1)
    return right.all(axis=1).astype("float64")  # one number per row, never averaged


def ecl_longest(lengths, accuracy, threshold=0.5):
    passes = (accuracy.reshape(len(lengths), -1) >= threshold).all(axis=1)
    return int(lengths[passes].max()) if passes.any() else 0


def ecl_mean_depth(lengths, accuracy, threshold=0.5):
    best = 0
    for L, acc in zip(lengths, accuracy.reshape(len(lengths), -1)):
        if not acc.mean() >= threshold:  # the mean over depths decides
            break
        best = int(L)
    return best


def ecl_strict(lengths, accuracy, threshold=0.5):
    best = 0
    for L, acc in zip(lengths, accuracy.reshape(len(lengths), -1)):
        if not (acc > threshold).all():
            break
        best = int(L)
    return best


def ecl_not_less(lengths, accuracy, threshold=0.5):
    best = 0
    for L, acc in zip(lengths, accuracy.reshape(len(lengths), -1)):
        if (acc < threshold).any():  # NaN < threshold is False, so a refused length slips through
            break
        best = int(L)
    return best


def ecl_off_by_one(lengths, accuracy, threshold=0.5):
    passes = (accuracy.reshape(len(lengths), -1) >= threshold).all(axis=1)
    i = 0
    while i < len(lengths) - 1 and passes[i]:
        i += 1
    return int(lengths[i])


def ecl_two_axes_only(lengths, accuracy, threshold=0.5):
    best = 0
    for i in range(accuracy.shape[0]):
        if min(accuracy[i, j] for j in range(accuracy.shape[1])) < threshold:  # 1-D accuracy has no axis 1
            break
        best = int(lengths[i])
    return best
