"""Every YAML file probekit reads goes through one loader (``probekit.yamlfile``): a key given twice in a mapping is
an error naming the file and both lines, where plain YAML kept the last one; and a params file's top-level sections
are those something reads (``probekit.params.SECTIONS``, a probe's, or those its ``owned_by`` declares)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from generators.shared import registry as generators
from probekit import yamlfile
from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile, read_params, section
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import TemplateError
from probekit.sources.manifest import ManifestError, load_manifest, resolve_mirror
from probes.main import main

from helpers import REPO, alias_bomb

TWICE = "is given twice in one mapping"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, start: str, nth: int = 0) -> int:
    """The 1-based line of the ``nth`` line of ``text`` that starts with ``start``."""
    return [i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start)][nth]


# --- a key given twice -----------------------------------------------------------------------------------------


def _age_with_original_twice(tmp_path: Path) -> tuple[Path, str]:
    again = "  original: {template: birth_year, values: years}\n"   # the birth-year phrasing, as `original`
    text = generators.get("age_comparison").template_path.read_text(encoding="utf-8").replace(
        "  nolang: {control: nolang", again + "  nolang: {control: nolang", 1)
    return write(tmp_path / "age_comparison.yaml", text), text


def test_a_variant_given_twice_in_a_probe_yaml_is_refused_with_both_lines(tmp_path, monkeypatch, capsys):
    """The second ``original:`` redefined the first (birth-year phrasing) and the controls were rebuilt from it."""
    path, text = _age_with_original_twice(tmp_path)
    first, again = line_of(text, "  original:"), line_of(text, "  original:", 1)
    with pytest.raises(TemplateError) as caught:
        load_probe_spec(path)
    assert str(caught.value).startswith(f"{path}: not valid YAML: line {again}, column 3: key 'original' {TWICE} "
                                        f"(first on line {first})")
    monkeypatch.setattr(type(generators.get("age_comparison")), "template_path", property(lambda self: path))
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"probes generate: error: {path}: not valid YAML: line {again}, column 3: key 'original' "
                          f"{TWICE} (first on line {first})") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_section_given_twice_in_a_params_file_is_refused_by_the_command(tmp_path, capsys):
    """The second ``age_comparison:`` replaced the first wholesale."""
    params = write(tmp_path / "p.yaml", "age_comparison:\n  size: {train: 4, dev: 2}\nzeroshot: {split: dev}\n"
                                        "age_comparison:\n  seed: 3\n")
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        f"probes generate: error: {params}: not valid YAML: line 4, column 1: key 'age_comparison' {TWICE} (first on "
        f"line 1); YAML would keep only the last one, so remove or rename one of them\n")
    assert not (tmp_path / "o").exists()


def test_a_key_given_twice_in_a_params_section_is_refused(tmp_path):
    params = write(tmp_path / "p.yaml", "zeroshot:\n  split: dev\n  seed: 1\n  split: train\n")
    with pytest.raises(ParamsError, match=rf"^{params}: not valid YAML: line 4, column 3: key 'split' {TWICE} "
                                          rf"\(first on line 2\)"):
        read_params(params)


def test_a_project_params_file_with_a_key_twice_stops_probes_run(tmp_path, capsys):
    import subprocess

    root = tmp_path / "project"
    write(root / "dvc.yaml", "stages: {}\n")
    params = write(root / "params.yaml", "models: {a: x}\nmodels: {b: y}\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"], cwd=root, check=True)
    assert main(["run", "--project", str(root), "--dry-run", "--model", "org/m"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"probes run: error: {params}: not valid YAML: line 2, column 1: key 'models' {TWICE}")


def test_a_source_given_twice_in_a_manifest_or_its_local_file_is_refused(tmp_path):
    entry = ("  description: d\n  homepage: h\n  license: l\n  citation: c\n"
             "  files:\n    - {path: a.jsonl, url: 'http://x/a.jsonl', sha256: unconfirmed}\n")
    manifest = write(tmp_path / "sources.yaml", "toy:\n" + entry + "toy:\n" + entry)
    with pytest.raises(ManifestError, match=rf"^{manifest}: cannot read manifest: line 8, column 1: key 'toy' {TWICE} "
                                            rf"\(first on line 1\)"):
        load_manifest(manifest)
    local = write(tmp_path / "sources.local.yaml", "mirror: /a\nmirror: /b\n")
    with pytest.raises(ManifestError, match=rf"^{local}: cannot read: line 2, column 1: key 'mirror' {TWICE}"):
        resolve_mirror(None, manifest)


def test_a_key_given_twice_in_a_published_table_is_refused(tmp_path, monkeypatch):
    from evaluators.calum import results as calum_results
    from evaluators.pararel import report as pararel_report

    table = write(tmp_path / "published.yaml", "models:\n  bert-base-cased: {x: 1}\n  bert-base-cased: {x: 2}\n")
    monkeypatch.setattr(calum_results, "PUBLISHED", table)
    with pytest.raises(DataError, match=rf"^{table}: not valid YAML: line 3, column 3: key 'bert-base-cased' {TWICE}"):
        calum_results.load_published()
    monkeypatch.setattr(pararel_report, "PUBLISHED", table)
    with pytest.raises(DataError, match=rf"^{table}: not valid YAML: line 3, column 3: key 'bert-base-cased' {TWICE}"):
        pararel_report.render({})


def test_a_key_given_twice_in_a_generator_spec_is_refused(tmp_path):
    from generators.calum import generator as calum
    from generators.pararel import generator as pararel

    spec = write(tmp_path / "pararel.yaml", (generators.HERE / "pararel" / "probe.yaml").read_text(encoding="utf-8")
                 + "probe: again\n")
    with pytest.raises(DataError, match=rf"^{spec}: not valid YAML: line \d+, column 1: key 'probe' {TWICE}"):
        pararel.load_spec(spec)
    write(tmp_path / "calum" / "en.yaml", "tasks: {}\ntasks: {}\n")
    with pytest.raises(DataError, match=rf"^{tmp_path / 'calum' / 'en.yaml'}: not YAML \(line 2, column 1: key "
                                        rf"'tasks' {TWICE}"):
        calum.load_spec(tmp_path / "calum" / "probe.yaml")


def test_a_merged_key_may_be_overridden_also_where_that_mapping_is_merged_again(tmp_path):
    """YAML's merge keys stay usable: an explicit key overrides a merged one (no error), and a mapping that merges
    the overriding one gets the override (PyYAML 6.0 alone brings in the merged-over value)."""
    params = write(tmp_path / "p.yaml", "zeroshot: &base {split: dev, seed: 1}\n"
                                        "curve: &mine {<<: *base, split: train}\n"
                                        "mcqa: {<<: *mine}\n")
    data = read_params(params).data
    assert data["curve"] == {"split": "train", "seed": 1}
    assert data["mcqa"] == {"split": "train", "seed": 1}
    chained = yamlfile.loads("b: &b {x: 1, y: 0}\nd: &d {<<: *b, x: 2}\ne: {<<: *d, z: 3}\nf: {<<: [*d, *b]}\n")
    assert chained == {"b": {"x": 1, "y": 0}, "d": {"x": 2, "y": 0}, "e": {"x": 2, "y": 0, "z": 3},
                       "f": {"x": 2, "y": 0}}
    assert list(chained["d"]) == ["x", "y"]   # the keys in their first places


def test_an_alias_bomb_still_loads_at_once_and_a_key_twice_beside_it_is_quoted_short(tmp_path):
    start = time.perf_counter()
    assert len(yamlfile.loads(alias_bomb())["a7"]) == 9
    params = write(tmp_path / "p.yaml", alias_bomb() + "zeroshot: {seed: *a7}\nzeroshot: {seed: *a7}\n")
    with pytest.raises(ParamsError) as caught:
        read_params(params)
    assert time.perf_counter() - start < 5
    message = str(caught.value)
    assert message.startswith(f"{params}: not valid YAML: line 10, column 1: key 'zeroshot' {TWICE} (first on line 9)")
    assert "\n" not in message and len(message) < 300


# --- which top-level params sections there may be -------------------------------------------------------------


def test_a_misspelt_section_is_refused_with_the_closest_known_one(tmp_path, capsys):
    """``zeroshoot:`` ran on the defaults."""
    params = write(tmp_path / "p.yaml", "zeroshoot:\n  split: train\n")
    with pytest.raises(ParamsError) as caught:
        read_params(params)
    assert str(caught.value).startswith(f"{params}: zeroshoot: unknown section (did you mean zeroshot?); probekit "
                                        f"reads profile, models, runs, tables, probes, scoring, zeroshot, curve,")
    (tmp_path / "d").mkdir()   # the data read, and the output beside it (never inside it: the gate refuses that)
    assert main(["evaluate", "zeroshot", "--model", "m", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "o"),
                 "--params", str(params)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"probes evaluate: error: {params}: zeroshoot: unknown section (did you mean zeroshot?)")
    assert err.count("\n") == 1 and len(err) < 600


@pytest.mark.parametrize("name, near", [("pararel_evl", "pararel_eval"), ("calum_evals", "calum_eval"),
                                        ("age_comparisn", "age_comparison"), ("device", None)])
def test_an_unknown_section_is_refused_even_where_it_looks_like_a_probes(name, near, tmp_path):
    """``pararel_evl`` would pass as a second dataset of pararel; it is ``pararel_eval`` misspelt."""
    params = write(tmp_path / "p.yaml", f"{name}: {{}}\n")
    hint = f" (did you mean {near}?)" if near else ";"
    with pytest.raises(ParamsError, match="^" + re.escape(f"{params}: {name}: unknown section{hint}")):
        read_params(params)


def test_a_section_another_tool_reads_is_accepted_once_declared(tmp_path):
    text = "device: cpu\ncalum_tasks: [rte]\nzeroshot: {split: dev}\n"
    with pytest.raises(ParamsError, match=r": device: unknown section"):
        read_params(write(tmp_path / "p.yaml", text))
    declared = read_params(write(tmp_path / "p.yaml", "owned_by: {dvc.yaml: [device, calum_tasks]}\n" + text))
    assert declared.data["device"] == "cpu" and declared.data["calum_tasks"] == ["rte"]
    with pytest.raises(ParamsError, match=r": owned_by: must map each tool to the sections it reads"):
        read_params(write(tmp_path / "p.yaml", "owned_by: [device]\n" + text))


def test_a_second_dataset_of_a_probe_is_its_name_and_a_suffix(tmp_path, capsys):
    """``probes generate PROBE --section PROBE_<suffix>``; any other section is not one of PROBE's datasets."""
    params = write(tmp_path / "p.yaml", "age_comparison_grid: {mode: grid}\ntaxonomy_conjunction_small: {}\n"
                                        "owned_by: {dvc.yaml: [device]}\ndevice: {mode: grid}\n")
    assert set(read_params(params).data) == {"age_comparison_grid", "taxonomy_conjunction_small", "owned_by", "device"}
    assert main(["generate", "age_comparison", "--section", "device", "--params", str(params),
                 "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == ("probes generate: error: --section device: not a section of age_comparison (a "
                                       "second dataset of a probe is read from a section named after it: "
                                       "age_comparison_<suffix>)\n")
    with pytest.raises(ParamsError, match=r": age_comparisonx: unknown section \(did you mean age_comparison\?\)"):
        read_params(write(tmp_path / "q.yaml", "age_comparisonx: {}\n"))


def test_a_section_probekit_reads_must_be_registered():
    """``section()`` reads only names of ``SECTIONS`` (or a probe's): what read_params accepts cannot drift."""
    from evaluators.shared.params import ZeroshotParams

    assert section(ParamsFile(None), "zeroshot", ZeroshotParams).split == "dev"
    with pytest.raises(ValueError, match=r"params section 'zeroshoot' is read but not in probekit.params.SECTIONS"):
        section(ParamsFile(None), "zeroshoot", ZeroshotParams)


def test_every_yaml_file_of_the_repository_loads():
    """No file shipped here gives a key twice (conf/ is Hydra's, which refuses that too), and the params files of both
    profiles have only sections something reads."""
    import subprocess

    files = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        if not name.startswith(("data/", "results/")):
            yamlfile.load(REPO / name)
    assert read_params(REPO / "params.yaml").data["owned_by"]["dvc.yaml"]


def test_a_process_that_never_imported_generators_knows_the_probe_sections(tmp_path):
    """``probes evaluate`` never imports generators (nor does the harness model type used from Python): the probe
    sections come from the probe folders, so an undeclared ``device:`` is refused there too, as a misspelt known
    section is, and a probe's section (or its second dataset's) is taken."""
    import subprocess
    import sys

    assert set(read_params(write(tmp_path / "p.yaml", "age_comparison: {}\nage_comparison_grid: {}\n")).data) == {
        "age_comparison", "age_comparison_grid"}
    for name, hint in (("device", ";"), ("zeroshoot", " (did you mean zeroshot?)")):
        with pytest.raises(ParamsError, match=re.escape(f"q.yaml: {name}: unknown section{hint}")):
            read_params(write(tmp_path / "q.yaml", f"{name}: cpu\n"))
    params = write(tmp_path / "d.yaml", "device: cpu\n")
    (tmp_path / "data").mkdir()   # the data read, and the output beside it (never inside it: the gate refuses that)
    done = subprocess.run([sys.executable, "-c", "import sys; from probes.main import main; code = main(sys.argv[1:]); "
                           "assert 'generators' not in sys.modules; sys.exit(code)", "evaluate", "zeroshot",
                           "--model", "m", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "o"), "--params",
                           str(params)], capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stderr[:len(f"probes evaluate: error: {params}: device: unknown section;")]) == (
        1, f"probes evaluate: error: {params}: device: unknown section;")
