"""`probes browse serve`'s server (evaluators/browse/serve.py) on a small hand-made site: range requests (206, 416,
suffix ranges, ranges ignored), content types, no listing, no path out of the site, a folder that is no site
refused; and the same site in headless Chromium (tests/browse/browser.py): the module script loads, a range fetch
comes back, nothing leaves 127.0.0.1."""

from __future__ import annotations

import http.client
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from evaluators.browse.serve import byte_range, serving
from probekit.errors import UsageError

import toy_site
from browser import ChromiumMissing, browser_page, chromium_path, leaves_loopback
from toy_site import BLOB, write_toy_site


@pytest.fixture
def site(tmp_path) -> Path:
    """A folder in the shape of a built site, with a file outside it."""
    (tmp_path / "secret.txt").write_text("outside the site")
    return write_toy_site(tmp_path / "site")


def _get(url: str, path: str, headers: dict | None = None, method: str = "GET"):
    """``(status, headers, body)`` of one request with ``path`` sent as is (no client-side normalising)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


PRED = "/" + toy_site.PRED


@pytest.mark.parametrize("header, first, last", [
    ("bytes=10-19", 10, 19),
    ("bytes=1000-", 1000, 1023),          # open-ended
    ("bytes=-5", 1019, 1023),             # a suffix: the last 5 bytes
    ("bytes=-5000", 0, 1023),             # a suffix longer than the file: all of it
    ("bytes=1020-5000", 1020, 1023),      # an end past the file is clipped
    ("bytes=0-0", 0, 0),
    (" bytes=3-4 ", 3, 4),
])
def test_a_range_is_answered_206_with_those_bytes(site, header, first, last):
    with serving(site) as url:
        status, headers, body = _get(url, PRED, {"Range": header})
    assert status == 206
    assert headers["content-range"] == f"bytes {first}-{last}/{len(BLOB)}"
    assert body == BLOB[first:last + 1] and headers["content-length"] == str(last - first + 1)
    assert headers["accept-ranges"] == "bytes" and headers["content-type"] == "application/octet-stream"


@pytest.mark.parametrize("header", ["bytes=1024-", "bytes=5000-6000", "bytes=-0"])
def test_an_unsatisfiable_range_is_416_with_the_size(site, header):
    with serving(site) as url:
        status, headers, body = _get(url, PRED, {"Range": header})
    assert status == 416 and headers["content-range"] == f"bytes */{len(BLOB)}" and body == b""


@pytest.mark.parametrize("header", [None, "bytes=0-1,5-6", "bytes=9-2", "items=0-3", "bytes=-", "bytes=a-b"])
def test_no_range_several_or_a_malformed_one_get_the_whole_file(site, header):
    with serving(site) as url:
        status, headers, body = _get(url, PRED, {"Range": header} if header else {})
    assert status == 200 and body == BLOB and "content-range" not in headers
    assert headers["accept-ranges"] == "bytes"


def test_an_if_range_of_another_version_gets_the_whole_file(site):
    with serving(site) as url:
        _, first, _ = _get(url, PRED)
        same = _get(url, PRED, {"Range": "bytes=0-3", "If-Range": first["last-modified"]})
        other = _get(url, PRED, {"Range": "bytes=0-3", "If-Range": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert same[0] == 206 and same[2] == BLOB[:4]
    assert other[0] == 200 and other[2] == BLOB


def test_ranges_on_one_kept_alive_connection(site):
    """HTTP/1.1: the page fetches a shard's run blocks one after another on one connection."""
    with serving(site) as url:
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        got = []
        for a in (0, 100, 1000):
            conn.request("GET", PRED, headers={"Range": f"bytes={a}-{a + 9}"})
            r = conn.getresponse()
            got.append((r.status, r.read()))
        conn.close()
    assert got == [(206, BLOB[a:a + 10]) for a in (0, 100, 1000)]


def test_byte_range_reads_the_header():
    assert byte_range("bytes=2-5", 10) == (2, 5)
    assert byte_range("bytes=-3", 10) == (7, 9)
    assert byte_range("bytes=-3", 0) == "416"
    assert byte_range("bytes=0-", 0) == "416"
    assert byte_range("bytes=0-1, 4-5", 10) is None


@pytest.mark.parametrize("path, media", [
    ("/app.js", "text/javascript"), ("/data/site.json", "application/json"), (PRED, "application/octet-stream"),
    ("/style.css", "text/css"), ("/index.html", "text/html"), ("/", "text/html"), ("/LICENSES.md", "text/markdown"),
    ("/data/shards/s0/rows.json?v=2", "application/json"),
])
def test_content_types(site, path, media):
    with serving(site) as url:
        status, headers, body = _get(url, path)
    assert status == 200 and headers["content-type"].split(";")[0] == media
    assert headers["content-length"] == str(len(body)) and body


def test_head_sends_the_headers_only(site):
    with serving(site) as url:
        status, headers, body = _get(url, PRED, method="HEAD")
    assert status == 200 and headers["content-length"] == str(len(BLOB)) and body == b""


@pytest.mark.parametrize("path", ["/../secret.txt", "/%2e%2e/secret.txt", "/data/../../secret.txt",
                                  "/data/shards/%2E%2E/%2E%2E/%2E%2E/secret.txt", "/..%2fsecret.txt",
                                  "/.probekit.json", "/data/", "/data", "/data/shards/s0/", "/nothing.js"])
