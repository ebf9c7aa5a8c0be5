"""Issue 52 item 4, the curves' smaller differences from the original oLMpics code: the baselines' epochs and batch
of the README's run commands, AllenNLP's slanted-triangular horizon, each run's own random.sample of training rows,
and the docs' rows on them (ParaRel's pattern count, MC-QA's segment ids for RoBERTa)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
import torch
import yaml

from evaluators.olmpics import learning_curve
from evaluators.shared import params as evaluator_params
from evaluators.shared.params import CurveParams, McqaParams, MlmBaselineParams, TrainingParams
from evaluators.shared import training
from probekit.errors import UsageError
from probekit.params import ParamsFile, section
from probes.main import main

from helpers import REPO
from helpers import write_toy_probe as write_curve_probe

pytestmark = pytest.mark.usefixtures("one_thread")


def _compose(tmp_path: Path, *overrides: str) -> dict:
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / f"params-{len(list(tmp_path.iterdir()))}.yaml"
    compose_and_dump(out, str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"), list(overrides))
    return yaml.safe_load(out.read_text(encoding="utf-8"))


# --- the paper profile follows the original's runs -----------------------------------------------------------

def test_the_paper_profile_trains_as_the_original_readme_and_code(tmp_path):
    """README.md lines 78 and 83 (MLM-BASELINE and ESIM: batch 16, 60 epochs), lines 62 and 73
    (num_steps_per_epoch 15) under AllenNLP's horizon, and each run's own random.sample; the smoke profile and the
    typed defaults keep the configs' values and today's behaviour."""
    paper = ParamsFile(tmp_path / "paper.yaml", _compose(tmp_path, "profile=paper"))
    curve, mcqa = section(paper, "curve", CurveParams), section(paper, "mcqa", McqaParams)
    baseline = section(paper, "mlm_baseline", MlmBaselineParams)
    assert (baseline.batch_size, baseline.epochs) == (16, 60)
    assert mcqa.esim_hp == mcqa.esim_training and (mcqa.esim_training.batch_size, mcqa.esim_training.epochs) == (16, 60)
    for hp in (curve.training, mcqa.training):
        assert (hp.horizon, hp.steps_per_epoch) == ("original", 15)
    assert curve.subsets == mcqa.subsets == "original"

    smoke = ParamsFile(REPO / "params.yaml", yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8")))
    curve, mcqa = section(smoke, "curve", CurveParams), section(smoke, "mcqa", McqaParams)
    assert curve.training.horizon == mcqa.training.horizon == "exact" and curve.subsets == mcqa.subsets == "nested"
    # the configs': esim_baseline.jsonnet lines 88 and 97, mlm_baseline.jsonnet lines 45 and 55, ceil(200 / 8 / 2)
    assert (McqaParams().esim_training.batch_size, McqaParams().esim_training.epochs) == (32, 75)
    assert (MlmBaselineParams().batch_size, MlmBaselineParams().epochs) == (16, 75)
    assert TrainingParams().steps_per_epoch == 13 == math.ceil(200 / 8 / 2)


def test_the_default_horizon_is_not_recorded_the_original_is():
    """metrics.json's ``training`` of a default run reads as before the switch; an original-horizon run says so,
    and a params block read back from it keeps it."""
    assert "horizon" not in TrainingParams().model_dump(mode="json")
    assert "steps_per_epoch" not in TrainingParams(steps_per_epoch=15).model_dump(mode="json")
    dumped = TrainingParams(horizon="original", steps_per_epoch=15).model_dump(mode="json")
    assert (dumped["horizon"], dumped["steps_per_epoch"]) == ("original", 15)
    assert TrainingParams(**dumped) == TrainingParams(horizon="original", steps_per_epoch=15)
    with_lr = evaluator_params.CurveTrainingParams(lr=[1e-5, 2e-5], horizon="original").with_lr(1e-5)
    assert with_lr.horizon == "original"


# --- AllenNLP's slanted triangle -------------------------------------------------------------------------------

class AllenNlpSlantedTriangular:
    """allennlp 7d0d0d9c ``learning_rate_schedulers/slanted_triangular.py`` (no gradual unfreezing), as the trainer
    drives it: ``step()`` once at construction (``Scheduler.__init__``) and after every epoch, ``step_batch(b)``
    before the b-th optimizer step (``trainer.py``)."""

    def __init__(self, num_epochs, num_steps_per_epoch, cut_frac, ratio):
        self.num_epochs, self.num_steps_per_epoch, self.cut_frac, self.ratio = (num_epochs, num_steps_per_epoch,
                                                                               cut_frac, ratio)
        self.batch_num_total_epoch_end: list[int] = []
        self.last_batch_num_total = -1
        self.step()
        self.step_batch(0)

    def step(self):
        self.batch_num_total_epoch_end.append(0 if not self.batch_num_total_epoch_end else self.last_batch_num_total)

    def step_batch(self, batch_num_total):
        self.last_batch_num_total = batch_num_total
        return self.get_values()

    def get_values(self):
        if len(self.batch_num_total_epoch_end) > 1:
            actual = int(self.batch_num_total_epoch_end[-1] / (len(self.batch_num_total_epoch_end) - 1))
        else:
            actual = max(self.num_steps_per_epoch, self.last_batch_num_total)
        num_steps = self.num_epochs * actual
        step = min(self.last_batch_num_total, num_steps)
        cut = int(num_steps * self.cut_frac)
        prop = step / cut if step < cut else 1 - (step - cut) / (num_steps - cut)
        return (1 + prop * (self.ratio - 1)) / self.ratio


def allennlp_multipliers(n: int, hp: TrainingParams) -> list[float]:
    per_epoch = math.ceil(math.ceil(n / hp.batch_size) / hp.accumulation)
    scheduler = AllenNlpSlantedTriangular(hp.epochs, hp.steps_per_epoch, hp.cut_frac, hp.ratio)
    out, b = [], 0
    for _ in range(hp.epochs):
        for _ in range(per_epoch):
            b += 1
            out.append(scheduler.step_batch(b))
        scheduler.step()
    return out


@pytest.mark.parametrize("n", [62, 125, 250, 1000, 4000])
@pytest.mark.parametrize("steps", [13, 15])
def test_the_original_horizon_is_allennlps_schedule_at_every_update(n, steps):
    hp = TrainingParams(horizon="original", steps_per_epoch=steps)
    expected = allennlp_multipliers(n, hp)
    assert len(expected) == hp.updates(n)
    lr = training.schedule(hp, n)
    assert [lr(k) for k in range(hp.updates(n))] == pytest.approx(expected, rel=1e-12)
    exact = training.schedule(TrainingParams(), n)
    assert [exact(k) for k in range(hp.updates(n))] != pytest.approx(expected)


def test_the_original_horizon_at_62_examples():
    """4 updates an epoch: the first epoch's horizon is 4 x 15 = 60 (a 3-update warm-up), the later ones' 16 with
    no warm-up, so the 5th update restarts at 11/16 of the peak."""
    lr = training.schedule(TrainingParams(horizon="original", steps_per_epoch=15), 62)
    peak = lambda p: (1 + p * 31) / 32   # noqa: E731
    assert [lr(k) for k in range(6)] == pytest.approx([peak(1 / 3), peak(2 / 3), peak(1), peak(1 - 1 / 57),
                                                       peak(11 / 16), peak(10 / 16)])


def test_train_steps_with_the_original_horizon():
    """The loop's k-th update moves a bias by the k-th lr: Adam's step on a constant gradient is lr x 1."""
    hp = TrainingParams(lr=1.0, horizon="original", steps_per_epoch=15, accumulation=1, weight_decay=0.0,
                        epochs=3)
    model = torch.nn.Module()
    model.bias = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
    seen = []

    def loss_of(batch):
        seen.append(model.bias.item())
        return model.bias * 1.0

    training.train(model, loss_of, 20, hp, seed=0)   # 3 batches of 8 an epoch
    seen.append(model.bias.item())
    steps = [a - b for a, b in zip(seen, seen[1:])]
    assert steps == pytest.approx([training.schedule(hp, 20)(k) for k in range(9)], rel=1e-6)
    assert steps[3] == pytest.approx((1 + (1 - 4 / 9) * 31) / 32, rel=1e-6)   # the second epoch: horizon 3 x 3


# --- each run's own draw ----------------------------------------------------------------------------------------

def test_original_subsets_are_each_runs_random_sample():
    """``random.seed(seed); random.sample(rows, N)`` per run, as every original reader: not the nested prefix, and
    where random.sample changes its algorithm (5,000 rows, N = 1000 -> 2000) not nested at all."""
    ids = [f"row{i}" for i in range(5000)]
    sizes, seeds = [62, 125, 1000, 2000], [1, 2]
    draws, record = learning_curve.draw_subsets(ids, sizes, seeds, "original")
    nested, _ = learning_curve.draw_subsets(ids, sizes, seeds, "nested")
    for seed in seeds:
        for n in sizes:
            random.seed(seed)
            assert [ids[i] for i in draws[seed][n]] == random.sample(ids, n) == record["seeds"][str(seed)][str(n)]
            assert draws[seed][n].tolist() != nested[seed][n].tolist()
        assert draws[seed][125][:62].tolist() == draws[seed][62].tolist()        # one branch: a prefix
        assert not set(draws[seed][1000]) <= set(draws[seed][2000])              # the branch changes
        assert all(set(nested[seed][a]) <= set(nested[seed][b]) for a, b in zip(sizes, sizes[1:]))
    assert record["draw"] == "original" and record["sizes"] == sizes
    with pytest.raises(Exception, match="subsets must be one of nested, original"):
        learning_curve.draw_subsets(ids, sizes, seeds, "independent")


def test_the_features_cover_each_runs_own_draw():
    variants = {"original": {"train": [{"id": f"r{i}"} for i in range(300)]}}
    rows = learning_curve.curve_train_rows(variants, [62, 125], [1, 2], "original")["original"]
    wanted = {i for seed in (1, 2) for n in (62, 125) for i in random.Random(seed).sample(range(300), n)}
    assert rows.tolist() == sorted(wanted)


def test_the_curve_command_trains_each_run_on_its_own_draw(tmp_path):
    """`probes evaluate curve` with ``curve.subsets: original``: subsets.json lists each (seed, N) run's sample and
    metrics.json says so; with the default, neither (the files as before)."""
    probe = write_curve_probe(tmp_path / "toy", 60, 30)
    train_ids = [json.loads(line)["id"] for line in (probe / "original/train.jsonl").read_text().splitlines()]
    for subsets in ("original", "nested"):
        params = tmp_path / f"{subsets}.yaml"
        params.write_text(yaml.safe_dump({"profile": "smoke", "mlm_baseline": {"epochs": 2},
                                          "curve": {"sizes": [16, 32], "seeds": [1, 2], "subsets": subsets}}))
        out = tmp_path / subsets / "mlp"
        assert main(["evaluate", "curve", "--model", "mlm-baseline", "--data", str(probe), "--setting", "mlp",
                     "--params", str(params), "--out", str(out)]) == 0
        record = json.loads((out / "subsets.json").read_text())
        metrics = json.loads((out / "metrics.json").read_text())
        if subsets == "nested":
            assert "subsets" not in metrics and "draw" not in record
            assert record["seeds"]["1"] == [train_ids[i] for i in learning_curve.nested_order(60, 1)[:32]]
            continue
        assert metrics["subsets"] == "original" and record["draw"] == "original"
        for seed in (1, 2):
            for n in (16, 32):
                random.seed(seed)
                assert record["seeds"][str(seed)][str(n)] == random.sample(train_ids, n)


def test_the_mcqa_command_passes_its_subsets(tmp_path, monkeypatch):
    from evaluators.olmpics import mcqa

    seen = {}

    def run(**kw):
        seen.update(kw)
        raise UsageError("stopped before training")

    monkeypatch.setattr(mcqa, "run", run)
    probe = tmp_path / "data" / "toy"
    (probe / "original").mkdir(parents=True)
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"profile": "smoke", "mcqa": {"subsets": "original"}}))
    assert main(["evaluate", "mcqa", "--model", "esim", "--data", str(probe), "--params", str(params),
                 "--out", str(tmp_path / "out")]) == 2
    assert seen["subsets"] == "original"


# --- the docs' rows ---------------------------------------------------------------------------------------------

def test_the_docs_count_the_pararel_patterns_the_generator_holds():
    """The paper's "328 paraphrases for 38 relations": the release's pattern files hold 329 lines in 39 files, P1001
    with a single pattern (no pair), which the generator leaves out."""
    patterns = [p for f in sorted((REPO / "generators/pararel/patterns").glob("P*.yaml"))
                for p in yaml.safe_load(f.read_text(encoding="utf-8"))["patterns"]]
    assert len(patterns) == 328
    for doc in [REPO / "docs/limits.md", REPO / "docs/pararel.md", REPO / "generators/pararel/generator.py"]:
        for total in re.findall(r"of the (\d+) patterns", doc.read_text(encoding="utf-8")):
            assert int(total) == len(patterns), doc


def test_the_segment_ids_row_says_what_the_original_feeds_roberta():
    """transformer_mc_qa_model.py: RoBERTa also reaches ``elif 'bert' in self._pretrained_model:`` (line 112) and
    is run with the all-zero token_type_ids (line 114); it does not "take none"."""
    rows = [line for line in (REPO / "docs/limits.md").read_text(encoding="utf-8").splitlines()
            if "`mcqa.segment_ids: zeros`" in line]
    assert len(rows) == 1
    assert "takes none" not in rows[0] and "elif 'bert' in self._pretrained_model:" in rows[0]
    assert "line 112" in rows[0] and "line 114" in rows[0]
