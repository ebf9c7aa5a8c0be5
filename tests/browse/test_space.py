"""Publishing a built site as a static Hugging Face Space (evaluators/browse/space.py, `probes browse publish`): the
dry-run folder (the README's front matter makes a static Space; every site file, byte for byte; no marker of the
site's; the site folder untouched), and a push with the real `huggingface_hub` client to the fake Hub on loopback
(tests/hub_server.py): a Space repo of the static SDK, one commit, an earlier site's files deleted, the token
nowhere."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from evaluators.browse.space import publish_space, site_files
from probekit.errors import UsageError
from probekit.outputs.marker import read_marker
from probes.main import main

from toy_site import SITE, write_toy_site

TOKEN = "hf_SPACEsentinel0123456789abcdefXYZ"
SITE_FILES = ["LICENSES.md", "app.js", "data/shards/s0/preds.bin", "data/shards/s0/rows.json", "data/site.json",
              "index.html", "style.css"]


@pytest.fixture
def site(tmp_path) -> Path:
    return write_toy_site(tmp_path / "site")


def _front_matter(text: str) -> dict:
    head, sep, _ = text.removeprefix("---\n").partition("\n---\n")
    assert text.startswith("---\n") and sep, text[:200]
    return yaml.safe_load(head)


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_site_files_are_the_served_ones(site):
    (site / ".tmp-build").mkdir()
    (site / ".tmp-build" / "x.json").write_text("{}")
    assert site_files(site) == SITE_FILES


def test_the_dry_run_folder_is_the_site_and_a_static_space_readme(site, tmp_path, capsys):
    before = _tree(site)
    out = tmp_path / "space"
    assert main(["browse", "publish", str(site), "--repo-id", "org/results", "--dry-run", str(out)]) == 0
    assert f"dry run: wrote 8 files to {out}" in capsys.readouterr().out
    written = _tree(out)
    assert sorted(written) == sorted(["README.md", ".probekit.json", *SITE_FILES])
    assert all(written[f] == before[f] for f in SITE_FILES)
    meta = _front_matter(written["README.md"].decode())
    assert meta["sdk"] == "static" and meta["app_file"] == "index.html" and meta["title"] == SITE["title"]
    assert len(meta["short_description"]) <= 60 and meta["colorFrom"] and meta["emoji"]
    body = written["README.md"].decode().split("\n---\n", 1)[1]
    assert SITE["banner"] in body and "--repo-id org/results" in body and "2 runs on 1 datasets" in body
    assert read_marker(out).kind == "space"
    assert _tree(site) == before   # nothing staged into the site itself


def test_a_second_dry_run_replaces_the_first_and_not_a_foreign_folder(site, tmp_path):
    out = tmp_path / "space"
    publish_space(site, "org/results", dry_run=out)
    (site / "data" / "site.json").write_text(json.dumps({**SITE, "title": "second"}))
    publish_space(site, "org/results", dry_run=out)
    assert _front_matter((out / "README.md").read_text())["title"] == "second"
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="--dry-run .*mine: .*probekit did not write"):
        publish_space(site, "org/results", dry_run=foreign)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_the_dry_run_may_not_go_inside_the_site(site, capsys):
    assert main(["browse", "publish", str(site), "--repo-id", "org/results", "--dry-run", str(site / "space")]) == 2
    assert "is inside DIR" in capsys.readouterr().err
    assert not (site / "space").exists()


def test_a_folder_that_is_no_built_site_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["browse", "publish", str(tmp_path / "empty"), "--repo-id", "org/x", "--dry-run",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'empty'}: not a built results site (no data/site.json)" in err
    assert not (tmp_path / "out").exists()


def test_a_push_makes_one_static_space_commit_with_every_file(site, hub, capsys):
    assert main(["browse", "publish", str(site), "--repo-id", "org/results"]) == 0
    printed = capsys.readouterr()
    assert "org/results: commit " in printed.out and "8 files" in printed.out
    assert TOKEN not in printed.out + printed.err
    assert hub.kind("org/results") == "spaces" and hub.sdk("org/results") == "static"
    assert len(hub.commits("org/results")) == 2   # the repo's first commit and the site's
    files = hub.files("org/results")
    assert sorted(files) == sorted([".gitattributes", "README.md", *SITE_FILES])
    assert all(files[f] == (site / f).read_bytes() for f in SITE_FILES)
    assert _front_matter(files["README.md"].decode())["sdk"] == "static"
    assert not hub.repos["org/results"].private
    assert any(path.startswith("/api/spaces/org/results/commit/") for _, path in hub.requests)


def test_a_second_push_deletes_what_the_first_site_left(site, hub):
    publish_space(site, "org/results", private=True)
    (site / "data" / "shards" / "s0" / "preds.bin").unlink()
    (site / "data" / "shards" / "s1").mkdir()
    (site / "data" / "shards" / "s1" / "rows.json").write_text('{"rows": []}')
    out = publish_space(site, "org/results")
    files = hub.files("org/results")
    assert "data/shards/s0/preds.bin" not in files and files["data/shards/s1/rows.json"] == b'{"rows": []}'
    assert ".gitattributes" in files and out.commit == hub.commits("org/results")[-1]
    assert hub.repos["org/results"].private   # created private, kept


def test_a_refused_push_names_the_space_and_hides_the_token(site, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_wrongwrongwrongwrongwrongwrong0")
    with pytest.raises(Exception, match=r"org/results: HTTP 401.*allowed to write there") as err:
        publish_space(site, "org/results")
    assert "hf_wrong" not in str(err.value) and "org/results" not in hub.repos


def test_the_fake_hub_keeps_datasets_and_spaces_apart(site, hub):
    """A dataset route on a Space (and the other way) is a missing repo, as on the Hub."""
    from probekit.hub.publish import hub_api

    publish_space(site, "org/results")
    api = hub_api(TOKEN)
    assert api.repo_info("org/results", repo_type="space").sha == hub.commits("org/results")[-1]
    from huggingface_hub.errors import RepositoryNotFoundError

    with pytest.raises(RepositoryNotFoundError):
        api.repo_info("org/results", repo_type="dataset")


def test_a_public_push_of_restricted_rows_is_refused_as_probes_publish_refuses_it(site, hub):
    from probekit.hub.publish import PublishError

    meta = json.loads((site / "data" / "site.json").read_text())
    reason = "pararel: ParaRel's data is CC BY-NC-SA"
    (site / "data" / "site.json").write_text(json.dumps({**meta, "restricted": [reason]}))
    with pytest.raises(PublishError, match=r"would be public.*restricted datasets: pararel: ParaRel.*--private"):
        publish_space(site, "org/results")
    assert main(["browse", "publish", str(site), "--repo-id", "org/results"]) == 1
    with pytest.raises(Exception):
        hub.kind("org/results")   # nothing was created
    publish_space(site, "org/results", private=True)
    assert main(["browse", "publish", str(site), "--repo-id", "org/public", "--accept-restricted-licences"]) == 0
    assert hub.kind("org/public") == "spaces"


# --- only the site's own regular files: never a link, a folder reached through one, a FIFO ---------------------

SECRET = b"hf_private_notes: never publish"


def _links(site: Path, tmp_path: Path) -> list[str]:
    """A site holding what a researcher's folder may hold: links to a private file (relative and absolute), to a
    file of the site, to its hidden marker, to a private folder and to a folder of the site, a FIFO, a hidden
    folder; what the warning names, sorted."""
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "notes.txt").write_bytes(SECRET)
    (tmp_path / "private" / "index.html").write_bytes(SECRET)
    (site / "data" / "leak.json").symlink_to("../../private/notes.txt")
    (site / "abs.txt").symlink_to(tmp_path / "private" / "notes.txt")
    (site / "data" / "copy.bin").symlink_to("shards/s0/preds.bin")
    (site / "marker.json").symlink_to(".probekit.json")
    (site / "notes").symlink_to(tmp_path / "private")
    (site / "data" / "again").symlink_to("shards")
    os.mkfifo(site / "data" / "pipe.json")
    (site / ".cache").mkdir()
    (site / ".cache" / "x.json").write_text("{}")
    return ["abs.txt (a link)", "data/again (a link to a folder)", "data/copy.bin (a link)",
            "data/leak.json (a link)", "data/pipe.json (a FIFO)", "marker.json (a link)",
            "notes (a link to a folder)"]


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_site_files_are_its_own_regular_files_only(site, tmp_path):
    _links(site, tmp_path)
    assert site_files(site) == SITE_FILES


def test_the_dry_run_holds_no_link_nor_what_one_points_to_and_says_what_it_left_out(site, tmp_path, capsys):
    left = _links(site, tmp_path)
    out = tmp_path / "space"
    assert main(["browse", "publish", str(site), "--repo-id", "org/results", "--dry-run", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"dry run: wrote 8 files to {out}" in printed.out
    assert sorted(_tree(out)) == sorted(["README.md", ".probekit.json", *SITE_FILES])
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert SECRET not in _all_bytes(out)
    warning = [line for line in printed.err.splitlines() if "left out" in line]
    assert warning == [f"{site}: warning: left out 7 entries that are no regular file of the site's own (a link is "
                       f"never followed): {', '.join(left)}"]


def test_a_push_sends_no_link_nor_what_one_points_to(site, tmp_path, hub, capsys):
    _links(site, tmp_path)
    assert main(["browse", "publish", str(site), "--repo-id", "org/results"]) == 0
    files = hub.files("org/results")
    assert sorted(files) == sorted([".gitattributes", "README.md", *SITE_FILES])
    assert all(SECRET not in body for body in files.values())
    assert "left out 7 entries" in capsys.readouterr().err


def test_a_site_of_regular_files_publishes_without_a_warning(site, tmp_path, capsys):
    publish_space(site, "org/results", dry_run=tmp_path / "space")
    assert "left out" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["index.html", "data/site.json"])
def test_a_site_whose_page_or_site_json_is_a_link_is_refused(site, tmp_path, name, capsys):
    (site / name).rename(tmp_path / "moved")
    (site / name).symlink_to(tmp_path / "moved")
    out = tmp_path / "space"
    assert main(["browse", "publish", str(site), "--repo-id", "org/results", "--dry-run", str(out)]) == 2
    assert f"{site}: {name} is a link or not a regular file" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("link", [True, False])
def test_a_file_turned_into_a_link_after_the_walk_is_not_staged(site, tmp_path, link):
    """The push stages hard links (link=True): of the entry itself, so a link put where a file of the site was is
    refused, not linked to its target; a copy opens the file without following a link."""
    from evaluators.browse.space import _place, stage

    staged = tmp_path / "staged"
    stage(site, staged, "org/results", link=link)
    same = (staged / "app.js").stat().st_ino == (site / "app.js").stat().st_ino
    assert same is link   # a hard link where asked (one file system here), else a copy
    (tmp_path / "private.txt").write_bytes(SECRET)
    (site / "app.js").unlink()
    (site / "app.js").symlink_to(tmp_path / "private.txt")
    (site / "data" / "shards").rename(tmp_path / "shards")
    (site / "data" / "shards").symlink_to(tmp_path / "shards")
    for rel in ("app.js", "data/shards/s0/rows.json"):
        with pytest.raises(OSError):
            _place(site, rel, tmp_path / "out.bin", link)
        assert not (tmp_path / "out.bin").exists()
