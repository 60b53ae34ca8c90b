r"""The book's website (``python -m book``), built and opened in headless Chromium.

The site is built once per run of this module: two chapters (``02_sinusoidal`` and ``07_alibi``, a
heatmap chapter and the chapter that search must find), or, where ``PE_SITE_DIR`` names a built site,
that site: ``.ci/run`` builds the whole book there with the README's command and sets it, so CI checks
every chapter page. The browser checks need Debian's ``chromium`` and ``chromium-driver`` (Selenium
drives them through ``Service(executable_path=...)`` and downloads nothing); without them they skip,
saying so. Two screenshots land in the test's temporary folder.
"""
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from book import site
from exercises.grading import notebooks

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
from site_browser import (browser_missing, open_page, opened, outside, page_text, requests_since,  # noqa: E402
                          site_pages, visit)

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["02_sinusoidal", "07_alibi"]


def _build(out, work, cache, chapters):
    code = ("import json, sys; from book import site; "
            "r = site.build(sys.argv[1], chapters=json.loads(sys.argv[2]), work=sys.argv[3], cache=sys.argv[4]); "
            "print('RESULT', json.dumps(r))")
    run = subprocess.run([sys.executable, "-c", code, str(out), json.dumps(chapters), str(work), str(cache)],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]
    result = json.loads(run.stdout.split("RESULT ", 1)[1])
    return result, run.stdout + run.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    r"""``(site folder, chapter names)``: the site CI built (``PE_SITE_DIR``), or two chapters built here."""
    given = os.environ.get("PE_SITE_DIR")
    if given:
        assert (Path(given) / "index.html").is_file(), f"PE_SITE_DIR={given} holds no built site (no index.html)"
        return Path(given), notebooks.chapter_names()
    tmp = tmp_path_factory.mktemp("site")
    first, log = _build(tmp / "site", tmp / "work", tmp / "cache", QUICK)
    assert "Executing notebook" in log
    again, log = _build(tmp / "site", tmp / "work", tmp / "cache", QUICK)  # nothing changed: nothing runs
    assert "Executing notebook" not in log and "Executed notebook" not in log, log[-3000:]
    assert again["figures"] == first["figures"] > 0
    return tmp / "site", QUICK


# ---------------------------------------------------------------------------
# The source the build writes (no Sphinx, no kernel)
# ---------------------------------------------------------------------------

def test_links_fit_the_site(tmp_path):
    source = site._Source(tmp_path, ["07_alibi", "00_tiny_transformer"], student=False)
    text = ("[the bake-off](07_alibi.py#7.-The-bake-off:-eight-schemes,-trained-at-L,-run-at-8L), "
            "[how to work](00_tiny_transformer.py#How-to-work), [RoPE](06_rope.py), [cards](cards/06_rope.md), "
            "[here](#Appendix:-the-fast-kernels), [the paper](https://arxiv.org/abs/2108.12409), "
            "[your file](../exercises/rope.py), [`exercises/t5.py`](../exercises/t5.py), "
            "`[as code](../exercises/alibi.py)`")
    fitted = source.links(text, "chapters")
    assert "[the bake-off](07_alibi.ipynb#7-the-bake-off-eight-schemes-trained-at-l-run-at-8l)" in fitted
    assert "[how to work](00_tiny_transformer.ipynb#how-to-work)" in fitted
    assert ", RoPE, " in fitted  # chapter 6 is not in this build: its name stays, the link goes
    assert "[cards](cards/06_rope.md)" in fitted and "[here](#appendix-the-fast-kernels)" in fitted
    assert "[the paper](https://arxiv.org/abs/2108.12409)" in fitted
    # a download as a MyST link, so a code span in its text renders (a {download} role would show it raw)
    assert "[your file](path:../_files/repo/exercises/rope.py)" in fitted
    assert "[`exercises/t5.py`](path:../_files/repo/exercises/t5.py)" in fitted
    assert "`[as code](../exercises/alibi.py)`" in fitted  # a link inside a code span is text, left alone
    assert not (tmp_path / "_files/repo/exercises/alibi.py").exists()
    assert (tmp_path / "_files/repo/exercises/rope.py").read_bytes() == (ROOT / "exercises/rope.py").read_bytes()


