"""Source layer: manifest validation, verified fetching from a mirror or over HTTP (loopback only)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zipfile
from pathlib import Path

import pytest
import yaml

from probekit.sources import fetch as fetching
from probekit.sources import manifest as sources
from probekit.sources.manifest import ChecksumError, FetchError, ManifestError
from probes.main import main

from helpers import MIRROR, REPO, LoopbackServer, listed

PROBES = {"always_never", "age_comparison", "objects_comparison", "antonym_negation",
          "property_conjunction", "taxonomy_conjunction", "encyclopedic_composition", "multihop_comparison"}

DATA = b'{"id": "1", "question": {"stem": "A [MASK] is big."}}\n' * 50
DATA_GZ = gzip.compress(DATA, mtime=0)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def entry(**files) -> dict:
    """A valid source entry; ``files`` maps stored name to extra file fields."""
    return {"description": "toy", "homepage": "https://example.org", "license": "CC0", "citation": "@misc{x}",
            "files": [{"path": name, "url": f"https://example.org/{name}.gz", "sha256": sha(DATA),
                       "mirror": f"toy/{name}", **extra} for name, extra in files.items()]}


def write_manifest(tmp_path: Path, source: dict, name: str = "toy") -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump({name: source}))
    return path


def load_toy(tmp_path: Path, source: dict) -> sources.Source:
    return sources.load_manifest(write_manifest(tmp_path, source))["toy"]


# --- manifest ---------------------------------------------------------------------------------

def test_real_manifest_lists_all_16_olmpics_files():
    src = sources.load_manifest(REPO / "raw" / "sources.yaml")["olmpics"]
    assert len(src.files) == 16
    assert {(f.probe, f.split) for f in src.files} == {(p, s) for p in PROBES for s in ("train", "dev")}
    for f in src.files:
        assert f.compression == "gzip" and f.mirror == f"olmpics/{f.path}"
        assert f.url.startswith("https://olmpics.s3.us-east-2.amazonaws.com/challenge/")
        assert f.url.endswith("/" + f.path + ".gz")
    assert "Apache-2.0" in src.license and "none stated" in src.license
    assert "Talmor" in src.citation and "Berant" in src.citation


def _drop(key):
    def edit(e):
        del e[key]
    return edit


@pytest.mark.parametrize("edit, field", [
    (_drop("license"), "license"),
    (lambda e: e.update(citation="  "), "citation"),
    (lambda e: e.update(files=[]), "files"),
    (lambda e: e["files"][0].pop("url"), "files[0].url"),
    (lambda e: e["files"][0].update(sha256="abc123"), "files[0].sha256"),
    (lambda e: e["files"][0].update(sha256="0" * 64), "files[0].sha256"),  # a placeholder, not a digest
    (lambda e: e["files"][0].update(sha256=None), "files[0].sha256"),
    (lambda e: e["files"][0].update(download_sha256="unconfirmed"), "files[0].download_sha256"),
    (lambda e: e["files"][0].update(download_sha256="Z" * 64), "files[0].download_sha256"),
    (lambda e: e["files"][0].update(compression="bzip2"), "files[0].compression"),
    (lambda e: e["files"][0].update(compression="zip"), "files[0].member"),
    (lambda e: e["files"][0].update(compression="gzip", member="w/a.jsonl"), "files[0].member"),
    (lambda e: e["files"][0].update(member="w/a.jsonl"), "files[0].member"),
    (lambda e: e["files"][0].update(compression="zip", member="../a.jsonl"), "files[0].member"),
    (lambda e: e["files"][0].update(compression="zip", member="/w/a.jsonl"), "files[0].member"),
    (lambda e: e["files"][1].update(path="a.jsonl"), "files[1].path"),
    (lambda e: e["files"][0].update(path="../a.jsonl"), "files[0].path"),
    (lambda e: e["files"][0].update(sha265=sha(DATA)), "files[0].sha265"),
    (lambda e: [f.update(probe="p", split="dev") for f in e["files"]], "files[1].probe"),
])
def test_manifest_error_names_file_source_and_field(tmp_path, edit, field):
    source = entry(**{"a.jsonl": {}, "b.jsonl": {}})
    edit(source)
    path = write_manifest(tmp_path, source)
    with pytest.raises(ManifestError) as err:
        sources.load_manifest(path)
    msg = str(err.value)
    assert str(path) in msg and "'toy'" in msg and f"'{field}'" in msg


def test_unconfirmed_sha256_is_explicit(tmp_path):
    """`sha256: unconfirmed` is the only stand-in for an unknown digest: it parses to None, and the real manifest
    uses it for the two sources no offline download could check."""
    src = load_toy(tmp_path, entry(**{"a.jsonl": {"sha256": "unconfirmed"}, "b.jsonl": {}}))
    assert [f.sha256 for f in src.files] == [None, sha(DATA)]
    with pytest.raises(ManifestError, match=r"'files\[0\].sha256' must be 64 lowercase hex digits or 'unconfirmed'"):
        load_toy(tmp_path, entry(**{"a.jsonl": {"sha256": "0" * 64}}))
    real = sources.load_manifest(REPO / "raw" / "sources.yaml")
    assert {name for name, s in real.items() if any(f.sha256 is None for f in s.files)} == {"doq", "conceptnet_dump", "kornli"}


def test_release_file_and_resolve_mirror(tmp_path, monkeypatch):
    manifest = sources.load_manifest(write_manifest(tmp_path, entry(**{
        "a.jsonl": {"probe": "p", "split": "train"}, "b.jsonl": {"probe": "p", "split": "dev"}})))
    assert sources.release_file(manifest, "toy", "p", "dev").path == "b.jsonl"
    with pytest.raises(KeyError):
        sources.release_file(manifest, "toy", "q", "dev")
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    manifest_path = tmp_path / "sources.yaml"
    assert sources.resolve_mirror(None, manifest_path)[0] is None
    (tmp_path / "kept").mkdir()
    local = sources.set_mirror(manifest_path, tmp_path / "kept")  # this checkout's choice, one file
    assert local == tmp_path / "sources.local.yaml"
    assert sources.resolve_mirror(None, manifest_path) == (tmp_path / "kept", str(local))
    monkeypatch.setenv("PROBES_MIRROR", str(tmp_path / "env"))
    assert sources.resolve_mirror(None, manifest_path)[0] == tmp_path / "env"
    assert sources.resolve_mirror(tmp_path / "cli", manifest_path)[0] == tmp_path / "cli"
    # a relative folder is where it was typed, not where the process that reads it later runs (a rehearsal's stages)
    monkeypatch.chdir(tmp_path / "kept")
    assert sources.resolve_mirror("../mirror", manifest_path)[0] == tmp_path.resolve() / "mirror"
    monkeypatch.setenv("PROBES_MIRROR", "mirror")
    assert sources.resolve_mirror(None, manifest_path)[0] == tmp_path.resolve() / "kept" / "mirror"
    sources.set_mirror(manifest_path, None)
    assert not local.exists()
    with pytest.raises(FetchError, match="no such folder"):
        sources.set_mirror(manifest_path, tmp_path / "absent")


def test_recorded_checksums_share_the_local_file_with_the_mirror(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    manifest_path = write_manifest(tmp_path, entry(**{"a.jsonl": {"sha256": "unconfirmed"}, "b.jsonl": {}}))
    (tmp_path / "kept").mkdir()
    sources.set_mirror(manifest_path, tmp_path / "kept")
    local = sources.record_checksums(manifest_path, "toy", {"a.jsonl": sha(b"x"), "b.jsonl": sha(b"y")})
    assert sources.resolve_mirror(None, manifest_path)[0] == tmp_path / "kept"  # the mirror is kept
    src = sources.with_recorded(sources.load_manifest(manifest_path)["toy"], manifest_path)
    assert [f.sha256 for f in src.files] == [sha(b"x"), sha(DATA)]  # a confirmed sha256 wins over a recorded one
    sources.set_mirror(manifest_path, None)  # forgetting the mirror keeps the recorded sha256s
    assert local.is_file() and sources.recorded_checksums(manifest_path)["toy"]["a.jsonl"] == sha(b"x")
    local.write_text(yaml.safe_dump({"checksums": {"toy": {"a.jsonl": "abc"}}}))
    with pytest.raises(ManifestError, match=rf"{local}: 'checksums.toy.a.jsonl' must be 64 lowercase hex"):
        sources.with_recorded(src, manifest_path)


# --- fetch from a mirror ----------------------------------------------------------------------

def test_fetch_from_mirror_copies_plain_and_gunzips_gz(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.jsonl").write_bytes(DATA)
    (mirror / "toy" / "b.jsonl.gz").write_bytes(DATA_GZ)
    src = load_toy(tmp_path, entry(**{"a.jsonl": {}, "b.jsonl": {"mirror": "toy/b.jsonl.gz"}}))
    paths = fetching.fetch(src, tmp_path / "out", mirror=mirror)
    assert paths == [tmp_path / "out" / "a.jsonl", tmp_path / "out" / "b.jsonl"]
    assert all(p.read_bytes() == DATA for p in paths)
    assert listed(tmp_path / "out") == ["a.jsonl", "b.jsonl"]


def test_fetch_real_olmpics_from_shared_mirror(tmp_path):
    src = sources.load_manifest(REPO / "raw" / "sources.yaml")["olmpics"]
    paths = fetching.fetch(src, tmp_path / "olmpics", mirror=MIRROR, progress=False)
    assert len(paths) == 16
    states = fetching.status(src, tmp_path / "olmpics")
    assert [s for _, s in states] == ["ok"] * 16
    for f, _ in states:
        assert fetching.sha256_file(tmp_path / "olmpics" / f.path) == f.sha256


def test_missing_mirror_file_is_an_error_naming_the_path(tmp_path):
    src = load_toy(tmp_path, entry(**{"a.jsonl": {}}))
    with pytest.raises(FetchError, match=str(tmp_path / "mirror" / "toy" / "a.jsonl")):
        fetching.fetch(src, tmp_path / "out", mirror=tmp_path / "mirror")


def test_checksum_mismatch_keeps_previous_good_copy(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.jsonl").write_bytes(DATA)
    out = tmp_path / "out"
    fetching.fetch(load_toy(tmp_path, entry(**{"a.jsonl": {}})), out, mirror=mirror)
    # a new release is announced, but the mirror serves damaged bytes
    new = DATA + b'{"id": "2"}\n'
    (mirror / "toy" / "a.jsonl").write_bytes(new[:-3])
    src = load_toy(tmp_path, entry(**{"a.jsonl": {"sha256": sha(new)}}))
    with pytest.raises(ChecksumError) as err:
        fetching.fetch(src, out, mirror=mirror)
    assert "a.jsonl" in str(err.value) and sha(new) in str(err.value) and sha(new[:-3]) in str(err.value)
    assert (out / "a.jsonl").read_bytes() == DATA
    assert listed(out) == ["a.jsonl"]
    assert [s for _, s in fetching.status(src, out)] == ["corrupt"]


def test_already_good_file_is_not_copied_again(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.jsonl").write_bytes(DATA)
    src = load_toy(tmp_path, entry(**{"a.jsonl": {}}))
    target = fetching.fetch(src, tmp_path / "out", mirror=mirror)[0]
    os.utime(target, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    # a mirror without the file would fail any copy attempt
    assert fetching.fetch(src, tmp_path / "out", mirror=tmp_path / "empty") == [target]
    assert target.stat().st_mtime_ns == 1_000_000_000_000_000_000


# --- download over HTTP (a loopback server) ---------------------------------------------------

class Server(LoopbackServer):
    """Serves ``files`` (path -> bytes); answers ``fail_first`` requests with 503; honours Range if asked."""

    def __init__(self):
        self.files, self.fail_first, self.ranges, self.requests = {}, 0, True, []
        super().__init__()

    def respond(self, request):
        self.requests.append((request.path, request.headers.get("Range")))
        body = self.files.get(request.path)
        if self.fail_first > 0:
            self.fail_first -= 1
            return 503, b"busy", None
        if body is None:
            return 404, b"not found", None
        rng = request.headers.get("Range")
        if rng and self.ranges:
            start = int(rng.removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                return 416, b"", None
            return 206, body[start:], {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"}
        return 200, body, None


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def gz_source(tmp_path, server, **extra) -> sources.Source:
    server.files["/c/a.jsonl.gz"] = DATA_GZ
    return load_toy(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/c/a.jsonl.gz", "compression": "gzip",
                                                    "download_sha256": sha(DATA_GZ), **extra}}))


def test_download_gunzips_and_verifies(tmp_path, server):
    paths = fetching.fetch(gz_source(tmp_path, server), tmp_path / "out", progress=False)
    assert paths[0].read_bytes() == DATA
    assert listed(tmp_path / "out") == ["a.jsonl"]


def test_download_checksum_mismatch_leaves_nothing_behind(tmp_path, server):
    src = gz_source(tmp_path, server, download_sha256="5" * 64)
    with pytest.raises(ChecksumError, match="download"):
        fetching.fetch(src, tmp_path / "out", progress=False)
    src = gz_source(tmp_path, server, sha256="1" * 64)
    with pytest.raises(ChecksumError, match="1" * 64):
        fetching.fetch(src, tmp_path / "out", progress=False)
    assert listed(tmp_path / "out") == []


def test_download_retries_after_503(tmp_path, server):
    server.fail_first = 1
    paths = fetching.fetch(gz_source(tmp_path, server), tmp_path / "out", progress=False)
    assert paths[0].read_bytes() == DATA
    assert len(server.requests) == 2


def test_download_resumes_partial_file_with_range(tmp_path, server):
    src = gz_source(tmp_path, server)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".a.jsonl.probekit.part").write_bytes(DATA_GZ[:40])
    assert fetching.fetch(src, tmp_path / "out", progress=False)[0].read_bytes() == DATA
    assert server.requests == [("/c/a.jsonl.gz", "bytes=40-")]
    assert listed(tmp_path / "out") == ["a.jsonl"]


def test_download_restarts_when_server_ignores_range(tmp_path, server):
    server.ranges = False
    src = gz_source(tmp_path, server)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".a.jsonl.probekit.part").write_bytes(b"stale bytes from another file")
    assert fetching.fetch(src, tmp_path / "out", progress=False)[0].read_bytes() == DATA


def test_download_error_says_how_to_use_a_mirror_and_keeps_good_files(tmp_path, server):
    server.files["/a.gz"] = DATA_GZ
    src = load_toy(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/a.gz", "compression": "gzip"},
                                      "b.jsonl": {"url": server.url + "/nope.gz"}}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.jsonl").write_bytes(DATA)  # already verified from an earlier fetch
    with pytest.raises(FetchError, match=r"b.jsonl: cannot download .*/nope.gz: HTTPError: 404.*"
                                         r"probes sources mirror DIR"):
        fetching.fetch(src, out, progress=False)
    assert listed(out) == ["a.jsonl"] and (out / "a.jsonl").read_bytes() == DATA


def test_unreachable_host_is_a_fetch_error(tmp_path):
    """No network (here: a closed loopback port) is a FetchError with the mirror hint, not a bare traceback."""
    src = load_toy(tmp_path, entry(**{"a.jsonl": {"url": "http://127.0.0.1:9/a.gz"}}))
    with pytest.raises(FetchError, match=r"a.jsonl: cannot download http://127.0.0.1:9/a.gz: "
                                         r"NewConnectionError: .*Connection refused; .*PROBES_MIRROR=DIR$"):
        fetching.fetch(src, tmp_path / "out", session=fetching.make_session(retries=0), progress=False)


# --- zip archives: one download, several stored members ---------------------------------------

DATA_B = b"b\tsecond member\n" * 30


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, body in members.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2006, 1, 1, 0, 0, 0)), body)
    return buf.getvalue()


ZIP = make_zip({"w/a.jsonl": DATA, "w/b.txt": DATA_B, "w/README": b"unused"})


def zip_source(tmp_path, server, a_extra=None, **b_extra) -> sources.Source:
    server.files["/pkg/w.zip"] = ZIP
    url = server.url + "/pkg/w.zip"
    return load_toy(tmp_path, entry(**{
        "a.jsonl": {"url": url, "compression": "zip", "member": "w/a.jsonl", "download_sha256": sha(ZIP),
                    **(a_extra or {})},
        "b.txt": {"url": url, "compression": "zip", "member": "w/b.txt", "sha256": sha(DATA_B),
                  "mirror": "toy/b.txt", **b_extra}}))


def test_manifest_reads_zip_member(tmp_path, server):
    f = zip_source(tmp_path, server).files[1]
    assert (f.compression, f.member, f.path) == ("zip", "w/b.txt", "b.txt")


def test_zip_downloaded_once_for_all_its_members(tmp_path, server):
    out = tmp_path / "out"
    paths = fetching.fetch(zip_source(tmp_path, server), out, progress=False)
    assert [p.read_bytes() for p in paths] == [DATA, DATA_B]
    assert server.requests == [("/pkg/w.zip", None)]
    assert listed(out) == ["a.jsonl", "b.txt"]  # the archive is not kept
    # all good: nothing is downloaded again
    assert fetching.fetch(zip_source(tmp_path, server), out, progress=False) == paths
    assert len(server.requests) == 1


def test_zip_member_checksum_mismatch_keeps_previous_good_copy(tmp_path, server):
    out = tmp_path / "out"
    fetching.fetch(zip_source(tmp_path, server), out, progress=False)
    # a new release is announced, but the server's archive holds damaged bytes
    new = DATA_B + b"c\tthird\n"
    src = zip_source(tmp_path, server, sha256=sha(new))
    server.files["/pkg/w.zip"] = make_zip({"w/a.jsonl": DATA, "w/b.txt": new[:-3]})
    with pytest.raises(ChecksumError) as err:
        fetching.fetch(src, out, progress=False)
    assert "b.txt" in str(err.value) and sha(new) in str(err.value) and sha(new[:-3]) in str(err.value)
    assert (out / "b.txt").read_bytes() == DATA_B and (out / "a.jsonl").read_bytes() == DATA
    assert listed(out) == ["a.jsonl", "b.txt"]
    assert [s for _, s in fetching.status(src, out)] == ["ok", "corrupt"]


def test_zip_download_checksum_and_missing_member_are_errors(tmp_path, server):
    out = tmp_path / "out"
    src = zip_source(tmp_path, server, a_extra={"download_sha256": "3" * 64})
    with pytest.raises(ChecksumError, match=r"a.jsonl \(download .*/pkg/w.zip\).*" + "3" * 64):
        fetching.fetch(src, out, progress=False)
    assert listed(out) == []
    src = zip_source(tmp_path, server, member="w/nope.txt")
    with pytest.raises(FetchError, match=r"b.txt: archive .* has no member 'w/nope.txt'"):
        fetching.fetch(src, out, progress=False)
    assert listed(out) == ["a.jsonl"]
    server.files["/pkg/w.zip"] = b"not a zip" * 10
    src = load_toy(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/pkg/w.zip", "compression": "zip",
                                                  "member": "w/a.jsonl"}}))
    with pytest.raises(FetchError, match="a.jsonl: cannot decompress"):
        fetching.fetch(src, tmp_path / "out2", progress=False)
    assert listed(tmp_path / "out2") == []


def test_zip_download_resumes_partial_archive(tmp_path, server):
    src = zip_source(tmp_path, server)
    out = tmp_path / "out"
    out.mkdir()
    (out / fetching._archive_part_name(server.url + "/pkg/w.zip")).write_bytes(ZIP[:100])
    assert [p.read_bytes() for p in fetching.fetch(src, out, progress=False)] == [DATA, DATA_B]
    assert server.requests == [("/pkg/w.zip", "bytes=100-")]
    assert listed(out) == ["a.jsonl", "b.txt"]


def test_zip_from_mirror_plain_member_or_archive(tmp_path, server):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.jsonl").write_bytes(DATA)  # the plain member
    (mirror / "toy" / "w.zip").write_bytes(ZIP)  # or the archive itself
    src = zip_source(tmp_path, server, mirror="toy/w.zip")
    paths = fetching.fetch(src, tmp_path / "out", mirror=mirror, progress=False)
    assert [p.read_bytes() for p in paths] == [DATA, DATA_B]
    assert server.requests == []


# --- CLI functions ----------------------------------------------------------------------------

def test_cmd_fetch_and_list(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.jsonl").write_bytes(DATA)
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {}, "b.jsonl": {}}))

    assert main(["sources", "list", "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["toy", "CC0", "0/2", "missing"]
    assert out[-1] == "mirror: none: downloads from the official URLs"

    assert main(["sources", "fetch", "toy", "--manifest", str(manifest), "--mirror", str(mirror)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(mirror / "toy" / "b.jsonl") in err
    assert (tmp_path / "toy" / "a.jsonl").read_bytes() == DATA  # default dest: beside the manifest

    assert main(["sources", "mirror", str(mirror), "--manifest", str(manifest)]) == 0
    capsys.readouterr()
    assert main(["sources", "list", "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["toy", "CC0", "1/2", "incomplete", "1/2"]
    assert out[-1] == f"mirror: {mirror} (from {tmp_path / 'sources.local.yaml'})"

    assert main(["sources", "fetch", "nope", "--manifest", str(manifest)]) == 1
    assert "no source 'nope'" in capsys.readouterr().err


def test_cmd_fetch_reports_http_and_checksum_errors_in_one_line(tmp_path, server, capsys, monkeypatch):
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/nope.gz"}}))
    assert main(["sources", "fetch", "toy", "--manifest", str(manifest), "--dest", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("probes sources: error: ") and err.count("\n") == 1 and "404" in err

    server.files["/a.gz"] = DATA_GZ
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/a.gz", "sha256": "2" * 64,
                                                              "compression": "gzip"}}))
    assert main(["sources", "fetch", "toy", "--manifest", str(manifest), "--dest", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2" * 64 in err and sha(DATA) in err

    bad = tmp_path / "bad.yaml"
    bad.write_text("toy: {description: x}\n")
    assert main(["sources", "fetch", "toy", "--manifest", str(bad)]) == 1
    assert str(bad) in capsys.readouterr().err


def test_first_download_of_an_unconfirmed_file_is_refused_then_recorded_then_verified(tmp_path, server, capsys,
                                                                                     monkeypatch):
    """As `dvc import-url`: no sha256 known, so the first download needs --record-checksums, says nothing was
    verified and records what it got (this checkout only); every later fetch, and list, verify against it."""
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    server.files["/a.jsonl"] = DATA
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {"url": server.url + "/a.jsonl", "sha256": "unconfirmed"}}))
    tracked = manifest.read_bytes()
    local, stored = tmp_path / "sources.local.yaml", tmp_path / "toy" / "a.jsonl"
    fetch = ["sources", "fetch", "toy", "--manifest", str(manifest)]

    assert main(fetch) == 1  # refused: one line that says what to run, nothing downloaded or written
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "toy: a.jsonl: no sha256" in err
    assert "run `probes sources fetch toy --record-checksums`" in err
    assert server.requests == [] and not local.exists() and not stored.parent.exists()

    assert main([*fetch, "--record-checksums"]) == 0
    out, err = capsys.readouterr()
    assert f"toy: a.jsonl: NOT verified (no confirmed sha256 yet); recorded its sha256 {sha(DATA)} in {local}" in err
    assert "toy: 0 files verified, 1 recorded unverified in" in out
    assert stored.read_bytes() == DATA and manifest.read_bytes() == tracked  # the tracked manifest is unchanged
    assert yaml.safe_load(local.read_text()) == {"checksums": {"toy": {"a.jsonl": sha(DATA)}}}
    assert main(["sources", "list", "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["toy", "CC0", "1/1", "ok"]

    assert main(fetch) == 0  # verified against the recorded sha256: already good, not downloaded again
    assert "toy: 1 files verified in" in capsys.readouterr().out and len(server.requests) == 1

    # the server now serves other bytes: a later fetch fails, with or without the flag, keeping the good copy
    changed = DATA + b"changed\n"
    server.files["/a.jsonl"] = changed
    stored.unlink()
    for args in (fetch, [*fetch, "--record-checksums"]):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "a.jsonl: sha256 mismatch" in err and sha(DATA) in err and sha(changed) in err
    assert not stored.exists() and yaml.safe_load(local.read_text())["checksums"]["toy"]["a.jsonl"] == sha(DATA)
    stored.write_bytes(changed)
    assert main(["sources", "list", "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["toy", "CC0", "0/1", "corrupt"]
    with pytest.raises(ChecksumError, match=sha(changed)):
        fetching.fetch(sources.with_recorded(sources.load_manifest(manifest)["toy"], manifest), tmp_path / "out",
                       progress=False)


LOCAL_BY_HAND = """\
# my NAS, mounted on Mondays (this line is mine)
mirror: /nas/old   # the old mirror
checksums:
  toy:
    a.jsonl: {digest}   # checked by hand on 2024-05-01
