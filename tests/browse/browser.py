"""What the browser tests share: the Chromium they drive (Debian's ``chromium``; Playwright downloads no browser) and a
page that records its console errors, its uncaught errors and every request it makes.

    from browser import browser_page

    with serving(site) as url, browser_page(url) as page:
        page.goto(url + "#/overview")
        ...
        page.assert_clean()   # no console error, no page error, no request that leaves 127.0.0.1

A missing Chromium is an error that says how to install one, never a skip (README: a skipped test fails the run).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlsplit

ENV = "PROBEKIT_CHROMIUM"
DEBIAN = "/usr/bin/chromium"
LOOPBACK = "127.0.0.1"
LOCAL_SCHEMES = ("data", "blob", "about")
"""Requests that reach no server (an inline image, a worker's blob, about:blank)."""

INSTALL = (f"install Debian's chromium (as root: `apt-get update && apt-get install -y chromium`), or point {ENV} "
           "at any Chromium or Chrome binary (where downloads work, `playwright install chromium` fetches one: its "
           "path is under ~/.cache/ms-playwright/)")


class ChromiumMissing(RuntimeError):
    """No Chromium to drive; the message says how to get one."""


def chromium_path() -> str:
    """The Chromium the tests drive: ``$PROBEKIT_CHROMIUM``, else ``/usr/bin/chromium``, else ``chromium`` on the
    PATH; :class:`ChromiumMissing` when there is none (or ``$PROBEKIT_CHROMIUM`` is not an executable file)."""
    given = os.environ.get(ENV)
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        raise ChromiumMissing(f"{ENV}={given}: not an executable file; {INSTALL}")
    for candidate in (DEBIAN, shutil.which("chromium")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ChromiumMissing(f"no Chromium: neither {ENV} nor {DEBIAN} nor `chromium` on the PATH; {INSTALL}")


_OPEN: list = []
"""The Chromium this process has open: Playwright's sync API runs one event loop per thread, and a second
``sync_playwright()`` while one is open fails ("using Playwright Sync API inside the asyncio loop")."""


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium (Playwright's ``Browser``), closed at the end; the one already open in this process (the
    session's, tests/browse/conftest.py) when there is one, so a test may ask for one whatever ran before it in its
    worker."""
    if _OPEN:
        yield _OPEN[-1]
        return
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True)
        _OPEN.append(browser)
        try:
            yield browser
        finally:
            _OPEN.remove(browser)
            browser.close()


def leaves_loopback(url: str) -> bool:
    """Whether a request to ``url`` goes anywhere but 127.0.0.1 (``localhost`` counts as leaving: the page is
    served on 127.0.0.1 and fetches with relative URLs)."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return False
    return parts.hostname != LOOPBACK


@dataclass
class RecordedPage:
    """A Playwright ``Page`` (its attributes are the page's: ``goto``, ``locator``, ...) and what it recorded."""

    page: object
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def __getattr__(self, name):
        return getattr(self.page, name)

    @property
    def outside(self) -> list[str]:
        """The requests that left (or tried to leave) 127.0.0.1."""
        return [u for u in self.requests if leaves_loopback(u)]

    def problems(self) -> list[str]:
        return ([f"console error: {t}" for t in self.console_errors] + [f"page error: {t}" for t in self.page_errors]
                + [f"request outside {LOOPBACK}: {u}" for u in self.outside])

    def assert_clean(self) -> None:
        """No console error, no uncaught error, no request outside 127.0.0.1."""
        problems = self.problems()
        assert not problems, "\n".join(problems)


@contextmanager
def browser_page(base_url: str, *, browser=None, viewport: dict | None = None) -> Iterator[RecordedPage]:
    """A new page (in its own context) of ``browser`` (default: a Chromium started for it) that records console
    errors, page errors and every request URL; a request that would leave 127.0.0.1 is recorded and aborted, so no
    test reaches the network. ``base_url``: the served site (the page is not opened: ``page.goto(base_url)``)."""
    if leaves_loopback(base_url):
        raise ValueError(f"{base_url}: the site must be served on {LOOPBACK}")
    with (chromium() if browser is None else _given(browser)) as b:
        context = b.new_context(viewport=viewport or {"width": 1280, "height": 800}, service_workers="block")
        page = context.new_page()
        recorded = RecordedPage(page)
        page.on("console", lambda m: m.type == "error" and recorded.console_errors.append(
            f"{m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"))
        page.on("pageerror", lambda e: recorded.page_errors.append(str(e)))
        context.on("request", lambda r: recorded.requests.append(r.url))

        def guard(route):
            if leaves_loopback(route.request.url):
                recorded.blocked.append(route.request.url)
                route.abort("blockedbyclient")
            else:
                route.continue_()

        context.route("**/*", guard)
        try:
            yield recorded
        finally:
            context.close()


@contextmanager
def _given(browser) -> Iterator:
    yield browser