def test_student_source_has_no_hint_or_answer(tmp_path):
    import nbformat
    site.write_source(tmp_path, ["06_rope"], student=True)
    page = nbformat.read(tmp_path / "chapters/06_rope.ipynb", as_version=4)
    download = nbformat.read(tmp_path / "chapters/_files/06_rope.ipynb", as_version=4)
    full = notebooks.read_chapter("06_rope")
    hidden = [c for c in full.cells if set(notebooks.tags(c)) & set(notebooks.STUDENT_DROPS)]
    assert hidden  # the chapter has hints and answers to drop
    for nb in (page, download):
        assert not [c for c in nb.cells if set(notebooks.tags(c)) & set(notebooks.STUDENT_DROPS)]
        assert "reveal(" not in "".join(c.source for c in nb.cells)
    assert len(download.cells) == len(full.cells) - len(hidden)
    assert "<details>" not in (tmp_path / "chapters/_files/06_rope.py").read_text()


def test_each_chapter_page_offers_its_downloads_and_command(tmp_path):
    import nbformat
    site.write_source(tmp_path, ["02_sinusoidal"])
    nb = nbformat.read(tmp_path / "chapters/02_sinusoidal.ipynb", as_version=4)
    assert nb.cells[0].metadata["tags"] == ["remove-cell"] and "figure_alt" in nb.cells[0].source
    box = nb.cells[2].source  # after the title cell
    assert "{download}`02_sinusoidal.ipynb <_files/02_sinusoidal.ipynb>`" in box
    assert "{download}`02_sinusoidal.py <_files/02_sinusoidal.py>`" in box
    assert ("python -m jupyter lab --allow-root --ServerApp.root_dir=. --LabApp.app_settings_dir=.jupyter/lab/settings "
            '"--LabApp.default_url=/lab/tree/chapters/02_sinusoidal.py?file-browser-path=/"') in box
    assert (tmp_path / "chapters/_files/02_sinusoidal.py").read_text() == \
        (ROOT / "chapters/02_sinusoidal.py").read_text()
    index = (tmp_path / "index.md").read_text()
    assert "[2. Clocks: the sinusoidal encoding](chapters/02_sinusoidal.ipynb)" in index
    assert "chapters/TEACHING" in index and "chapters/cards/06_rope" in index
    assert "chapters/ERRATA" in index and (tmp_path / "chapters/ERRATA.md").read_text().startswith("# Errata")


def _sphinx(folder):
    r"""Sphinx with the book's configuration on ``folder/src`` into ``folder/html``, in its own process."""
    code = ("import sys; from book import site; s = sys.argv[1]; "
            "sys.exit(site.sphinx(s + '/src', s + '/html', s + '/doctrees', s + '/cache', quiet=True))")
    return subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow
def test_warnings_fail_the_build(tmp_path):
    r"""Sphinx runs with -W: a page that links a section no page has fails the build (the site's builds pass)."""
    (tmp_path / "src").mkdir()
    page = "# A page\n\n## A section\n\nSee [the section]({}).\n"
    (tmp_path / "src/index.md").write_text(page.format("#a-section-that-moved"))
    broken = _sphinx(tmp_path)
    assert broken.returncode != 0 and "a-section-that-moved" in broken.stderr, broken.stderr[-2000:]


#: MyST markup that reached a page's text unrendered: a role (``{download}`...```), a directive's fence, a colon
#: fence. The strict build lets each of these through (MyST shows what it cannot parse as text), and no page of
#: the book writes about MyST's syntax, so a rendered page shows none of them.
UNRENDERED = re.compile(r"\{[a-z][\w:.+-]*\}`|\{(?:download|doc|ref|numref|eq|term|abbr|kbd|file|any)\}|```\{|:::")

#: what the build once wrote for ``[`exercises/rope.py`](../exercises/rope.py)`` on 28 chapter pages: a role whose
#: text holds a code span, which MyST shows raw; and a directive's fence that an indent turns into a code block
PLANTED = ("The exercises: {download}``exercises/rope.py` <../_files/repo/exercises/rope.py>`, 6.1 to 6.10.\n\n"
           "    ```{note}\n    indented, so a code block and not a note\n    ```\n")


def unrendered(text):
    r"""Each place in ``text`` (a page as a reader sees it) that shows MyST markup instead of what it makes."""
    return [" ".join(text[max(0, m.start() - 30):m.end() + 40].split()) for m in UNRENDERED.finditer(text)]


