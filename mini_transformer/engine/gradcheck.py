r"""Check a backward against the definition of a derivative.

For a function f of tensors, compare the gradient of L = \sum_i w_i f(x)_i
(random fixed weights w, so every output element matters) from ``backward()``
with central differences

.. math:: D(h) = \frac{L(x + h e_j) - L(x - h e_j)}{2h} = \frac{\partial L}{\partial x_j} + c\,h^2 + O(h^4),

in float64. One Richardson step, (4 D(h/2) - D(h)) / 3, cancels the h^2 term,
so with h = 1e-4 the truncation error is O(h^4) ~ 1e-16 and rounding is
~1e-16 / h ~ 1e-12: the check stays sharp even through a whole model, where
the curvature is large. Every op in the engine is tested this way.
"""
from . import backend
from .autograd import Tensor


def gradcheck(f, inputs, h=1e-4, seed=0, max_elements=None):
    r"""Return the worst relative error between analytic and numerical gradients.

    ``f`` takes the tensors in ``inputs`` and returns a Tensor. Inputs that
    require gradients are checked; they must be float64. The relative error of
    one input is ``max|g_a - g_n| / max(max|g_a|, max|g_n|, 1e-8)``. With
    ``max_elements`` only that many entries of each input (chosen by ``seed``)
    are perturbed, which keeps a check on a whole model fast.
    """
    for t in inputs:
        if t.requires_grad and t.dtype != "float64":
            raise TypeError(f"gradcheck needs float64 inputs (float32 rounding swamps the difference); "
                            f"got {t.dtype}.")
    out = f(*inputs)
    weights = backend.rng(seed).normal(size=out.shape, dtype="float64")

    def loss():
        return float((f(*inputs).data * weights).sum())

    for t in inputs:
        t.grad = None
    (out * Tensor(weights)).sum().backward()

    worst = 0.0
    pick = backend.rng(seed + 1).host
    for t in inputs:
        if not t.requires_grad:
            continue
        analytic = backend.to_numpy(t.grad) if t.grad is not None else backend.hostnp.zeros(t.shape)
        numeric = backend.hostnp.zeros(t.shape)
        idx = range(t.size)
        if max_elements is not None and t.size > max_elements:
            idx = sorted(pick.choice(t.size, max_elements, replace=False).tolist())
        mask = backend.hostnp.zeros(t.size, dtype=bool)
        for j in idx:
            at = tuple(int(i) for i in backend.hostnp.unravel_index(j, t.shape))  # works for any memory layout
            old = float(t.data[at])

            def central(step):
                t.data[at] = old + step
                up = loss()
                t.data[at] = old - step
                down = loss()
                t.data[at] = old
                return (up - down) / (2 * step)
            numeric.reshape(-1)[j] = (4 * central(h / 2) - central(h)) / 3
            mask[j] = True
        a, n = analytic.reshape(-1)[mask], numeric.reshape(-1)[mask]
        scale = max(abs(a).max(initial=0.0), abs(n).max(initial=0.0), 1e-8)
        worst = max(worst, float(abs(a - n).max(initial=0.0) / scale))
    return worst


def assert_gradcheck(f, inputs, tol=1e-6, **kwargs):
    """Raise AssertionError naming the error when ``gradcheck`` exceeds ``tol``."""
    err = gradcheck(f, inputs, **kwargs)
    if not err <= tol:
        raise AssertionError(f"gradcheck failed: relative error {err:.3e} exceeds {tol:.0e}.")
    return err
