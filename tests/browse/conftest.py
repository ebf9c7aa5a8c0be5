"""Fixtures for the browser's page tests: a static server with HTTP range requests on 127.0.0.1, and Debian's
chromium driven by Playwright (no browser download), each page watched for console errors, page errors and any
request that leaves 127.0.0.1."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from urllib.parse import urlsplit

import pytest



class RangeHandler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler with single `bytes=a-b` ranges (206 + Content-Range); ranges=False answers 200."""

    ranges = True
    log: list

    def log_message(self, *args):
        pass

    def send_head(self):
        self.log.append((self.path, self.headers.get("Range")))
        wanted = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not self.ranges or not wanted or os.path.isdir(path):
            return super().send_head()
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
        try:
            f = open(path, "rb")
        except OSError:
            self.send_error(404, "File not found")
            return None
        with f:
            size = os.fstat(f.fileno()).st_size
            if not match:
                self.send_error(400, "Bad Range")
                return None
            start, end = int(match[1]), min(int(match[2]) if match[2] else size - 1, size - 1)
            if start > end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.end_headers()
                return None
            f.seek(start)
            body = f.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return BytesIO(body)

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@dataclass
class Served:
    url: str
    log: list = field(default_factory=list)   # (path, Range header or None) per request


@pytest.fixture
def serve():
    """serve(dir, ranges=True) -> Served: the folder on http://127.0.0.1:<free port>/ until the test ends."""
    servers = []

    def start(directory, ranges=True):
        log = []
        handler = type("Handler", (RangeHandler,), {"ranges": ranges, "log": log})
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(directory)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return Served(f"http://127.0.0.1:{server.server_address[1]}/", log)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the session: the one ``browser.chromium_path`` finds ($PROBEKIT_CHROMIUM, Debian's
    /usr/bin/chromium, `chromium` on the PATH); none is a failure saying how to install it, never a skip."""
    from browser import ChromiumMissing
    from browser import chromium as launch

    try:
        with launch() as browser:
            yield browser
    except ChromiumMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@dataclass
class Watched:
    page: object
    problems: list = field(default_factory=list)   # console errors, page errors, requests off 127.0.0.1
    requests: list = field(default_factory=list)


@pytest.fixture
def watched(chromium):
    """A fresh page; the test fails if the page logged a console error, threw, or asked anything of another host."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    w = Watched(page)
    page.on("console", lambda m: m.type == "error" and w.problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: w.problems.append(f"page error: {e}"))

    def request(r):
        w.requests.append(r.url)
        host = urlsplit(r.url).hostname
        if not (r.url.startswith("data:") or host == "127.0.0.1"):
            w.problems.append(f"request off 127.0.0.1: {r.url}")

    page.on("request", request)
    yield w
    context.close()
    assert not w.problems, "\n".join(w.problems)
