"""Values as typed (issue #51, item 7): YAML 1.1's ``yes``/``no``/``on``/``off`` are the words they spell (YAML 1.2,
as DVC reads ``params.yaml``), and a boolean where a number belongs is refused in one line naming the file and the
key, in every typed model of a user's file (:class:`probekit.typed.Typed`), where pydantic's lax mode read
``seed: true`` as 1."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from generators.shared import registry as generators
from probekit import yamlfile
from probekit.errors import ParamsError
from probekit.params import ParamsFile, probe_section, read_params, section
from probekit.probes.spec import load_probe_spec
from probes.main import main

from helpers import REPO

BOOL = "a boolean where a number belongs"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("word", ["yes", "No", "ON", "off", "On", "NO"])
def test_yaml_1_1_words_are_the_words_as_dvc_reads_them(word):
    assert yamlfile.loads(f"a: {word}\nb: [{word}]\n") == {"a": word, "b": [word]}
    assert yamlfile.loads("a: true\nb: False\nc: TRUE\n") == {"a": True, "b": False, "c": True}


def test_limit_on_is_refused_where_a_number_belongs(tmp_path):
    """``limit: on`` was 1: a one-row evaluation, exit 0."""
    from evaluators.shared.params import ZeroshotParams

    params = write(tmp_path / "params.yaml", "zeroshot:\n  limit: on\n")
    with pytest.raises(ParamsError) as caught:
        section(read_params(params), "zeroshot", ZeroshotParams)
    assert re.fullmatch(rf"{params}: zeroshot\.limit: .*, got 'on'", str(caught.value))


@pytest.mark.parametrize("text, key", [("scoring:\n  seed: true\n", "scoring.seed"),
                                       ("scoring:\n  batch_size: true\n", "scoring.batch_size"),
                                       ("zeroshot:\n  limit: false\n", "zeroshot.limit"),
                                       ("curve:\n  training:\n    lr: true\n", "curve.training.lr")])
def test_a_boolean_where_a_number_belongs_is_refused_naming_the_file_and_key(tmp_path, text, key):
    from evaluators.shared.params import CurveParams, ScoringParams, ZeroshotParams

    models = {"scoring": ScoringParams, "zeroshot": ZeroshotParams, "curve": CurveParams}
    params = write(tmp_path / "params.yaml", text)
    name = text.split(":")[0]
    with pytest.raises(ParamsError) as caught:
        section(read_params(params), name, models[name])
    assert str(caught.value) == f"{params}: {key}: {BOOL} (YAML reads true and false as booleans: write the number " \
                                f"itself), got {text.split()[-1].capitalize()}"


def test_a_boolean_seed_in_a_probe_section_stops_generate(tmp_path, capsys):
    params = write(tmp_path / "p.yaml", "age_comparison:\n  seed: true\n  size: {train: 4, dev: 2}\n")
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"probes generate: error: {params}: age_comparison.seed: {BOOL}") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_boolean_in_a_probe_yamls_own_params_is_refused_naming_the_yaml(tmp_path):
    text = generators.get("age_comparison").template_path.read_text(encoding="utf-8")
    path = write(tmp_path / "age_comparison.yaml", text.replace("  size: {train: 4000, dev: 500}",
                                                                "  size: {train: yes, dev: 500}", 1))
    spec = load_probe_spec(path)
    model = generators.get("age_comparison").params
    with pytest.raises(ParamsError, match=rf"^{path} \(params\): age_comparison\.size\.train: .*got 'yes'"):
        probe_section(ParamsFile(None), spec, model)


def test_a_boolean_in_a_whole_dataset_generators_yaml_is_refused(tmp_path):
    """CALUM's language files are typed models too (:func:`probekit.probes.schema.validation_line` words the error):
    ``inference_order: [2, on]`` was read as ``(2, 1)``."""
    import shutil

    from generators.calum.generator import load_spec
    from probekit.errors import DataError

    folder = REPO / "generators" / "calum"
    for file in folder.glob("*.yaml"):
        shutil.copy(file, tmp_path / file.name)
    en = tmp_path / "en.yaml"
    en.write_text(en.read_text(encoding="utf-8").replace("inference_order: [2, 1]", "inference_order: [2, true]"),
                  encoding="utf-8")
    assert load_spec(folder / "probe.yaml").languages["en"].tasks["mnli"].inference_order == (2, 1)
    with pytest.raises(DataError, match=rf"^{en}: tasks\.mnli\.inference_order\.1: {BOOL}"):
        load_spec(tmp_path / "probe.yaml")


def test_the_command_line_still_takes_a_number_as_text():
    """``--seed 3`` is parsed through the same field: text is not a boolean."""
    from evaluators.shared.params import ScoringParams, ZeroshotParams
    from probes.options import FieldValue

    assert FieldValue(ScoringParams.model_fields["seed"], "--seed")("3") == 3
    assert FieldValue(ScoringParams.model_fields["batch_size"], "--batch-size")("auto") == "auto"
    assert FieldValue(ZeroshotParams.model_fields["limit"], "--limit")("5") == 5
    assert ScoringParams(seed="3", batch_size="4").seed == 3   # a number quoted in YAML stays what lax mode takes


def test_a_field_that_takes_a_boolean_keeps_it():
    from probekit.typed import Typed

    class Either(Typed):
        x: bool | int = 0
        y: bool = False
        z: list[float] = []

    assert Either(x=True, y=True, z=[1, 2.5]).model_dump() == {"x": True, "y": True, "z": [1.0, 2.5]}
    with pytest.raises(Exception, match=rf"z\.1\n  {BOOL}"):
        Either(z=[1.0, True])


def test_every_model_of_a_users_file_is_typed():
    """A new ``class X(BaseModel)`` in the library would take ``true`` for 1 again: every model derives from Typed."""
    files = subprocess.run(["git", "ls-files", "probekit", "evaluators", "generators", "probes"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    plain = [f"{name}: {line.strip()}" for name in files if name.endswith(".py") and name != "probekit/typed.py"
             for line in (REPO / name).read_text(encoding="utf-8").splitlines()
             if re.match(r"\s*class \w+\(.*\bBaseModel\b", line)]
    assert plain == []
