r"""Mutants for chapter 11's reader test: ports of a fused W_qkv that are wrong in one realistic way.

Each wraps a correct ``port_qk_weights`` (the reference, or in a student copy the reader's own
once it passes) and breaks one thing. To learn which columns the correct port moves where, a
mutant ports a row of column numbers with it; it never re-implements the port. Every mutant
with a ``misconception`` reproduces that misconception of Exercise 11.1 exactly
(``tests/grading/test_grader.py`` grades each mutant against the exercise's checks).
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _columns(port, n_heads, d_head, rotary_dim, n_kv_heads=None):
    """The column order the correct port applies: where each new column comes from."""
    n_kv = n_kv_heads or n_heads  # MHA when n_kv_heads is not given
    width = (n_heads + 2 * n_kv) * d_head
    return port(xp.arange(width, dtype="float64"), n_heads, d_head, rotary_dim, n_kv).astype("int64")


def _reordered(change):
    """A mutant whose column order is ``change(order, Dq, Dkv, d_head, call)`` of the correct one: ``Dq`` the
    query block's width, ``Dkv`` the key block's, ``call = (port, n_heads, rotary_dim)``."""
    def make(port):
        @wraps_function(port)
        def port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
            n_kv = n_kv_heads or n_heads  # MHA when n_kv_heads is not given
            order = _columns(port, n_heads, d_head, rotary_dim, n_kv_heads)
            return W_qkv[..., change(order.copy(), n_heads * d_head, n_kv * d_head, d_head,
                                     (port, n_heads, rotary_dim))]
        return port_qk_weights
    return make


def _whole_width(order, Dq, Dkv, d_head, call):
    port = call[0]                              # each block ported as one head of its whole width
    order[:Dq] = _columns(port, 1, Dq, None)[:Dq]
    order[Dq:Dq + Dkv] = Dq + _columns(port, 1, Dkv, None)[:Dkv]
    return order


def _values_too(order, Dq, Dkv, d_head, call):
    order[Dq + Dkv:] = order[Dq:Dq + Dkv] + Dkv  # the value block gets the key block's reordering
    return order


def _queries_only(order, Dq, Dkv, d_head, call):
    order[Dq:Dq + Dkv] = xp.arange(Dq, Dq + Dkv)  # the key block stays as it was
    return order


def _keys_by_query_heads(order, Dq, Dkv, d_head, call):
    port, n_heads, r = call                     # the key block cut into n_heads heads of Dkv / n_heads channels
    w = Dkv // n_heads
    order[Dq:Dq + Dkv] = Dq + _columns(port, n_heads, w, None if r is None else r * w // d_head)[:Dkv]
    return order


def _called(change):
    """A mutant that calls the correct port with its arguments changed: ``change(port, W, H, d, r, n_kv)``."""
    def make(port):
        @wraps_function(port)
        def port_qk_weights(W_qkv, n_heads, d_head, rotary_dim=None, n_kv_heads=None):
            return change(port, W_qkv, n_heads, d_head, rotary_dim, n_kv_heads)
        return port_qk_weights
    return make


def _first_head_only(order, Dq, Dkv, d_head, call):
    for start, width in ((0, Dq), (Dq, Dkv)):    # heads 1, 2, ... of the query and key blocks stay as they were
        order[start + d_head:start + width] = xp.arange(start + d_head, start + width)
    return order


READER_TESTS = [ReaderTest("test_port", [
    Mutant("whole_width", "port_qk_weights", "one permutation across all heads' channels at once",
           "port a model with several heads: the even-then-odd order over the whole block moves channels between "
           "heads.", _reordered(_whole_width), misconception="whole_width"),
    Mutant("inverse", "port_qk_weights", "applies the inverse permutation (rotate-half to interleaved)",
           "use heads of 8 channels or more: for 4 channels P is its own inverse, so the two directions agree.",
           _reordered(lambda order, Dq, Dkv, d_head, call: xp.argsort(order)), misconception="inverse"),
    Mutant("values_too", "port_qk_weights", "permutes the value block too",
           "compare the models' outputs (logits), not only their attention scores: values do not enter the scores.",
           _reordered(_values_too), misconception="values_too"),
    Mutant("queries_only", "port_qk_weights", "ports the query block and forgets the key block",
           "compare the ported model with the original on an input of several tokens.",
           _reordered(_queries_only), misconception="queries_only"),
    Mutant("rotary_dim_ignored", "port_qk_weights", "permutes the whole head even with partial rotary",
           "port a model with partial_rotary_factor < 1 as well, and pass its rotary_dim.",
           _called(lambda A, W, H, d, r, kv: A(W, H, d, None, kv)), misconception="rotary_dim_ignored"),
    Mutant("bias_forgotten", "port_qk_weights", "returns a 1-D array (the bias) unported",
           "give the model nonzero biases before you port it: a fresh model's biases are all zero, so a bias left "
           "unported changes nothing there.",
           _called(lambda A, W, H, d, r, kv: W.copy() if W.ndim == 1 else A(W, H, d, r, kv)),
           misconception="bias_forgotten"),
    Mutant("keys_by_query_heads", "port_qk_weights",
           "permutes the keys of a grouped-query layer by the query head count",
           "port a grouped-query checkpoint (n_kv_heads < n_heads, e.g. 4 query heads sharing 2 key-value heads): "
           "with one key-value head per query head the two counts agree. This library's TinyGPT has no "
           "grouped-query attention; repeat each key-value head's columns for the query heads it serves to run one.",
           _reordered(_keys_by_query_heads), misconception="keys_by_query_heads"),
    Mutant("first_head_only", "port_qk_weights", "ports the channels of the first head and no other",
           "port a model with several heads.", _reordered(_first_head_only)),
])]
