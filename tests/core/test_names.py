"""Names that become folders or Hub config names (probes, variants, template ids, CALUM's tasks and variants,
ParaRel's relations) follow one rule (probekit.names), checked where they are declared: a variant
``../../always_never/original`` no longer writes over another probe's dataset, and a variant ``a/b`` no longer
passes `probes generate`, `probes export lm-eval` and `probes publish --dry-run` into a repo `datasets` cannot load."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from probekit.errors import DataError
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import TemplateError
from probes.main import main

from helpers import edited_probe, small_age_comparison


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400, err
    return err


def _variant(name: str):
    """The age probe's YAML with one more base variant, ``name``."""
    return lambda text: text.replace("variants:", f"variants:\n  {json.dumps(name)}: {{template: paper, values: ages}}",
                                     1)


@pytest.mark.parametrize("name, why", [
    ("original", None), ("P17", None), ("klue_nli", None), ("nolang-grid", None), ("2020", None),
    ("a/b", "'/' is not allowed"), ("a\\b", "'\\\\' is not allowed"), ("..", "'.' is not allowed"),
    (".hidden", "'.' is not allowed"), ("v1.1", "'.' is not allowed"), ("a b", "' ' is not allowed"),
    ("a:b", "':' is not allowed"), ("gr\u00f6\u00dfe", "'\u00f6' is not allowed"), ("_x", "must start with a letter or digit"),
    ("-x", "must start with a letter or digit"), ("", "it is empty"), ("x" * 65, "65 characters long, the most is 64"),
])
def test_one_rule_for_every_name(name, why):
    from probekit.names import check_name, why_invalid

    got = why_invalid(name)
    assert got is None if why is None else why in got
    if why is not None:
        with pytest.raises(DataError, match=rf"^f.yaml: variants: .* is not a valid name: .*{re.escape(why)}"):
            check_name(name, "f.yaml: variants", DataError)


def test_a_variant_out_of_the_probe_folder_writes_nothing_of_another_probe(tmp_path, monkeypatch, capsys):
    """Finding: `../../always_never/original` in the age probe's YAML wrote the age rows over ALWAYS-NEVER's dataset
    beside it, with exit 0."""
    theirs = tmp_path / "data/probes/always_never/original/train.jsonl"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("always_never's own rows\n")
    path = edited_probe(tmp_path, monkeypatch, _variant("../../always_never/original"))
    params = tmp_path / "p.yaml"
    params.write_text("age_comparison:\n  size: {train: 4, dev: 2}\n")
    out = tmp_path / "data/probes/age_comparison"
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(out)]) == 1
    assert _one_line(capsys).startswith(f"probes generate: error: {path}: variants: '../../always_never/original' "
                                        f"is not a valid name: '.' is not allowed")
    assert theirs.read_text() == "always_never's own rows\n" and not out.exists()
    assert sorted(p.name for p in theirs.parent.iterdir()) == ["train.jsonl"]


def test_a_variant_with_a_slash_is_refused_where_it_is_declared(tmp_path, monkeypatch, capsys):
    """Finding: a variant `a/b` passed `probes generate` (a folder a/ holding b/) and made the Hub config
    `age_comparison-a/b`."""
    path = edited_probe(tmp_path, monkeypatch, _variant("a/b"))
    with pytest.raises(TemplateError, match=rf"^{re.escape(str(path))}: variants: 'a/b' is not a valid name: '/' is "
                                            rf"not allowed"):
        load_probe_spec(path)
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    assert "variants: 'a/b' is not a valid name" in _one_line(capsys)
    assert not (tmp_path / "o").exists()


def test_export_and_publish_refuse_a_config_name_the_hub_cannot_load(tmp_path, capsys):
    """Finding: a dataset folder whose variant is `a/b` (written by hand, or by a probekit before this check)
    passed `probes export lm-eval` and `probes publish --dry-run`, and the published repo then failed
    `datasets.load_dataset` for every config ("Bad characters ... found in 'age_comparison-a/b'")."""
    data = tmp_path / "data"
    small_age_comparison(data / "probes/age_comparison", variants=["original"])
    folder = data / "probes/age_comparison/a_b"
    shutil.copytree(data / "probes/age_comparison/original", folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "variant": "a/b"}))
    capsys.readouterr()
    line = (f"{folder / 'meta.json'}: the Hub config name it makes: 'age_comparison-a/b' is not a valid name: "
            f"'/' is not allowed")
    assert main(["export", "lm-eval", "--data", str(data), "--out", str(tmp_path / "lm")]) == 1
    assert line in _one_line(capsys)
    assert main(["publish", "--dry-run", str(tmp_path / "dry"), "--data", str(data)]) == 1
    assert line in _one_line(capsys)
    assert not (tmp_path / "lm").exists() and not (tmp_path / "dry").exists()


def test_template_ids_and_the_probe_name_are_names(tmp_path, monkeypatch, capsys):
    path = edited_probe(tmp_path, monkeypatch, lambda text: text.replace("  - id: birth_year ", "  - id: birth/year ")
                        .replace("{template: birth_year,", "{template: birth/year,"))
    with pytest.raises(TemplateError, match=rf"^{re.escape(str(path))}: templates: id: 'birth/year' is not a valid "
                                            rf"name"):
        load_probe_spec(path)
    path.write_text(path.read_text().replace("birth/year", "birth_year").replace("probe: age_comparison",
                                                                                "probe: ../age"))
    with pytest.raises(TemplateError, match=rf"^{re.escape(str(path))}: probe: '../age' is not a valid name"):
        load_probe_spec(path)
    path.write_text(path.read_text().replace("probe: ../age", "probe: age_comparison2"))
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    assert (f"{path}: probe: 'age_comparison2' must be the name of its folder, age_comparison"
            in _one_line(capsys))


def test_calum_tasks_and_variants_and_pararel_relations_are_names(tmp_path):
    from generators.calum import generator as calum
    from generators.pararel import generator as pararel

    (tmp_path / "probe.yaml").write_text((calum.HERE / "probe.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "fr.yaml").write_text("benchmark: FLUE\ntables: flue\ntasks:\n  ../xnli: {indicators: [A, B], "
                                      "labels: [x, y]}\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(tmp_path / 'fr.yaml'))}: tasks: '../xnli' is not a valid "
                                        rf"name: '.' is not allowed"):
        calum.load_spec(tmp_path / "probe.yaml")
    (tmp_path / "fr.yaml").write_text("benchmark: FLUE\ntables: flue\ntasks:\n  xnli: {indicators: [A, B], "
                                      "labels: [x, y]}\n", encoding="utf-8")
    text = (tmp_path / "probe.yaml").read_text(encoding="utf-8")
    (tmp_path / "probe.yaml").write_text(text.replace("  reverse: {control", "  re/verse: {control"), encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(tmp_path / 'probe.yaml'))}: variants: 're/verse' is not a "
                                        rf"valid name"):
        calum.load_spec(tmp_path / "probe.yaml")
    spec = tmp_path / "pararel.yaml"
    spec.write_text((pararel.HERE / "probe.yaml").read_text(encoding="utf-8").replace("[P1303,", "[P 1303,"),
                    encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(spec))}: classes.N-M.0: 'P 1303' is not a valid name"):
        pararel.load_spec(spec)


def test_a_probe_folder_is_a_name(monkeypatch):
    from generators.shared import registry
    from probekit.errors import UsageError

    monkeypatch.setattr(registry, "available", lambda: ["my probe"])
    with pytest.raises(UsageError, match=r"generators/my probe: the probe's folder name: 'my probe' is not a valid "
                                         r"name: ' ' is not allowed"):
        registry.get("my probe")
