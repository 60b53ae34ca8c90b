r"""The grading folder of ``solutions/checkpoints.py`` (chapter 11): its checks, mutants, wrong implementations, reader tests."""
