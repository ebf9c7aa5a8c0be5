"""The library API (:func:`evaluators.evaluate`): docs/api.md's example runs as written, and what it wrote is what the
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
    assert len(blocks) == 2   # the evaluation, then the predictions loader (tests/browse/test_predictions.py)
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
    from evaluators import evaluate
    from probekit.errors import UsageError

    with pytest.raises(UsageError, match="no protocol 'nope'; the protocols are audit, zeroshot, features"):
        evaluate("nope", "m", "d", "o")
    with pytest.raises(UsageError, match="'audit' has no run of its own"):
        evaluate("audit", "m", "d", "o")


def test_one_registry_serves_params_applicability_the_grid_and_probes_run():
    """Each protocol is declared once, on its run in its paper's ``runs`` module; the grid's protocols are those with
    a grid report; the sections each reads are those of its params models, each a section probekit.params knows."""
    import inspect

    from evaluators import protocols
    from evaluators.grid import plan
    from evaluators.grid.reports import REPORTS
    from probekit.papers import PAPERS
    from probekit.params import SECTIONS

    every = protocols.every()
    assert PAPERS == ("olmpics", "pararel", "consistency", "calum")
    assert list(every) == ["audit", "zeroshot", "features", "curve", "curve-lr", "mcqa", "pararel", "consistency",
                           "calum"]
    assert tuple(plan.SECTIONS) == plan.GRID == tuple(REPORTS) == ("zeroshot", "curve", "mcqa", "pararel", "calum")
    for name, record in every.items():
        if record.run is not None:   # declared beside its run: the function of that name in a paper's runs module
            assert record.run.__name__ == name.replace("-", "_") and record.run.__module__.endswith(".runs"), \
                record.run
            assert list(inspect.signature(record.run).parameters)[:3] == ["model", "data", "out"]
        for section, model in record.reads.items():
            assert section in SECTIONS and issubclass(model, __import__("pydantic").BaseModel), section
    assert plan.SECTIONS["curve"] == ("scoring", "curve", "mlm_baseline")
    assert [p.name for p in protocols.of_report("pararel")] == ["pararel", "consistency"]
    assert protocols.reported() == ("olmpics", "pararel", "calum")


def test_a_protocol_declared_twice_or_for_an_unknown_paper_fails_at_import():
    from evaluators import protocols

    with pytest.raises(ValueError, match="'curve' is declared twice"):
        protocols.protocol("curve", title="t", paper="olmpics")(lambda model, data, out: [])
    with pytest.raises(ValueError, match="paper 'lama' is not one of olmpics, pararel"):
        protocols.declare("lama", title="t", paper="lama")
    assert "lama" not in protocols.every()


def test_an_option_that_is_no_field_of_the_protocol_s_sections_fails_at_import():
    from evaluators import protocols
    from evaluators.shared.params import ScoringParams

    with pytest.raises(ValueError, match="option 'temperature' sets 'scoring.temperature', not a field"):
        protocols.declare("probe_x", title="t", paper="olmpics", reads={"scoring": ScoringParams},
                          options={"temperature": "scoring.temperature"})
    with pytest.raises(ValueError, match="option 'split' sets 'zeroshot.split', not a field of the sections it reads "
                                         r"\(scoring\)"):
        protocols.declare("probe_x", title="t", paper="olmpics", reads={"scoring": ScoringParams},
                          options={"split": "zeroshot.split"})
    assert "probe_x" not in protocols.every()


def test_a_call_s_options_are_its_record_s_and_each_lands_on_its_field(tmp_path):
    """A run's options are its record's (each a params field): one it does not take is a TypeError naming those it
    does, before any work; each given one replaces its field, the others keep the params' values."""
    from evaluators import evaluate, protocols
    from probekit.params import read_params

    with pytest.raises(TypeError, match=r"protocol 'zeroshot' takes no option colour \(its options: split, limit, "
                                        r"scoring, batch_size"):
        evaluate("zeroshot", model="m", data=str(tmp_path), out=str(tmp_path / "o"), colour="red")
    params = tmp_path / "params.yaml"
    params.write_text("zeroshot: {split: test}\nscoring: {seed: 3}\n")
    sections = protocols.get("zeroshot").settings(read_params(params), limit=5, scoring="mlm", seed=None)
    assert (sections["zeroshot"].split, sections["zeroshot"].limit) == ("test", 5)
    assert (sections["scoring"].family, sections["scoring"].seed) == ("mlm", 3)
    assert protocols.get("consistency").settings(read_params(params), eval_relations=["P19"])[
        "consistency"].test_relations == ["P19"]


def test_the_call_s_options_are_merged_over_the_params_in_one_function_that_validates_them():
    from evaluators.protocols import over
    from evaluators.shared.params import CurveParams
    from probekit.errors import UsageError

    given = CurveParams(sizes=[62, 125])
    assert over(given, sizes=None, seeds=None) is given   # left out: the params' values
    assert over(given, seeds=[7]).model_dump() == {**given.model_dump(), "seeds": [7]}
    with pytest.raises(UsageError, match=r"sizes.0: Input should be greater than 0"):
        over(given, sizes=[0])
    with pytest.raises(TypeError, match="CurveParams has no field epochs"):
        over(given, epochs=3)


    from evaluators.olmpics import mcqa, runs

    assert runs.ESIM == mcqa.ESIM   # the reserved model name, checked before any model module is imported
