"""The `probes` command: bad input is one clear line naming the file and field; exit codes."""

from __future__ import annotations

import json
import shutil

import yaml

from conftest import MIRROR, REPO
from probekit.cli import main


def test_generate_missing_params_section(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"multihop_comparison": {}}))
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(params) in err and "'age_comparison'" in err
    assert not (tmp_path / "o").exists()


def test_generate_bad_range_names_the_key(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"age_comparison": {
        "seed": 1, "variants": ["original"], "size": {"train": 4, "dev": 4},
        "values": {"ages": {"train": [43, 120], "dev": [38]}}}}))
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 1
    assert "values.ages.dev must be a pair [low, high]" in capsys.readouterr().err


def test_generate_writes_every_variant(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"multihop_comparison": {
        "seed": 1, "variants": ["original", "nolang"], "size": {"train": 6, "dev": 3},
        "values": {"ages": {"train": [43, 120], "dev": [15, 38]}}}}))
    out = tmp_path / "o"
    assert main(["generate", "multihop_comparison", "--params", str(params), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["nolang", "original"]
    assert json.loads((out / "nolang/meta.json").read_text())["splits"]["dev"]["n"] == 3
    assert "multihop_comparison/nolang: train 6, dev 3" in capsys.readouterr().out


def test_fetch_then_evaluate_release_file_with_model_alias(tmp_path, tiny_bert, capsys):
    manifest = tmp_path / "raw" / "sources.yaml"
    manifest.parent.mkdir()
    shutil.copy(REPO / "raw/sources.yaml", manifest)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"models": {"tiny": str(tiny_bert)}}))
    assert main(["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    out = tmp_path / "r"
    assert main(["evaluate", "zeroshot", "--model", "tiny", "--params", str(params), "--manifest", str(manifest),
                 "--release-of", "multihop_comparison", "--limit", "5", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "tiny" and metrics["model_id"] == str(tiny_bert)
    assert metrics["probe"] == "multihop_comparison" and metrics["n"] == 5
    assert metrics["data"].endswith("compositional_comparison_dev.jsonl")


def test_evaluate_missing_data_is_a_usage_error(tmp_path, capsys):
    code = main(["evaluate", "zeroshot", "--model", "x", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "o"),
                 "--params", str(tmp_path / "absent.yaml")])
    assert code == 2
    assert f"--data {tmp_path / 'nope'}: no such file or folder" in capsys.readouterr().err


def test_unknown_probe_lists_the_available_ones(tmp_path, capsys):
    assert main(["generate", "nope", "--out", str(tmp_path / "o")]) == 1
    assert "no generator for probe 'nope'; available: age_comparison, multihop_comparison" in capsys.readouterr().err
