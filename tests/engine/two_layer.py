"""A small model of every layer of ``engine/nn.py``, for the layer and optimiser tests; and the kernel sets."""
import pytest

from mini_transformer.engine import kernels, nn


class TwoLayer(nn.Module):
    def __init__(self, rng):
        self.emb = nn.Embedding(5, 4, rng)
        self.blocks = [nn.Linear(4, 4, rng), nn.LayerNorm(4)]
        self.mlp = nn.MLP(4, rng)
        self.norm = nn.RMSNorm(4)

    def forward(self, ids):
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x)
        return self.norm(x + self.mlp(x))


@pytest.fixture(params=kernels.NAMES)
def ops(request):
    """The reference kernel set (optim.py, functional.py) and the fast one (kernels/): the same hand values."""
    return kernels.select(request.param)
