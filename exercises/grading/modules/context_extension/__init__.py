r"""The grading folder of ``solutions/context_extension.py`` (chapter 8): its checks, mutants, wrong implementations, reader tests."""
