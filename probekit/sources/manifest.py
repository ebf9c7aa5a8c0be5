"""Raw sources: the manifest (``raw/sources.yaml``: each source's files, URLs, sha256s, licence and citation)
parsed and checked, and this checkout's local settings (``raw/sources.local.yaml``, git-ignored): its mirror folder
and the sha256s recorded on the first download of files the manifest marks ``unconfirmed``. Fetching: :mod:`fetch`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from probekit import yamlfile
from probekit.outputs.userfile import edit_yaml
from probekit.errors import SHOWN, ProbekitError, clipped, shown

COMPRESSIONS = (None, "gzip", "zip")
_SOURCE_FIELDS = ("description", "homepage", "license", "citation")
_SOURCE_OPTIONAL = ("license_id",)  # SPDX / Hub licence id of the data (cc-by-sa-4.0, mit, other, unknown)
_FILE_FIELDS = ("path", "url", "sha256", "mirror")
_FILE_OPTIONAL = ("compression", "member", "download_sha256", "probe", "split")
_HEX64 = re.compile(r"[0-9a-f]{64}")
UNCONFIRMED = "unconfirmed"  # a file's sha256 in the manifest when no digest is known yet (no fake value)
LOCAL_CONFIG = "sources.local.yaml"  # beside the manifest, git-ignored: this checkout's mirror and recorded sha256s
_LOCAL_HEADER = ("# This checkout's source settings (probes sources mirror, probes sources fetch --record-checksums);"
                 "\n# not committed.\n")


class ManifestError(ProbekitError, ValueError):
    """The manifest is malformed; the message names the manifest file, the source and the field."""


class FetchError(ProbekitError, RuntimeError):
    """A file could not be fetched: no network, missing mirror file, undecodable download."""


class ChecksumError(FetchError):
    """Fetched bytes do not hash to the digest the manifest expects."""


@dataclass(frozen=True)
class SourceFile:
    path: str  # stored file name inside the source's folder
    url: str  # official download location
    sha256: str | None  # of the stored (decompressed) bytes; None: ``unconfirmed`` in the manifest
    mirror: str  # path relative to the mirror root
    compression: str | None = None  # of the download; "gzip" is decompressed, "zip" has ``member`` extracted
    member: str | None = None  # with compression "zip": the archive member stored (``wordnet/data.noun``)
    download_sha256: str | None = None  # of the download as served, checked when given
    probe: str | None = None
    split: str | None = None


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    homepage: str
    license: str
    citation: str
    files: tuple[SourceFile, ...]
    license_id: str | None = None


def load_manifest(path: str | os.PathLike) -> dict[str, Source]:
    """Read and validate a sources manifest; raise ``ManifestError`` on the first problem."""
    path = Path(path)
    try:
        data = yamlfile.load(path)
    except (OSError, yaml.YAMLError) as e:
        raise ManifestError(f"{path}: cannot read manifest: {e}") from e
    if not isinstance(data, dict) or not data:
        raise ManifestError(f"{path}: expected a mapping of source name to source entry")
    return {str(name): _parse_source(path, str(name), entry) for name, entry in data.items()}


def _parse_source(manifest: Path, name: str, entry) -> Source:
    def fail(field: str, problem: str):
        raise ManifestError(f"{manifest}: source {shown(name)}: field {shown(field)} {clipped(problem, 2 * SHOWN)}")

    top = _strings(entry, _SOURCE_FIELDS, _SOURCE_OPTIONAL, ("files",), fail, "")
    if not isinstance(entry.get("files"), list) or not entry["files"]:
        fail("files", "is missing or not a non-empty list")
    files, seen = [], set()
    for i, raw in enumerate(entry["files"]):
        where = f"files[{i}]."
        f = SourceFile(**_strings(raw, _FILE_FIELDS, _FILE_OPTIONAL, (), fail, where))
        for field in ("sha256", "download_sha256"):
            value = getattr(f, field)
            if value is None or (field == "sha256" and value == UNCONFIRMED):
                continue
            if not _HEX64.fullmatch(value) or value == "0" * 64:
                alternative = f" or {UNCONFIRMED!r} (no digest known yet)" if field == "sha256" else ""
                fail(where + field, f"must be 64 lowercase hex digits{alternative}, not a placeholder, "
                                    f"got {value[:80]!r}")
        if f.sha256 == UNCONFIRMED:
            f = replace(f, sha256=None)
        if f.compression not in COMPRESSIONS:
            fail(where + "compression", f"must be one of {COMPRESSIONS[1:]} or absent, got {f.compression!r}")
        if f.compression == "zip" and f.member is None:
            fail(where + "member", "is missing: a file with compression 'zip' names the archive member it stores")
        if f.member is not None and f.compression != "zip":
            fail(where + "member", f"is only allowed with compression 'zip', got compression {f.compression!r}")
        if f.member is not None and ("\\" in f.member or {"", ".", ".."} & set(f.member.split("/"))):
            fail(where + "member", f"must be a relative path inside the archive, got {f.member!r}")
        if Path(f.path).name != f.path or f.path in (".", ".."):
            fail(where + "path", f"must be a plain file name, got {f.path!r}")
        for field, key in (("path", f.path), ("probe", (f.probe, f.split))):
            if key in seen and key != (None, None):
                fail(where + field, f"duplicates an earlier file: {key!r}")
            seen.add(key)
        files.append(f)
    return Source(name=name, files=tuple(files), **top)


def _strings(entry, required, optional, other, fail, where) -> dict[str, str]:
    """The string fields of one manifest mapping, checked: required ones non-empty, no unknown keys."""
    if not isinstance(entry, dict):
        fail(where.rstrip(".") or "<entry>", "must be a mapping")
    for key in entry.keys() - {*required, *optional, *other}:
        fail(where + str(key), "is not a known field")
    out = {}
    for key in (*required, *optional):
        value = entry.get(key)
        if value is None and key in optional:
            continue
        if not isinstance(value, str) or not value.strip():
            fail(where + key, "is missing or empty" if value in (None, "") else "must be a string")
        out[key] = value
    return out


def release_file(manifest: dict[str, Source], source: str, probe: str, split: str) -> SourceFile:
    """The file of ``source`` that holds ``split`` of ``probe``."""
    for f in manifest[source].files:
        if (f.probe, f.split) == (probe, split):
            return f
    raise KeyError(f"source {source!r} has no file for probe {probe!r} split {split!r}")


def provenance(source: Source) -> dict:
    """What a dataset built from ``source`` records of it: licence, licence id, citation, file sha256s (None:
    ``unconfirmed`` and none recorded; pass :func:`with_recorded`'s source to include the recorded ones)."""
    return {"license": source.license, "license_id": source.license_id, "citation": source.citation,
            "files": {f.path: f.sha256 for f in source.files}}


def default_manifest() -> Path:
    """``raw/sources.yaml`` under the current folder, else the one of the checkout probekit runs from."""
    here = Path("raw/sources.yaml")
    if here.is_file():
        return here
    installed = Path(__file__).resolve().parents[2] / "raw/sources.yaml"
    return installed if installed.is_file() else here


def _read_local(manifest: str | os.PathLike) -> tuple[Path, dict]:
    """This checkout's ``sources.local.yaml`` beside ``manifest`` and its mapping (empty when there is none)."""
    local = Path(manifest).parent / LOCAL_CONFIG
    if not local.is_file():
        return local, {}
    try:
        data = yamlfile.load(local) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ManifestError(f"{local}: cannot read: {' '.join(str(e).split())[:200]}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{local}: expected a mapping ('mirror': folder, 'checksums': source -> file -> sha256)")
    return local, data


def _write_local(local: Path, data: dict, new: dict, command: str) -> Path:
    """Change this checkout's local settings from ``data`` (as read) to ``new``: only the keys that differ are
    written, the user's comments and other keys kept (:func:`probekit.outputs.userfile.edit_yaml`); a file left holding no
    key and no line but probekit's header is removed (it holds nothing of the user's), one with a comment of the
    user's is kept."""
    edit_yaml(local, new, base=data, command=command, header=_LOCAL_HEADER, drop_empty=True,
              advice="another command changed it meanwhile? run the command again")
    return local


def resolve_mirror(explicit: str | os.PathLike | None, manifest: str | os.PathLike) -> tuple[Path | None, str]:
    """The mirror folder and where that choice came from: ``explicit`` (--mirror), else ``$PROBES_MIRROR``,
    else this checkout's ``sources.local.yaml`` beside the manifest, else none (download). A relative folder given
    on the command line or in the variable is made absolute where it was typed: it reaches processes that run
    elsewhere (a rehearsal's stages in its copy, ``dvc repro``'s in the project root)."""
    if explicit:
        return Path(explicit).expanduser().resolve(), "--mirror"
    if os.environ.get("PROBES_MIRROR"):
        return Path(os.environ["PROBES_MIRROR"]).expanduser().resolve(), "$PROBES_MIRROR"
    local, data = _read_local(manifest)
    if data.get("mirror"):
        return Path(data["mirror"]), str(local)
    return None, "none: downloads from the official URLs"


def set_mirror(manifest: str | os.PathLike, folder: str | os.PathLike | None) -> Path:
    """Record ``folder`` (absolute) as this checkout's mirror, or forget it (``None``; recorded sha256s are
    kept); returns the local settings file."""
    local, data = _read_local(manifest)
    if folder is None:
        return _write_local(local, data, {k: v for k, v in data.items() if k != "mirror"}, "probes sources mirror")
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise FetchError(f"mirror {folder}: no such folder")
    return _write_local(local, data, {"mirror": str(folder), **{k: v for k, v in data.items() if k != "mirror"}},
                        "probes sources mirror")


def recorded_checksums(manifest: str | os.PathLike) -> dict[str, dict[str, str]]:
    """The sha256s this checkout recorded on first downloads (``checksums:`` of ``sources.local.yaml``):
    source -> stored file name -> digest, each checked."""
    local, data = _read_local(manifest)
    checksums = data.get("checksums") or {}
    if not isinstance(checksums, dict):
        raise ManifestError(f"{local}: 'checksums' must be a mapping of source to file to sha256")
    for source, files in checksums.items():
        for name, digest in (files.items() if isinstance(files, dict) else [("<entry>", files)]):
            if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
                raise ManifestError(f"{local}: 'checksums.{source}.{name}' must be 64 lowercase hex digits, "
                                    f"got {str(digest)[:80]!r}")
    return checksums


def with_recorded(source: Source, manifest: str | os.PathLike) -> Source:
    """``source`` with the sha256s this checkout recorded filled in for its ``unconfirmed`` files; a confirmed
    sha256 of the manifest always wins over a recorded one."""
    recorded = recorded_checksums(manifest).get(source.name) or {}
    return replace(source, files=tuple(replace(f, sha256=recorded[f.path]) if f.sha256 is None and f.path in recorded
                                       else f for f in source.files))


def record_checksums(manifest: str | os.PathLike, source: str, digests: dict[str, str]) -> Path:
    """Add ``digests`` (stored file name -> sha256) of ``source`` to this checkout's recorded sha256s, keeping
    the mirror and every other record; returns the local settings file."""
    recorded_checksums(manifest)  # a malformed file is an error, never overwritten
    local, data = _read_local(manifest)
    checksums = dict(data.get("checksums") or {})
    checksums[source] = {**(checksums.get(source) or {}), **digests}
    return _write_local(local, data, {**data, "checksums": checksums}, "probes sources fetch")
