"""Models: resolve what the user typed (alias, folder, ``pkg:`` package, Hub id) before anything heavy is
imported, then load it; a head the checkpoint lacks is initialised with a seed and reported once."""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from probekit.errors import UsageError

PACKAGE_PREFIX = "pkg:"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
log = logging.getLogger("probekit")


@dataclass(frozen=True)
class ModelRef:
    name: str       # what the user typed (an alias, an id, a path)
    spec: str       # the alias's target, or ``name`` itself
    location: str   # a local folder or a Hub id, ready for ``from_pretrained``


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

    def provenance(self) -> dict:
        """What a result records of the model: dtype, revision (the Hub commit where known), versions."""
        import torch
        import transformers

        from probekit import __version__

        return {"dtype": self.dtype, "model_revision": getattr(self.model.config, "_commit_hash", None),
                "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
                "versions": {"probekit": __version__, "torch": torch.__version__,
                             "transformers": transformers.__version__}}


def resolve_dtype(dtype: str, device: str):
    """``auto``: bfloat16 on a CUDA device that supports it, and on a CPU with native bf16 matmuls (AVX512-BF16
    or AMX, where oneDNN runs them about twice as fast as fp32), else float32. Always explicit: transformers 5
    would otherwise load a bf16 checkpoint as bf16 and an fp32 one as fp32."""
    import torch

    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        if device.startswith("cuda"):
            fast_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        else:
            fast_bf16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
        dtype = "bfloat16" if fast_bf16 else "float32"
    return getattr(torch, dtype)


def resolve_model(name: str, aliases: Mapping[str, str], params_label: str) -> ModelRef:
    """An alias of the params' ``models``, a folder, ``pkg:<package>``, or a Hub id (cached, or found
    online): whatever fails says everything that was tried."""
    spec = aliases.get(name, name)
    known = f"known aliases in {params_label} `models`: {', '.join(aliases) or 'none'}"
    if spec.startswith(PACKAGE_PREFIX):
        return ModelRef(name, spec, _package_folder(spec, name))
    path = Path(spec).expanduser()
    if path.exists() or not _HUB_ID.fullmatch(spec):  # a path, not an `org/name` Hub id
        if not path.is_dir():
            raise UsageError(f"--model {name}: no model folder {spec}" + ("" if name in aliases else f" ({known})"))
        if not (path / "config.json").is_file():
            raise UsageError(f"--model {name}: folder {path} has no config.json (not a saved model)")
        return ModelRef(name, spec, str(path))
    _check_hub(name, spec, "" if name in aliases else f"; not an alias either ({known}) nor a folder")
    return ModelRef(name, spec, spec)


def _package_folder(spec: str, name: str) -> str:
    """``pkg:<module>``: a model shipped in an installed package (its ``get_model_path()``, else ``model/``)."""
    module_name = spec[len(PACKAGE_PREFIX):]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        raise UsageError(f"--model {name}: {spec}: no installed Python package {module_name!r} "
                         f"(pip install it, or give an alias, a folder or a Hub id)") from None
    getter = getattr(module, "get_model_path", None)
    folder = Path(getter() if getter else Path(module.__file__).parent / "model")
    if not (folder / "config.json").is_file():
        raise UsageError(f"--model {name}: package {module_name!r} ships no model at {folder}")
    return str(folder)


def _check_hub(name: str, repo_id: str, also: str) -> None:
    """A Hub id must be in the local cache, or exist on a reachable Hub; offline fails at once."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    if constants.HF_HUB_OFFLINE:
        raise UsageError(f"--model {name}: Hub id {repo_id!r} is not in the local cache and HF_HUB_OFFLINE "
                         f"is set{also}")
    try:
        model_info(repo_id, timeout=10)
    except GatedRepoError:
        raise UsageError(f"--model {name}: {repo_id!r} is gated on the Hub: accept its terms and log in "
                         f"(hf auth login){also}") from None
    except RepositoryNotFoundError:
        raise UsageError(f"--model {name}: no model {repo_id!r} on the Hub (or it is private){also}") from None
    except Exception as exc:  # no network: name resolution, refused connection, timeout
        raise UsageError(f"--model {name}: Hub id {repo_id!r} is not in the local cache and the Hub cannot be "
                         f"reached ({type(exc).__name__}: {' '.join(str(exc).split())}){also}") from None


def detect_family(config, tokenizer) -> str:
    """``--scoring auto``: the family the checkpoint's architecture names, else what its config type supports
    (a BERT-type encoder without architecture is a masked LM when its tokenizer has a mask token)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, \
        MODEL_FOR_MASKED_LM_MAPPING_NAMES

    for arch in config.architectures or ():
        if arch.endswith("ForMaskedLM"):
            return "mlm"
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal"
        if arch.endswith("ForConditionalGeneration") and config.is_encoder_decoder:
            return "seq2seq"
    if config.is_encoder_decoder:
        return "seq2seq"
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and tokenizer.mask_token is not None:
        return "mlm"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise UsageError(f"a {type(config).__name__} model is none of the families probekit scores (masked, causal, "
                     f"seq2seq LM): pass --scoring if it is one")


def load_lm(ref: ModelRef, *, scoring: str = "auto", device: str = "cpu", seed: int = 0,
            dtype: str = "float32") -> LoadedModel:
    """A masked, causal or seq2seq LM (``scoring``: auto detects it) with a fast tokenizer, in an explicit
    dtype; records whether its LM head was pretrained.

    ``seed`` fixes the initialisation of a head the checkpoint lacks, so outputs stay deterministic.
    """
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, \
        AutoTokenizer

    transformers.logging.set_verbosity_error()  # its load report: what matters is logged below, once
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(ref.location)
    if not tokenizer.is_fast:
        raise UsageError(f"--model {ref.name}: a fast tokenizer is needed (offsets locate the choice in context)")
    config = AutoConfig.from_pretrained(ref.location)
    family = detect_family(config, tokenizer) if scoring == "auto" else scoring
    if family not in FAMILIES:
        raise UsageError(f"--scoring must be one of auto, {', '.join(FAMILIES)}, got {scoring!r}")
    if family == "mlm" and tokenizer.mask_token is None:
        raise UsageError(f"--model {ref.name}: its tokenizer has no mask token, so MC-MLM cannot score it "
                         f"(a causal or seq2seq model is scored with --scoring causal or seq2seq)")
    auto_class = {"mlm": AutoModelForMaskedLM, "causal": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}
    torch.manual_seed(seed)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        model, info = auto_class[family].from_pretrained(ref.location, output_loading_info=True, dtype=torch_dtype)
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
                       dtype=str(torch_dtype).removeprefix("torch."), family=family)
