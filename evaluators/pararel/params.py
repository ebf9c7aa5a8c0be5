"""``consistency``: the params of ParaRel's consistency training (:mod:`evaluators.pararel.consistency_training`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import (ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt,
                      model_validator)

from evaluators.shared.params import Relation
from probekit.errors import DataError
from probekit.typed import Typed

if TYPE_CHECKING:
    from probekit.data.cloze import ClozeSet

ABLATIONS: dict[str, dict] = {
    "-consistency": {"consistency_weight": 0.0},   # "the finetuned model without the consistency loss": λ = 0
    "-typed": {"typed": False},                     # "applying our loss on the candidate set rather than on the
                                                    # entire vocabulary": Lc over the whole vocabulary
    "-MLM": {"mlm_steps": 0},                       # "by not performing the MLM training on the generated patterns"
}
"""Table 7's ablations (§8.3), each by the paper's name: the §8.2 protocol with these values over the params'
(every other setting kept, λ still selected among the params' candidates where it is not the one removed)."""
Ablation = Literal[tuple(ABLATIONS)]   # type: ignore[valid-type]


class ConsistencyParams(Typed):
    """Defaults of the original script (its argument names in comments): its relations, a fixed λ, no
    validation. ``conf/config.yaml`` sets the paper's §8.2 protocol (its split, λ selected on validation)."""

    model_config = ConfigDict(extra="forbid")

    train_relations: list[Relation] = ["P138", "P37", "P449"]  # the released data's relations (the paper: P364 for P37)
    validation_relations: list[Relation] = []  # λ selected by Consistent-Acc on these (§8.2; the original has none)
    test_relations: list[Relation] | None = Field(   # evaluated before and after
        None, description="the test relations, e.g. P19,P36 (none: every N-1 relation neither trained nor validated "
                          "on)")
    consistency_weight: NonNegativeFloat | list[NonNegativeFloat] = 0.1  # λ (--loss_scaling); a list: selected
    typed: bool = True                   # Lc over the candidate set (--candidate_set); False: "-typed" ablation
    # the typed softmax's columns: `set`, each object of the relation once; `per_tuple`, the original's list, one
    # entry per tuple (train_consistency.py lines 595-601), so Lc is divided by the tuple count (batchmean)
    candidate_list: Literal["set", "per_tuple"] = "set"
    lr: PositiveFloat = 6e-5             # AdamW (--learning_rate; eps 1e-8)
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: NonNegativeInt = 0     # linear schedule: rounds of warm-up, then linear decay to 0
    max_grad_norm: PositiveFloat = 1.0
    epochs: PositiveInt = 3
    batch_size: PositiveInt = 8          # tuples per consistency batch (each with all its patterns)
    mlm_probability: float = 0.15
    mlm_steps: NonNegativeInt = 5        # MLM batches per round (--num_LAMA_steps)
    mlm_batch_size: PositiveInt = 32     # blocks per MLM batch (--batch_size_mlm)
    block_size: PositiveInt = 126        # tokens per MLM block, before [CLS]/[SEP]
    limit: PositiveInt | None = 100      # training tuples per relation (--num_tuples; with_replacement: limit + 1 draws)
    sample: Literal["with_replacement", "first"] = "with_replacement"   # the original's generate_data_ft_consistency.py
                                         # (seeded by `seed`); first: the first `limit` tuples in file order
    eval_limit: PositiveInt | None = None  # evaluated tuples per relation (None: all)
    tuple_key: Literal["tuple", "subject"] = "tuple"   # what the evaluations before and after count, as
                                         # pararel_eval.tuple_key: every tuple, or one per subject as the original
    seed: int = 42
    ablation: Ablation | None = Field(
        None, description="one of Table 7's ablations (§8.3): -consistency (λ 0), -typed (Lc over the whole "
                          "vocabulary) or -MLM (no MLM steps), applied over the other settings")
    ablations: list[Ablation] = []       # the ablations dvc.yaml's consistency-ablation stages run, each model of
                                         # runs.consistency (the paper profile: Table 7's three); none is a setting
                                         # of a run (not recorded in its metrics.json)

    @model_validator(mode="after")
    def _check(self):
        weights = self.weights()
        if not weights or len(set(weights)) != len(weights):
            raise ValueError(f"consistency_weight: a λ or a list of distinct λ values, got {weights}")
        if len(weights) > 1 and not self.validation_relations:
            raise ValueError(f"consistency_weight: {len(weights)} values of λ to select among need "
                             f"validation_relations (the paper's §8.2 selects by Consistent-Acc on them)")
        named = [*self.train_relations, *self.validation_relations, *(self.test_relations or ())]
        twice = sorted({r for r in named if named.count(r) > 1})
        if twice:
            raise ValueError(f"train_relations, validation_relations and test_relations must not share relations "
                             f"(or repeat one): {', '.join(twice)}")
        if len(set(self.ablations)) != len(self.ablations):
            raise ValueError(f"ablations: each of Table 7's ablations once, got {self.ablations}")
        return self

    def ablated(self) -> "ConsistencyParams":
        """These params with :attr:`ablation`'s values (:data:`ABLATIONS`) over their own; themselves when none."""
        if self.ablation is None:
            return self
        return type(self).model_validate({**self.model_dump(), **ABLATIONS[self.ablation]})

    def recorded(self) -> dict:
        """The settings a run records in its metrics.json (``params``): every field less :attr:`ablation` (recorded
        beside, where set) and :attr:`ablations` (the pipeline's list, no setting of the run)."""
        return self.model_dump(exclude={"ablation", "ablations"})

    def weights(self) -> list[float]:
        """The λ values trained: one (fixed) or the candidates selected among."""
        return list(self.consistency_weight) if isinstance(self.consistency_weight, list) \
            else [self.consistency_weight]

    def split(self, data: ClozeSet, test_relations: list[str] | None = None) -> dict[str, list[str]]:
        """``{"train", "validation", "test"}`` relations; test: ``test_relations`` (the command's), else the params',
        else every N-1 relation of ``data`` in neither of the others. An unknown relation is a DataError."""
        test = test_relations or self.test_relations
        named = {"train_relations": self.train_relations, "validation_relations": self.validation_relations,
                 "test_relations": test or ()}
        for field, rels in named.items():
            for rel in rels:  # an unknown relation fails before any work
                try:
                    data.relation(rel)
                except DataError as e:
                    raise DataError(f"consistency.{field}: {e}") from None
        fitted = set(self.train_relations) | set(self.validation_relations)
        if test and fitted & set(test):
            raise DataError(f"consistency: test relation(s) {', '.join(sorted(fitted & set(test)))} are also trained "
                            f"or validated on")
        return {"train": list(self.train_relations), "validation": list(self.validation_relations),
                "test": list(test or [r["relation"] for r in data.relations
                                      if r["class"] == "N-1" and r["relation"] not in fitted])}
