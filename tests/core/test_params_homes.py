"""One home per value: a probe's defaults are its YAML's (``conf/config.yaml`` holds only what differs), the
optimisation defaults and the medal rule are the typed params' (a block given in part keeps the rest of its
default), and the checks of a value live in its params model."""

from __future__ import annotations

import pytest
import yaml

from probekit.errors import ParamsError
from probekit.params import SECTIONS, ParamsFile, section

from helpers import REPO


def test_a_probe_section_of_the_config_restates_nothing_of_its_yaml():
    conf = yaml.safe_load((REPO / "conf" / "config.yaml").read_text(encoding="utf-8"))
    for spec in sorted((REPO / "generators").glob("*/probe.yaml")):
        defaults = (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("params") or {}
        for name, given in conf.items():
            if name not in SECTIONS and name.startswith(spec.parent.name) and isinstance(given, dict):
                restated = sorted(k for k, v in given.items() if k in defaults and defaults[k] == v)
                assert not restated, f"conf/config.yaml {name}: {restated} restate {spec.relative_to(REPO)}"


def test_a_training_block_given_in_part_keeps_the_rest_of_its_default():
    """``mcqa.esim_slanted: {epochs: 4}``: ESIM's lr and batch stay ESIM's, not the class's defaults (MC-MLM's); the
    smoke profile's ``mcqa.esim_training: {epochs: 4}`` keeps the rest of the original ESIM trainer's."""
    from evaluators.shared.params import EsimTrainingParams, McqaParams, TrainingParams

    mcqa = section(ParamsFile(None, {"mcqa": {"esim_slanted": {"epochs": 4}, "training": {"epochs": 1},
                                              "esim_training": {"epochs": 4}}}), "mcqa", McqaParams)
    assert mcqa.esim_slanted == TrainingParams(lr=4e-4, epochs=4, batch_size=32, accumulation=1, weight_decay=0.0,
                                               betas=(0.9, 0.999))
    assert mcqa.training == TrainingParams(lr=1e-5, epochs=1)
    assert mcqa.esim_training == EsimTrainingParams(epochs=4) and mcqa.esim_hp is mcqa.esim_training


def test_the_medal_rule_is_checked_where_it_is_read(tmp_path):
    from evaluators.olmpics.results import medal_rule
    from evaluators.shared.params import OlmpicsReportParams

    params = ParamsFile(tmp_path / "p.yaml", {"olmpics_report": {"medals": {"success": 0.05, "partial": 0.15}}})
    with pytest.raises(ParamsError, match=r"p.yaml: olmpics_report.medals: expected \{success, partial\} with "
                                          r"0 <= partial <= success"):
        section(params, "olmpics_report", OlmpicsReportParams)
    assert section(ParamsFile(None), "olmpics_report", OlmpicsReportParams).medals.model_dump() == medal_rule()
    assert medal_rule({"success": 0.3}) == {"success": 0.3, "partial": 0.05}
