r"""The book as a static website, executed, searchable and readable offline.

    python -m book --out site/                  # the whole book; open site/index.html
    python -m book --out site/ --student        # without hints and reference solutions
    python -m book --out DIR --chapters 02_sinusoidal 07_alibi   # a few chapters (a quick look)

Two steps, both here:

1. ``write_source`` writes the pages' source into a work folder (``build/site/full/src`` or
   ``build/site/student/src``), laid out as the repository is, so the chapters' relative links keep
   working: ``index.md`` (the README's title, its paragraph on the question and its chapter table),
   ``chapters/NN_name.ipynb`` (each chapter read through jupytext; with ``--student`` the stripped
   notebook of ``python -m exercises release``), ``chapters/TEACHING.md``, ``chapters/README.md``,
   ``chapters/numpy_to_pytorch.md``, ``chapters/ERRATA.md`` and ``chapters/cards/*.md`` copied as they are. On the way each
   chapter gets a first cell, hidden on the page, that makes every figure carry its alt text
   (``figure_alt``), and a box after its title with its ``.ipynb`` and ``.py`` downloads and the
   command that opens it in JupyterLab. Links are made to fit the site: ``07_alibi.py#7.-The-bake-off...``
   (JupyterLab's anchor) becomes ``07_alibi.ipynb#7-the-bake-off...`` (MyST's), and a link to another file
   of the repository (``../exercises/rope.py``) becomes a download of it (MyST's ``path:`` link, which keeps
   the link's text as it is written, a code span included); a link inside a code span is text and stays.
   A file is rewritten only when its text changed, so Sphinx rereads only what changed.
2. ``build`` runs Sphinx with ``book/sphinx_config/conf.py`` and warnings as errors (``-W``): a broken link, a
   missing figure or a chapter that raises fails the build. myst-nb executes each chapter in a kernel
   (the reference stands in for every exercise, one BLAS thread, as under the tests) and caches the
   outputs with jupyter-cache in ``build/site/jupyter_cache``, keyed by the chapter's code: a second
   build with no chapter changed executes nothing.

Everything a page loads lies in the site's folder (MathJax 3 comes from the ``sphinx-mathjax-offline``
package), so ``index.html`` works from a disk with no network.
"""
import os
import re
import shutil
import time
import unittest.mock
from pathlib import Path

from exercises.grading import notebooks
from exercises.grading.errors import CommandError
from exercises.grading.paths import CHAPTERS, ROOT

CONF_DIR = Path(__file__).resolve().parent / "sphinx_config"
WORK = ROOT / "build" / "site"
#: the pages beside the chapters: the instructor guide, the chapter pattern, the PyTorch map, the errata
EXTRA_PAGES = ("TEACHING.md", "README.md", "numpy_to_pytorch.md", "ERRATA.md")
#: the build's kernels: the tests' settings (reference stand-ins; a chapter sets its threads), figures inline, no tqdm
BUILD_SETTINGS = {**{k: v for k, v in notebooks.RUN_SETTINGS.items() if k != "MPLBACKEND"},
                  "MPLBACKEND": "module://matplotlib_inline.backend_inline", "TQDM_DISABLE": "1"}

#: the first cell of every chapter page, removed from the page (tag ``remove-cell``): figures carry alt text
ALT_CELL = """\
# The site's build: every inline figure is sent with alt text made from its titles (book.site).
import matplotlib.pyplot as plt
from IPython import get_ipython
from matplotlib.figure import Figure
from book.site import figure_alt
plt.close(plt.figure())  # loads the inline backend, which registers its PNG printer for figures
_png = get_ipython().display_formatter.formatters["image/png"]
_png.for_type(Figure, (lambda base: lambda fig: (base(fig), {"alt": figure_alt(fig)}))(_png.lookup_by_type(Figure)))
"""
UNTITLED = "A figure without a title"


