r"""The grading folder of ``solutions/sinusoidal.py`` (chapter 2): its checks, mutants, wrong implementations, reader tests."""
