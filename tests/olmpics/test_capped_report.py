"""A run that accepted a capped source (``tables.<set>.capped: accept``, issue 52 item 2) is marked in the reports:
the cap is recorded once, in the table set's report, reaches the dataset's ``meta.json`` through its sources (as
``probes generate`` writes them), the metrics through :func:`evaluators.olmpics.zeroshot.describe`, and each report
marks the tables made from it; a run that accepted nothing is marked nowhere."""

from __future__ import annotations

import json
import shutil

import numpy as np

from evaluators.olmpics.zeroshot import describe
from evaluators.shared import report as zeroshot_report
from probekit.outputs.atomic import write_json
from probekit.sources.loaders import TableSets
from probes.main import main

from core.test_loader_object_sizes import _tiny_raw
from helpers import REPO
from olmpics.test_olmpics_report_flags import choose, dev_rows, gold_word, report, write_curve
from test_report import zero_shot_result

CAP = "object_sizes: the mirror's size sets cap OBJECTS COMPARISON at 674 train rows (the released probe's 5,000)"


def dataset_meta(tmp_path, monkeypatch, section: dict, name: str):
    """The ``meta.json`` a generator writes from table set object_sizes built with ``section`` (tiny raw files)."""
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    raw = tmp_path / name / "raw"
    raw.mkdir(parents=True)
    shutil.copyfile(REPO / "raw" / "sources.yaml", raw / "sources.yaml")
    _tiny_raw(raw)
    params = tmp_path / name / "params.yaml"
    params.write_text(json.dumps({"tables": {"object_sizes": section}}), encoding="utf-8")
    tables = tmp_path / name / "tables"
    assert main(["tables", "object_sizes", "--out", str(tables / "object_sizes"), "--manifest",
                 str(raw / "sources.yaml"), "--params", str(params)]) == 0
    sets = TableSets(tables, ("object_sizes",))
    sets["object_sizes"]
    from probekit.data.card import source_list   # the dataset's card says so too

    assert ("⚠ capped, accepted: the mirror's size sets cap" in source_list(sets.sources)) == ("capped" in section)
    data = tmp_path / name / "data" / "original" / "dev.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text("", encoding="utf-8")
    write_json(data.parent / "meta.json", {"probe": "objects_comparison", "variant": "original", "fingerprint": name,
                                           "sources": sets.sources})
    return describe(data, None)


def test_the_reports_mark_every_table_made_from_an_accepted_cap(tmp_path, monkeypatch):
    accepted = dataset_meta(tmp_path, monkeypatch, {"source": "mirror_sets", "capped": "accept"}, "accepted")
    plain = dataset_meta(tmp_path, monkeypatch, {"source": "mirror_sets"}, "smoke")
    assert accepted["capped"] == [CAP] and "capped" not in plain

    # the oLMpics curves' report: the probe's heading and a line under its table; its metrics
    rows = dev_rows(12)
    good = choose(rows, lambda i, r: gold_word(r))
    runs = {"original": np.stack([np.stack([good, good])] * 2)}
    for name, meta in (("accepted", accepted), ("smoke", plain)):
        write_curve(tmp_path / name / "results", "m", rows, runs, **meta)
    text, summary = report(tmp_path / "accepted" / "results", tmp_path / "accepted")
    heading = next(line for line in text.splitlines() if line.startswith("## ") and line != "## Medals")
    assert heading.endswith("⚠ capped")
    assert f"⚠ capped **ran on capped data** (accepted: `capped: accept`): {CAP}." in text
    assert all(entry["capped"] == [CAP] for by_row in summary.values() for entry in by_row.values())
    text, summary = report(tmp_path / "smoke" / "results", tmp_path / "smoke")
    assert "capped" not in text and "capped" not in json.dumps(summary)

    # the zero-shot report: the probe's rows and a line above the table; its metrics
    results = tmp_path / "zero"
    choices = [["younger", "older"]] * 4
    zero_shot_result(results, "m", "original", [(c, "older", "older") for c in choices], probe="objects_comparison",
                     capped=accepted["capped"])
    zero_shot_result(results, "m", "original", [(c, "older", "older") for c in choices], probe="age_comparison")
    zeroshot_report.run([results], out=tmp_path / "z.md", metrics=tmp_path / "z.json")
    text = (tmp_path / "z.md").read_text()
    assert f"**⚠ capped data**: objects_comparison: {CAP} (accepted: `capped: accept`)" in text
    assert "| objects_comparison ⚠ capped |" in text and "| age_comparison  " in text
    metrics = json.loads((tmp_path / "z.json").read_text())
    assert metrics["m"]["objects_comparison"]["original"]["capped"] == [CAP]
    assert "capped" not in metrics["m"]["age_comparison"]["original"]