def figure_alt(fig):
    r"""What a matplotlib figure shows, in words, from its titles: ``Figure: <suptitle>; <axes titles>``.

    A figure without any title is described by its axes' labels and starts with ``UNTITLED``, so the
    build can list it (every plot of the book should have a title).
    """
    parts = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    for ax in axes:
        parts += [t for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t]
    parts = [" ".join(p.split()) for p in parts if p and p.strip()]
    if parts:
        return "Figure: " + "; ".join(parts)
    labels = [f"{ax.get_ylabel() or 'values'} against {ax.get_xlabel() or 'index'}" for ax in axes]
    return f"{UNTITLED}: " + ("; ".join(labels) or "no axes")


# ---------------------------------------------------------------------------
# The pages' source
# ---------------------------------------------------------------------------

#: a markdown link, or a code span (one or more backticks to the same again), which is text and is left as it is
_LINK = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))|\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)", re.S)


def _jupyterlab_command(chapter_rel):
    r"""The README's command that opens chapter 0 in JupyterLab, with ``chapter_rel`` instead."""
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if "jupyter lab" in ln)
    command = line[line.index("python -m jupyter lab"):]
    return re.sub(r"chapters/\S+\.py", chapter_rel, command)


class _Source:
    r"""One build's source folder: what to write there, written only where the text changed."""

    def __init__(self, src, chapters, student):
        self.src, self.chapters, self.student = Path(src), list(chapters), student
        self.written = set()

    def write(self, rel, data):
        path = self.src / rel
        data = data.encode() if isinstance(data, str) else data
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        self.written.add(path)

    def links(self, text, folder):
        r"""``text`` (markdown of a page at ``folder``, relative to the repository) with links fitted to the site."""
        def fit(m):
            if m.group("code"):
                return m.group(0)  # `[exercises/rope.py](../exercises/rope.py)` shows the syntax; it links nothing
            target = m.group("target")
            if re.match(r"[a-z]+:", target):
                return m.group(0)  # a URL
            path, _, anchor = target.partition("#")
            anchor = "#" + re.sub(r"[^\w\-]", "", anchor.lower()) if anchor else ""  # JupyterLab's -> MyST's
            if not path:
                return f"[{m.group('text')}]({anchor})"
            file = (ROOT / folder / path).resolve()
            if file.parent == CHAPTERS and file.suffix == ".py" and file.stem[:2].isdigit():
                if file.stem not in self.chapters:  # a chapter this build leaves out: the words, no link
                    return m.group("text")
                return f"[{m.group('text')}]({Path(path).with_suffix('.ipynb').as_posix()}{anchor})"
            if self._is_page(file):
                return f"[{m.group('text')}]({path}{anchor})"
            if file.is_file() and ROOT in file.parents:  # another file of the repository: a download
                rel = file.relative_to(ROOT)
                self.write(Path("_files") / "repo" / rel, file.read_bytes())
                up = os.path.relpath(self.src / "_files" / "repo" / rel, self.src / folder)
                # MyST's path: link, not a {download} role: a role's text is plain, so the code span of
                # [`exercises/rope.py`](...) would show on the page as raw markup
                return f"[{m.group('text')}](path:{Path(up).as_posix()})"
            return m.group(0)  # left to the build, which fails on it under -W
        return _LINK.sub(fit, text)

    def _is_page(self, file):
        return file.suffix == ".md" and (file.parent == CHAPTERS and file.name in EXTRA_PAGES
                                         or file.parent == CHAPTERS / "cards")

    def chapter(self, name):
        import jupytext
        import nbformat
        nb = notebooks.read_chapter(name)
        if self.student:
            nb = notebooks.for_students(nb)
        nb.metadata.pop("jupytext", None)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = self.links(cell.source, "chapters")
        download = nbformat.from_dict(nb)  # what a reader downloads: the chapter, without the site's cells
        py = jupytext.writes(nb, fmt="py:percent") if self.student else notebooks.chapter_path(name).read_text()
        self.write(f"chapters/_files/{name}.ipynb", nbformat.writes(notebooks.stable_ids(download)) + "\n")
        self.write(f"chapters/_files/{name}.py", py)
        box = (f":::{{admonition}} Run this chapter yourself\n:class: tip\n\n"
               f"Download it as a notebook, {{download}}`{name}.ipynb <_files/{name}.ipynb>`, or as the "
               f"percent-format Python file the book keeps, {{download}}`{name}.py <_files/{name}.py>`. "
               f"In the workbook's folder (installed with the README's first command), this opens it in "
               f"JupyterLab:\n\n```bash\n{_jupyterlab_command(f'chapters/{name}.py')}\n```\n:::\n")
        title = nb.cells[0] if nb.cells and nb.cells[0].cell_type == "markdown" else None
        if title is None:
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(box))
        else:  # the box right after the title and its first paragraph, the rest of that cell after the box
            head, _, rest = title.source.partition("\n\n")
            more, _, rest = rest.partition("\n\n")
            title.source = f"{head}\n\n{more}"
            nb.cells[1:1] = [nbformat.v4.new_markdown_cell(box)] + ([nbformat.v4.new_markdown_cell(rest)] if rest else [])
        nb.cells.insert(0, nbformat.v4.new_code_cell(ALT_CELL, metadata={"tags": ["remove-cell"]}))
        self.write(f"chapters/{name}.ipynb", nbformat.writes(notebooks.stable_ids(nb)) + "\n")

    def index(self):
        readme = (ROOT / "README.md").read_text()
        title = readme.splitlines()[0]
        question = next(p for p in readme.split("\n\n") if p.startswith("How does a Transformer"))
        chapters = readme[readme.index("## The chapters"):]
        chapters = chapters[:chapters.index("\n## ", 3)]
        install = re.search(r"```bash\n.*?```", readme, re.S).group(0)
        pages = "\n".join(f"chapters/{n}" for n in self.chapters)
        cards = "\n".join(f"chapters/cards/{p.stem}" for p in sorted((CHAPTERS / "cards").glob("*.md")))
        kind = ("This is the student edition: the hints and the reference solutions are left out."
                if self.student else "Hints and reference solutions are folded away; a click opens them.")
        text = (f"{title}\n\n{question}\n\n{self.links(chapters, '.')}\n\n"
                f"## Run it yourself\n\nEvery chapter here was executed when this site was built, with the "
                f"reference standing in for every exercise. {kind} To run a chapter with your own code, clone "
                f"the workbook and, in its folder,\n\n{install}\n\n"
                f"For instructors: [the instructor guide](chapters/TEACHING.md). For authors: "
                f"[how a chapter is made](chapters/README.md). Beside the chapters: "
                f"[the workbook's NumPy idioms in PyTorch](chapters/numpy_to_pytorch.md). What changed since an earlier "
                f"copy, and how each chapter was checked: [the errata](chapters/ERRATA.md).\n\n"
                f"```{{toctree}}\n:hidden:\n:caption: Chapters\n\n{pages}\n```\n\n"
                f"```{{toctree}}\n:hidden:\n:caption: For instructors and authors\n\n"
                f"chapters/TEACHING\nchapters/README\nchapters/numpy_to_pytorch\nchapters/ERRATA\n```\n\n"
                f"```{{toctree}}\n:hidden:\n:caption: Interview cards\n:titlesonly:\n\n{cards}\n```\n")
        self.write("index.md", text)

    def pages(self):
        for name in EXTRA_PAGES:
            self.write(f"chapters/{name}", self.links((CHAPTERS / name).read_text(), "chapters"))
        for card in sorted((CHAPTERS / "cards").glob("*.md")):
            self.write(f"chapters/cards/{card.name}", self.links(card.read_text(), "chapters/cards"))

    def prune(self):
        r"""Remove what an earlier build wrote and this one did not (a chapter left out this time)."""
        for path in sorted(self.src.rglob("*"), reverse=True):
            if path.is_file() and path not in self.written:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()


