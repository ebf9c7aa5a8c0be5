"""The parts of the one rule (probekit.outputs): the marker proves bytes, the ledger proves loose files, a
repository is found at any depth, and an output overlaps an input however it is spelled."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from probekit import outputs
from probekit.errors import UsageError
from probekit.outputs import atomic, overlap
from probekit.outputs.marker import read_marker


def _dataset(folder: Path) -> Path:
    with atomic.atomic_path(folder, kind="dataset") as tmp:
        (tmp / "v").mkdir(parents=True)
        (tmp / "v" / "dev.jsonl").write_text('{"a": 1}\n')
        (tmp / "meta.json").write_text("{}\n")
    return folder


def test_the_marker_records_every_file_with_its_bytes_and_is_deterministic(tmp_path):
    first = _dataset(tmp_path / "one")
    again = _dataset(tmp_path / "two")
    assert (first / ".probekit.json").read_bytes() == (again / ".probekit.json").read_bytes()
    marker = read_marker(first)
    assert marker.kind == "dataset" and set(marker.files) == {"meta.json", "v/dev.jsonl"}
    assert marker.files["meta.json"][0] == 3 and marker.folders == {"v"}
    assert outputs.inventory(first).kinds == {"dataset"} and outputs.not_ours(first) == []


def test_a_changed_byte_of_the_same_size_is_not_ours(tmp_path):
    out = _dataset(tmp_path / "d")
    (out / "v" / "dev.jsonl").write_text('{"a": 2}\n')   # the same size: the sha256 tells them apart
    assert outputs.not_ours(out) == ["v/dev.jsonl"]


def test_a_loose_file_is_ours_while_its_bytes_are_those_written(tmp_path):
    report = tmp_path / "report.md"
    atomic.write_text(report, "# report\n")
    assert outputs.file_kind(report) == ("file", None)
    assert json.loads((tmp_path / outputs.LEDGER).read_text())["files"]["report.md"]["size"] == 9
    report.write_text("# report, edited\n")
    assert outputs.file_kind(report) == (None, "changed")
    with pytest.raises(outputs.OutputError, match="its bytes changed since probekit wrote it"):
        atomic.write_text(report, "# again\n")
    (tmp_path / "mine.md").write_text("mine\n")
    assert outputs.file_kind(tmp_path / "mine.md") == (None, None)


def test_an_edit_of_the_users_own_file_is_not_recorded(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("a: 1\n")
    atomic.write_text(params, "a: 2\n", edit=True)
    assert params.read_text() == "a: 2\n" and not (tmp_path / outputs.LEDGER).exists()


def test_a_discard_removes_only_what_probekit_wrote(tmp_path):
    out = _dataset(tmp_path / "d")
    (out / "v" / "notes.txt").write_text("mine\n")
    assert not outputs.discard(out) and (out / "v" / "notes.txt").is_file()
    (out / "v" / "notes.txt").unlink()
    assert outputs.discard(out) and not out.exists()
    atomic.write_text(tmp_path / "r.md", "r\n")
    (tmp_path / "mine.md").write_text("mine\n")
    assert outputs.discard(tmp_path / "r.md") and not outputs.discard(tmp_path / "mine.md")
    assert not (tmp_path / outputs.LEDGER).exists()   # its last file gone, the ledger goes too


@pytest.mark.parametrize("depth", ["x/.git", "x/y/.git", "x/y/z/.hg", "x/y/.dvc", "x/.svn"])
def test_a_repository_is_found_at_any_depth_and_never_replaced(depth, tmp_path):
    out = tmp_path / "mine"
    (out / depth).mkdir(parents=True)
    assert outputs.inventory(out).repositories == [depth]
    with pytest.raises(UsageError, match="even with --force"):
        outputs.claim(out, kind="dataset", force=True)


@pytest.mark.parametrize("written, read, how", [
    ("d", "d", "is the same file or folder as"),
    ("d/out", "d", "is inside"),
    ("d", "d/sub", "holds"),
    ("d/./x/..", "d", "is the same file or folder as"),
    ("link", "d", "is the same file or folder as"),          # a link to d
    ("link/out", "d", "is inside"),
    ("hard.jsonl", "d/f.jsonl", "is the same file or folder as"),   # a hard link: samefile
    ("data/probes/always_never", "data/probes/{probe}", "is inside"),
    ("results/{probe}", "data/probes/{probe}", None),
    ("data/probes/{probe}/x", "data/probes/{probe}", "overlaps"),
    ("elsewhere", "d", None),
])
def test_an_output_overlaps_an_input_however_it_is_spelled(written, read, how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "f.jsonl").write_text("{}\n")
    (tmp_path / "data" / "probes").mkdir(parents=True)
    os.link(tmp_path / "d" / "f.jsonl", tmp_path / "hard.jsonl")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    assert overlap.relation(written, read) == how
    if how:
        with pytest.raises(UsageError, match=f"--out {written}: {how} --data {read}"):
            overlap.check([("--out", written)], [("--data", read)])


@pytest.mark.parametrize("record", ["ledger", "marker", "stale-ledger"])
def test_a_record_of_probekits_that_proves_no_bytes_is_not_probekits(record, tmp_path):
    """A ``.probekit-files.json`` or ``.probekit.json`` is probekit's own only when it proves bytes probekit wrote
    beside it: a forged or copied one, or one whose every file has changed, is somebody's file, and a folder holding
    it is not replaced (the property test's draw: a forged ledger alone in ``--out``'s folder, lost to an export)."""
    folder = tmp_path / "out"
    if record == "stale-ledger":   # probekit wrote report.md, the user rewrote it: the ledger proves nothing now
        atomic.write_text(folder / "report.md", "# report\n")
        (folder / "report.md").write_text("# mine now\n")
    else:
        folder.mkdir()
        name = outputs.LEDGER if record == "ledger" else outputs.MARKER
        body = {"written_by": "probekit", "files": {"notes.txt": {"size": 3, "sha256": "f" * 64}}}
        if record == "marker":
            body |= {"marker": 2, "kind": "export", "folders": [], "files": {}}
        (folder / name).write_text(json.dumps(body))
    name = outputs.MARKER if record == "marker" else outputs.LEDGER
    before = (folder / name).read_bytes()
    assert name in outputs.not_ours(folder)
    with pytest.raises(outputs.OutputError):
        outputs.check_replace(folder, "export")
    assert (folder / name).read_bytes() == before


def test_a_record_that_proves_a_file_is_still_probekits(tmp_path):
    """The other side: a ledger beside a loose file probekit wrote, a marker of a folder probekit wrote."""
    atomic.write_text(tmp_path / "loose" / "report.md", "# report\n")
    assert outputs.not_ours(tmp_path / "loose") == []
    assert outputs.not_ours(_dataset(tmp_path / "d")) == []
