"""``probes export lm-eval``: a paper group averages the probes' main variants, not their controls nor the grids
(the role each variant has in its probe's YAML, carried by the dataset card); a probe whose card does not cite
oLMpics (a user's own) is exported under probekit's names, outside the oLMpics groups."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from probes.main import main

PARAMS = """age_comparison:
  size: {train: 8, dev: 8}
  variants: [original, nolang]
age_comparison_grid:
  mode: grid
  size: {train: 8, dev: 8}
  values:
    ages: {train: [43, 46], dev: [15, 17]}
  variants: [original]
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """``data/`` with age_comparison (original, NO-LANG) and its grid, as ``probes generate`` writes them."""
    root = tmp_path_factory.mktemp("groups")
    params = root / "params.yaml"
    params.write_text(PARAMS, encoding="utf-8")
    data = root / "data"
    assert main(["generate", "age_comparison", "--params", str(params), "--out",
                 str(data / "probes/age_comparison")]) == 0
    assert main(["generate", "age_comparison", "--params", str(params), "--section", "age_comparison_grid",
                 "--out", str(data / "grids/age_comparison")]) == 0
    return data


def _export(data: Path, out: Path) -> Path:
    assert main(["export", "lm-eval", "--data", str(data), "--out", str(out)]) == 0
    return out


def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_olmpics_group_averages_the_main_variants_only(generated, tmp_path):
    out = _export(generated, tmp_path / "lm_eval")
    written = {p.stem for p in (out / "olmpics").glob("olmpics_*.yaml")}
    assert {"olmpics_age_comparison", "olmpics_age_comparison_nolang", "olmpics_age_comparison_grid"} <= written
    group = _load(out / "olmpics/_olmpics.yaml")
    assert group["task"] == ["olmpics_age_comparison"]   # not the NO-LANG control, not the heatmap grid
    choice = _load(out / "olmpics/_olmpics_choice.yaml")
    assert choice["task"] == ["olmpics_age_comparison_choice"]


def _own_probe(generated: Path, data: Path) -> None:
    """``data/``: age_comparison, and a copy of it as the probe ``part_of`` whose cards cite nothing (as
    ``probes new part_of --from age_comparison`` makes it: its citation dropped)."""
    shutil.copytree(generated / "probes", data / "probes")
    for variant in ("original", "nolang"):
        folder = data / "probes/part_of" / variant
        shutil.copytree(data / "probes/age_comparison" / variant, folder)
        meta = folder / "meta.json"
        meta.write_text(meta.read_text(encoding="utf-8").replace('"probe": "age_comparison"', '"probe": "part_of"'),
                        encoding="utf-8")
        card = folder / "README.md"
        text = card.read_text(encoding="utf-8")
        assert "\n  citation: olmpics\n" in text
        card.write_text(text.replace("\n  citation: olmpics\n", "\n  citation: null\n"), encoding="utf-8")


def test_a_probe_not_citing_olmpics_is_exported_as_the_users_own(generated, tmp_path):
    _own_probe(generated, tmp_path / "data")
    out = _export(tmp_path / "data", tmp_path / "lm_eval")
    names = {p.relative_to(out).as_posix() for p in out.rglob("*.yaml")}
    assert not [n for n in names if "olmpics_part_of" in n]
    assert {"probekit/probekit_part_of.yaml", "probekit/probekit_part_of_choice.yaml",
            "probekit/probekit_part_of_nolang.yaml", "probekit/probekit_part_of_nolang_choice.yaml"} <= names
    assert _load(out / "olmpics/_olmpics.yaml")["task"] == ["olmpics_age_comparison"]
    assert _load(out / "olmpics/_olmpics_choice.yaml")["task"] == ["olmpics_age_comparison_choice"]
    assert _load(out / "probekit/_probekit_mc.yaml")["task"] == ["probekit_part_of"]   # main variants only
    assert _load(out / "probekit/_probekit_mc_choice.yaml")["task"] == ["probekit_part_of_choice"]
    assert _load(out / "_probekit.yaml")["task"] == ["olmpics", "olmpics_choice", "probekit_mc",
                                                    "probekit_mc_choice"]
    task = _load(out / "probekit/probekit_part_of.yaml")
    assert task["task"] == "probekit_part_of" and task["metadata"]["dataset"] == "probes/part_of/original"
    assert task["metadata"]["probekit_rule"] == "statement"
    assert "| `probekit_part_of_choice` | `probekit_mc_choice` | harness |" in (out / "README.md").read_text()