@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory):
    r"""A two-page site built with the book's configuration, its html folder: ``chapters/good`` has an exercise
    link as the build fits it, ``chapters/bad`` the markup of ``PLANTED``."""
    tmp = tmp_path_factory.mktemp("tiny")
    link = site._Source(tmp / "src", [], student=False).links("[`exercises/rope.py`](../exercises/rope.py)", "chapters")
    (tmp / "src/chapters").mkdir(parents=True, exist_ok=True)
    code_cell = '<div class="cell_input"><pre>print(f"## Chapter {n}: `{path.name}`")</pre></div>'  # Python, not MyST
    (tmp / "src/chapters/good.md").write_text(f"# Good\n\nThe exercises: {link}, 6.1 to 6.10.\n\n{code_cell}\n")
    (tmp / "src/chapters/bad.md").write_text(f"# Bad\n\n{PLANTED}")
    (tmp / "src/index.md").write_text("# Tiny\n\n```{toctree}\nchapters/good\nchapters/bad\n```\n")
    run = _sphinx(tmp)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return tmp / "html"


@pytest.mark.slow
def test_an_exercise_link_renders_as_a_download(tiny_site):
    page = (tiny_site / "chapters/good.html").read_text()
    link = re.search(r'<a class="reference download internal" download="" href="([^"]+)">(.*?)</a>', page, re.S)
    assert link, page[page.find("The exercises"):][:1000]
    assert "<code" in link.group(2) and ">exercises/rope.py<" in link.group(2)  # its text, a code span, rendered
    assert (tiny_site / "chapters" / link.group(1)).read_bytes() == (ROOT / "exercises/rope.py").read_bytes()
    assert "{download}" not in page


def test_figure_alt_says_what_the_figure_shows():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2)
    fig.suptitle("RoPE at 8L")
    a.set_title("loss by position")
    b.set_title("attention")
    assert site.figure_alt(fig) == "Figure: RoPE at 8L; loss by position; attention"
    fig2, ax = plt.subplots()
    ax.set_xlabel("position")
    ax.set_ylabel("loss")
    assert site.figure_alt(fig2) == f"{site.UNTITLED}: loss against position"
    plt.close("all")


# ---------------------------------------------------------------------------
# The built site, in a real browser
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(built):
    missing = browser_missing()
    if missing:
        pytest.skip(missing)
    folder, _ = built
    with opened(folder) as (driver, base):
        yield driver, base


def visit_key(folder):
    r"""The background job's name for one visit of the site in ``folder`` (``conftest.py`` submits it)."""
    return f"site visit {Path(folder).resolve()}"


@pytest.fixture(scope="module")
def visited(built, browser):
    r"""``{"base", "pages": {page: ...}}``: every page of the site opened once in Chromium (``site_browser.visit``),
    beside the other tests from the end of collection where CI built the site (``PE_SITE_DIR``); the two checks
    below read the same visit instead of loading each page twice."""
    folder, chapters = built
    return background.result(visit_key(folder), lambda: visit(folder, chapters))


@pytest.mark.slow
def test_every_chapter_page_in_chromium(built, browser, visited):
    _, chapters = built
    _, served = browser   # the visit's own server has shut down; the downloads are fetched from this one
    base = visited["base"]
    report = []
    for name in chapters:
        seen = visited["pages"][f"chapters/{name}.html"]
        errors, urls, page = seen["errors"], seen["urls"], seen["chapter"]
        assert urls and not outside(urls, base), f"{name}: requests outside the site: {outside(urls, base)}"
        assert not errors, f"{name}: JavaScript errors: {errors}"
        assert "Traceback" not in page["text"], f"{name}: a traceback on the page"
        assert not page["errors"], f"{name}: {page['errors']} error or stderr outputs on the page"
        source = (ROOT / "chapters" / f"{name}.py").read_text()
        images = page["images"]
        if re.search(r"^\s*plt\.show\(\)|\.imshow\(|\.plot\(", source, re.M):
            assert images, f"{name} plots, but its page shows no figure"
        assert all(loaded for _, loaded in images), f"{name}: a figure did not load"
        assert all(alt.startswith(("Figure: ", site.UNTITLED)) for alt, _ in images), f"{name}: a figure has no alt"
        if "$" in source:
            assert page["math"], f"{name}: no rendered math"
            assert not page["refused"], f"{name}: a formula MathJax refused"
        assert not page["open"], f"{name}: a hint or solution is open"
        # the chapter's own two files and every file of the repository its text links to, each one there
        linked = {Path(f).name for f in re.findall(r"\]\(\.\./(?!chapters/)([^)#\s]+)\)", source)}
        assert {Path(h).name for h in page["downloads"]} >= {f"{name}.ipynb", f"{name}.py"} | linked, page["downloads"]
        for href in page["downloads"]:
            with urllib.request.urlopen(served + href[len(base):] if href.startswith(base) else href,
                                        timeout=10) as response:
                assert response.status == 200 and response.read(), href
        assert f"chapters/{name}.py" in page["text"] and "python -m jupyter lab" in page["text"]
        report.append((name, len(images), len(urls), seen["seconds"]))
    print("\n".join(f"{n}: {f} figures, {r} requests, all local ({s} s)" for n, f, r, s in report))


