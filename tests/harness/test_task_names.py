"""``probes lm-eval``: the run's task names are checked against lm-evaluation-harness's index (its own tasks, groups
and tags, and those under ``--include_path``) before any model loads; an unknown one is one line with the closest
known names."""

from __future__ import annotations

import json
import re

import pytest

from evaluators.harness.cli import check_tasks, task_args
from probes.main import main

pytestmark = pytest.mark.slow   # lm-evaluation-harness's own task index, built for real (the slow lane)


@pytest.fixture
def include(tmp_path):
    """A folder of task configs: the task ``probekit_mlm_statements`` (tag ``probekit_mlm``) and the group
    ``probekit_mlm_all``."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    task = {"task": "probekit_mlm_statements", "tag": ["probekit_mlm"], "dataset_path": "json",
            "dataset_kwargs": {"data_files": {"test": str(folder / "docs.jsonl")}}, "test_split": "test",
            "output_type": "multiple_choice", "doc_to_text": "", "doc_to_target": "gold",
            "doc_to_choice": "{{ choices }}", "metric_list": [{"metric": "acc"}]}
    (folder / "statements.yaml").write_text(json.dumps(task))
    (folder / "group.yaml").write_text(json.dumps({"group": "probekit_mlm_all", "task": ["probekit_mlm_statements"]}))
    return folder


def test_an_unknown_task_is_one_line_before_any_model_loads(include, capsys, monkeypatch):
    import lm_eval

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(lm_eval, "simple_evaluate", no_model)
    monkeypatch.setattr("evaluators.harness.masked_lm.load_lm", no_model)
    assert main(["lm-eval", "--model", "probekit-mlm", "--model_args", "pretrained=no/such-model", "--tasks",
                 "probekit_mlm_statemnts,hellaswg", "--include_path", str(include), "--limit", "3"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and out == ""
    assert re.match(r"probes lm-eval: error: --tasks: unknown tasks 'probekit_mlm_statemnts' \(closest: "
                    r"probekit_mlm_statements[,)].*, 'hellaswg' \(closest: hellaswag[,)]", err), err
    assert f"known: lm-evaluation-harness's tasks, groups and tags and those under --include_path {include}; " \
           f"`probes lm-eval ls tasks --include_path {include}` lists them" in err


def test_known_tasks_groups_tags_and_globs_pass_without_the_harness_index(include, monkeypatch):
    import lm_eval.tasks

    built = []
    real = lm_eval.tasks.TaskManager

    def counted(*args, **kwargs):
        built.append(kwargs.get("include_defaults", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", counted)
    check_tasks(["--tasks", "probekit_mlm_statements", "probekit_mlm_all,probekit_mlm", "-t", "probekit_*",
                 "--include_path", str(include)])
    assert built == [False]   # found under --include_path: the harness's 15,000 configs were never read


def test_task_names_are_read_as_the_harness_reads_them():
    assert task_args(["--model", "hf", "-t", "a", "b,c", "--tasks=d", "--include_path", "x"]) == (["a", "b", "c",
                                                                                                   "d"], "x")
    assert task_args(["run", "--task", "a,b", "--limit", "3"]) == (["a", "b"], None)   # an abbreviation, as argparse
    for other in (["ls", "tasks"], ["validate", "--tasks", "a"], ["--tasks", "a", "--help"],
                  ["--config", "run.yaml", "--tasks", "a"], ["--tasks"]):
        assert task_args(other) is None, other
    check_tasks(["--tasks", "my_task.yaml"])   # config files and folders are the harness's to read
