"""The grading folder of ``solutions/today.py`` (chapter 13): its checks, mutants, wrong implementations, reader tests."""
