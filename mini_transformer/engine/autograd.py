r"""``Tensor``: an array that remembers how it was made, so it can send gradients back.

Every op below is one function that computes its output (the forward) and,
right under it, a closure ``backward(gy)`` that turns the gradient of the loss
with respect to the output, ``gy``, into gradients with respect to each input,
``gx``. The docstring of each op states its local derivative.

Three rules hold throughout:

* gradients **accumulate** into ``.grad`` (a tensor used twice gets both
  contributions), and are never modified in place once stored, because two
  tensors may share one gradient array;
* every binary op undoes broadcasting in its backward with one helper,
  ``sum_to``;
* ``backward()`` walks the graph with an explicit stack, not recursion, so a
  graph of any depth works.

Arrays live on the active backend (``mini_transformer.engine.backend``); this file
never imports NumPy.
"""
import contextlib

from . import backend
from .backend import xp

_grad_enabled = True


@contextlib.contextmanager
def no_grad():
    """Build no graph inside this block: evaluation and optimiser updates."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


def is_grad_enabled():
    return _grad_enabled


def _is_float(a):
    return a.dtype.kind == "f"


class Tensor:
    r"""A backend array plus what autograd needs: ``grad``, ``requires_grad``, parents, backward.

    ``Tensor(array, requires_grad=True)`` wraps an array of the active backend;
    a NumPy array, list or number is moved there first. Arrays keep their
    dtype; Python floats become float32 unless you pass ``dtype``.
    """

    __slots__ = ("data", "grad", "requires_grad", "_parents", "_backward", "__weakref__")
    __array_priority__ = 1000  # so that ``array + tensor`` calls Tensor.__radd__

    def __init__(self, data, requires_grad=False, dtype=None):
        if isinstance(data, Tensor):
            data = data.data
        if not backend.is_array(data):
            from_python = not isinstance(data, backend.hostnp.ndarray)
            data = backend.hostnp.asarray(data)
            if dtype is None and from_python and data.dtype.kind == "f":
                dtype = "float32"  # Python numbers become float32; arrays keep their dtype
            data = backend.asarray(data, dtype=dtype)
        elif dtype is not None and data.dtype != dtype:
            data = data.astype(dtype)
        if requires_grad and not _is_float(data):
            raise TypeError(
                f"Only floating-point tensors can require gradients; this one has dtype "
                f"{data.dtype}. Convert it with .astype('float32') or keep requires_grad=False.")
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self._parents = ()
        self._backward = None

    # -- basic facts ---------------------------------------------------------
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: self.transpose())

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({backend.to_numpy(self.data)!r}{grad})"

    __hash__ = object.__hash__

    def item(self):
        return self.data.item()

    def numpy(self):
        """A host NumPy copy of the data."""
        return backend.to_numpy(self.data)

    def detach(self):
        """The same data, cut from the graph."""
        return Tensor(self.data)

    def astype(self, dtype):
        """A copy in another dtype; gradients flow back (cast back to the input's dtype)."""
        x = self

        def backward(gy):
            return (gy.astype(x.dtype),)
        return op(self.data.astype(dtype), (x,), backward)

    def zero_grad(self):
        self.grad = None

    # -- backward --------------------------------------------------------------
    def backward(self, grad=None):
        r"""Send gradients from this tensor to every tensor it depends on.

        Called on a scalar (a loss) with no argument, the seed gradient is 1.
        On any other shape pass ``grad`` of the same shape.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward() was called on a tensor that does not require gradients: nothing "
                "that produced it has requires_grad=True (or it was made under no_grad()).")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient works only on a scalar, but this tensor has "
                    f"shape {self.shape}. Reduce it first (for example .sum()) or pass "
                    f"grad= with shape {self.shape}.")
            grad = xp.ones_like(self.data)
        else:
            grad = grad.data if isinstance(grad, Tensor) else backend.asarray(grad, dtype=self.dtype)
            if grad.shape != self.shape:
                raise ValueError(f"backward(grad=...) got shape {grad.shape}; the tensor has shape {self.shape}.")

        # Topological order by an explicit depth-first stack (no recursion limit).
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for parent in node._parents:
                if parent.requires_grad and id(parent) not in seen:
                    stack.append((parent, False))

        self.grad = grad if self.grad is None else self.grad + grad
        for node in reversed(order):
            if node._backward is None or node.grad is None:
                continue
            gxs = node._backward(node.grad)
            for parent, gx in zip(node._parents, gxs):
                if gx is None or not parent.requires_grad:
                    continue
                # accumulate, never assign: a tensor used twice gets both gradients
                parent.grad = gx if parent.grad is None else parent.grad + gx
            # an intermediate result keeps neither its gradient nor its graph
            node.grad, node._parents, node._backward = None, (), None

    # -- operators -------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(self, other)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(self, other)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return div(other, self)

    def __neg__(self):
        return neg(self)

    def __pow__(self, exponent):
        return power(self, exponent)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, index):
        return getitem(self, index)

    # comparisons give boolean masks (plain backend arrays), not tensors
    def __lt__(self, other):
        return self.data < raw(other)

    def __le__(self, other):
        return self.data <= raw(other)

    def __gt__(self, other):
        return self.data > raw(other)

    def __ge__(self, other):
        return self.data >= raw(other)

    def eq(self, other):
        return self.data == raw(other)

    # -- methods named as in NumPy ---------------------------------------------
    def sum(self, axis=None, keepdims=False):
        return sum_(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return max_(self, axis, keepdims)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes or None)

    permute = transpose

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def sqrt(self):
        return sqrt(self)

    def tanh(self):
        return tanh(self)

    def relu(self):
        return relu(self)

    def masked_fill(self, mask, value):
        return masked_fill(self, mask, value)


# ---------------------------------------------------------------------------
# Plumbing shared by every op
# ---------------------------------------------------------------------------

def raw(x):
    """The backend array behind a Tensor, array or number."""
    return x.data if isinstance(x, Tensor) else x


def op(data, parents, backward):
    r"""Wrap an op's output ``data`` as a Tensor; record its ``parents`` and ``backward`` only if a gradient can flow.

    Every op of the engine ends in this call, and so can yours: compute the forward on plain arrays,
    write ``backward(g)`` that returns one gradient per parent, and return ``op(out, parents, backward)``.
    """
    out = Tensor.__new__(Tensor)
    out.data, out.grad = data, None
    if _grad_enabled and any(p.requires_grad for p in parents):
        out.requires_grad, out._parents, out._backward = True, parents, backward
    else:
        out.requires_grad, out._parents, out._backward = False, (), None
    return out


def as_tensor(x):
    """A Tensor as it is; anything else wrapped as a constant."""
    return x if isinstance(x, Tensor) else Tensor(x)


def sum_to(g, shape):
    r"""Undo broadcasting: sum ``g`` down to ``shape``.

    If :math:`y = f(x)` broadcast ``x`` from ``shape`` to ``g.shape``, then each
    element of ``x`` fed every element it was copied to, so its gradient is the
    sum of theirs.
    """
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1)
    g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape) if lead else g


def _check_broadcast(name, a, b):
    try:
        xp.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{name}: shapes {a.shape} and {b.shape} cannot be broadcast together.") from None


def _binary_operands(name, x, y):
    """Tensors stay tensors; numbers and arrays become constants of x's dtype."""
    if not isinstance(x, Tensor):
        x = Tensor(x, dtype=y.dtype if _is_float(y.data) else None)
    if not isinstance(y, Tensor):
        y = Tensor(y, dtype=x.dtype if _is_float(x.data) else None)
    if x.shape != y.shape:
        _check_broadcast(name, x, y)
    return x, y


# ---------------------------------------------------------------------------
# Elementwise arithmetic
# ---------------------------------------------------------------------------

def add(x0, x1):
    r"""y = x0 + x1.   dy/dx0 = dy/dx1 = 1."""
    x0, x1 = _binary_operands("add", x0, x1)

    def backward(gy):
        return sum_to(gy, x0.shape), sum_to(gy, x1.shape)
    return op(x0.data + x1.data, (x0, x1), backward)


def sub(x0, x1):
    r"""y = x0 - x1.   dy/dx0 = 1, dy/dx1 = -1."""
    x0, x1 = _binary_operands("sub", x0, x1)

    def backward(gy):
        return sum_to(gy, x0.shape), sum_to(-gy, x1.shape)
    return op(x0.data - x1.data, (x0, x1), backward)


def mul(x0, x1):
    r"""y = x0 * x1.   dy/dx0 = x1, dy/dx1 = x0."""
    x0, x1 = _binary_operands("mul", x0, x1)

    def backward(gy):
        return (sum_to(gy * x1.data, x0.shape) if x0.requires_grad else None,
                sum_to(gy * x0.data, x1.shape) if x1.requires_grad else None)
    return op(x0.data * x1.data, (x0, x1), backward)


def div(x0, x1):
    r"""y = x0 / x1.   dy/dx0 = 1/x1, dy/dx1 = -x0/x1^2."""
    x0, x1 = _binary_operands("div", x0, x1)

    def backward(gy):
        gx0 = gy / x1.data
        return (sum_to(gx0, x0.shape) if x0.requires_grad else None,
                sum_to(-gx0 * x0.data / x1.data, x1.shape) if x1.requires_grad else None)
    return op(x0.data / x1.data, (x0, x1), backward)


def neg(x):
    r"""y = -x.   dy/dx = -1."""
    def backward(gy):
        return (-gy,)
    return op(-x.data, (x,), backward)


def power(x, c):
    r"""y = x^c for a constant number c.   dy/dx = c x^{c-1}."""
    if isinstance(c, Tensor):
        raise TypeError("power: the exponent must be a number; tensor exponents are not supported.")

    def backward(gy):
        return (gy * c * x.data ** (c - 1),)
    return op(x.data ** c, (x,), backward)


# ---------------------------------------------------------------------------
# Elementwise functions
# ---------------------------------------------------------------------------

def exp(x):
    r"""y = e^x.   dy/dx = y."""
    y = xp.exp(x.data)

    def backward(gy):
        return (gy * y,)
    return op(y, (x,), backward)


def log(x):
    r"""y = \ln x.   dy/dx = 1/x."""
    def backward(gy):
        return (gy / x.data,)
    return op(xp.log(x.data), (x,), backward)


def sqrt(x):
    r"""y = \sqrt{x}.   dy/dx = 1 / (2y)."""
    y = xp.sqrt(x.data)

    def backward(gy):
        return (gy / (2 * y),)
    return op(y, (x,), backward)


def tanh(x):
    r"""y = \tanh x.   dy/dx = 1 - y^2."""
    y = xp.tanh(x.data)

    def backward(gy):
        return (gy * (1 - y * y),)
    return op(y, (x,), backward)


def relu(x):
    r"""y = \max(x, 0).   dy/dx = 1 where x > 0, else 0."""
    keep = x.data > 0

    def backward(gy):
        return (gy * keep,)
    return op(x.data * keep, (x,), backward)


GELU_C = 0.7978845608028654  # sqrt(2 / pi), the tanh approximation's constant; the fused kernel (kernels/gelu.py) shares it


def gelu(x):
    r"""GELU, tanh form (GPT-2's): y = x s,  s = (1 + \tanh u)/2,  u = \sqrt{2/\pi}(x + 0.044715 x^3).

    dy/dx = s + x s',  with s' = (1 - \tanh^2 u)/2 \cdot u'  and  u' = \sqrt{2/\pi}(1 + 3 \cdot 0.044715 x^2).
    """
    a = x.data
    t = xp.tanh(GELU_C * (a + 0.044715 * a * a * a))
    s = 0.5 * (1 + t)

    def backward(gy):
        du = GELU_C * (1 + 3 * 0.044715 * a * a)
        return (gy * (s + a * 0.5 * (1 - t * t) * du),)
    return op(a * s, (x,), backward)


def where(condition, x0, x1):
    r"""y = x0 where ``condition`` else x1.   The gradient goes to whichever side was picked."""
    cond = raw(condition)
    x0 = as_tensor(x0) if isinstance(x0, Tensor) or not isinstance(x1, Tensor) else Tensor(x0, dtype=x1.dtype)
    x1 = as_tensor(x1) if isinstance(x1, Tensor) else Tensor(x1, dtype=x0.dtype)
    _check_broadcast("where", x0, x1)

    def backward(gy):
        zero = xp.zeros((), dtype=gy.dtype)
        return (sum_to(xp.where(cond, gy, zero), x0.shape) if x0.requires_grad else None,
                sum_to(xp.where(cond, zero, gy), x1.shape) if x1.requires_grad else None)
    return op(xp.where(cond, x0.data, x1.data), (x0, x1), backward)


def masked_fill(x, mask, value):
    r"""y = ``value`` where ``mask`` is True, else x.   dy/dx = 0 where filled, else 1."""
    mask = raw(mask)
    _check_broadcast("masked_fill", x, Tensor(mask))

    def backward(gy):
        return (sum_to(xp.where(mask, xp.zeros((), dtype=gy.dtype), gy), x.shape),)
    return op(xp.where(mask, xp.asarray(value, dtype=x.dtype), x.data), (x,), backward)


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

def _expand_reduced(gy, shape, axis, keepdims):
    """Put back the reduced axes of ``gy`` as size 1, so it broadcasts against the input."""
    if axis is None or keepdims:
        return gy.reshape([1] * len(shape)) if axis is None and not keepdims else gy
    axes = (axis,) if isinstance(axis, int) else axis
    axes = sorted(a % len(shape) for a in axes)
    return xp.expand_dims(gy, tuple(axes))


def sum_(x, axis=None, keepdims=False):
    r"""y = \sum x over ``axis``.   dy/dx = 1, so gx is gy broadcast back."""
    def backward(gy):
        return (xp.broadcast_to(_expand_reduced(gy, x.shape, axis, keepdims), x.shape),)
    return op(x.data.sum(axis=axis, keepdims=keepdims), (x,), backward)


def mean(x, axis=None, keepdims=False):
    r"""y = mean of x over ``axis``.   dy/dx = 1/n."""
    y = x.data.mean(axis=axis, keepdims=keepdims)
    n = x.data.size // max(y.size, 1)

    def backward(gy):
        return (xp.broadcast_to(_expand_reduced(gy, x.shape, axis, keepdims) / n, x.shape),)
    return op(y, (x,), backward)


def max_(x, axis=None, keepdims=False):
    r"""y = max of x over ``axis``.   The gradient goes to the maximum; ties share it equally."""
    y = x.data.max(axis=axis, keepdims=keepdims)

    def backward(gy):
        y_full = _expand_reduced(y, x.shape, axis, keepdims)
        is_max = (x.data == y_full).astype(gy.dtype)
        share = is_max / is_max.sum(axis=axis, keepdims=True)
        return (_expand_reduced(gy, x.shape, axis, keepdims) * share,)
    return op(y, (x,), backward)


# ---------------------------------------------------------------------------
# Matrix product
# ---------------------------------------------------------------------------

def matmul(x0, x1):
    r"""y = x0 @ x1, batched and broadcast over leading axes (both at least 2-D).

    dy/dx0: gx0 = gy @ x1^T;   dy/dx1: gx1 = x0^T @ gy (each summed back to its shape, so a weight
    shared by every row of a batch collects the gradient of all of them).
    """
    x0, x1 = as_tensor(x0), as_tensor(x1)
    if x0.ndim < 2 or x1.ndim < 2 or x0.shape[-1] != x1.shape[-2]:
        raise ValueError(f"matmul: shapes {x0.shape} and {x1.shape} do not fit; both need at least two "
                         f"axes and x0.shape[-1] must equal x1.shape[-2].")

    def backward(gy):
        gx0 = sum_to(gy @ xp.swapaxes(x1.data, -1, -2), x0.shape) if x0.requires_grad else None
        gx1 = sum_to(xp.swapaxes(x0.data, -1, -2) @ gy, x1.shape) if x1.requires_grad else None
        return gx0, gx1
    return op(x0.data @ x1.data, (x0, x1), backward)


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------

def reshape(x, shape):
    r"""y = x with a new shape.   gx is gy with the old shape."""
    try:
        y = x.data.reshape(shape)
    except ValueError:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) "
                         f"into {tuple(shape)}.") from None

    def backward(gy):
        return (gy.reshape(x.shape),)
    return op(y, (x,), backward)


