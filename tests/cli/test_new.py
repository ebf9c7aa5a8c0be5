"""`probes new NAME --from PROBE` on a small copy of the project (its conf/ and a few probe folders): the folder it
makes, the params edit (comments kept, nothing else changed), its refusals, and that a failure leaves nothing.
The page that uses it, run whole in a copy of the project: tests/test_adding_a_probe.py."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
import yaml

from generators.shared import conf_text, scaffold
from probekit.errors import ParamsError
from probes.main import main

REPO = Path(__file__).resolve().parents[2]
PROBES = ("age_comparison", "taxonomy_conjunction", "property_conjunction", "pararel", "calum")


def _compose(root: Path, *overrides: str) -> None:
    from dvc.utils.hydra import compose_and_dump

    compose_and_dump(root / "params.yaml", str(root / "conf"), None, "config", str(root.parent / "no-plugins"),
                     list(overrides))


@pytest.fixture
def project(tmp_path) -> Path:
    """conf/ of the project, params.yaml composed from it, and the folders of :data:`PROBES` (one with a cache)."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "conf", root / "conf")
    for probe in PROBES:
        shutil.copytree(REPO / "generators" / probe, root / "generators" / probe,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (root / "generators/age_comparison/__pycache__").mkdir()
    (root / "generators/age_comparison/__pycache__/generator.cpython-311.pyc").write_bytes(b"\0age_comparison")
    _compose(root)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _new(root: Path, name: str, source: str) -> int:
    return main(["new", name, "--from", source, "--project", str(root)])


def test_the_new_folder_is_the_source_renamed_and_the_name_is_registered(project, capsys):
    before = _snapshot(project)
    conf_before = (project / "conf/config.yaml").read_text()
    assert _new(project, "part_of", "age_comparison") == 0
    assert "made generators/part_of/ from generators/age_comparison/" in capsys.readouterr().out
    after = _snapshot(project)
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {"conf/config.yaml", "params.yaml", "generators/part_of/__init__.py",
                       "generators/part_of/generator.py", "generators/part_of/probe.yaml"}   # no __pycache__
    folder = project / "generators/part_of"
    mentions = [line for p in folder.iterdir() for line in p.read_text().splitlines() if "age_comparison" in line]
    assert mentions == ["# Made by `probes new part_of --from age_comparison`: edit the templates, the answers and "
                        "the generator."]
    spec = yaml.safe_load((folder / "probe.yaml").read_text())
    assert spec["probe"] == "part_of" and spec["version"] == 1 and "citation" not in spec
    assert "\n# citation: " in (folder / "probe.yaml").read_text()
    assert '@register("part_of", version="1"' in (folder / "generator.py").read_text()
    # conf/config.yaml: every line kept (comments too); the name added to its list, and an empty section
    conf_after = (project / "conf/config.yaml").read_text()
    removed = [d for d in difflib.ndiff(conf_before.splitlines(), conf_after.splitlines()) if d.startswith("- ")]
    old, new = yaml.safe_load(conf_before), yaml.safe_load(conf_after)
    assert len(removed) == 1 and f"{old['probes']['mc_mlm'][-1]}]" in removed[0]   # the list's last line
    assert new["probes"]["mc_mlm"] == [*old["probes"]["mc_mlm"], "part_of"] and new["part_of"] == {}
    assert {k: v for k, v in new.items() if k not in ("probes", "part_of")} == {k: v for k, v in old.items()
                                                                                 if k != "probes"}
    assert {k: v for k, v in new["probes"].items() if k != "mc_mlm"} == {k: v for k, v in old["probes"].items()
                                                                         if k != "mc_mlm"}
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["probes"]["mc_mlm"][-1] == "part_of" and params["part_of"] == {}
    assert not [p for p in project.iterdir() if p.name.startswith(".probes-new")]


def test_a_probe_with_helpers_imports_its_own_copies(project):
    assert _new(project, "kind_of", "taxonomy_conjunction") == 0
    folder = project / "generators/kind_of"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        p.name for p in (project / "generators/taxonomy_conjunction").iterdir())
    text = "".join(p.read_text() for p in folder.glob("*.py"))
    assert "generators.taxonomy_conjunction" not in text and "from generators.kind_of.params import" in text
    assert 'PROBE = "kind_of"' in (folder / "params.py").read_text()


def test_an_mc_qa_probe_joins_the_mc_qa_list(project):
    assert _new(project, "has_property", "property_conjunction") == 0
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["probes"]["mc_qa"][-1] == "has_property" and "has_property" not in params["probes"]["mc_mlm"]


def test_the_params_keep_their_profile(project):
    _compose(project, "profile=paper")
    assert _new(project, "part_of", "age_comparison") == 0
    assert yaml.safe_load((project / "params.yaml").read_text())["profile"] == "paper"


