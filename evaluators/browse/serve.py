"""Serving a built results site (``probes browse build``) on loopback: the files of the site folder and nothing else,
with HTTP range requests, so the page fetches one run's block of a shard's ``preds.bin`` (docs/browse.md).

Python's :class:`http.server.ThreadingHTTPServer` with a :class:`~http.server.SimpleHTTPRequestHandler` whose
``send_head`` answers a single ``Range: bytes=a-b`` (``a-``, ``-n``) with 206 and its ``Content-Range``, an
unsatisfiable one with 416; several ranges or a malformed header get the whole file (RFC 9110 section 14.2 lets a
server ignore a Range). No folder is listed; a path that leaves the site (``..``, a link to elsewhere) or names a
hidden file (``.probekit.json``) is 404.
"""

from __future__ import annotations

import email.utils
import errno
import functools
import os
import re
import threading
from contextlib import contextmanager
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

from probekit.errors import UsageError

SITE_JSON = "data/site.json"
"""The file that makes a folder a built site (written last by the builder)."""

MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".json": "application/json", ".md": "text/markdown; charset=utf-8", ".txt": "text/plain; charset=utf-8",
         ".bin": "application/octet-stream", ".png": "image/png", ".svg": "image/svg+xml", ".ico": "image/x-icon"}
"""Content types by suffix (the system's mime.types is not read: the page must get the same on every machine;
a module script served as anything but JavaScript is refused by the browser). Any other suffix: octet-stream."""

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
CHUNK = 1 << 16


def site_folder(directory: str | os.PathLike) -> Path:
    """``directory`` when it is a built site (a folder with ``data/site.json``); else a :class:`UsageError` naming
    it."""
    path = Path(directory)
    if not path.is_dir():
        raise UsageError(f"{directory}: no such folder; build a site with `probes browse build --out {directory}`")
    if not (path / SITE_JSON).is_file():
        raise UsageError(f"{directory}: not a built results site (no {SITE_JSON}); build one with "
                         f"`probes browse build --out {directory}`")
    return path


def byte_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """The ``(first, last)`` bytes (inclusive) a ``Range`` header asks of a file of ``size`` bytes; ``"416"`` when
    it is unsatisfiable (a start at or past the end, an empty suffix, or the empty file); None when the whole file
    is sent (no header, another unit, several ranges, a malformed one)."""
    if not header:
        return None
    m = _RANGE.fullmatch(header.strip())
    if m is None or m.group(1) == m.group(2) == "":
        return None
    first, last = m.group(1), m.group(2)
    if first == "":   # a suffix: the last n bytes
        n = int(last)
        return "416" if n == 0 or size == 0 else (max(0, size - n), size - 1)
    start = int(first)
    if last != "" and int(last) < start:
        return None   # invalid (RFC 9110: ignore the header)
    if start >= size:
        return "416"
    return start, size - 1 if last == "" else min(int(last), size - 1)


class SiteHandler(SimpleHTTPRequestHandler):
    """The site's files (``directory``), each with ``Accept-Ranges: bytes``; see the module."""

    protocol_version = "HTTP/1.1"   # keep-alive: the page fetches many ranges
    quiet = False

    def log_message(self, format, *args):   # noqa: A002 - the base class's name
        if not self.quiet:
            super().log_message(format, *args)

    def guess_type(self, path):
        return MEDIA.get(Path(os.fspath(path)).suffix.lower(), "application/octet-stream")

    def list_directory(self, path):   # never reached (send_head lists nothing); kept closed for any other caller
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None

    def _file(self) -> Path | None:
        """The file the request names inside the site (a folder's index.html), or None (then 404)."""
        root = os.path.realpath(self.directory)
        path = self.translate_path(self.path)   # '..' folded away, the query and fragment dropped
        relative = os.path.relpath(path, self.directory)
        if relative != "." and any(part.startswith(".") for part in Path(relative).parts):
            return None   # a hidden file: the builder's marker, a temporary folder
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        real = os.path.realpath(path)
        if os.path.commonpath([root, real]) != root or not os.path.isfile(real):
            return None   # missing, or a link that leaves the site
        return Path(real)

    def send_head(self):
        path = self._file()
        if path is None:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        url = self.path.split("?", 1)[0].split("#", 1)[0]
        if path.name == "index.html" and os.path.isdir(self.translate_path(self.path)) and not url.endswith("/"):
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)   # relative URLs in the page resolve under the folder
            self.send_header("Location", url + "/" + self.path[len(url):])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        try:
            f = open(path, "rb")
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        try:
            stat = os.fstat(f.fileno())
            size, modified = stat.st_size, email.utils.formatdate(stat.st_mtime, usegmt=True)
            wanted = byte_range(self.headers.get("Range"), size)
            if_range = self.headers.get("If-Range")
            if if_range is not None and if_range.strip() != modified:
                wanted = None   # the file changed since the client's copy: send it whole
            if wanted == "416":
                f.close()
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if wanted is None:
                first, last = 0, size - 1
                self.send_response(HTTPStatus.OK)
            else:
                first, last = wanted
                self.send_response(HTTPStatus.PARTIAL_CONTENT)
                self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Length", str(last - first + 1))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Last-Modified", modified)
            self.send_header("Cache-Control", "no-cache")   # a rebuilt site is fetched anew
            self.end_headers()
            f.seek(first)
            self._left = last - first + 1
            return f
        except BaseException:
            f.close()
            raise

    def copyfile(self, source, outputfile):
        left = getattr(self, "_left", None)
        while left is None or left > 0:
            block = source.read(CHUNK if left is None else min(CHUNK, left))
            if not block:
                break
            outputfile.write(block)
            if left is not None:
                left -= len(block)


def make_server(directory: str | os.PathLike, port: int = 8000, host: str = "127.0.0.1", *,
                quiet: bool = False) -> ThreadingHTTPServer:
    """A server of the built site ``directory`` bound to ``host:port`` (0: a free port), not yet serving. A port in
    use is a :class:`UsageError`."""
    root = site_folder(directory)
    handler = type("Handler", (SiteHandler,), {"quiet": quiet})
    try:
        return ThreadingHTTPServer((host, port), functools.partial(handler, directory=str(root)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is in use; give another with --port (0: a free one)") from None
        raise


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"


def serve(directory: str | os.PathLike, port: int = 8000, host: str = "127.0.0.1") -> None:
    """Serve the built site ``directory`` on ``host:port`` (0: a free port) until interrupted; prints its URL."""
    with make_server(directory, port, host) as server:
        print(f"serving {directory} at {url_of(server)} (Ctrl-C stops)", flush=True)
        server.serve_forever()


@contextmanager
def serving(directory: str | os.PathLike, port: int = 0, host: str = "127.0.0.1", *,
            quiet: bool = True) -> Iterator[str]:
    """The built site ``directory`` served in a thread while the block runs; yields its base URL
    (``http://127.0.0.1:PORT/``). For the tests and the bench."""
    server = make_server(directory, port, host, quiet=quiet)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield url_of(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
