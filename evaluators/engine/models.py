"""Models: load a resolved model (:mod:`probekit.tokens.refs`) in the family, dtype and device asked for; a head the
checkpoint lacks is initialised with a seed and reported once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probekit.errors import UsageError, shown
from probekit.scoring import DTYPES, FAMILIES, HEADS
from probekit.tokens.checkpoint import damaged_weights
from probekit.tokens.family import check_scorable, detect_family
from probekit.tokens.refs import ModelRef

log = logging.getLogger("probekit")


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


def model_folder(ref: ModelRef) -> Path | None:
    """Where ``ref``'s files are: its folder, or a Hub model's snapshot in the local cache (where its config.json
    is; None when it is not cached)."""
    from huggingface_hub import try_to_load_from_cache

    if Path(ref.location).is_dir():
        return Path(ref.location)
    cached = try_to_load_from_cache(ref.location, "config.json", revision=ref.revision)
    return Path(cached).parent if isinstance(cached, str) else None


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
    except Exception as exc:
        if isinstance(exc, ValueError) and "Unrecognized configuration class" in str(exc):
            raise UsageError(f"--model {ref.name}: a {type(config).__name__} model has no {HEADS[family]} "
                             f"head") from None
        folder = model_folder(ref)   # a Hub model's cached file named, where that is what failed
        damaged = damaged_weights(folder) if folder else None
        if damaged is None:
            raise
        cache = "" if Path(ref.location).is_dir() else f" (in the Hub cache: hf download --force-download {ref.spec})"
        raise UsageError(f"--model {ref.name}: {damaged}{cache}") from exc
    prefix = model.base_model_prefix + "."
    head_missing = sorted(k for k in info["missing_keys"] if not k.startswith(prefix))
    if head_missing:
        log.warning("%s: the %s head is not in the checkpoint and was newly initialised (seed %d; %s): "
                    "its predictions are not zero-shot results", ref.name, HEADS[family], seed,
                    ", ".join(head_missing[:2]) + (", ..." if len(head_missing) > 2 else ""))
    return LoadedModel(model.to(device).eval(), tokenizer, ref.name, ref.spec, head_pretrained=not head_missing,
                       dtype=str(torch_dtype).removeprefix("torch."), family=family, revision=ref.revision,
                       device=str(device))
