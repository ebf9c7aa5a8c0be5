"""The "Changes" of a config on the Hub card (probekit/hub/changelog.py): a dry-run publish with --published counts
what changed since an earlier dry run (checked against a hand count over the JSONL files), a second publish keeps
the older entries, a publish to the fake Hub (tests/hub_server.py) tags each uploaded config's version on its
commit and the tag gets that version back, `probes versions` says the counts, and a re-publish of unchanged data
makes no commit, whatever the date."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from probekit.hub import changelog, publish
from probekit.hub.card import Card, render
from probes.main import main

from helpers import small_age_comparison

TOKEN = "hf_CHANGELOGchangelog0123456789abcdefXYZ"
PROBE = Path("probes") / "age_comparison"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """age_comparison's `original` and `nolang` variants, small, as `probes generate` writes them."""
    root = tmp_path_factory.mktemp("changelog") / "data"
    small_age_comparison(root / PROBE)
    return root


@pytest.fixture
def data(data_root, tmp_path) -> Path:
    import shutil

    return Path(shutil.copytree(data_root, tmp_path / "data"))



def _rows(data: Path, split: str, variant: str = "original") -> list[dict]:
    return [json.loads(line) for line in (data / PROBE / variant / f"{split}.jsonl").read_text().splitlines()]


