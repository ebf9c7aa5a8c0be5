"""docs/limits.md opens with the table "Differences from the papers": every row quotes its paper, and every params
switch it names is a key a user can set (in the composed params of a profile, in a generator's ``params:`` block,
or a field of the section's typed params), so the table cannot point at a switch that does not exist."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
import yaml

from probekit.params import merge

ROOT = Path(__file__).resolve().parent.parent
LIMITS = ROOT / "docs" / "limits.md"
PAPERS = ("oLMpics", "ParaRel", "CALUM", "None of the three papers")
KEY = re.compile(r"^-?S?\s*'?\+*([a-z][a-z0-9_]*(?:\.[a-z0-9_-]+)+)")


def _table() -> list[list[str]]:
    text = LIMITS.read_text(encoding="utf-8")
    section = text.split("## Differences from the papers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]
    assert cells[0] == ['Paper (section: "quote")', "probekit", "Why", "Switch"]
    return cells[2:]


def _known() -> dict:
    """Every key a user can set: both profiles composed, each generator's params block, the typed sections."""
    from dvc.utils.hydra import compose_and_dump

    known: dict = {}
    for profile in ("smoke", "paper"):
        out = Path(tempfile.mkdtemp()) / "params.yaml"
        compose_and_dump(out, str(ROOT / "conf"), None, "config", str(out.parent / "plugins"), [f"profile={profile}"])
        known = merge(known, yaml.safe_load(out.read_text(encoding="utf-8")))
    for spec in (ROOT / "generators").glob("*/probe.yaml"):
        data = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
        if isinstance(data.get("params"), dict):
            known = merge(known, {spec.parent.name: data["params"]})
    return known


def _typed_fields() -> dict[str, set[str]]:
    from evaluators.calum.params import CalumEvalParams
    from evaluators.shared.params import (CurveParams, McqaParams, MlmBaselineParams, OlmpicsReportParams, ParaRelEvalParams,
                                   ScoringParams, ZeroshotParams)
    from evaluators.pararel.params import ConsistencyParams

    models = {"scoring": ScoringParams, "zeroshot": ZeroshotParams, "curve": CurveParams, "mcqa": McqaParams,
              "mlm_baseline": MlmBaselineParams, "olmpics_report": OlmpicsReportParams,
              "pararel_eval": ParaRelEvalParams, "consistency": ConsistencyParams, "calum_eval": CalumEvalParams}
    typed = {name: set(model.model_fields) for name, model in models.items()}
    from probekit.sources import loaders   # each table set's typed params: tables.<set>.<field>
    return typed | {f"tables.{name}": set(loaders.get(name).params.model_fields) for name in loaders.available()}


def _resolves(key: str, known: dict, typed: dict[str, set[str]]) -> bool:
    parts = key.split(".")
    if parts[0] == "models":   # a model alias the user adds
        return True
    node = known
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return (len(parts) >= 2 and parts[1] in typed.get(parts[0], ())) or \
                (len(parts) >= 3 and parts[2] in typed.get(f"{parts[0]}.{parts[1]}", ()))
    return True


def test_the_table_quotes_a_paper_on_every_row():
    rows = _table()
    assert len(rows) >= 20
    for paper, ours, why, switch in rows:
        assert paper.startswith(PAPERS), paper[:80]
        assert '"' in paper or "Table" in paper or paper.startswith("None of"), f"no quote: {paper[:80]}"
        assert ours and why and switch, paper[:80]


def test_every_switch_the_table_names_exists():
    known, typed = _known(), _typed_fields()
    named = []
    for *_, switch in _table():
        for span in re.findall(r"`([^`]+)`", switch):
            found = KEY.match(span)
            if found and not span.startswith(("probes ", "--")):
                named.append(found.group(1))
    assert len(named) >= 15
    missing = [k for k in named if not _resolves(k, known, typed)]
    assert not missing, f"docs/limits.md names switches no params file or section has: {missing}"


@pytest.mark.parametrize("key, ok", [("calum_eval.seq2seq", True), ("calum_eval.no_such_switch", False),
                                     ("tables.klue.splits_as", True), ("tables.klue.no_such_switch", False),
                                     ("age_comparison.values.ages", True), ("nosection.x", False)])
def test_the_switch_check_can_fail(key, ok):
    assert _resolves(key, _known(), _typed_fields()) is ok
