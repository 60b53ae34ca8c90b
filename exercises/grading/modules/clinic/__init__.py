r"""The grading folder of ``solutions/clinic.py`` (chapter 12): its checks, mutants, wrong implementations, reader tests."""