def test_nothing_outside_the_site_nor_a_listing(site, path):
    with serving(site) as url:
        status, _, body = _get(url, path)
    assert status == 404, (path, status, body[:200])
    assert b"outside the site" not in body and b"site.json" not in body


def test_a_link_that_leaves_the_site_is_refused_and_one_inside_it_too(site):
    """No link inside the site is followed, not even to a file of it: the published Space holds no links
    (evaluators/browse/own.py), and the server shows what the Space will show."""
    outside = site.parent / "elsewhere"
    outside.mkdir()
    (outside / "x.json").write_text('{"outside": true}')
    (site / "data" / "leak.json").symlink_to(site.parent / "secret.txt")
    (site / "data" / "away").symlink_to(outside)
    (site / "data" / "inside.bin").symlink_to(site / "data" / "shards" / "s0" / "preds.bin")
    with serving(site) as url:
        assert _get(url, "/data/leak.json")[0] == 404
        assert _get(url, "/data/away/x.json")[0] == 404
        status, _, body = _get(url, "/data/inside.bin")   # a link inside the site is no file of it
        assert _get(url, PRED)[2] == BLOB   # the file it points to is
    assert status == 404 and BLOB not in body


def test_a_subfolder_with_an_index_is_redirected_to_its_slash(site):
    (site / "docs").mkdir()
    (site / "docs" / "index.html").write_text("<p>docs</p>")
    with serving(site) as url:
        status, headers, _ = _get(url, "/docs?x=1")
        ok = _get(url, "/docs/")
    assert status == 301 and headers["location"] == "/docs/?x=1"
    assert ok[0] == 200 and ok[2] == b"<p>docs</p>"


def test_a_folder_that_is_no_built_site_is_refused(tmp_path):
    (tmp_path / "notasite" / "data").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"notasite: not a built results site \(no data/site.json\)"):
        with serving(tmp_path / "notasite"):
            pass
    with pytest.raises(UsageError, match="missing: no such folder"):
        with serving(tmp_path / "missing"):
            pass


def test_a_port_in_use_is_a_usage_error(site):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use"):
            with serving(site, port=port):
                pass


def test_serving_yields_a_loopback_url_and_stops(site):
    with serving(site) as url:
        assert urlsplit(url).hostname == "127.0.0.1" and url.endswith("/")
        assert _get(url, "/")[0] == 200
    with pytest.raises(OSError):
        _get(url, "/")


# --- the helpers of the browser tests (tests/browse/browser.py) -------------------------------------------------

def test_chromium_path_prefers_the_variable_and_says_how_to_install(monkeypatch, tmp_path):
    fake = tmp_path / "chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PROBEKIT_CHROMIUM", str(fake))
    assert chromium_path() == str(fake)
    monkeypatch.setenv("PROBEKIT_CHROMIUM", str(tmp_path / "none"))
    with pytest.raises(ChromiumMissing, match=r"none: not an executable file; install Debian's chromium .*apt-get "
                                              r"install -y chromium.*playwright install chromium"):
        chromium_path()
    monkeypatch.delenv("PROBEKIT_CHROMIUM")
    monkeypatch.setattr("browser.DEBIAN", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ChromiumMissing, match="no Chromium: neither PROBEKIT_CHROMIUM nor"):
        chromium_path()


def test_leaves_loopback():
    assert not leaves_loopback("http://127.0.0.1:8000/data/site.json")
    assert not leaves_loopback("data:image/png;base64,AAAA")
    assert leaves_loopback("http://localhost:8000/") and leaves_loopback("https://cdn.example.org/x.js")


def test_a_chromium_asked_for_while_one_is_open_is_that_one(chromium):
    """The session's Chromium is open (the fixture): a test that starts its own through browser.chromium (what
    browser_page does without a browser) gets it, not Playwright's error for a second sync API in one thread, which
    hit whichever of these tests a worker ran after a page test."""
    from browser import chromium as launch

    with launch() as browser:
        assert browser is chromium and browser.is_connected()
    assert chromium.is_connected()   # the session's is left open


def test_the_site_in_chromium_loads_its_module_and_a_range(site):
    """A module script served with another type, or a range answered whole, shows here (the text differs)."""
    with serving(site) as url, browser_page(url) as page:
        page.goto(url)
        page.wait_for_function("document.getElementById('out').textContent !== 'loading'", timeout=10_000)
        assert page.text_content("#out") == "probekit results 206 4,5,6,7"
        page.assert_clean()
        assert {urlsplit(u).path for u in page.requests} >= {"/", "/app.js", "/style.css", "/data/site.json", PRED}


def test_the_page_records_errors_and_requests_that_leave(site):
    (site / "index.html").write_text(
        '<!doctype html><img src="https://cdn.example.org/x.png"><script>console.error("boom");'
        'null.x;</script>')
    with serving(site) as url, browser_page(url) as page:
        page.goto(url)
        page.wait_for_timeout(200)
        assert page.outside == ["https://cdn.example.org/x.png"] == page.blocked
        assert any("boom" in e for e in page.console_errors) and page.page_errors
        with pytest.raises(AssertionError, match="request outside 127.0.0.1: https://cdn.example.org/x.png"):
            page.assert_clean()
