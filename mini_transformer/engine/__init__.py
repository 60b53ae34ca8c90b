r"""The engine floor: arrays, autograd, the layers and the optimiser.

``backend`` (which array library runs) and ``strict`` (NumPy behind CuPy's wall), ``autograd``
(``Tensor``, ``op`` and the elementary ops), ``functional`` (the equations: attention, norms,
losses, rotations), ``nn`` (layers), ``optim`` (AdamW, clipping, the schedule), ``gradcheck`` and
``validate``, and ``files`` (``atomic_write``: a file written whole or not at all).
``kernels/`` holds the fast kernels, each beside the reference it replaces. Nothing
here imports from a floor above (``positional``, ``model``, ``evaluation``).
"""
