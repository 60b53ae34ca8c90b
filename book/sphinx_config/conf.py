r"""Sphinx configuration of the book's website; the source folder it reads is written by ``book/site.py``.

``python -m book --out site/`` writes the pages' source (the README's chapter table as the landing
page, every chapter as a notebook, the instructor guide and the cards) and runs Sphinx with this file
(``-c book/sphinx_config``). Everything the built pages load lies in the site's own folder: the book theme's assets,
Sphinx's search, and MathJax 3 from the ``sphinx-mathjax-offline`` package (PyPI), so the site needs no network.
"""
project = "Positional encodings in Transformers: a workbook"
author = "the workbook's authors"
copyright = "the workbook's authors"

extensions = [
    "myst_nb",  # MyST markdown and notebooks, executed through jupyter-cache
    "sphinx_copybutton",  # a copy button on every code cell
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static/mathjax; sets mathjax_path to it
]
exclude_patterns = ["**/_files", "_build", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]  # the cards' pages start each question at level 2, under the page's title

# Notebooks: executed once, their outputs cached by the code they hold (nb_execution_cache_path is set by the
# build command with -D). A chapter that raises fails the build.
nb_execution_mode = "cache"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
nb_output_stderr = "warn"  # anything a chapter writes to stderr is a warning, so an error under -W
nb_ipywidgets_js = {}  # no widget manager from a CDN (the build runs tqdm with TQDM_DISABLE=1)
nb_render_markdown_format = "myst"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 4  # [text](07_alibi.ipynb#7-the-bake-off-...) links to a section of another chapter
myst_dmath_double_inline = True

html_theme = "sphinx_book_theme"
html_title = "Positional encodings in Transformers"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,  # each chapter offers its own .ipynb and .py downloads
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "navigation_with_keys": False,
}
html_context = {"default_mode": "light"}  # the theme's colour mode, set, so its script logs no error
html_favicon = "favicon.svg"  # the browser asks for no /favicon.ico of its own
html_show_sourcelink = False
html_show_search_summary = False  # a summary fetches each hit's page, which a page opened from disk may not
html_copy_source = False
copybutton_prompt_text = r">>> |\$ "
copybutton_prompt_is_regexp = True


def _alt_from_output(render_image):
    r"""myst-nb's image renderer, taking the ``alt`` text a figure's output carries in its metadata.

    The build's kernels send each matplotlib figure with ``{"image/png": {"alt": ...}}`` (the figure's titles,
    ``book.site.figure_alt``); myst-nb honours only ``width`` and ``height`` there, so this adds ``alt``.
    """
    def render(self, data):
        image_nodes = render_image(self, data)
        alt = data.output_metadata.get(data.mime_type, {}).get("alt")
        if alt and image_nodes:
            image_nodes[0]["alt"] = str(alt)
        return image_nodes
    return render


def setup(app):
    from myst_nb.core.render import NbElementRenderer
    if not getattr(NbElementRenderer.render_image, "_takes_alt", False):
        NbElementRenderer.render_image = _alt_from_output(NbElementRenderer.render_image)
        NbElementRenderer.render_image._takes_alt = True
