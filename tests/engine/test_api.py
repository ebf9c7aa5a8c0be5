"""The library API (evaluators/shared/api.py): docs/api.md's example runs as written, and what it wrote is what the
``probes evaluate zeroshot`` command writes for the same call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_example_of_docs_api_runs_and_writes_what_the_command_writes(tmp_path, monkeypatch):
    done = subprocess.run([sys.executable, "-c", _example()], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"results/sizes [0-9.]+ on 4 examples\n", done.stdout)
    library = tmp_path / "library"
    (tmp_path / "results/sizes").rename(library)
    from probes.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "zeroshot", "--model", "tiny-bert", "--data", "sizes", "--out", "results/sizes",
                 "--device", "cpu"]) == 0
    for name in ("metrics.json", "predictions.jsonl"):
        assert (tmp_path / "results/sizes" / name).read_bytes() == (library / name).read_bytes(), name


def test_an_unknown_protocol_names_the_protocols():
    from evaluators.shared.api import evaluate
    from probekit.errors import UsageError

    with pytest.raises(UsageError, match="no protocol 'nope'; the protocols are audit, zeroshot, features"):
        evaluate("nope", "m", "d", "o")
    with pytest.raises(UsageError, match="'audit' has no run of its own"):
        evaluate("audit", "m", "d", "o")


def test_one_registry_serves_params_applicability_the_grid_and_probes_run():
    from evaluators.shared import applies
    from evaluators.grid import plan
    from probekit import protocols

    assert protocols.PAPERS == ("olmpics", "pararel", "consistency", "calum")
    assert set(applies.FAMILIES_OF) == set(protocols.REGISTRY)
    assert tuple(plan.SECTIONS) == protocols.GRID == ("zeroshot", "curve", "mcqa", "pararel", "calum")
    for record in protocols.REGISTRY.values():
        for dotted in filter(None, (record.run, record.report)):
            assert callable(protocols.function(dotted)), dotted
        for name in record.sections:
            assert name in protocols.SECTION_MODELS, name
    assert [p.name for p in protocols.of_report("pararel")] == ["pararel", "consistency"]
    from evaluators.olmpics import mcqa, runs

    assert runs.ESIM == mcqa.ESIM   # the reserved model name, checked before any model module is imported
