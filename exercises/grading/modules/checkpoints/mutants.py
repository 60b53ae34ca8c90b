r"""Mutants for chapter 11's reader test: ports of a fused W_qkv that are wrong in one realistic way.

Each wraps a correct ``port_qk_weights`` (the reference, or in a student copy the reader's own
once it passes) and breaks one thing. To learn which columns the correct port moves where, a
mutant ports a row of column numbers with it; it never re-implements the port. Every mutant
with a ``misconception`` reproduces that misconception of Exercise 11.1 exactly
(``tests/grading/test_grader.py`` grades each mutant against the exercise's checks).
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _columns(port, n_heads, d_head, rotary_dim):
    """The column order the correct port applies: where each new column comes from."""
    D3 = 3 * n_heads * d_head
    return port(xp.arange(D3, dtype="float64"), n_heads, d_head, rotary_dim).astype("int64")


def _reordered(change):
    """A mutant whose column order is ``change(order, d_model, d_head)`` of the correct one."""
    def make(port):
        @wraps_function(port)
        def port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None):
            order = _columns(port, n_heads, d_head, rotary_dim)
            return W_qkv[..., change(order.copy(), n_heads * d_head, d_head)]
        return port_qk_weights
    return make


def _values_too(order, D, d_head):
    order[2 * D:] = order[:D] + 2 * D          # the value block gets the query block's reordering
    return order


def _queries_only(order, D, d_head):
    order[D:2 * D] = xp.arange(D, 2 * D)       # the key block stays as it was
    return order


def _called(change):
    """A mutant that calls the correct port with its arguments changed: ``change(port, W, H, d, r)``."""
    def make(port):
        @wraps_function(port)
        def port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None):
            return change(port, W_qkv, n_heads, d_head, rotary_dim)
        return port_qk_weights
    return make


def _first_head_only(order, D, d_head):
    for start in (0, D):                        # heads 1, 2, ... of the query and key blocks stay as they were
        order[start + d_head:start + D] = xp.arange(start + d_head, start + D)
    return order


READER_TESTS = [ReaderTest("test_port", [
    Mutant("whole_width", "port_qk_weights", "one permutation across all heads' channels at once",
           "port a model with several heads: the even-then-odd order over the whole block moves channels between "
           "heads.", _called(lambda A, W, H, d, r: A(W, 1, H * d)), misconception="whole_width"),
    Mutant("inverse", "port_qk_weights", "applies the inverse permutation (rotate-half to interleaved)",
           "use heads of 8 channels or more: for 4 channels P is its own inverse, so the two directions agree.",
           _reordered(lambda order, D, d_head: xp.argsort(order)), misconception="inverse"),
    Mutant("values_too", "port_qk_weights", "permutes the value block too",
           "compare the models' outputs (logits), not only their attention scores: values do not enter the scores.",
           _reordered(_values_too), misconception="values_too"),
    Mutant("queries_only", "port_qk_weights", "ports the query block and forgets the key block",
           "compare the ported model with the original on an input of several tokens.",
           _reordered(_queries_only), misconception="queries_only"),
    Mutant("rotary_dim_ignored", "port_qk_weights", "permutes the whole head even with partial rotary",
           "port a model with partial_rotary_factor < 1 as well, and pass its rotary_dim.",
           _called(lambda A, W, H, d, r: A(W, H, d)), misconception="rotary_dim_ignored"),
    Mutant("bias_forgotten", "port_qk_weights", "returns a 1-D array (the bias) unported",
           "give the model nonzero biases before you port it: a fresh model's biases are all zero, so a bias left "
           "unported changes nothing there.",
           _called(lambda A, W, H, d, r: W.copy() if W.ndim == 1 else A(W, H, d, r)), misconception="bias_forgotten"),
    Mutant("first_head_only", "port_qk_weights", "ports the channels of the first head and no other",
           "port a model with several heads.", _reordered(_first_head_only)),
])]