@pytest.mark.parametrize("name, source, message", [
    ("Part_of", "age_comparison", "'Part_of': a probe's name must be a Python identifier in lower case"),
    ("part-of", "age_comparison", "'part-of': a probe's name must be a Python identifier"),
    ("class", "age_comparison", "'class': a probe's name must be a Python identifier"),
    ("taxonomy_conjunction", "age_comparison", "generators/taxonomy_conjunction already exists"),
    ("age_comparison_grid", "age_comparison", "age_comparison_grid: already in conf/config.yaml (section "
                                              "age_comparison_grid)"),
    ("zeroshot", "age_comparison", "zeroshot: already in conf/config.yaml (section zeroshot)"),
    ("part_of", "nope", "--from nope: no probe folder generators/nope"),
    ("part_of", "pararel", "--from pararel: not in conf/config.yaml's probes.mc_mlm or probes.mc_qa: pararel builds "
                           "ParaRel's cloze set"),
    ("part_of", "calum", "calum builds CALUM's sentence-pair sets, not MC-MLM or MC-QA rows"),
])
def test_refusals_name_the_problem_and_change_nothing(project, capsys, name, source, message):
    before = _snapshot(project)
    assert _new(project, name, source) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert _snapshot(project) == before


def test_a_name_already_listed_is_refused(project, capsys):
    conf = project / "conf/config.yaml"
    conf.write_text(conf.read_text().replace("  mc_qa: [", "  mc_qa: [part_of, "))
    before = _snapshot(project)
    assert _new(project, "part_of", "age_comparison") == 2
    assert "part_of: already in conf/config.yaml (probes.mc_qa)" in capsys.readouterr().err
    assert _snapshot(project) == before


def test_a_failure_after_the_copy_leaves_no_folder_and_no_edit(project, monkeypatch, capsys):
    before = _snapshot(project)

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scaffold, "_compose", broken)
    assert _new(project, "part_of", "age_comparison") == 1
    assert _snapshot(project) == before and not (project / "generators/part_of").exists()
    assert not [p for p in project.iterdir() if p.name.startswith(".probes-new")]


def test_a_failure_while_replacing_the_params_restores_the_conf(project, monkeypatch):
    before = _snapshot(project)
    real = scaffold.os.replace

    def replace(src, dst):
        if Path(dst).name == "params.yaml":
            raise OSError(13, "Permission denied")
        return real(src, dst)

    monkeypatch.setattr(scaffold.os, "replace", replace)
    assert _new(project, "part_of", "age_comparison") == 1
    assert _snapshot(project) == before


def test_a_bibtex_citation_is_dropped_whole():
    spec = ("probe: p\nversion: 3\nlicense: other\ncitation: |\n  @article{x,\n    title = {X}\n  }\n"
            "templates: []\n")
    out = scaffold._fresh_spec(spec, "p", "q")
    data = yaml.safe_load(out)
    assert data == {"probe": "q", "version": 1, "license": "other", "templates": []}
    assert f"\nlicense: other\n{scaffold.CITATION}\ntemplates: []\n" in out
    assert yaml.safe_load(scaffold._fresh_spec("probe: p\nversion: 1\nlicense: mit\n", "p", "q")) == {
        "probe": "q", "version": 1, "license": "mit"}


# --- the conf edit alone ------------------------------------------------------------------------------------

BLOCK = """\
# the lists
probes:
  mc_mlm:   # zero-shot
  - a
  - b       # b's note
  mc_qa: []
a: {}       # a's section
b:
  seed: 1

z: 1
"""


def test_a_block_list_and_an_empty_flow_list_grow_in_place():
    out = conf_text.add_probe(BLOCK, "mc_mlm", "c", "b", "c.yaml")
    assert out == BLOCK.replace("  - b       # b's note\n", "  - b       # b's note\n  - c\n").replace(
        "  seed: 1\n", "  seed: 1\n\nc: {}   # overrides of the defaults in generators/c/probe.yaml's params: "
                       "(none yet)\n")
    out = conf_text.add_probe(BLOCK, "mc_qa", "c", "nowhere", "c.yaml")
    assert "  mc_qa: [c]\n" in out and out.endswith("z: 1\n\nc: {}   # overrides of the defaults in "
                                                    "generators/c/probe.yaml's params: (none yet)\n")


def test_a_flow_list_over_lines_with_comments_grows_after_its_last_item():
    text = "probes:\n  mc_mlm: [a,   # first\n           b   # b\n  ]\n  mc_qa: [q]\n"
    out = conf_text.add_probe(text, "mc_mlm", "c", "a", "c.yaml")
    assert out.startswith("probes:\n  mc_mlm: [a,   # first\n           b, c   # b\n  ]\n")
    long = "probes:\n  mc_mlm: [" + ", ".join(f"probe_{i}" for i in range(11)) + "]   # a comment\n"
    out = conf_text.add_probe(long, "mc_mlm", "c", "a", "c.yaml")
    assert out.startswith(long.replace("]   #", ",\n           c]   #"))
    assert conf_text.add_probe("probes:\n  mc_qa: [q]\n", "mc_mlm", "c", "a", "c.yaml").startswith(
        "probes:\n  mc_qa: [q]\n  mc_mlm: [c]\n")


def test_a_layout_the_edit_cannot_follow_is_refused():
    with pytest.raises(ParamsError, match=r"c.yaml: could not add c to probes.mc_mlm .* add them by hand"):
        conf_text.add_probe("probes: {mc_mlm: [a]}\n", "mc_mlm", "c", "a", "c.yaml")
    with pytest.raises(ParamsError, match=r"c.yaml: probes: no such section"):
        conf_text.add_probe("a: {}\n", "mc_mlm", "c", "a", "c.yaml")
