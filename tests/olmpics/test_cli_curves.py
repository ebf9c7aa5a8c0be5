"""`probes evaluate features|curve|mcqa` and `probes olmpics-report`: from a probe folder to the paper's tables,
and the errors a user meets first."""

from __future__ import annotations

import json

import pytest

from probes.main import main

from helpers import write_toy_probe as write_probe


@pytest.mark.parametrize("flag, value", [("--sizes", "125,62"), ("--sizes", "0,5"), ("--seeds", "1,1"),
                                         ("--sizes", "a,b")])
def test_bad_sizes_and_seeds_are_usage_errors(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "curve", "--model", "m", "--data", "d", "--setting", "mlp", "--out", str(tmp_path),
              flag, value])
    assert exit_.value.code == 2 and flag in capsys.readouterr().err


def test_unknown_model_fails_before_any_work(tmp_path, capsys):
    probe = write_probe(tmp_path / "toy", 20, 10)
    code = main(["evaluate", "curve", "--model", str(tmp_path / "nothing"), "--data", str(probe), "--setting",
                 "mlp", "--sizes", "8", "--seeds", "1", "--out", str(tmp_path / "out")])
    assert code == 2 and "no model folder" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_features_curve_baseline_and_report_end_to_end(informative_bert, tmp_path, capsys):
    probe = write_probe(tmp_path / "toy", 80, 30)
    results, features = tmp_path / "results", tmp_path / "features"
    assert main(["evaluate", "features", "--model", str(informative_bert), "--data", str(probe), "--out",
                 str(features)]) == 0
    assert json.loads((features / "meta.json").read_text())["feature_shape"] == [32]
    for setting in ("mlp", "linear"):
        assert main(["evaluate", "curve", "--model", str(informative_bert), "--data", str(probe), "--setting", setting,
                     "--sizes", "8,16", "--seeds", "1,2", "--features", str(features),
                     "--out", str(results / "tiny" / "toy" / setting)]) == 0
    assert main(["evaluate", "curve", "--model", "mlm-baseline", "--data", str(probe), "--setting", "mlp",
                 "--sizes", "8,16", "--seeds", "1,2", "--out", str(results / "mlm-baseline" / "toy" / "mlp")]) == 0
    out = capsys.readouterr().out
    assert "WS" in out and "nolang sensitivity" in out
    baseline = json.loads((results / "mlm-baseline/toy/mlp/metrics.json").read_text())
    assert baseline["baseline"] == "MLM-BASELINE" and baseline["lm_head"] is None
    assert main(["olmpics-report", str(results), "--out", str(tmp_path / "olmpics.md"), "--metrics",
                 str(tmp_path / "olmpics.json"), "--plots", str(tmp_path / "curves")]) == 0
    report = (tmp_path / "olmpics.md").read_text()
    assert "MLM-BASELINE" in report and "toy" in report
    assert (tmp_path / "curves" / "toy.png").read_bytes()[:4] == b"\x89PNG"
    assert "toy" in json.loads((tmp_path / "olmpics.json").read_text())


def test_a_curve_grid_reports_through_the_olmpics_report(informative_bert, tmp_path, capsys):
    tiny_bert = informative_bert
    probe = write_probe(tmp_path / "toy", 40, 20)
    spec = tmp_path / "grid.yaml"
    spec.write_text(f"protocol: curve\nmodels: [{tiny_bert}, mlm-baseline]\ndata: [{probe}]\nsetting: [mlp, linear]\n"
                    f"sizes: '8,16'\nseeds: '1'\n")
    assert main(["grid", "--spec", str(spec), "--out", str(tmp_path / "store")]) == 0
    assert "4 cells: 4 run, 0 cached, 0 failed" in capsys.readouterr().out
    summary = json.loads((tmp_path / "store/report.json").read_text())["toy"]
    assert set(summary) == {str(tiny_bert), "MLM-BASELINE"} and set(summary["MLM-BASELINE"]) >= {"MLP", "LINEAR"}
    cell = next(c for c in (tmp_path / "store/cells").iterdir()
                if json.loads((c / "cell.json").read_text())["options"]["setting"] == "linear"
                and json.loads((c / "cell.json").read_text())["model"] == str(tiny_bert))
    assert summary[str(tiny_bert)]["LINEAR"]["WS"] == \
        round(json.loads((cell / "result/metrics.json").read_text())["WS"]["value"], 4)
    assert (tmp_path / "store/report_curves/toy.png").read_bytes()[:4] == b"\x89PNG"