def _write(data: Path, split: str, rows: list[dict], variant: str = "original") -> None:
    (data / PROBE / variant / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _gold(rows: list[dict]) -> Counter:
    return Counter(next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"]) for r in rows)


def _tvd(a: Counter, b: Counter) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return round(0.5 * sum(abs(a[k] / na - b[k] / nb) for k in {*a, *b}), 6)


def _change(data: Path) -> dict:
    """Reword every train stem of `original`; in dev drop its first two rows and add one of new ages. Returns the
    hand count per split and the answers before and after."""
    train, dev = _rows(data, "train"), _rows(data, "dev")
    before = {"train": _gold(train), "dev": _gold(dev)}
    for r in train:
        r["question"]["stem"] = r["question"]["stem"].replace("A ", "Someone ", 1)
    new = json.loads(json.dumps(dev[0]))
    new["args"] = {"age1": 97, "age2": 3}
    new["question"]["stem"] = "A 97 year old person is [MASK] than me in age, If I am a 3 year old person."
    dev = dev[2:] + [new]
    _write(data, "train", train)
    _write(data, "dev", dev)
    after = {"train": _gold(train), "dev": _gold(dev)}
    return {"train": {"rows": 12, "added": 0, "removed": 0, "changed": 12, "unchanged": 0,
                      "tvd": _tvd(before["train"], after["train"])},
            "dev": {"rows": 5, "added": 1, "removed": 2, "changed": 0, "unchanged": 4,
                    "tvd": _tvd(before["dev"], after["dev"])}}


def _card(folder_or_text) -> Card:
    text = folder_or_text if isinstance(folder_or_text, str) else (folder_or_text / "README.md").read_text()
    return Card.parse(text)


def test_a_dry_run_with_published_counts_the_change_and_a_second_one_keeps_the_first_entry(
        data, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(changelog, "today", lambda: "2026-01-05")
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    assert main(["publish", "--dry-run", str(one), "--data", str(data)]) == 0
    first = _card(one).blocks
    for name, b in first.items():   # no --published: every config first published, with its rows
        assert b["changes"] == [{"version": b["version"], "date": "2026-01-05", "since": None,
                                 "splits": {"train": {"rows": 12}, "dev": {"rows": 6}}}], name
    text = (one / "README.md").read_text()
    assert "#### Changes" in text and f"| `{first['age_comparison']['version']}` | 2026-01-05 | " in text
    assert "| first published | train 12, dev 6 | – | – | – | – | – | – |" in text

    expected = _change(data)
    monkeypatch.setattr(changelog, "today", lambda: "2026-02-07")
    capsys.readouterr()
    assert main(["publish", "--dry-run", str(two), "--data", str(data), "--published", str(one)]) == 0
    out = capsys.readouterr().out
    blocks = _card(two).blocks
    entries = blocks["age_comparison"]["changes"]
    assert [e["version"] for e in entries] == [blocks["age_comparison"]["version"], first["age_comparison"]["version"]]
    new = entries[0]
    assert new["date"] == "2026-02-07" and new["since"] == first["age_comparison"]["version"]
    for split, want in expected.items():
        got = new["splits"][split]
        assert {k: got[k] for k in want} == want, split
        assert got["p_value"] is not None and got["moved"] is (got["p_value"] < 0.05)
    assert expected["dev"]["tvd"] > 0 and expected["train"]["tvd"] == 0   # the dev answers moved a little
    assert entries[1] == first["age_comparison"]["changes"][0]           # the first entry, as it was
    assert blocks["age_comparison-nolang"]["changes"] == first["age_comparison-nolang"]["changes"]   # untouched
    assert f"changes since {one}: age_comparison {blocks['age_comparison']['version']}: +1 -2 ~12 (question.stem 12) since" in out
    assert "age_comparison-nolang" not in out.split("nothing uploaded")[1]
    text = (two / "README.md").read_text()
    tag = changelog.tag("age_comparison", new["version"])
    assert (f"| `{new['version']}` | 2026-02-07 | `{tag}` | `{new['since']}` | train 12, dev 5 | 1 | 2 | 12 | "
            f"question.stem 12 | 4 | "
            f"train TVD 0.000, p 1.000; dev TVD {expected['dev']['tvd']:.3f}, p ") in text
    assert f'revision="{tag}"' in text and f"| tag | `{tag}` (the Hub revision of this version) |" in text

    rows = _rows(data, "train")   # a third version: one train row dropped
    _write(data, "train", rows[1:])
    monkeypatch.setattr(changelog, "today", lambda: "2026-03-09")
    assert main(["publish", "--dry-run", str(three), "--data", str(data), "--published", str(two)]) == 0
    entries3 = _card(three).blocks["age_comparison"]["changes"]
    assert [e["date"] for e in entries3] == ["2026-03-09", "2026-02-07", "2026-01-05"] and entries3[1:] == entries
    assert {k: entries3[0]["splits"]["train"][k] for k in changelog.COUNTS} == {
        "added": 0, "removed": 1, "changed": 0, "unchanged": 11}
    # the same data again: no new entry, whatever the date
    monkeypatch.setattr(changelog, "today", lambda: "2026-04-11")
    assert main(["publish", "--dry-run", str(tmp_path / "four"), "--data", str(data), "--published",
                 str(three)]) == 0
    assert _card(tmp_path / "four").blocks == _card(three).blocks


def test_versions_says_the_examples_added_removed_and_changed(data, tmp_path, capsys):
    one = tmp_path / "one"
    assert main(["publish", "--dry-run", str(one), "--data", str(data), "--probes", "age_comparison-nolang"]) == 0
    _change(data)
    capsys.readouterr()
    assert main(["versions", "--data", str(data), "--published", str(one)]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines()[1:])
    assert lines["age_comparison-nolang"].endswith("  unchanged")
    assert lines["age_comparison"].endswith("  new: +17")   # not in the earlier folder: every example added
    assert main(["publish", "--dry-run", str(one), "--data", str(data), "--force"]) == 0
    rows = _rows(data, "dev")
    rows[0]["answerKey"] = "B" if rows[0]["answerKey"] == "A" else "A"
    _write(data, "dev", rows + [dict(rows[0], args={"age1": 5, "age2": 6})])
    capsys.readouterr()
    assert main(["versions", "--data", str(data), "--published", str(one)]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines()[1:])
    assert "  changed: +1 -0 ~1 (answerKey 1), fingerprint " in lines["age_comparison"] and "dev 5 -> 6" in lines["age_comparison"]
    assert main(["publish", "--repo-id", "org/x", "--data", str(data), "--published", str(one)]) == 2
    assert "--published DIR goes with --dry-run" in capsys.readouterr().err
    assert main(["publish", "--dry-run", str(tmp_path / "o"), "--data", str(data), "--published", str(data)]) == 2
    assert f"--published {data}: no README.md" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_a_publish_tags_each_uploaded_version_and_the_tag_gets_it_back(data, hub, tmp_path, monkeypatch, capsys):
    from probekit.hub import export as hub_export
    from probekit.versions.sides import hub_side

    repo = "org/changes"
    args = ["publish", "--repo-id", repo, "--data", str(data)]
    v1 = {c.name: hub_export.export(c, data) for c in hub_export.discover(data)}
    monkeypatch.setattr(changelog, "today", lambda: "2026-01-05")
    assert main(args) == 0
    first = hub.commits(repo)[-1]
    tags1 = {changelog.tag(n, e.block["version"]) for n, e in v1.items()}
    assert hub.tags(repo) == {t: first for t in tags1}
    out = capsys.readouterr().out
    assert all(f"{repo}: tagged {t}" in out for t in tags1) and "  age_comparison: first published" in out

    expected = _change(data)
    hub.fail("tag", 1)   # a tag is retried like a commit
    monkeypatch.setattr(changelog, "today", lambda: "2026-02-07")
    assert main(args) == 0
    commits = hub.commits(repo)
    assert len(commits) == 3
    v2 = hub_export.export(next(c for c in hub_export.discover(data, ["age_comparison"]) if c.name == "age_comparison"),
                           data).block["version"]
    tag2 = changelog.tag("age_comparison", v2)
    assert hub.tags(repo) == {**{t: first for t in tags1}, tag2: commits[-1]}   # only the uploaded config's
    out = capsys.readouterr().out
    assert "attempt 1 of 5 failed" in out and f"tagged {tag2}" in out and "  age_comparison: +1 -2 ~12" in out
    card = _card(hub.files(repo)["README.md"].decode())
    entries = card.blocks["age_comparison"]["changes"]
    assert [e["date"] for e in entries] == ["2026-02-07", "2026-01-05"] and entries[0]["since"] == \
        v1["age_comparison"].block["version"]
    for split, want in expected.items():   # counted against the Hub's Parquet files of the version replaced
        assert {k: entries[0]["splits"][split][k] for k in want} == want

    # the first version's tag: its files and rows are that version's
    tag1 = changelog.tag("age_comparison", v1["age_comparison"].block["version"])
    assert hub.files(repo, tag1)["age_comparison/dev-00000-of-00001.parquet"] != \
        hub.files(repo)["age_comparison/dev-00000-of-00001.parquet"]
    side = hub_side(f"hf://datasets/{repo}@{tag1}")
    try:
        assert side.entries["age_comparison"].load() == v1["age_comparison"].rows
    finally:
        side.close()

    # unchanged data, another day: no commit, no tag
    monkeypatch.setattr(changelog, "today", lambda: "2026-03-09")
    tags = hub.tags(repo)
    assert main(args) == 0
    assert len(hub.commits(repo)) == 3 and hub.tags(repo) == tags
    assert "nothing changed (2 configs with the fingerprints of the Hub's card): no commit" in capsys.readouterr().out

    rows = _rows(data, "train")
    _write(data, "train", rows[:-3])
    assert main(["versions", "--data", str(data), "--repo-id", repo]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines()[1:])
    assert "changed: +0 -3 ~0, fingerprint" in lines["age_comparison"]


def test_the_fake_hub_tags_a_revision_once_and_resolves_revisions_by_tag(data, hub, capsys):
    from huggingface_hub.errors import HfHubHTTPError

    repo = "org/tags"
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "age_comparison-nolang"]) == 0
    api = publish.hub_api(TOKEN)
    head = hub.commits(repo)[-1]
    api.create_tag(repo, tag="v/1", revision="main", repo_type="dataset")
    with pytest.raises(HfHubHTTPError) as err:
        api.create_tag(repo, tag="v/1", revision="main", repo_type="dataset")
    assert err.value.response.status_code == 409
    api.create_tag(repo, tag="again", revision="v/1", repo_type="dataset")   # a quoted revision, by its tag
    assert hub.tags(repo) == {"age_comparison-nolang-v1.0.0-" + _card(hub.files(repo)["README.md"].decode()).blocks[
        "age_comparison-nolang"]["fingerprint"][:12]: head, "v/1": head, "again": head}
    assert api.repo_info(repo, repo_type="dataset", revision="again").sha == head
    assert set(hub.files(repo, "v/1")) == set(hub.files(repo))

    _write(data, "dev", _rows(data, "dev", "nolang")[1:], "nolang")   # a new version; its tag refused
    hub.fail("tag", -1)
    capsys.readouterr()
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "age_comparison-nolang"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gave up after 5 attempts" in err[0] and "HTTP 503 on POST" in err[0]
    version = _card(hub.files(repo)["README.md"].decode()).blocks["age_comparison-nolang"]["version"]
    assert err[0].endswith(f"; commit {hub.commits(repo)[-1][:12]} was made, not its tag "
                           f"{changelog.tag('age_comparison-nolang', version)} and the tags after it")
    assert len(hub.tags(repo)) == 3   # the data is committed, the tag is not


def test_the_entries_round_trip_through_the_card_and_do_not_count_as_a_change(data, tmp_path, monkeypatch):
    monkeypatch.setattr(changelog, "today", lambda: "2026-01-05")
    assert main(["publish", "--dry-run", str(tmp_path / "one"), "--data", str(data)]) == 0
    text = (tmp_path / "one" / "README.md").read_text()
    card = Card.parse(text)
    assert render(card) == render(Card.parse(render(card)))
    assert isinstance(card.blocks["age_comparison"]["changes"][0]["date"], str)   # not read back as a date
    b = card.blocks["age_comparison"]
    later = {**b, "changes": [dict(b["changes"][0], date="2027-01-01")]}
    assert changelog.bare(later) == changelog.bare(b) and later != b
    assert changelog.tag("x-y", "1.2.3+0123456789ab") == "x-y-v1.2.3-0123456789ab"
