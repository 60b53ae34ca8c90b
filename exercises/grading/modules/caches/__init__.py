r"""The grading folder of ``solutions/caches.py`` (chapter 10): its checks, mutants, wrong implementations, reader tests."""
