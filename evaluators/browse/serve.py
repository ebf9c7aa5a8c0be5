"""Serving a built results site (``probes browse build``) on loopback: the files of the site folder and nothing else,
with HTTP range requests, so the page fetches one run's block of a shard's ``preds.bin`` (docs/browse.md).

Python's :class:`http.server.ThreadingHTTPServer` with a :class:`~http.server.SimpleHTTPRequestHandler` whose
``send_head`` answers a single ``Range: bytes=a-b`` (``a-``, ``-n``) with 206 and its ``Content-Range``, an
unsatisfiable one with 416; several ranges or a malformed header get the whole file (RFC 9110 section 14.2 lets a
server ignore a Range). Only the site's own files are served (:mod:`.own`: regular files reached without a link,
no hidden name), so the server shows what the Space will show: a link inside the site (to anywhere), a hidden name
(``.probekit.json``, ``..``), a FIFO or a folder without an ``index.html`` is 404; no folder is listed.

Every request gets an answer and the server goes on: a malformed request target (a bad or NUL escape, bytes that
are not UTF-8, a backslash, no leading ``/``) is 400, a Range of any length is read without ``int``'s 4,300-digit
limit. The absolute form (``GET http://host/path``) is served as its path (RFC 9112 section 3.2.2).
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

from evaluators.browse.own import open_own, own_file
from probekit.errors import UsageError

SITE_JSON = "data/site.json"
"""The file that makes a folder a built site (written last by the builder)."""

MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".json": "application/json", ".md": "text/markdown; charset=utf-8", ".txt": "text/plain; charset=utf-8",
         ".bin": "application/octet-stream", ".png": "image/png", ".svg": "image/svg+xml", ".ico": "image/x-icon"}
"""Content types by suffix (the system's mime.types is not read: the page must get the same on every machine;
a module script served as anything but JavaScript is refused by the browser). Any other suffix: octet-stream."""

_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)")
_HUGE = 10 ** 30   # past any file's size
_ABSOLUTE = re.compile(r"https?://[^/?#]*", re.IGNORECASE)
CHUNK = 1 << 16
MAX_PATH = 4096
"""The longest decoded path served (Linux's PATH_MAX); a longer one is 414."""


class BadTarget(ValueError):
    """A request target that names no path: its status (400, 414) and why."""

    def __init__(self, status: HTTPStatus, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def site_folder(directory: str | os.PathLike) -> Path:
    """``directory`` when it is a built site (a folder with ``data/site.json``); else a :class:`UsageError` naming
    it. Its ``data/site.json`` and ``index.html`` (where there is one) must be its own regular files (no link at
    any depth, :mod:`.own`)."""
    path = Path(directory)
    if not path.is_dir():
        raise UsageError(f"{directory}: no such folder; build a site with `probes browse build --out {directory}`")
    if not os.path.lexists(path / SITE_JSON):
        raise UsageError(f"{directory}: not a built results site (no {SITE_JSON}); build one with "
                         f"`probes browse build --out {directory}`")
    for name in (SITE_JSON, "index.html"):
        if (name == SITE_JSON or os.path.lexists(path / name)) and not own_file(path, name):
            raise UsageError(f"{directory}: {name} is a link or not a regular file; a site is served and published "
                             f"with its own regular files only (build it again with `probes browse build --out "
                             f"{directory}`)")
    return path


def _number(digits: str) -> int:
    """The value of a string of ASCII digits, any number of them (``int`` refuses more than 4,300)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 30 else _HUGE


def _unquote(path: str) -> bytes:
    """The bytes a path's percent-escapes spell; :class:`BadTarget` for a ``%`` without two hex digits."""
    first, *rest = path.split("%")
    out = bytearray(first.encode("ascii"))
    for piece in rest:
        if len(piece) < 2 or not all(c in "0123456789abcdefABCDEF" for c in piece[:2]):
            raise BadTarget(HTTPStatus.BAD_REQUEST, "a % not followed by two hex digits")
        out.append(int(piece[:2], 16))
        out += piece[2:].encode("ascii")
    return bytes(out)


def target_parts(target: str) -> tuple[list[str], str, str]:
    """``(names, path, rest)``: the names a request target gives under the site (empty ones dropped: ``/`` is the
    site folder), its path as sent and the query and fragment after it (as sent: no part of the name).
    :class:`BadTarget` (400) for a target that is no path (``*``, a relative one), one with a byte other than
    visible ASCII, a bad escape, escapes that are not UTF-8, a NUL or other control character or a backslash; 414
    past :data:`MAX_PATH`. Hidden names (``..``) are left to :func:`~evaluators.browse.own.open_own` (404)."""
    absolute = _ABSOLUTE.match(target)
    if absolute:
        target = target[absolute.end():] or "/"
    path = target.split("?", 1)[0].split("#", 1)[0]
    bad = HTTPStatus.BAD_REQUEST
    if not path.startswith("/"):
        raise BadTarget(bad, "the request target is no absolute path")
    if any(not "!" <= c <= "~" for c in path):
        raise BadTarget(bad, "the request target holds a byte other than visible ASCII")
    try:
        text = _unquote(path).decode("utf-8")
    except UnicodeDecodeError:
        raise BadTarget(bad, "the path's escapes are not UTF-8") from None
    if any(c < " " or c == "\x7f" or c == "\\" for c in text):
        raise BadTarget(bad, "the path holds a NUL, another control character or a backslash")
    if len(text.encode("utf-8")) > MAX_PATH:
        raise BadTarget(HTTPStatus.REQUEST_URI_TOO_LONG, "the path is too long")
    return [name for name in text.split("/") if name], path, target[len(path):]


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
        n = _number(last)
        return "416" if n == 0 or size == 0 else (max(0, size - n), size - 1)
    start = _number(first)
    if last != "" and _number(last) < start:
        return None   # invalid (RFC 9110: ignore the header)
    if start >= size:
        return "416"
    return start, size - 1 if last == "" else min(_number(last), size - 1)


class SiteHandler(SimpleHTTPRequestHandler):
    """The site's files (``directory``), each with ``Accept-Ranges: bytes``; see the module."""

    protocol_version = "HTTP/1.1"   # keep-alive: the page fetches many ranges
    default_request_version = "HTTP/1.0"   # an unreadable request line gets a status line (HTTP/0.9: a bare body)
    quiet = False

    def log_message(self, format, *args):   # noqa: A002 - the base class's name
        if not self.quiet:
            super().log_message(format, *args)

    def guess_type(self, path):
        return MEDIA.get(Path(os.fspath(path)).suffix.lower(), "application/octet-stream")

    def list_directory(self, path):   # never reached (send_head lists nothing); kept closed for any other caller
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None

    def _open(self, parts: list[str], url: str, rest: str) -> tuple[int, str] | None:
        """``(fd, name)`` of the site's own file the names give (a folder's own ``index.html``), or None after a
        redirect of a folder to its ``/``; :class:`OSError` when there is none (then 404)."""
        fd, folder = open_own(self.directory, parts)
        if not folder:
            if url.endswith("/"):   # a file is no folder
                os.close(fd)
                raise NotADirectoryError(url)
            return fd, parts[-1]
        os.close(fd)
        fd, folder = open_own(self.directory, [*parts, "index.html"])
        if folder:
            os.close(fd)
            raise IsADirectoryError(url)
        if not url.endswith("/"):
            os.close(fd)
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)   # relative URLs in the page resolve under the folder
            self.send_header("Location", url + "/" + rest)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return fd, "index.html"

    def send_head(self):
        try:
            parts, url, rest = target_parts(self.path)
        except BadTarget as exc:
            self.send_error(exc.status, exc.reason)
            return None
        try:
            opened = self._open(parts, url, rest)
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        if opened is None:
            return None
        fd, name = opened
        f = open(fd, "rb")
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
            self.send_header("Content-Type", self.guess_type(name))
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
        return ThreadingHTTPServer((host, port), functools.partial(handler, directory=str(root.absolute())))
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
