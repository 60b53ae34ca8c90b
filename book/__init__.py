r"""The book's build: the workbook's chapters as a static website, executed, searchable, offline.

    python -m book --out site/        # then open site/index.html (``python -m book --help``)

* ``site.py`` writes the pages' source (the README's chapter table, every chapter as a notebook, the
  instructor guide, the errata and the interview cards) and runs Sphinx on it;
* ``sphinx_config/`` is the Sphinx configuration it runs with (``conf.py``, the favicon);
* ``__main__.py`` is its command line.

It may import the library, the solutions and the grader (``exercises.grading``: reading chapters as
notebooks, the student edition's cuts); nothing outside this folder imports it.
"""
