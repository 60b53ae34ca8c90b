r"""The grading folder of ``solutions/engine.py`` (chapter 0): its checks, mutants, wrong implementations, reader tests."""
