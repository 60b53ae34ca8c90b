r"""The grading folder of ``solutions/order.py`` (chapter 1): its checks, mutants, wrong implementations, reader tests."""
