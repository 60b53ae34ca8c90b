r"""Headless Chromium on a built site, for ``tests/book/test_site.py``: start it, open a page, read what it shows.

``browser_missing()`` says why the checks cannot run here (Chromium, its driver or Selenium absent), or None.
``opened(folder)`` serves ``folder`` on a local port and yields ``(driver, base URL)``. ``visit(folder,
chapters)`` opens every page of the site once in a browser of its own and returns what the checks read, so it
can run as a job on the suite's background threads (``tests/background.py``): it touches nothing of the tests'
process but the files of the site and its own server, Chromium and driver.
"""
import contextlib
import functools
import http.server
import importlib.util
import json
import shutil
import threading
import time

MAIN_NAMES = ("chromium", "chromium-browser")
DRIVER_NAMES = ("chromedriver", "chromium-driver")


def _which(names):
    return next((p for p in map(shutil.which, names) if p), None)


def browser_missing():
    r"""Why the browser checks cannot run on this machine, as the skip says it, or None when they can."""
    if not (_which(MAIN_NAMES) and _which(DRIVER_NAMES)):
        return ("headless Chromium is not installed (Debian: apt-get install chromium chromium-driver); "
                ".ci/run installs it, so CI runs these checks")
    if importlib.util.find_spec("selenium") is None:
        return "Selenium is not installed (requirements.txt)"
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def opened(folder):
    r"""``folder`` served on 127.0.0.1 and a headless Chromium driven by Selenium: yields ``(driver, base URL)``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = _which(MAIN_NAMES)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,1400"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=_which(DRIVER_NAMES)), options=options)
    except BaseException:
        server.shutdown()
        raise
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    try:
        yield driver, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        driver.quit()
        server.shutdown()


def requests_since(driver):
    r"""The URLs the page asked for since the last call (Chromium's network log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def open_page(driver, url):
    r"""Load ``url``, wait for MathJax to typeset; ``(errors in the console, URLs requested)``."""
    driver.get_log("browser"), requests_since(driver)  # forget the previous page's
    driver.get(url)
    driver.execute_async_script("""const done = arguments[arguments.length - 1];
        const typesets = document.querySelector('script[src*="mathjax"]');
        setTimeout(() => done(false), 30000);  // MathJax never came (from a CDN, say): the checks below say why
        const wait = () => !typesets ? done(true) : (window.MathJax && MathJax.startup && MathJax.startup.promise)
            ? MathJax.startup.promise.then(() => done(true)) : setTimeout(wait, 50);
        document.readyState === 'complete' ? wait() : window.addEventListener('load', wait);""")
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return errors, requests_since(driver)


def outside(urls, base):
    return [u for u in urls if not u.startswith((base, "data:", "blob:", "about:"))]


#: what a chapter page holds, read in the browser once it has loaded
CHAPTER_PAGE = """const main = document.querySelector('main');
    const all = s => [...main.querySelectorAll(s)];
    return {text: main.innerText,
            errors: all('.output.traceback, .output.error, .output.stderr').length,
            images: all('img').filter(i => i.src.includes('/_images/'))
                              .map(i => [i.alt, i.complete && i.naturalWidth > 0]),
            math: all('mjx-container').length, refused: all('mjx-merror').length,
            open: all('details[open]').length, details: all('details').length,
            downloads: all('a.download').map(a => a.href)};"""


def site_pages(folder):
    r"""Every page of the built site a reader reads (not the search page, the index or ``_static``)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.html")
                  if p.name not in ("search.html", "genindex.html") and "_static" not in p.parts)


#: a page's text as a reader sees it, without the chapters' code cells: their Python source is not MyST, and an
#: f-string such as ``f"{path.name}`"`` would read as a role (chapter 14 prints its cards that way)
PAGE_TEXT = """
const code = [...document.querySelectorAll('.cell_input')];
code.forEach(e => e.style.setProperty('display', 'none'));
const text = document.body.innerText;
code.forEach(e => e.style.removeProperty('display'));
return text;
"""


def page_text(driver):
    return driver.execute_script(PAGE_TEXT)


def visit(folder, chapters):
    r"""``{"base", "pages": {page: {"errors", "urls", "seconds", "text", "chapter"}}}``: every page of the site in
    ``folder`` opened once in a browser of its own (``opened``): its console errors, the URLs it requested, its
    text without code cells (``PAGE_TEXT``) and, for a page of ``chapters``, what ``CHAPTER_PAGE`` reads."""
    pages = {}
    with opened(folder) as (driver, base):
        for page in site_pages(folder):
            start = time.monotonic()
            errors, urls = open_page(driver, base + page)
            chapter = driver.execute_script(CHAPTER_PAGE) if page[len("chapters/"):-len(".html")] in chapters else None
            pages[page] = {"errors": errors, "urls": urls, "chapter": chapter, "text": page_text(driver),
                           "seconds": round(time.monotonic() - start, 1)}
    return {"base": base, "pages": pages}
