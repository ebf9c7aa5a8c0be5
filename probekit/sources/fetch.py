"""Fetching a source of the manifest (:mod:`probekit.sources.manifest`): from its official URLs, or copied from a
mirror folder, every file verified against its sha256 before it is put in place (atomically), archives unpacked;
a file the manifest marks ``unconfirmed`` only on request, its sha256 then recorded for every later fetch; the
state of a fetched source, and the ``probes sources`` list, fetch and mirror actions."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import sys
import zipfile
import zlib
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from tqdm import tqdm
from urllib3.util import Retry

from probekit import outputs
from probekit.outputs.atomic import atomic_path
from probekit.outputs import overlap
from probekit.sources.manifest import (
    ChecksumError,
    FetchError,
    ManifestError,
    Source,
    SourceFile,
    load_manifest,
    record_checksums,
    resolve_mirror,
    set_mirror,
    with_recorded,
)

_CHUNK = 1 << 20


_TIMEOUT = (10, 60)  # connect, read (seconds)


MIRROR_HINT = ("to use a mirror folder instead, run `probes sources mirror DIR` once (kept for every later "
               "command and `dvc repro` of this checkout), or pass --mirror DIR / set PROBES_MIRROR=DIR")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def make_session(retries: int = 5, backoff_factor: float = 0.5) -> requests.Session:
    """A session retrying connection errors, 429 and 5xx answers with exponential backoff."""
    retry = Retry(total=retries, backoff_factor=backoff_factor, status_forcelist=(429, 500, 502, 503, 504),
                  allowed_methods=("GET", "HEAD"))
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    return session


def fetch(source: Source, dest_dir: str | os.PathLike, mirror: str | os.PathLike | None = None,
          session: requests.Session | None = None, progress: bool = True, unverified: bool = False,
          force: bool = False) -> list[Path]:
    """Store every file of ``source`` in ``dest_dir``, verified; files already good are left alone.

    A file without a sha256 (``unconfirmed`` in the manifest, none recorded: see :func:`cmd_fetch`) is a
    ``FetchError`` before anything is fetched, unless ``unverified``: then it is stored as served, unchecked.

    Copies from ``mirror`` when given, else downloads each file's URL. A mirror file ending in ``.gz`` is
    gunzipped; for a ``compression: zip`` file the mirror holds the plain member (or, ending in ``.zip``,
    the archive). A zip archive is downloaded once per call however many of its members are stored (kept
    as ``.<name>.<hash>.probekit.part`` beside them while in use, removed at the end; an interrupted download is
    resumed by the next call). A failure leaves every stored file as it was. Files in ``dest_dir`` that the
    manifest does not list are named, not deleted; a file at a manifest's path whose bytes are not the manifest's is
    replaced only when probekit wrote it (:mod:`probekit.outputs`; ``force``: any), checked before any download.
    Returns the stored paths."""
    unconfirmed = [f.path for f in source.files if f.sha256 is None]
    if unconfirmed and not unverified:
        raise FetchError(f"{source.name}: {_some(unconfirmed)}: no sha256 to verify against (unconfirmed in the "
                         f"manifest, none recorded here); run `probes sources fetch {source.name} "
                         "--record-checksums` once to download it unverified and record what it got")
    dest_dir = Path(dest_dir)
    for f in source.files:   # before any download: what would be replaced must be probekit's
        target = dest_dir / f.path
        if (target.exists() or target.is_symlink()) and not (f.sha256 is not None and target.is_file()
                                                             and sha256_file(target) == f.sha256):
            outputs.claim_file(target, "--dest", force=force)
    dest_dir.mkdir(parents=True, exist_ok=True)
    stored = []
    archives: dict[str, Path] = {}  # url -> zip downloaded in this call
    verified: set[tuple[str, str]] = set()  # (url, download_sha256) already checked
    try:
        for f in source.files:
            target = dest_dir / f.path
            if not (f.sha256 is not None and target.is_file() and sha256_file(target) == f.sha256):
                if mirror is not None:
                    src = Path(mirror) / f.mirror
                    if not src.is_file():
                        raise FetchError(f"{f.path}: mirror file not found: {src}")
                    unpack = ("gzip" if src.name.endswith(".gz")
                              else "zip" if f.compression == "zip" and src.name.endswith(".zip") else None)
                    _place(src, unpack, f, target)
                elif f.compression == "zip":
                    if f.url not in archives:
                        session = session or make_session()
                        part = dest_dir / _archive_part_name(f.url)
                        _download_checked(f, part, session, progress)
                        archives[f.url] = part
                    if f.download_sha256 and (f.url, f.download_sha256) not in verified:
                        _check(archives[f.url], f.download_sha256, f"{f.path} (download {f.url})")
                        verified.add((f.url, f.download_sha256))
                    _place(archives[f.url], "zip", f, target)
                else:
                    session = session or make_session()
                    part = target.with_name(f".{target.name}.probekit.part")
                    _download_checked(f, part, session, progress)
                    try:
                        if f.download_sha256:
                            _check(part, f.download_sha256, f"{f.path} (download {f.url})")
                        _place(part, f.compression, f, target)
                    finally:
                        part.unlink(missing_ok=True)
            stored.append(target)
    finally:
        for part in archives.values():
            part.unlink(missing_ok=True)
    stray = sorted(p.name for p in set(dest_dir.iterdir()) - set(stored))
    if stray:
        print(f"{source.name}: {dest_dir} also holds {', '.join(stray)}, not in the manifest", file=sys.stderr)
    return stored


def _archive_part_name(url: str) -> str:
    """Where a zip downloaded from ``url`` is kept during a fetch: its name plus a short hash of the URL."""
    name = Path(urlsplit(url).path).name or "download"
    return f".{name}.{hashlib.sha256(url.encode()).hexdigest()[:8]}.probekit.part"


def _download_checked(f: SourceFile, part: Path, session: requests.Session, progress: bool) -> None:
    """Download ``f.url`` into ``part``; a network or HTTP failure is a ``FetchError`` with the mirror hint."""
    try:
        _download(f.url, part, session, progress, f.path)
    except (requests.RequestException, urllib3.exceptions.HTTPError) as e:
        raise FetchError(f"{f.path}: cannot download {f.url}: {_reason(e)}; {MIRROR_HINT}") from None


def _reason(e: Exception) -> str:
    """The innermost cause of a requests/urllib3 error, on one line (``NameResolutionError: ...``)."""
    while True:
        inner = getattr(e, "reason", None)
        if not isinstance(inner, Exception):
            inner = e.args[0] if e.args and isinstance(e.args[0], Exception) else None
        if inner is None:
            break
        e = inner
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


def _place(src: Path, unpack: str | None, f: SourceFile, target: Path) -> None:
    """Gunzip, unzip ``f.member`` of, or copy ``src`` to a temp file beside ``target``, verify it, then move
    it into place."""
    with atomic_path(target) as tmp:
        try:
            with ExitStack() as stack:
                if unpack == "gzip":
                    fin = stack.enter_context(gzip.open(src))
                elif unpack == "zip":
                    archive = stack.enter_context(zipfile.ZipFile(src))
                    try:
                        fin = stack.enter_context(archive.open(f.member))
                    except KeyError:
                        raise FetchError(f"{f.path}: archive {src} has no member {f.member!r}") from None
                else:
                    fin = stack.enter_context(open(src, "rb"))
                with open(tmp, "wb") as fout:
                    shutil.copyfileobj(fin, fout, _CHUNK)
        except (gzip.BadGzipFile, zipfile.BadZipFile, EOFError, zlib.error) as e:
            raise FetchError(f"{f.path}: cannot decompress {src}: {e}") from e
        if f.sha256 is not None:
            _check(tmp, f.sha256, f.path)


def _some(names: list[str], n: int = 3) -> str:
    """The first ``n`` of ``names``, and how many more (bounded, for one-line messages)."""
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def _check(path: Path, expected: str, label: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumError(f"{label}: sha256 mismatch: expected {expected}, got {actual}")


def _download(url: str, part: Path, session: requests.Session, progress: bool, label: str) -> None:
    """Stream ``url`` into ``part`` as served, resuming a partial file when the server answers 206."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity"} | ({"Range": f"bytes={have}-"} if have else {})
    with session.get(url, headers=headers, stream=True, timeout=_TIMEOUT) as r:
        if have and r.status_code == 416:  # the partial file is not a prefix we can extend: start over
            part.unlink()
            return _download(url, part, session, progress, label)
        r.raise_for_status()
        start = have if r.status_code == 206 else 0
        size = int(r.headers.get("Content-Length", 0))
        with open(part, "ab" if start else "wb") as out, tqdm(
            total=start + size if size else None, initial=start, unit="B", unit_scale=True,
            unit_divisor=1024, desc=label, disable=not progress, leave=False,
        ) as bar:
            for chunk in r.raw.stream(_CHUNK, decode_content=False):
                out.write(chunk)
                bar.update(len(chunk))


