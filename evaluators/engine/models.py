"""Models: load a resolved model (:mod:`probekit.tokens.refs`) in the family, dtype and device asked for; a head the
checkpoint lacks is initialised with a seed and reported once; a random-init reference (``random:<model>``) gets
the model's architecture with every weight freshly initialised from a seed."""

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
    random_init: dict | None = None   # ``{of, seed}``: a random-init baseline of model ``of`` (no pretrained weight)

    def provenance(self) -> dict:
        """What a result records of the model: dtype, device, revisions (the one asked for, and the Hub commit
        where known), versions; and ``random_init`` (``{of, seed}``) for a random-init baseline."""
        record = provenance(self.model.config, self.dtype, revision=self.revision, device=self.device)
        return record | ({"random_init": self.random_init} if self.random_init else {})


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


def init_seed(ref: ModelRef, seed: int) -> int:
    """The seed a random-init reference's weights are drawn from: its own (``random@<seed>:``), else ``seed``."""
    return seed if ref.init_seed is None else ref.init_seed


def random_init_record(ref: ModelRef, seed: int) -> dict | None:
    """``{of: the model's spec, seed}`` of a random-init reference (what metrics.json records), else None."""
    return {"of": ref.spec.split(":", 1)[1], "seed": init_seed(ref, seed)} if ref.random_init else None


def weights(auto_class, ref: ModelRef, seed: int, **kwargs):
    """``auto_class.from_pretrained(ref.location, output_loading_info=True, **kwargs)``; for a random-init reference,
    ``auto_class.from_config`` of its config, every weight drawn from :func:`init_seed` (the architecture's own
    ``_init_weights``, as a model before pretraining), with the loading info of a model that loaded nothing."""
    import torch

    if not ref.random_init:
        return auto_class.from_pretrained(ref.location, output_loading_info=True, **kwargs, **ref.pinned)
    config = kwargs.get("config")   # from_pretrained's other keywords (ignore_mismatched_sizes) read no weight here
    if config is None:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
    torch.manual_seed(init_seed(ref, seed))
    dtype = kwargs.get("dtype")
    model = auto_class.from_config(config, **({"dtype": dtype} if dtype is not None else {}))
    return model, {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}


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
        model, info = weights(auto_class[family], ref, seed, dtype=torch_dtype)
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
    if ref.random_init:
        log.warning("%s: random-init baseline of %s: every weight freshly initialised (seed %d); its predictions "
                    "measure the architecture and tokenizer, no pretraining", ref.name, ref.spec.split(":", 1)[1],
                    init_seed(ref, seed))
    elif head_missing:
        log.warning("%s: the %s head is not in the checkpoint and was newly initialised (seed %d; %s): "
                    "its predictions are not zero-shot results", ref.name, HEADS[family], seed,
                    ", ".join(head_missing[:2]) + (", ..." if len(head_missing) > 2 else ""))
    return LoadedModel(model.to(device).eval(), tokenizer, ref.name, ref.spec,
                       head_pretrained=not head_missing and not ref.random_init,
                       dtype=str(torch_dtype).removeprefix("torch."), family=family, revision=ref.revision,
                       device=str(device), random_init=random_init_record(ref, seed))
