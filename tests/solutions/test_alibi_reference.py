r"""The ALiBi references (``solutions/alibi.py``, chapter 7) and the library agree: the slopes for every head count
and the causal bias (see ``agreement.py``)."""
import pytest

from mini_transformer import positional as lib
from solutions import alibi

from agreement import assert_same


@pytest.mark.parametrize("n_heads", list(range(1, 17)) + [24, 32, 40, 64])
def test_alibi_slopes(each_backend, n_heads):
    assert_same(alibi.alibi_slopes(n_heads), lib.alibi_slopes(n_heads))


@pytest.mark.parametrize("n_heads, T_q, T_k", [(8, 5, 5), (6, 1, 9), (12, 3, 10), (1, 4, 4)])
def test_alibi_bias(each_backend, n_heads, T_q, T_k):
    # The drill is the causal bias only; the library's bidirectional=True (encoders) has no drill.
    assert_same(alibi.alibi_bias(n_heads, T_q, T_k), lib.alibi_bias(n_heads, T_q, T_k, bidirectional=False))
