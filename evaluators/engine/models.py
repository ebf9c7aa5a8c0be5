"""Models: load a resolved model (:mod:`probekit.tokens.refs`) in the family, dtype and device asked for; a head the
checkpoint lacks is initialised with a seed and reported once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from probekit.errors import UsageError, shown
from probekit.tokens.refs import ModelRef

log = logging.getLogger("probekit")
DTYPES = ("auto", "float32", "bfloat16", "float16")
FAMILIES = ("mlm", "causal", "seq2seq")
HEADS = {"mlm": "masked-LM", "causal": "causal-LM", "seq2seq": "seq2seq-LM"}


@dataclass
class LoadedModel:
    model: Any                 # a transformers PreTrainedModel
    tokenizer: Any             # its fast tokenizer
    name: str
    model_id: str              # the spec it was loaded from (Hub id, folder or pkg:)
    head_pretrained: bool      # False: the LM head was newly initialised (no zero-shot result)
    dtype: str = "float32"     # the weights' dtype, as run
    family: str = "mlm"        # mlm | causal | seq2seq: which scoring rules apply
    revision: str | None = None   # the revision the params pinned (None: the default branch, or a local model)
    device: str | None = None     # where it runs (``--device`` as resolved: cpu, cuda, cuda:1)

    def provenance(self) -> dict:
        """What a result records of the model: dtype, device, revisions (the one asked for, and the Hub commit
        where known), versions."""
        return provenance(self.model.config, self.dtype, revision=self.revision, device=self.device)


def provenance(config, dtype: str, *, attn_implementation: bool = True, revision: str | None = None,
               device: str | None = None) -> dict:
    """What a result records of a model of ``config`` run in ``dtype`` on ``device``: dtype, device, the revision
    asked for (``revision``: the params' pinned one, None when none) and the one loaded (``model_revision``: the
    Hub commit where known), the attention implementation (``attn_implementation=False``: not recorded, as in
    CALUM's metrics.json), versions."""
    import torch
    import transformers

    from probekit import __version__

    record = {"dtype": dtype, "device": device, "revision": revision,
              "model_revision": getattr(config, "_commit_hash", None)}
    if attn_implementation:
        record["attn_implementation"] = getattr(config, "_attn_implementation", None)
    return record | {"versions": {"probekit": __version__, "torch": torch.__version__,
                                  "transformers": transformers.__version__}}


def resolve_dtype(dtype: str, device: str):
    """``auto``: bfloat16 on a CUDA device that supports it, and on a CPU with native bf16 matmuls (AVX512-BF16
    or AMX, where oneDNN runs them about twice as fast as fp32), else float32. Always explicit: transformers 5
    would otherwise load a bf16 checkpoint as bf16 and an fp32 one as fp32."""
    import torch

    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {shown(dtype)}")
    if dtype == "auto":
        if device.startswith("cuda"):
            fast_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        else:
            fast_bf16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
        dtype = "bfloat16" if fast_bf16 else "float32"
    return getattr(torch, dtype)


def detect_family(config, tokenizer) -> str:
    """``--scoring auto``: the family the checkpoint's architecture names, else what its config type supports
    (a BERT-type encoder without architecture is a masked LM when its tokenizer has a mask token).

    One class that serves as both heads (XLM's ``XLMWithLMHeadModel``: the xlm-mlm-* checkpoints are masked
    LMs, the xlm-clm-* ones causal) is decided by the config's ``causal`` flag; a model no rule scores (XLNet,
    a permutation LM; a causal XLM) is a :class:`UsageError` that says so."""
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, MODEL_FOR_MASKED_LM_MAPPING  # {config class: model class}

    check_scorable(config)
    masked_class = MODEL_FOR_MASKED_LM_MAPPING[type(config)] if type(config) in MODEL_FOR_MASKED_LM_MAPPING else None
    for arch in config.architectures or ():
        if arch.endswith("ForMaskedLM"):
            return "mlm"
        if arch.endswith("ForConditionalGeneration") and config.is_encoder_decoder:
            return "seq2seq"  # before the masked mapping: transformers 4 maps BART's masked LM to this class
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            if masked_class is not None and arch == masked_class.__name__:  # also the masked head (XLM)
                return masked_family(config, tokenizer, arch)
            return "causal"
    if config.is_encoder_decoder:
        return "seq2seq"
    if masked_class is not None and tokenizer.mask_token is not None and not getattr(config, "causal", False):
        return "mlm"
    if masked_class is not None and MODEL_FOR_CAUSAL_LM_MAPPING.get(type(config), None) is masked_class:
        return masked_family(config, tokenizer, masked_class.__name__)  # XLM without a mask token: an error
    if type(config) in MODEL_FOR_CAUSAL_LM_MAPPING:
        return "causal"
    raise UsageError(f"a {type(config).__name__} model is none of the families probekit scores (masked, causal, "
                     f"seq2seq LM): pass --scoring if it is one")


def masked_family(config, tokenizer, arch: str) -> str:
    """The family of an architecture that is its config type's masked-LM class: a masked LM unless the config
    says ``causal`` (XLM's flag; no such class is causal-only); a masked LM needs a mask token."""
    if getattr(config, "causal", False):
        return "causal"
    if tokenizer.mask_token is None:
        raise UsageError(f"a {arch} model trained as a masked LM (config causal: false) needs a mask token, and "
                         f"its tokenizer has none: give it its checkpoint's tokenizer")
    return "mlm"


def check_scorable(config, name: str | None = None) -> None:
    """Refuse, whatever ``--scoring`` says, a model that none of the rules scores: XLNet (a permutation LM: no
    masked-LM head, and without a permutation mask each position attends to the whole sequence, so the
    causal rules would read the answer), and XLM trained causally (its own ``cache`` argument, not the
    ``past_key_values`` the causal rules reuse)."""
    what = f"--model {name}: a" if name else "a"
    if config.model_type == "xlnet":
        raise UsageError(f"{what} {type(config).__name__} model (XLNet) is a permutation language model, which no "
                         f"probekit rule scores: neither masked (it has no masked-LM head) nor causal (it sees the "
                         f"whole sequence); evaluate a masked LM (e.g. BERT, RoBERTa), a causal or a seq2seq LM")
    if config.model_type == "xlm" and getattr(config, "causal", False):
        raise UsageError(f"{what} causal XLM model (config causal: true, an xlm-clm-* checkpoint) is not scored: "
                         f"its cache is not the past_key_values the causal rules reuse; the masked XLMs "
                         f"(xlm-mlm-*, causal: false) are scored with --scoring mlm")


def family_of(ref: ModelRef) -> str:
    """The family of ``ref`` (mlm, causal or seq2seq) from its config and tokenizer only, as ``--scoring auto``
    detects it: no weights are read (which protocols apply, :mod:`evaluators.applies`)."""
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    transformers.logging.set_verbosity_error()
    config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
    check_scorable(config, ref.name)
    return detect_family(config, AutoTokenizer.from_pretrained(ref.location, **ref.pinned))


def load_lm(ref: ModelRef, *, scoring: str = "auto", device: str = "cpu", seed: int = 0,
            dtype: str = "float32") -> LoadedModel:
    """A masked, causal or seq2seq LM (``scoring``: auto detects it) with a fast tokenizer, in an explicit
    dtype; records whether its LM head was pretrained.

    ``seed`` fixes the initialisation of a head the checkpoint lacks, so outputs stay deterministic.
    """
    import torch
    import transformers
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )

    transformers.logging.set_verbosity_error()  # its load report: what matters is logged below, once
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(ref.location, **ref.pinned)
    if not tokenizer.is_fast:
        raise UsageError(f"--model {ref.name}: a fast tokenizer is needed (offsets locate the choice in context)")
    config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
    check_scorable(config, ref.name)
    family = detect_family(config, tokenizer) if scoring == "auto" else scoring
    if family not in FAMILIES:
        raise UsageError(f"--scoring must be one of auto, {', '.join(FAMILIES)}, got {shown(scoring)}")
    if family == "mlm" and tokenizer.mask_token is None:
        raise UsageError(f"--model {ref.name}: its tokenizer has no mask token, so MC-MLM cannot score it "
                         f"(a causal or seq2seq model is scored with --scoring causal or seq2seq)")
    auto_class = {"mlm": AutoModelForMaskedLM, "causal": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}
    torch.manual_seed(seed)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        model, info = auto_class[family].from_pretrained(ref.location, output_loading_info=True, dtype=torch_dtype,
                                                        **ref.pinned)
    except ValueError as exc:
        if "Unrecognized configuration class" not in str(exc):
            raise
        raise UsageError(f"--model {ref.name}: a {type(config).__name__} model has no {HEADS[family]} head") from None
    prefix = model.base_model_prefix + "."
    head_missing = sorted(k for k in info["missing_keys"] if not k.startswith(prefix))
    if head_missing:
        log.warning("%s: the %s head is not in the checkpoint and was newly initialised (seed %d; %s): "
                    "its predictions are not zero-shot results", ref.name, HEADS[family], seed,
                    ", ".join(head_missing[:2]) + (", ..." if len(head_missing) > 2 else ""))
    return LoadedModel(model.to(device).eval(), tokenizer, ref.name, ref.spec, head_pretrained=not head_missing,
                       dtype=str(torch_dtype).removeprefix("torch."), family=family, revision=ref.revision,
                       device=str(device))
