"""`probes browse serve` (evaluators/browse/serve.py) against hostile requests and a site holding links: every
malformed request gets a 4xx (or, where the request is well formed, a correct 2xx), never a dropped connection, and
the server answers the next request; a link inside the site is never followed (to a file or folder of the site, to
its hidden marker, to anywhere), a hidden name is never served, a FIFO is 404 without being opened.

Requests go out on a raw socket: http.client refuses to send most of them."""

from __future__ import annotations

import http.client
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from evaluators.browse.serve import byte_range, serving
from probekit.errors import UsageError

from toy_site import BLOB, PAGE, PRED, write_toy_site

SECRET = b"private: outside the site"
MARKER = b'{"kind": "site", "private marker"}'


@pytest.fixture
def site(tmp_path) -> Path:
    (tmp_path / "secret.txt").write_bytes(SECRET)
    root = write_toy_site(tmp_path / "site")
    (root / ".probekit.json").write_bytes(MARKER)
    return root


def _raw(url: str, request: bytes, method: str = "GET") -> tuple[int, dict, bytes]:
    """``(status, headers, body)`` of one request sent byte for byte; a connection dropped without an answer (a
    request thread that raised) fails here."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(request)
        r = http.client.HTTPResponse(sock, method=method)
        r.begin()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def _request(target: bytes, headers: dict[str, bytes] | None = None, method: bytes = b"GET") -> bytes:
    lines = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    lines += [k.encode() + b": " + v for k, v in (headers or {}).items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _still_serving(url: str) -> None:
    status, _, body = _raw(url, _request(b"/index.html"))
    assert (status, body) == (200, PAGE.encode())


BIG = b"9" * 4301   # past Python's int-from-string limit (4300 digits): int() raises ValueError
WHOLE = (200, BLOB)


@pytest.mark.parametrize("header, expected", [
    (b"bytes=" + BIG + b"-", (416, b"")),              # a start past any file
    (b"bytes=" + BIG * 3 + b"-" + BIG, (416, b"")),
    (b"bytes=0-" + BIG, (206, BLOB)),                  # an end past the file: clipped
    (b"bytes=-" + BIG, (206, BLOB)),                   # a suffix longer than the file: all of it
    (b"bytes=" + b"0" * 5000 + b"5-" + b"0" * 5000 + b"9", (206, BLOB[5:10])),   # leading zeros
    (b"bytes=-5-3", WHOLE), (b"bytes=--5", WHOLE), (b"bytes=-1--3", WHOLE), (b"bytes=5--1", WHOLE),
    (b"bytes=0-1,2-3", WHOLE), (b"bytes=0-1,", WHOLE), (b"bytes=,", WHOLE), (b"bytes=" + b"0-1," * 2000, WHOLE),
    (b"bytes=junk", WHOLE), (b"bytes=0x10-0x20", WHOLE), (b"bytes=1_0-2_0", WHOLE), (b"bytes=1e3-", WHOLE),
    (b"bytes=\xb2-\xb3", WHOLE), (b"bytes=", WHOLE), (b"bytes", WHOLE), (b"=0-1", WHOLE), (b"\x01\x02", WHOLE),
])
def test_a_hostile_range_is_answered_and_the_server_goes_on(site, header, expected):
    with serving(site) as url:
        status, headers, body = _raw(url, _request(b"/" + PRED.encode(), {"Range": header}))
        _still_serving(url)
    assert (status, body) == expected
    if status == 206:
        first = BLOB.index(body[:1])
        assert headers["content-range"] == f"bytes {first}-{first + len(body) - 1}/{len(BLOB)}"
    if status == 416:
        assert headers["content-range"] == f"bytes */{len(BLOB)}"


@pytest.mark.parametrize("if_range", [b"junk", b"\x01", BIG, b"W/\"x\"", b"Mon, 99 Foo 2001 99:99:99 GMT", b""])
def test_a_junk_if_range_gets_the_whole_file(site, if_range):
    with serving(site) as url:
        status, _, body = _raw(url, _request(b"/" + PRED.encode(), {"Range": b"bytes=0-3", "If-Range": if_range}))
        _still_serving(url)
    assert (status, body) == WHOLE


def test_byte_range_reads_numbers_of_any_length():
    assert byte_range("bytes=" + "9" * 5000 + "-", 10) == "416"
    assert byte_range("bytes=0-" + "9" * 5000, 10) == (0, 9)
    assert byte_range("bytes=-" + "9" * 5000, 10) == (0, 9)
    assert byte_range("bytes=" + "0" * 5000 + "2-3", 10) == (2, 3)
    assert byte_range("bytes=" + "9" * 5000 + "-3", 10) is None   # last before first: ignored


@pytest.mark.parametrize("target, status", [
    (b"/%00", 400), (b"/index.html%00", 400), (b"/index.html%00.js", 400), (b"/data/%00/site.json", 400),
    (b"/index\x00.html", 400), (b"/%0a", 400), (b"/%7f", 400),                         # NUL, control characters
    (b"/%zz", 400), (b"/%", 400), (b"/%2", 400), (b"/index.html%", 400), (b"/%%41", 400),   # bad escapes
    (b"/%c3%28", 400), (b"/%ff.html", 400), (b"/%ed%a0%80", 400), (b"/caf\xe9", 400),   # not UTF-8, raw 8-bit
    (b"/" + b"a" * 300, 404), (b"/" + b"a/" * 1000 + b"x", 404),        # a name past NAME_MAX, 1,001 folders deep
    (b"/" + b"a" * 5000, 414), (b"/" + b"a/" * 3000 + b"x", 414), (b"/" + b"%61" * 4097, 414),   # past PATH_MAX
    (b"/%2e%2e%2fsecret.txt", 404), (b"/%2e%2e/secret.txt", 404), (b"/..%2fsecret.txt", 404),
    (b"/data/%2e%2e%2f%2e%2e%2fsecret.txt", 404), (b"/%2E%2E/%2E%2E/secret.txt", 404), (b"/./index.html", 404),
    (b"/..\\secret.txt", 400), (b"/data\\site.json", 400), (b"/%5c..%5csecret.txt", 400), (b"\\index.html", 400),
    (b"*", 400), (b"index.html", 400), (b"../secret.txt", 400), (b"//etc/passwd", 404), (b"/&", 404),
    (b"/.probekit.json", 404), (b"/%2eprobekit.json", 404),                            # hidden
    (b"/data/", 404), (b"/data", 404), (b"/data/shards/s0", 404),                          # a folder without index
    (b"/nothing.js", 404), (b"/index.html/", 404), (b"/index.html/x", 404), (b"/data/site.json/..", 404),
])
def test_a_malformed_request_target_is_a_4xx_and_the_server_goes_on(site, target, status):
    with serving(site) as url:
        got, _, body = _raw(url, _request(target))
        _still_serving(url)
    assert got == status, (target[:80], got, body[:200])
    assert SECRET not in body and MARKER not in body and b"site.json" not in body


@pytest.mark.parametrize("target, name", [
    (b"http://x/", "index.html"), (b"http://127.0.0.1/index.html?x=%zz#y", "index.html"),
    (b"HTTP://x/data/site.json", "data/site.json"), (b"/data/site.json?%00", "data/site.json"),
    (b"/index.html#%zz", "index.html"), (b"/data%2fsite.json", "data/site.json"),
    (b"/data//site.json", "data/site.json"), (b"/%61pp.js", "app.js"), (b"//", "index.html"),
])
def test_a_well_formed_target_in_another_spelling_is_served(site, target, name):
    """The absolute form (RFC 9112 section 3.2.2: a server accepts it), a junk query or fragment (not the file's
    name), an escaped or doubled slash, an escaped letter."""
    with serving(site) as url:
        status, _, body = _raw(url, _request(target))
        _still_serving(url)
    assert status == 200 and body == (site / name).read_bytes()


def test_a_head_of_a_malformed_target_is_a_4xx(site):
    with serving(site) as url:
        status, _, body = _raw(url, _request(b"/%00", method=b"HEAD"), method="HEAD")
        _still_serving(url)
    assert status == 400 and body == b""


def test_hostile_requests_on_one_kept_alive_connection_then_a_range(site):
    """An error closes the connection (send_error): the next request opens another one, which is answered."""
    with serving(site) as url:
        for target in (b"/%00", b"/%zz", b"/%c3%28"):
            assert _raw(url, _request(target))[0] == 400
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request("GET", "/" + PRED, headers={"Range": "bytes=1-2"})
        r = conn.getresponse()
        assert (r.status, r.read()) == (206, BLOB[1:3])
        conn.close()


# --- links, hidden names and other files that are not the site's own -----------------------------------------

@pytest.mark.parametrize("name, target", [
    ("x.json", ".probekit.json"),                       # a link to the hidden marker
    ("data/inside.bin", "shards/s0/preds.bin"),         # to a file of the site
    ("data/leak.json", "../../secret.txt"),             # out of it
    ("data/abs.json", "{root}/data/site.json"),         # an absolute link to a file of the site
    ("data/up", ".."),                                  # a folder link: data/up/index.html
])
def test_a_link_inside_the_site_is_never_followed(site, name, target):
    (site / name).symlink_to(target.format(root=site))
    served = {"data/up": "/data/up/index.html"}.get(name, "/" + name)
    with serving(site) as url:
        status, _, body = _raw(url, _request(served.encode()))
        _still_serving(url)
    assert status == 404 and MARKER not in body and SECRET not in body and BLOB not in body


def test_a_folder_reached_through_a_link_is_never_walked(site, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "index.html").write_bytes(SECRET)
    (site / "docs").symlink_to(elsewhere)
    (site / "again").symlink_to("data")
    with serving(site) as url:
        got = [_raw(url, _request(t))[0] for t in (b"/docs/", b"/docs", b"/docs/index.html", b"/again/site.json")]
    assert got == [404] * 4


def test_a_subfolder_index_that_is_a_link_is_not_served(site):
    (site / "docs").mkdir()
    (site / "docs" / "index.html").symlink_to(site.parent / "secret.txt")
    with serving(site) as url:
        got = [_raw(url, _request(t)) for t in (b"/docs", b"/docs/", b"/docs/index.html")]
    assert [g[0] for g in got] == [404] * 3 and all(SECRET not in g[2] for g in got)


def test_hidden_names_at_any_depth_are_not_served(site):
    (site / "data" / ".cache").mkdir()
    (site / "data" / ".cache" / "x.json").write_text("{}")
    (site / "data" / ".hidden.json").write_text("{}")
    with serving(site) as url:
        got = [_raw(url, _request(t))[0] for t in (b"/data/.cache/x.json", b"/data/.hidden.json",
                                                    b"/data/%2ecache/x.json")]
    assert got == [404] * 3


def test_a_fifo_is_404_without_being_opened(site):
    """Opening a FIFO that no one writes blocks: the request would hang (the test would time out on the socket)."""
    os.mkfifo(site / "data" / "pipe.json")
    (site / "data" / "to-pipe.json").symlink_to("pipe.json")
    with serving(site) as url:
        got = [_raw(url, _request(t))[0] for t in (b"/data/pipe.json", b"/data/to-pipe.json")]
        _still_serving(url)
    assert got == [404, 404]


@pytest.mark.parametrize("make", ["index-link", "site-json-link", "data-link"])
def test_a_site_whose_page_or_site_json_is_a_link_is_refused(site, tmp_path, make):
    if make == "index-link":
        (site / "index.html").rename(tmp_path / "page.html")
        (site / "index.html").symlink_to(tmp_path / "page.html")
        what = "index.html"
    elif make == "site-json-link":
        (site / "data" / "site.json").rename(tmp_path / "site.json")
        (site / "data" / "site.json").symlink_to(tmp_path / "site.json")
        what = "data/site.json"
    else:
        (site / "data").rename(tmp_path / "data")
        (site / "data").symlink_to(tmp_path / "data")
        what = "data/site.json"
    with pytest.raises(UsageError, match=f"{site}: {what} is a link or not a regular file"):
        with serving(site):
            pass


def test_a_site_folder_that_is_itself_a_link_is_served(site, tmp_path):
    """The folder named on the command line is the researcher's choice: a link to it is followed, none inside."""
    (tmp_path / "current").symlink_to(site)
    with serving(tmp_path / "current") as url:
        assert _raw(url, _request(b"/" + PRED.encode()))[:3:2] == WHOLE


@pytest.mark.parametrize("request_bytes, status", [
    (b"GARBAGE\r\n\r\n", 400), (b"GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
    (b"GET / HTTP/x.y\r\nHost: x\r\n\r\n", 400), (b"GET / FTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n", 431),              # more headers than the server reads
    (b"GET / HTTP/1.1\r\nRange: " + b"9" * 70000 + b"\r\n\r\n", 431),         # a header line past 64 KiB
])
def test_a_malformed_request_line_or_header_is_a_4xx(site, request_bytes, status):
    with serving(site) as url:
        got = _raw(url, request_bytes)[0]
        _still_serving(url)
    assert got == status
