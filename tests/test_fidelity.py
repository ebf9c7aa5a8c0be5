"""The fidelity report: generic construction rules, a probe's own rule, the comparison with the release."""

from __future__ import annotations

import json

from probekit import fidelity
from probekit.cli import main
from probekit.examples import make_example

from conftest import MIRROR


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
    manifest.write_text((fidelity.Path(__file__).parents[1] / "raw/sources.yaml").read_text())
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
