"""`probes new` keeps what the user wrote: params.yaml's hand edits survive its recomposition (or it refuses, naming
them, with nothing changed), a read-only params file is refused before any change, its errors name the user's
paths (never its temporary copies), and a probe never lands in a second list (probekit's one line, not DVC's
`use dvc remove` advice at the next `dvc repro`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from probes.main import main

PROBES = ("age_comparison", "property_conjunction")


def _compose(root: Path, *overrides: str) -> None:
    """params.yaml as `dvc exp run -S <overrides>` writes it."""
    from probekit.params import compose

    compose(root / "conf", overrides, root / "params.yaml")


@pytest.fixture
def project(tmp_path) -> Path:
    """conf/ of the project, params.yaml composed from it, and two probe folders."""
    root = tmp_path / "project"
    for folder in ("conf", *(f"generators/{probe}" for probe in PROBES)):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    _compose(root)
    return root


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode) for p in sorted(root.rglob("*"))
            if p.is_file()}


def _edit(root: Path, edit) -> dict:
    params = yaml.safe_load((root / "params.yaml").read_text())
    edit(params)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return params


def _refused(root: Path, capsys, code: int, *needles: str) -> None:
    """``probes new part_of --from age_comparison`` exits ``code`` with one line holding ``needles``, no temporary
    path in it, and nothing changed."""
    before = _snapshot(root)
    got = main(["new", "part_of", "--from", "age_comparison", "--project", str(root)])
    err = capsys.readouterr().err
    assert (got, len(err.splitlines())) == (code, 1) and all(n in err for n in needles), f"exit {got}: {err}"
    assert "probes-new" not in err and "/tmp/" not in err.replace(str(root), "PROJECT"), err
    assert _snapshot(root) == before
    assert not (root / "generators/part_of").exists()
    assert not [p for p in root.rglob(".*") if p.name not in (".", "..")]   # no temporary folder left


@pytest.mark.parametrize("profile", [(), ("profile=paper",)], ids=["smoke", "paper"])
def test_every_hand_edit_of_params_is_kept(project, capsys, profile):
    """The finding: `zeroshot.limit: 50` in params.yaml went back to null. Changed, added and removed keys, nested
    ones too, stay as the user wrote them; the rest is the new composition (the profile kept)."""
    _compose(project, *profile)

    def edit(params):
        params["zeroshot"]["limit"] = 50                       # changed
        params["scoring"]["rules"]["mlm"] = "pll"              # changed, nested
        params["models"]["tiny"] = {"id": "/models/tiny", "revision": "v1"}   # added (as `probes run` adds one)
        params["age_comparison"]["seed"] = 7                   # added to a probe's section
        del params["tables"]["klue"]                           # removed

    _edit(project, edit)
    assert main(["new", "part_of", "--from", "age_comparison", "--project", str(project)]) == 0
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["zeroshot"]["limit"] == 50 and params["scoring"]["rules"]["mlm"] == "pll"
    assert params["models"]["tiny"] == {"id": "/models/tiny", "revision": "v1"}
    assert params["age_comparison"]["seed"] == 7 and "klue" not in params["tables"]
    said = " ".join(capsys.readouterr().out.split())
    assert "keeping your edits of it (" in said, said
    kept = said.split("keeping your edits of it (", 1)[1].split(")")[0]
    assert sorted(kept.split(", ")) == ["age_comparison.seed", "models.tiny", "scoring.rules.mlm", "tables.klue",
                                        "zeroshot.limit"]
    # everything else: conf/ (with part_of) composed as `dvc exp run` would
    fresh = project.parent / "fresh"
    shutil.copytree(project / "conf", fresh / "conf")
    _compose(fresh, *profile)
    expected = yaml.safe_load((fresh / "params.yaml").read_text())
    edit(expected)
    assert params == expected and params["probes"]["mc_mlm"][-1] == "part_of" and params["part_of"] == {}


def test_an_edit_the_new_composition_changes_is_refused_and_nothing_changes(project, capsys):
    """A hand edit of the very key `probes new` changes (the probe list) cannot be kept beside the new name: one
    line naming it; params.yaml, conf/config.yaml and generators/ as they were."""
    _edit(project, lambda p: p["probes"]["mc_mlm"].remove("taxonomy_conjunction"))
    _refused(project, capsys, 2, f"{project / 'params.yaml'}: probes new would lose your edit of probes.mc_mlm",
             "make the edit in conf/ instead")


@pytest.mark.parametrize("name", ["params.yaml", "conf/config.yaml"])
def test_a_read_only_params_file_is_refused_before_any_change(project, capsys, name):
    path = project / name
    path.chmod(0o444)
    try:
        _refused(project, capsys, 2, f"{path}: is read-only; probes new edits it")
    finally:
        path.chmod(0o644)


def test_a_file_that_cannot_be_copied_is_named_as_the_users(project, capsys):
    """The finding: the error quoted the temporary copy whole (`./.probes-new-part_of-…/part_of/notes.txt`)."""
    (project / "generators/age_comparison/notes.txt").symlink_to(project / "nowhere")
    _refused(project, capsys, 2, f"{project / 'generators/age_comparison/notes.txt'}: cannot copy it",
             "fix or remove it and run probes new again")


def test_a_broken_link_in_conf_is_no_error(project, capsys):
    """The finding: the error named `/tmp/probes-new-…/conf/…`. A broken link beside the config (which Hydra never
    reads) stops nothing now, and stays where it is."""
    (project / "conf/old.yaml").symlink_to(project / "nowhere")
    assert main(["new", "part_of", "--from", "age_comparison", "--project", str(project)]) == 0, \
        capsys.readouterr().err
    assert (project / "conf/old.yaml").is_symlink()


def test_an_error_in_the_composition_names_the_users_conf(project, capsys, monkeypatch):
    """A failure while composing the new params (here a full disk) is said of the user's conf/, not of the copy
    of it the composition reads."""
    import errno

    from generators.shared import scaffold

    real = scaffold.compose

    def full(conf, *args, **kwargs):
        if Path(conf).resolve() != (project / "conf").resolve():
            raise OSError(errno.ENOSPC, "No space left on device", str(Path(conf) / "config.yaml"))
        return real(conf, *args, **kwargs)

    monkeypatch.setattr(scaffold, "compose", full)
    _refused(project, capsys, 1, f"{project / 'conf/config.yaml'}: the disk is full")


def test_a_probe_a_profile_lists_is_not_added_to_a_second_list(project, capsys):
    """The finding: `probes new` put the probe in a second list (probes.mc_mlm beside a profile's probes.mc_qa),
    and the next `dvc repro` answered with DVC's `use dvc remove` advice. probekit's own line now, before any
    change."""
    paper = project / "conf/profile/paper.yaml"
    paper.write_text(paper.read_text() + "probes:\n  mc_qa: [property_conjunction, part_of]\n")
    _compose(project)   # params.yaml of the default profile: the paper profile's list is not in it
    _refused(project, capsys, 2, "part_of: already in conf/profile/paper.yaml (probes.mc_qa)")


def test_a_probe_in_both_lists_is_refused_in_probekits_words(project, capsys):
    """conf/ already lists a probe in probes.mc_mlm and probes.mc_qa: probekit's one line, not the params written
    for DVC to refuse."""
    conf = project / "conf/config.yaml"
    conf.write_text(conf.read_text().replace("  mc_qa: [", "  mc_qa: [age_comparison, "))
    _compose(project)
    _refused(project, capsys, 1, "params.yaml as probes new would write it: probes: age_comparison is in both mc_mlm "
                                 "and mc_qa (a probe has one format)")


def test_params_comments_are_kept(project, capsys):
    """The finding: `probes new` rewrote params.yaml whole (OmegaConf's YAML): the user's comments went. Every line
    of it is kept now; the probe's name and section are the lines added."""
    params = project / "params.yaml"
    text = params.read_text().replace("  batch_size: auto\n", "  batch_size: 4   # fits my GPU\n")
    params.write_text("# my notes: params for the GPU box\n" + text)
    before = params.read_text().splitlines()
    assert main(["new", "part_of", "--from", "age_comparison", "--project", str(project)]) == 0
    after = params.read_text().splitlines()
    assert [line for line in before if line not in after] == []
    assert sorted(line for line in after if line not in before) == ["  - part_of", "part_of: {}"]
    assert "batch_size" in capsys.readouterr().out   # said kept: scoring.batch_size


def test_a_linked_params_file_stays_a_link(project):
    """params.yaml and conf/config.yaml linked to the user's own files: written through, the links kept."""
    for name in ("params.yaml", "conf/config.yaml"):
        real = project.parent / name.replace("/", "-")
        (project / name).rename(real)
        (project / name).symlink_to(real)
    assert main(["new", "part_of", "--from", "age_comparison", "--project", str(project)]) == 0
    for name in ("params.yaml", "conf/config.yaml"):
        assert (project / name).is_symlink(), name
        assert "part_of" in yaml.safe_load((project / name).read_text())["probes"]["mc_mlm"], name


NEW = "import sys; from probes.main import main; sys.exit(main(['new', sys.argv[1], '--from', 'age_comparison', " \
      "'--project', sys.argv[2]]))"


def test_two_probes_new_at_once_both_land(project):
    """The finding: two `probes new` at once both exited 0 and one probe was lost (4 of 4 tries). They take the
    project's lock now: one waits for the other, and both probes are in conf/, params.yaml and generators/."""
    import subprocess
    import sys

    for attempt in range(3):
        names = [f"part_of_{attempt}", f"has_a_{attempt}"]
        procs = [subprocess.Popen([sys.executable, "-c", NEW, name, str(project)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for name in names]
        outs = [proc.communicate(timeout=300) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outs
        conf = yaml.safe_load((project / "conf/config.yaml").read_text())
        params = yaml.safe_load((project / "params.yaml").read_text())
        for name in names:
            assert name in conf["probes"]["mc_mlm"] and name in params["probes"]["mc_mlm"], (attempt, name)
            assert name in conf and name in params and (project / "generators" / name / "probe.yaml").is_file()