@pytest.mark.slow
def test_the_markup_check_catches_planted_markup(tiny_site, browser):
    r"""The positive control of ``test_no_page_shows_unrendered_markup``: the check finds both planted forms on a
    page built with the book's configuration, and nothing on the page with the link as the build now writes it."""
    driver, _ = browser
    shown = {}
    for name in ("good", "bad"):
        open_page(driver, (tiny_site / f"chapters/{name}.html").resolve().as_uri())
        shown[name] = unrendered(page_text(driver))
        if name == "good":  # the code cell's f-string reads as a role in the raw text: leaving it out is what keeps it clean
            assert unrendered(driver.execute_script("return document.body.innerText;")), "the planted code cell is missing"
    assert shown["good"] == [], shown["good"]
    assert len(shown["bad"]) == 2, shown["bad"]
    assert "{download}``exercises/rope.py" in shown["bad"][0] and "```{note}" in shown["bad"][1], shown["bad"]


@pytest.mark.slow
def test_no_page_shows_unrendered_markup(built, visited):
    folder, chapters = built
    pages = site_pages(folder)
    assert {f"chapters/{name}.html" for name in chapters} | {"index.html", "chapters/README.html"} <= set(pages)
    assert sorted(visited["pages"]) == pages
    shown = {page: unrendered(visited["pages"][page]["text"]) for page in pages}
    shown = {page: places for page, places in shown.items() if places}
    assert not shown, f"{len(shown)} of {len(pages)} pages show MyST markup as text: {shown}"


@pytest.mark.slow
def test_hints_open_on_a_click(built, browser):
    driver, base = browser
    open_page(driver, f"{base}chapters/07_alibi.html")
    hint = next(d for d in driver.find_elements("css selector", "main details")
                if d.find_element("tag name", "summary").text.startswith("Hint"))
    assert hint.get_attribute("open") is None
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", hint)
    hint.find_element("tag name", "summary").click()
    assert hint.get_attribute("open") is not None


@pytest.mark.slow
@pytest.mark.parametrize("where", ["server", "disk"])
def test_search_finds_alibi_offline(built, browser, where):
    r"""Served, and opened from disk (``file://``, as a reader opens ``index.html``)."""
    driver, base = browser
    if where == "disk":
        base = built[0].resolve().as_uri() + "/"
    errors, urls = open_page(driver, f"{base}search.html?q=ALiBi")
    from selenium.webdriver.support.ui import WebDriverWait
    found = WebDriverWait(driver, 30).until(lambda d: [a.get_attribute("href") for a in
                                                       d.find_elements("css selector", "#search-results li a")])
    errors += [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors and not outside(urls + requests_since(driver), base), (errors, outside(urls, base))
    assert any(h.split("?")[0].endswith("chapters/07_alibi.html") for h in found), found


@pytest.mark.slow
def test_landing_page_and_screenshots(built, browser, tmp_path):
    driver, base = browser
    _, chapters = built
    errors, urls = open_page(driver, base + "index.html")
    assert not errors and not outside(urls, base)
    nav = [a.get_attribute("href") for a in driver.find_elements("css selector", "nav.bd-links a")]
    for name in chapters:
        assert any(h.endswith(f"chapters/{name}.html") for h in nav), f"{name} is missing from the sidebar"
    assert any(h.endswith("chapters/TEACHING.html") for h in nav)
    assert any(h.endswith("chapters/ERRATA.html") for h in nav), "the errata are missing from the sidebar"
    assert any(h.endswith("chapters/cards/07_alibi.html") for h in nav)
    driver.save_screenshot(str(tmp_path / "index.png"))
    open_page(driver, f"{base}chapters/07_alibi.html")
    figure = driver.find_elements("css selector", "main img")[0]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", figure)
    driver.save_screenshot(str(tmp_path / "07_alibi_figure.png"))
    assert (tmp_path / "index.png").stat().st_size > 10_000
    print(f"screenshots: {tmp_path / 'index.png'} and {tmp_path / '07_alibi_figure.png'}")


def test_the_readme_names_the_site_command():
    readme = (ROOT / "README.md").read_text()
    working = readme[readme.index("## Working through a chapter"):readme.index("## Grading yourself")]
    intro = readme[:readme.index("## The chapters")]
    for part in (intro, working):
        assert "python -m book --out site/" in part
    assert "/site/" in (ROOT / ".gitignore").read_text().splitlines()