"""


def test_mirror_and_unset_keep_the_users_comments_and_keys(tmp_path, monkeypatch, capsys):
    """The finding: `probes sources mirror` rewrote sources.local.yaml without its comments, and `--unset` deleted a
    commented one whole. Now only the `mirror` key changes; `--unset` removes it alone, and the file stays while it
    holds anything of the user's (a key, a comment)."""
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {"sha256": "unconfirmed"}, "b.jsonl": {}}))
    local = tmp_path / "sources.local.yaml"
    local.write_text(LOCAL_BY_HAND.format(digest=sha(b"x")))
    (tmp_path / "kept").mkdir()
    assert main(["sources", "mirror", str(tmp_path / "kept"), "--manifest", str(manifest)]) == 0
    text = local.read_text()
    assert text == LOCAL_BY_HAND.format(digest=sha(b"x")).replace("/nas/old   # the old mirror",
                                                                  f"{tmp_path / 'kept'} # the old mirror")
    assert main(["sources", "mirror", "--unset", "--manifest", str(manifest)]) == 0
    assert local.read_text() == "# my NAS, mounted on Mondays (this line is mine)\n" + "\n".join(
        LOCAL_BY_HAND.format(digest=sha(b"x")).splitlines()[2:]) + "\n"
    local.write_text("# my NAS, mounted on Mondays\nmirror: /nas/old\n")   # a comment alone is the user's too
    assert main(["sources", "mirror", "--unset", "--manifest", str(manifest)]) == 0
    assert local.read_text() == "# my NAS, mounted on Mondays\n"


def test_recorded_checksums_keep_the_users_comments(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    manifest = write_manifest(tmp_path, entry(**{"a.jsonl": {"sha256": "unconfirmed"}, "b.jsonl": {}}))
    local = tmp_path / "sources.local.yaml"
    local.write_text(LOCAL_BY_HAND.format(digest=sha(b"x")))
    sources.record_checksums(manifest, "other", {"c.jsonl": sha(b"z")})
    assert local.read_text() == LOCAL_BY_HAND.format(digest=sha(b"x")) + f"  other:\n    c.jsonl: {sha(b'z')}\n"