def write_source(src, chapters=None, student=False):
    r"""Write the site's source for ``chapters`` (names; every chapter when None) into ``src``; the chapter names."""
    names = notebooks.chapter_names() if chapters is None else [notebooks.chapter_path(c).stem for c in chapters]
    if len(set(names)) != len(names):
        raise CommandError(f"chapters={list(chapters)!r} names a chapter twice; give each chapter once.")
    source = _Source(src, sorted(names), student)
    for name in source.chapters:
        source.chapter(name)
    source.pages()
    source.index()
    source.prune()
    return source.chapters


# ---------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------

def sphinx(src, html, doctrees, cache, quiet=False):
    r"""Run Sphinx on ``src`` into ``html`` with ``sphinx_config/conf.py``, warnings as errors; its exit status."""
    from sphinx.cmd.build import build_main
    args = ["-W", "--keep-going", "-b", "html", "-c", str(CONF_DIR), "-d", str(doctrees),
            "-D", f"nb_execution_cache_path={Path(cache).resolve()}", str(src), str(html)]
    with unittest.mock.patch.dict(os.environ, BUILD_SETTINGS):
        return build_main((["-q"] if quiet else []) + args)


def build(out, chapters=None, student=False, work=None, cache=None, quiet=False):
    r"""Build the site into ``out``; returns ``{"seconds", "pages", "figures", "untitled"}`` (see ``count``).

    ``work``: the folder of the source and Sphinx's saved state (default ``build/site/full`` or
    ``build/site/student``); ``cache``: jupyter-cache's folder (default ``build/site/jupyter_cache``).
    """
    start = time.monotonic()
    work = Path(work) if work else WORK / ("student" if student else "full")
    cache = Path(cache) if cache else WORK / "jupyter_cache"
    out = Path(out).resolve()
    if out == ROOT or out in ROOT.parents or out == CHAPTERS:
        raise CommandError(f"--out {out} would write the site over the workbook; give a folder of its own, e.g. site/.")
    if out.exists() and any(out.iterdir()) and not (out / ".buildinfo").is_file():
        raise CommandError(f"--out {out} holds files that are not a site built here; give an empty or new folder.")
    write_source(work / "src", chapters, student)
    # Sphinx writes into work/html (myst-nb keeps the executed notebooks beside it, in work/jupyter_execute)
    status = sphinx(work / "src", work / "html", work / "doctrees", cache, quiet)
    if status != 0:
        raise CommandError(f"The site's build failed (Sphinx exit status {status}); its warnings are above.")
    _mirror(work / "html", out)
    return {"seconds": time.monotonic() - start, **count(out)}


