r"""The grading folder of ``solutions/alibi.py`` (chapter 7): its checks, mutants, wrong implementations, reader tests."""