def status(source: Source, dest_dir: str | os.PathLike) -> list[tuple[SourceFile, str]]:
    """Each file of ``source`` with its state in ``dest_dir``: "ok", "missing", "corrupt", or "unconfirmed"
    (present, but there is no sha256 to verify it against)."""
    out = []
    for f in source.files:
        target = Path(dest_dir) / f.path
        state = ("missing" if not target.is_file() else "unconfirmed" if f.sha256 is None
                 else "ok" if sha256_file(target) == f.sha256 else "corrupt")
        out.append((f, state))
    return out


def cmd_list(manifest_path, dest_root=None, mirror=None) -> int:
    """`probes sources list`: one row per source; ``dest_root`` defaults to the manifest's folder."""
    dest_root = Path(dest_root) if dest_root else Path(manifest_path).parent
    mirror, origin = resolve_mirror(mirror, manifest_path)
    rows = [("source", "licence", "files ok", "state") + (("in mirror",) if mirror else ())]
    for name, src in load_manifest(manifest_path).items():
        states = [s for _, s in status(with_recorded(src, manifest_path), dest_root / name)]
        ok, n = states.count("ok"), len(states)
        state = next((s for s in ("corrupt", "unconfirmed") if s in states), None) or (
            "ok" if ok == n else "missing" if ok == 0 else "incomplete")
        row = (name, src.license, f"{ok}/{n}", state)
        if mirror:
            row += (f"{sum((mirror / f.mirror).is_file() for f in src.files)}/{n}",)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print(f"mirror: {mirror} (from {origin})" if mirror else f"mirror: {origin}")
    return 0


