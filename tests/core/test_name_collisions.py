"""Names that become folders, as a case-insensitive disk and Windows see them (issue #51, item 7): a device name
(``nul``, ``con``, ``com1``...) is refused by the one rule (probekit.names), and two names declared together that
differ only by case (variants ``original`` and ``Original``: one folder on macOS or Windows) are refused in one line
naming both."""

from __future__ import annotations

import json
import re

import pytest

from probekit.errors import DataError, ParamsError, UsageError
from probekit.names import check_name, why_invalid
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import TemplateError
from probes.main import main

from helpers import REPO, edited_probe

CASE = re.escape("differ only by case: on a case-insensitive disk (macOS, Windows) they are one folder")


@pytest.mark.parametrize("name", ["nul", "con", "CON", "Aux", "prn", "com1", "COM9", "lpt1", "Lpt9", "nul.txt",
                                  "con.tar.gz"])
def test_a_device_name_is_refused(name):
    assert "is a device name on Windows" in why_invalid(name)
    with pytest.raises(DataError, match=r"^f\.yaml: variants: .* is not a valid name: .* is a device name"):
        check_name(name, "f.yaml: variants", DataError)


@pytest.mark.parametrize("name", ["console", "null", "com", "com10", "lpt0", "auxiliary", "nul_x", "con-1"])
def test_a_name_that_only_starts_like_a_device_is_kept(name):
    assert why_invalid(name) is None


def _variant(name: str):
    return lambda text: text.replace("variants:", f"variants:\n  {json.dumps(name)}: {{template: paper, values: ages}}",
                                     1)


def test_a_variant_named_nul_stops_generate(tmp_path, monkeypatch, capsys):
    path = edited_probe(tmp_path, monkeypatch, _variant("nul"))
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"probes generate: error: {path}: variants: 'nul' is not a valid name: NUL is a device "
                          f"name") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_two_variants_that_differ_only_by_case_are_refused(tmp_path, monkeypatch, capsys):
    path = edited_probe(tmp_path, monkeypatch, _variant("Original"))
    with pytest.raises(TemplateError) as caught:
        load_probe_spec(path)
    assert re.match(rf"{path}: variants: 'Original' and 'original' {CASE}", str(caught.value))
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    assert re.search(rf"'Original' and 'original' {CASE}", capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_two_templates_that_differ_only_by_case_are_refused(tmp_path, monkeypatch):
    def edit(text: str) -> str:   # a copy of the first template, `paper`, as `Paper`
        first = text.index("  - id: paper")
        block = text[first:text.index("  - id: ", first + 1)]
        return text[:first] + block.replace("id: paper", "id: Paper", 1) + text[first:]
    path = edited_probe(tmp_path, monkeypatch, edit)
    with pytest.raises(TemplateError, match=rf"^{path}: templates: id: 'Paper' and 'paper' {CASE}"):
        load_probe_spec(path)


def _calum(tmp_path, edit: dict[str, tuple[str, str]]):
    from generators.calum.generator import load_spec

    for file in (REPO / "generators" / "calum").glob("*.yaml"):
        text = file.read_text(encoding="utf-8")
        if file.name in edit:
            old, new = edit[file.name]
            assert old in text
            text = text.replace(old, new, 1)
        (tmp_path / file.name).write_text(text, encoding="utf-8")
    return lambda: load_spec(tmp_path / "probe.yaml")


def test_calum_variants_or_tasks_that_differ_only_by_case_are_refused(tmp_path):
    (tmp_path / "v").mkdir()
    load = _calum(tmp_path / "v", {"probe.yaml": ("  original: {style: colon}\n",
                                                  "  original: {style: colon}\n  ORIGINAL: {style: colon}\n")})
    with pytest.raises(DataError, match=rf"^{tmp_path / 'v' / 'probe.yaml'}: variants: 'original' and 'ORIGINAL' "
                                        rf"{CASE}"):
        load()
    (tmp_path / "t").mkdir()
    load = _calum(tmp_path / "t", {"en.yaml": ("tasks:\n", "tasks:\n  RTE: {indicators: [a, b], labels: [x, y]}\n")})
    with pytest.raises(DataError, match=rf"^{tmp_path / 't' / 'en.yaml'}: tasks: 'RTE' and 'rte' {CASE}"):
        load()


def test_a_calum_task_twice_across_language_files_by_case_is_refused(tmp_path):
    load = _calum(tmp_path, {"ko.yaml": ("tasks:\n", "tasks:\n  Rte: {indicators: [a, b], labels: [x, y]}\n")})
    with pytest.raises(DataError, match=rf"^{tmp_path / 'ko.yaml'}: tasks \(with {tmp_path / 'en.yaml'}\): 'rte' and "
                                        rf"'Rte' {CASE}"):
        load()


def test_model_aliases_that_differ_only_by_case_or_name_a_device_are_refused(tmp_path):
    from probekit.params import read_params

    params = tmp_path / "params.yaml"
    params.write_text("models:\n  Bert: org/a\n  bert: org/b\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=rf"^{params}: models: 'Bert' and 'bert' {CASE}"):
        read_params(params).models()
    params.write_text("models:\n  MiniLM: org/a\n", encoding="utf-8")   # the built-in alias minilm
    with pytest.raises(ParamsError, match=rf"^{params}: models: 'minilm' and 'MiniLM' {CASE}"):
        read_params(params).models()
    params.write_text("models:\n  con: org/a\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=rf"^{params}: models\.con: CON is a device name"):
        read_params(params).models()
    params.write_text("models:\n  minilm: org/a\n  bert: org/b\n", encoding="utf-8")   # a built-in replaced: fine
    assert read_params(params).models()["minilm"] == "org/a"


def test_probes_new_refuses_a_device_name(tmp_path):
    from generators.shared.scaffold import _check_name

    with pytest.raises(UsageError, match=r"'aux': not a probe's name: AUX is a device name"):
        _check_name("aux", tmp_path, {}, {})