def transpose(x, axes=None):
    r"""y = x with axes permuted.   gx is gy with the inverse permutation."""
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    if sorted(a % x.ndim for a in axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of the {x.ndim} axes of a "
                         f"tensor of shape {x.shape}.")
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a % x.ndim] = i

    def backward(gy):
        return (gy.transpose(inverse),)
    return op(x.data.transpose(axes), (x,), backward)


def _index_has_array(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(not isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in items)


def getitem(x, index):
    r"""y = x[index]: integers, slices, ``None``, ``...`` and integer arrays (a gather).

    The backward scatters gy into zeros at the same places; where an integer
    array picks one element twice, the two gradients add (scatter-add).
    """
    if isinstance(index, Tensor):
        index = index.data
    elif isinstance(index, tuple):
        index = tuple(i.data if isinstance(i, Tensor) else i for i in index)
    try:
        y = x.data[index]
    except IndexError as e:
        raise IndexError(f"indexing a tensor of shape {x.shape}: {e}") from None
    gather = _index_has_array(index)

    def backward(gy):
        gx = xp.zeros(x.shape, dtype=gy.dtype)
        if gather:
            backend.scatter_add(gx, index, gy)
        else:
            gx[index] = gy
        return (gx,)
    return op(y, (x,), backward)


def concat(tensors, axis=0):
    r"""y = the tensors joined along ``axis``.   Each gx is its slice of gy."""
    tensors = [as_tensor(t) for t in tensors]
    try:
        y = xp.concatenate([t.data for t in tensors], axis=axis)
    except ValueError:
        raise ValueError(f"concat: shapes {[t.shape for t in tensors]} cannot be joined along axis {axis}.") from None
    bounds, total = [], 0
    for t in tensors:
        bounds.append((total, total + t.shape[axis]))
        total += t.shape[axis]

    def backward(gy):
        ax = axis % gy.ndim
        cut = (slice(None),) * ax
        return tuple(gy[cut + (slice(a, b),)] for a, b in bounds)
    return op(y, tuple(tensors), backward)


def stack(tensors, axis=0):
    r"""y = the tensors stacked along a new ``axis``.   Each gx is its slice of gy."""
    tensors = [as_tensor(t) for t in tensors]
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: all tensors need the same shape, got {[t.shape for t in tensors]}.")

    def backward(gy):
        return tuple(xp.take(gy, i, axis=axis) for i in range(len(tensors)))
    return op(xp.stack([t.data for t in tensors], axis=axis), tuple(tensors), backward)


def split(x, sections, axis=-1):
    r"""Cut x along ``axis`` into ``sections`` equal parts (an int) or parts of the given sizes (a list)."""
    n = x.shape[axis]
    if isinstance(sections, int):
        if n % sections:
            raise ValueError(f"split: axis {axis} has length {n}, which does not divide into {sections} equal parts.")
        sizes = [n // sections] * sections
    else:
        sizes = list(sections)
        if sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, but axis {axis} has length {n}.")
    ax = axis % x.ndim
    out, start = [], 0
    for size in sizes:
        out.append(getitem(x, (slice(None),) * ax + (slice(start, start + size),)))
        start += size
    return out


def pad(x, pad_width, value=0.0):
    r"""y = x padded with a constant; ``pad_width`` as in ``numpy.pad``.   gx is the middle of gy."""
    pad_width = [tuple(p) for p in pad_width]
    inner = tuple(slice(a, a + n) for (a, _), n in zip(pad_width, x.shape))

    def backward(gy):
        return (gy[inner],)
    return op(xp.pad(x.data, pad_width, constant_values=value), (x,), backward)