def cmd_fetch(manifest_path, name, dest=None, mirror=None, record: bool = False, force: bool = False) -> int:
    """`probes sources fetch NAME`: every file verified in place, or a ``FetchError``/``ManifestError``.

    A file ``unconfirmed`` in the manifest is verified against the sha256 this checkout recorded for it; with
    none recorded, the fetch refuses unless ``record``: then it is stored unverified (said on stderr)
    and the sha256 of what was stored is recorded in ``sources.local.yaml``, as ``dvc import-url`` does."""
    manifest = load_manifest(manifest_path)
    if name not in manifest:
        raise ManifestError(f"{manifest_path}: no source {name!r} (known: {', '.join(manifest)})")
    source = with_recorded(manifest[name], manifest_path)
    dest = Path(dest) if dest else Path(manifest_path).parent / name
    mirror, origin = resolve_mirror(mirror, manifest_path)
    overlap.check([("--dest", dest)], [(f"the mirror ({origin})", mirror)])
    try:
        paths = fetch(source, dest, mirror=mirror, unverified=record, force=force)
        seen = {f.path: sha256_file(dest / f.path) for f in source.files if f.sha256 is None}
    except OSError as e:
        raise FetchError(f"{name}: {e}") from None
    via = f" (mirror {mirror}, from {origin})" if mirror else ""
    if seen:
        local = record_checksums(manifest_path, name, seen)
        for path, digest in seen.items():
            print(f"{name}: {path}: NOT verified (no confirmed sha256 yet); recorded its sha256 {digest} in "
                  f"{local}: every later fetch verifies against it", file=sys.stderr)
    print(f"{name}: {len(paths) - len(seen)} files verified" + (f", {len(seen)} recorded unverified" if seen else "")
          + f" in {dest}{via}")
    return 0


def cmd_mirror(manifest_path, folder=None, unset=False) -> int:
    """`probes sources mirror [DIR] [--unset]`: show, set or forget this checkout's mirror."""
    if folder or unset:
        local = set_mirror(manifest_path, None if unset else folder)
        print(f"mirror forgotten (in {local})" if unset else f"mirror set in {local}: every later fetch "
              f"(and `dvc repro`) of this checkout copies from {resolve_mirror(None, manifest_path)[0]}")
        return 0
    mirror, origin = resolve_mirror(None, manifest_path)
    print(f"mirror: {mirror} (from {origin})" if mirror else f"mirror: {origin}")
    return 0