def _mirror(src, dst):
    r"""Make ``dst`` a copy of ``src``, copying only the files that changed (size or time) since the last build."""
    have = {p.relative_to(dst) for p in dst.rglob("*") if p.is_file()} if dst.is_dir() else set()
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        if path.is_file():
            target, old = dst / rel, (dst / rel).stat() if rel in have else None
            new = path.stat()
            if old is None or (old.st_size, int(old.st_mtime)) != (new.st_size, int(new.st_mtime)):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            have.discard(rel)
    for rel in have:  # a page an earlier build wrote and this one did not
        (dst / rel).unlink()


def count(out):
    r"""``{"pages", "figures", "untitled"}`` of a built site: HTML pages of the book (not Sphinx's search and
    index pages), ``<img>`` of executed figures, and the figures whose alt text says they have no title."""
    skip = {"search.html", "genindex.html"}
    pages = [p for p in Path(out).rglob("*.html") if p.name not in skip and "_static" not in p.parts]
    figures, untitled = 0, []
    for page in pages:
        for alt in re.findall(r'<img alt="([^"]*)" src="[^"]*_images/[0-9a-f]{64}\.png"', page.read_text()):
            figures += 1
            if alt.startswith(UNTITLED):
                untitled.append(f"{page.relative_to(out)}: {alt}")
    return {"pages": len(pages), "figures": figures, "untitled": untitled}


def main(out, chapters=None, student=False, work=None, quiet=False):
    result = build(out, chapters=chapters or None, student=student, work=work, quiet=quiet)
    index = Path(out).resolve() / "index.html"
    print(f"Built {result['pages']} pages with {result['figures']} figures in {result['seconds']:.1f} s: open {index}")
    for line in result["untitled"]:
        print(f"  a figure without a title: {line}")
    return 0

