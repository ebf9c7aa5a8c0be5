"""A grid spec is checked before any cell runs (``probes grid``, also ``--dry-run``): a key that is not an option of
the protocol's command, a value its option refuses, a missing required option, a value listed twice on one axis, a
key given twice. Each is one line naming the spec file and the key; no cell runs and the store is never made."""

from __future__ import annotations

import re

import pytest
import yaml

from evaluators.grid import executors
from probes.main import main


@pytest.fixture
def no_cell_runs(monkeypatch):
    """Fails the test if any executor is asked to run a cell."""
    def refuse(*args, **kwargs):
        raise AssertionError("a cell was run")

    monkeypatch.setattr(executors, "run_local", refuse)
    monkeypatch.setattr(executors, "run_ray", refuse)


def _refused(tmp_path, capsys, text: str, *, dry_run: bool = False) -> str:
    """``probes grid`` on a spec of ``text``: exit 1, one line on stderr (returned), nothing on stdout, no store."""
    spec, store = tmp_path / "grid.yaml", tmp_path / "store"
    spec.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["grid", "--spec", str(spec), "--out", str(store), *(["--dry-run"] if dry_run else [])]) == 1
    out, err = capsys.readouterr()
    assert not store.exists() and out == ""
    assert err.count("\n") == 1 and err.startswith(f"probes grid: error: {spec}: "), err
    return err.strip()


BASE = "protocol: zeroshot\nmodels: [m]\ndata: [d]\n"


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("body, message", [
    ("limt: 3", r"limt: not an option of probes evaluate zeroshot \(closest: limit\b"),
    ("colour: red", r"colour: not an option of probes evaluate zeroshot \(it takes batch_size, device, dtype, limit"),
    ("help: true", r"help: not an option of probes evaluate zeroshot"),
    ("out: elsewhere", r"out: set by the grid, not a spec: each cell writes its own folder in the store"),
    ("rule: [pll, bogus]", r"rule: invalid choice: 'bogus' \(choose from 'mask-logit', 'pll'"),
    ("limit: [5, 0]", r"limit: Input should be greater than 0; got '0'$"),
    ("limit: true", r"limit: true: --limit takes a value, not true or false$"),
], ids=["typo", "unknown", "help", "grid's-own", "choice", "type", "bool-for-value"])
def test_an_option_the_command_refuses_fails_before_any_cell_runs(tmp_path, capsys, no_cell_runs, body, message,
                                                                  dry_run):
    line = _refused(tmp_path, capsys, BASE + body, dry_run=dry_run)
    assert re.search(message, line), line


@pytest.mark.parametrize("text, message", [
    ("protocol: pararel\nmodels: [m]\ndata: [d]\na_an_filter: 1", r"a_an_filter: 1: --a-an-filter is a switch: give "
                                                                  r"true or false$"),
    ("protocol: calum\nmodels: [m]\ndata: [d]\nseeds: [1, 2]", r"probes evaluate calum needs --task: add task to the "
                                                               r"spec$"),
    ("protocol: zeroshot\nmodels: ['-m']\ndata: [d]", r"models: expected one argument \(the spec gives '-m'\)$"),
], ids=["number-for-switch", "required", "model"])
def test_switches_required_options_and_the_model_are_checked_by_the_protocols_parser(tmp_path, capsys, no_cell_runs,
                                                                                     text, message):
    line = _refused(tmp_path, capsys, text)
    assert re.search(message, line), line


@pytest.mark.parametrize("body, message", [
    ("seed: [1, 1]", "seed: 1 is listed twice; an axis lists each value once (the same cell would run twice)"),
    ("seed: [1, '1']", "seed: '1' is listed twice (first as 1)"),
    ("a_an_filter: [true, true]", "a_an_filter: true is listed twice"),
], ids=["int", "int-and-string", "bool"])
def test_a_value_listed_twice_on_an_option_axis_fails_before_any_cell_runs(tmp_path, capsys, no_cell_runs, body,
                                                                           message):
    line = _refused(tmp_path, capsys, "protocol: pararel\nmodels: [m]\ndata: [d]\n" + body, dry_run=True)
    assert message in line, line


@pytest.mark.parametrize("axes, message", [
    ("models: [a, b, a]\ndata: [d]", "models: 'a' is listed twice"),
    ("models: [a]\ndata: [x, y, x]", "data: 'x' is listed twice"),
], ids=["models", "data"])
def test_a_model_or_data_folder_listed_twice_fails_before_any_cell_runs(tmp_path, capsys, no_cell_runs, axes,
                                                                        message):
    line = _refused(tmp_path, capsys, "protocol: zeroshot\n" + axes)
    assert message in line, line


def test_a_key_given_twice_is_invalid_yaml_naming_both_lines(tmp_path, capsys, no_cell_runs):
    line = _refused(tmp_path, capsys, BASE + "seed: 1\nseed: 2\n")
    assert "not valid YAML: line 5, column 1: key 'seed' is given twice in one mapping (first on line 4)" in line


def test_a_valid_spec_of_each_protocol_passes_the_checks(tmp_path, capsys, tiny_bert):
    specs = {
        "zeroshot": {"limit": [3, 6], "rule": "pll", "dtype": "float32", "seed": None},
        "curve": {"setting": ["mlp", "linear"], "sizes": "10,20", "seeds": "1,2"},
        "mcqa": {"sizes": "10", "seeds": "1"},
        "pararel": {"a_an_filter": [True, False], "top_k": 5, "relations": "P19,P36"},
        "calum": {"task": "rte", "seeds": [1, 2], "limit": 10},
    }
    for protocol, options in specs.items():
        spec = tmp_path / f"{protocol}.yaml"
        spec.write_text(yaml.safe_dump({"protocol": protocol, "models": [str(tiny_bert)], "data": ["d"], **options}))
        capsys.readouterr()
        assert main(["grid", "--spec", str(spec), "--out", str(tmp_path / protocol), "--dry-run"]) == 0, \
            capsys.readouterr().err
        assert "cells: 0 cached" in capsys.readouterr().out
