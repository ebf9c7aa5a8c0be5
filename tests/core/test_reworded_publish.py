"""The researcher's trial of issue 43, item 4: a probe's template reworded in its YAML and regenerated, published to
the fake Hub (tests/hub_server.py). The publish is refused while the version is the published one; raised, the
card's Changes name the fields that changed, show the template's old and new text, and say that NO-LANG's rows
changed only their pointer to the base (`source_id`). `probes diff --model` of the published version against the
new one keeps every scored prediction. A long gold-answer list on a dataset card is cut to its top 10."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from probekit.hub.card import Card
from probes.main import main

from helpers import edited_probe, small_age_comparison

TOKEN = "hf_REWORDEDreworded0123456789abcdefXYZ"
OLD = "than me in age, If I am a {age2} year old person."
NEW = "than me in age, given that I am a {age2} year old person."
PROBE = Path("probes") / "age_comparison"


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> Path:
    """AGE COMPARISON's `original` and `nolang`, small, from the shipped YAML."""
    root = tmp_path_factory.mktemp("reworded") / "data"
    small_age_comparison(root / PROBE)
    return root


def _card(hub, repo) -> tuple[Card, str]:
    text = hub.files(repo)["README.md"].decode()
    return Card.parse(text), text


def test_a_reworded_template_is_refused_under_its_version_then_shown_old_and_new(first, hub, tmp_path, monkeypatch,
                                                                                  capsys, tiny_bert):
    repo = "org/reworded"
    data = Path(shutil.copytree(first, tmp_path / "data"))
    assert main(["publish", "--repo-id", repo, "--data", str(data)]) == 0
    published = _card(hub, repo)[0].blocks
    assert published["age_comparison"]["template_texts"]["paper"].endswith(OLD)
    commits = len(hub.commits(repo))

    # the template reworded in the probe's YAML, the probe regenerated: same version
    yaml_path = edited_probe(tmp_path, monkeypatch, lambda text: text.replace(OLD, NEW))
    shutil.rmtree(data / PROBE)
    small_age_comparison(data / PROBE)
    capsys.readouterr()
    assert main(["publish", "--repo-id", repo, "--data", str(data)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and len(hub.commits(repo)) == commits   # refused, nothing committed
    assert (f"age_comparison: its definition changed since the published {published['age_comparison']['version']} "
            "(template `paper` reworded) but its version is still 1.0.0: raise `version:` in "
            "generators/age_comparison/probe.yaml (e.g. to 1.1;") in err[0]
    # nolang's rows changed (their source_id), and its base's template too
    assert err[0].endswith("or pass --keep-version to publish it as 1.0.0 anyway (and 1 config more alike)")

    # the version raised: published, the card shows the old and the new text
    yaml_path.write_text(yaml_path.read_text().replace("version: 1\n", "version: 1.1\n"))
    shutil.rmtree(data / PROBE)
    small_age_comparison(data / PROBE)
    assert main(["publish", "--repo-id", repo, "--data", str(data)]) == 0
    card, text = _card(hub, repo)
    original, nolang = card.blocks["age_comparison"], card.blocks["age_comparison-nolang"]
    assert original["version"].startswith("1.1.0+") and nolang["version"].startswith("1.1.0+")
    entry = original["changes"][0]
    assert entry["templates"] == {"paper": {"old": f"A {{age1}} year old person is [MASK] {OLD}",
                                            "new": f"A {{age1}} year old person is [MASK] {NEW}"}}
    assert entry["splits"]["train"]["fields"] == {"question.stem": 12} and entry["splits"]["dev"]["changed"] == 6
    section = text.split("### age_comparison\n")[1].split("### age_comparison-nolang")[0]
    assert ("| train 12, dev 6 | 0 | 0 | 18 | question.stem 18 | 0 |") in section
    assert (f"- `{original['version']}`: template `paper` reworded: `A {{age1}} year old person is [MASK] {OLD}` → "
            f"`A {{age1}} year old person is [MASK] {NEW}`") in section
    # NO-LANG: 18 rows "changed", but only their source_id: told apart from a change of text
    nolang_entry = nolang["changes"][0]
    assert nolang_entry["splits"]["train"]["fields"] == {"source_id": 12}
    assert nolang_entry["splits"]["train"]["repointed"] == 12
    section = text.split("### age_comparison-nolang\n")[1]
    assert "| 0 | 0 | 18 | source_id only: 18 | 0 |" in section
    assert "its base's template `paper` reworded" in section
    assert "~18 (source_id only: 18)" in capsys.readouterr().out

    # the published version against the new one, with a tiny random BERT: every scored prediction kept
    examples = tmp_path / "e.jsonl"
    old_tag = f"age_comparison-v1.0.0-{published['age_comparison']['fingerprint'][:12]}"
    assert main(["diff", str(data / PROBE), "--old", f"hf://datasets/{repo}@{old_tag}", "--model", str(tiny_bert),
                 "--device", "cpu", "--examples", str(examples)]) == 0
    rows = [json.loads(line) for line in examples.read_text().splitlines()]
    dev = [r for r in rows if r["config"] == "age_comparison" and r["split"] == "dev"]
    assert len(dev) == 6 and all(r["status"] == "changed" and r["fields"] == ["stem"] for r in dev)
    for r in dev:
        p = r["predictions"]
        assert p["old"]["scored"] and p["new"]["scored"] and p["old"]["margin"] is not None
        assert p["new"]["correct"] is (p["new"]["margin"] > 0)
    assert sum("flip" in r for r in dev) <= 6
    # the results browser reads the file as before, the predictions beside each example
    from evaluators.browse.build import read_diff

    view = read_diff(examples)
    split = next(s for s in view["splits"] if (s["config"], s["split"]) == ("age_comparison", "dev"))
    assert split["changed"] == 6 and all(e["predictions"]["new"]["scored"] for e in split["examples"])


def test_a_long_gold_answer_list_shows_the_top_ten(tmp_path):
    from probekit.data.card import top_counts

    counts = {f"w{i:03d}": 6 for i in range(700)} | {"zebra": 9, "apple": 7}
    text = top_counts(counts)
    assert text.startswith("zebra: 9, apple: 7, w000: 6, ") and text.count(": ") == 10
    assert text.endswith(", +692 more (4152 rows; all in `meta.json`)")
    assert top_counts({"older": 3, "younger": 3}) == "older: 3, younger: 3"