def test_several_probes_in_one_call_are_written_where_out_says(tmp_path, capsys):
    """``--data A --data B --out .../{probe}/mlp``: one process (one GloVe load) for every probe, each result the
    bytes of its own call; without ``{probe}`` several --data are refused before any work."""
    probes = [write_probe(tmp_path / name, 40, 20) for name in ("toy_a", "toy_b")]
    common = ["evaluate", "curve", "--model", "mlm-baseline", "--setting", "mlp", "--sizes", "8", "--seeds", "1"]
    data = [arg for p in probes for arg in ("--data", str(p))]
    assert main([*common, *data, "--out", str(tmp_path / "together/{probe}/mlp")]) == 0
    for probe in probes:
        assert main([*common, "--data", str(probe), "--out", str(tmp_path / "alone" / probe.name)]) == 0
        together = tmp_path / "together" / probe.name / "mlp"
        assert {p.name: p.read_bytes() for p in together.rglob("*") if p.is_file()} == \
            {p.name: p.read_bytes() for p in (tmp_path / "alone" / probe.name).rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main([*common, *data, "--out", str(tmp_path / "nowhere")]) == 2
    assert "{probe}" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()
    assert main(["evaluate", "mcqa", "--model", "esim", *data, "--sizes", "8", "--seeds", "1",
                 "--out", str(tmp_path / "nowhere")]) == 2


def test_a_causal_lm_is_skipped_by_the_curves_and_mcqa_and_the_report_says_so(informative_bert, tiny_gpt2,
                                                                             tmp_path, capsys):
    """MC-MLM curves and MC-QA need a masked LM: a causal one writes each output folder with a skipped
    metrics.json (the features folders too), says so in one line and exits 0; the report lists it."""
    probe = write_probe(tmp_path / "toy", 40, 20)
    params = tmp_path / "params.yaml"
    params.write_text(f"models: {{gpt: {tiny_gpt2}}}\n")
    results = tmp_path / "results"
    assert main(["evaluate", "curve", "--model", "gpt", "--data", str(probe), "--setting", "mlp", "--setting",
                 "linear", "--features", str(tmp_path / "features" / "{probe}"), "--params", str(params),
                 "--device", "cpu", "--out", str(results / "gpt" / "{probe}")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("skipped curve for gpt: MC-MLM learning curves: for a masked "
                                                   "LM only; gpt is a causal LM")
    for folder in (results / "gpt/toy/mlp", results / "gpt/toy/linear", tmp_path / "features/toy"):
        m = json.loads((folder / "metrics.json").read_text())
        assert m["skipped"].startswith("MC-MLM learning curves") and (m["model"], m["family"], m["protocol"]) == \
            ("gpt", "causal", "curve")
    assert main(["evaluate", "mcqa", "--model", "gpt", "--data", str(probe), "--params", str(params),
                 "--out", str(results / "gpt" / "toy" / "mcqa")]) == 0
    assert "skipped mcqa for gpt: MC-QA learning curves" in capsys.readouterr().out
    m = json.loads((results / "gpt/toy/mcqa/metrics.json").read_text())
    assert m["protocol"] == "mcqa" and m["family"] == "causal" and m["device"] in ("cpu", "cuda")
    assert main(["evaluate", "curve", "--model", str(informative_bert), "--data", str(probe), "--setting", "mlp",
                 "--sizes", "8", "--seeds", "1", "--device", "cpu", "--out", str(results / "tiny" / "toy" / "mlp")]) == 0
    assert json.loads((results / "tiny/toy/mlp/metrics.json").read_text())["device"] == "cpu"
    assert main(["olmpics-report", str(results), "--out", str(tmp_path / "olmpics.md")]) == 0
    report = (tmp_path / "olmpics.md").read_text()
    assert "## Skipped" in report and "- gpt: curve skipped (MC-MLM learning curves: for a masked LM only" in report
    assert "- gpt: mcqa skipped (MC-QA learning curves" in report and "toy" in report
