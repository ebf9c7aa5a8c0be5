"""The fidelity report: generic construction rules, a probe's own rule, the comparison with the release."""

from __future__ import annotations

import json
import sys
import types
from collections import Counter

from probekit.data.examples import make_example
from probekit.probes import fidelity
from probes.main import main

from helpers import MIRROR, REPO


def row(stem: str, choices=("older", "younger"), answer="older", **over) -> dict:
    return {**make_example(probe="p", variant="original", template_id="t", stem=stem, choices=list(choices),
                           answer=answer, args={}), **over}


def test_generic_rules_count_each_broken_row():
    good = row("A is [MASK] than B .")
    rows = [good, dict(good), row("A is [MASK] than C . "), row("no mask here"), row("A [MASK] [MASK]"),
            row("A is [MASK] .", choices=("old", "old"), answer="old"), {"id": "x"}]
    assert fidelity.generic_problems(rows, "mc_mlm") == {
        "duplicate id": 2, "duplicate content": 2, "leading/trailing space in stem or choice": 1,
        "stem without exactly 1 [MASK]": 2, "repeated choice text": 1, "malformed row": 1}
    assert fidelity.generic_problems([row("what is big?")], "mc_qa") == {}


def test_probe_rule_and_vocabulary_overlap():
    ours = {"train": [row("A cat is [MASK] .")], "dev": [row("A dog is [MASK] .")]}
    release = {"train": [row("A cat is [MASK] ."), row("A cow is [MASK] .")], "dev": []}
    report = fidelity.compare(ours, release, "mc_mlm", rule=lambda r: "dog" in r["question"]["stem"] and "no dogs")
    assert report["dev"]["ours"]["problems"] == {"no dogs": 1}
    assert report["train"]["vocabulary"] == {"ours": 5, "release": 6, "shared": 5, "release_covered": 0.833}


def test_fidelity_command_on_a_generated_probe(tmp_path, capsys):
    manifest = tmp_path / "raw/sources.yaml"
    manifest.parent.mkdir()
    manifest.write_text((REPO / "raw/sources.yaml").read_text())
    assert main(["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    params = tmp_path / "p.yaml"
    params.write_text("multihop_comparison: {size: {train: 30, dev: 30}}\n")
    assert main(["generate", "multihop_comparison", "--params", str(params),
                 "--out", str(tmp_path / "probes/multihop_comparison")]) == 0
    out = tmp_path / "reports/fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest), "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    dev = report["multihop_comparison"]["dev"]
    assert dev["ours"]["n"] == 30 and dev["ours"]["problems"] == {}
    assert dev["release"]["n"] == 500 and dev["release"]["problems"]["duplicate id"] == 37  # the release's defect
    assert "## multihop_comparison" in out.read_text()
    assert "multihop_comparison: ours breaks 0 construction rule(s)" in capsys.readouterr().out


def test_release_problems_are_added_to_the_release_counts_only():
    ours = {"train": [row("A cat is [MASK] .")], "dev": []}
    release = {"train": [row("A cat is [MASK] . "), row("A cow is [MASK] .")], "dev": [row("A dog is [MASK] .")]}
    fixed = {"train": Counter({"word fixed (tune -> tuna)": 2, "stray spaces fixed": 1, "nothing": 0})}
    report = fidelity.compare(ours, release, "mc_mlm", release_problems=fixed)
    assert report["train"]["release"]["problems"] == {
        "leading/trailing space in stem or choice": 1, "stray spaces fixed": 1, "word fixed (tune -> tuna)": 2}
    assert report["dev"]["release"]["problems"] == {} and report["train"]["ours"]["problems"] == {}
    assert "word fixed (tune -> tuna): 2" in fidelity.markdown({"p": report})


def test_run_calls_a_generators_release_problems_hook(tmp_path, monkeypatch):
    folder = tmp_path / "probes/fake_probe/original"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"probe": "fake_probe", "format": "mc_mlm"}))
    release = {}
    for split, stems in (("train", ["A cat is [MASK] ."]), ("dev", ["A dog is [MASK] .", "A cow is [MASK] ."])):
        (folder / f"{split}.jsonl").write_text(json.dumps(row(stems[0])) + "\n")
        release[split] = tmp_path / f"release_{split}.jsonl"
        release[split].write_text("".join(json.dumps(row(s)) + "\n" for s in stems))
    seen = {}

    def release_problems(rows_by_split):
        seen.update(rows_by_split)
        return {split: Counter({"typo fixed": len(rows)}) for split, rows in rows_by_split.items()}

    module = types.ModuleType("generators.fake_probe")
    module.release_problems = release_problems
    monkeypatch.setitem(sys.modules, "generators.fake_probe", module)
    report = fidelity.run(tmp_path / "probes", lambda probe, split: release[split], tmp_path / "f.md")
    assert {s: len(r) for s, r in seen.items()} == {"train": 1, "dev": 2}  # the release rows, per split
    assert {s: r["release"]["problems"] for s, r in report["fake_probe"].items()} == {
        "train": {"typo fixed": 1}, "dev": {"typo fixed": 2}}
    assert {s: r["ours"]["problems"] for s, r in report["fake_probe"].items()} == {"train": {}, "dev": {}}
    assert json.loads((tmp_path / "f.json").read_text())["fake_probe"]["dev"]["release"]["problems"] == {
        "typo fixed": 2}
