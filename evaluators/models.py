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


@dataclass
class LoadedModel:
    model: Any                 # a transformers PreTrainedModel
    tokenizer: Any             # its fast tokenizer
    name: str
    model_id: str              # the spec it was loaded from (Hub id, folder or pkg:)
    head_pretrained: bool      # False: the MLM head was newly initialised (no zero-shot result)
    dtype: str = "float32"     # the weights' dtype, as run

    def provenance(self) -> dict:
        """What a result records of the model: dtype, revision (the Hub commit where known), versions."""
        import torch
        import transformers

        from probekit import __version__

        return {"dtype": self.dtype, "model_revision": getattr(self.model.config, "_commit_hash", None),
                "versions": {"probekit": __version__, "torch": torch.__version__,
                             "transformers": transformers.__version__}}


def resolve_dtype(dtype: str, device: str):
    """``auto``: bfloat16 on a CUDA device that supports it, else float32 (bf16 matmuls are only fast on
    CPUs with AMX/AVX512-BF16: ask for ``bfloat16`` there). Explicit always: transformers 5 would otherwise
    load a bf16 checkpoint as bf16 and an fp32 one as fp32."""
    import torch

    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        cuda = device.startswith("cuda") and torch.cuda.is_available()
        dtype = "bfloat16" if cuda and torch.cuda.is_bf16_supported() else "float32"
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


def load_masked_lm(ref: ModelRef, *, device: str = "cpu", seed: int = 0, dtype: str = "float32") -> LoadedModel:
    """Any ``AutoModelForMaskedLM`` with a fast tokenizer; records whether its MLM head was pretrained.

    ``seed`` fixes the initialisation of a head the checkpoint lacks, so outputs stay deterministic.
    """
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    transformers.logging.set_verbosity_error()  # its load report: what matters is logged below, once
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(ref.location)
    if not tokenizer.is_fast:
        raise UsageError(f"--model {ref.name}: a fast tokenizer is needed (offsets locate the candidate in context)")
    if tokenizer.mask_token is None:
        raise UsageError(f"--model {ref.name}: its tokenizer has no mask token, so MC-MLM cannot score it "
                         f"(a causal or seq2seq model needs the scoring rules of those families)")
    torch.manual_seed(seed)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(ref.location, output_loading_info=True, dtype=torch_dtype)
    except ValueError as exc:
        if "Unrecognized configuration class" not in str(exc):
            raise
        raise UsageError(f"--model {ref.name}: a {type(AutoConfig.from_pretrained(ref.location)).__name__} "
                         f"model has no masked-LM head") from None
    prefix = model.base_model_prefix + "."
    head_missing = sorted(k for k in info["missing_keys"] if not k.startswith(prefix))
    if head_missing:
        log.warning("%s: the MLM head is not in the checkpoint and was newly initialised (seed %d; %s): "
                    "its predictions are not zero-shot results", ref.name, seed,
                    ", ".join(head_missing[:2]) + (", ..." if len(head_missing) > 2 else ""))
    return LoadedModel(model.to(device).eval(), tokenizer, ref.name, ref.spec, head_pretrained=not head_missing,
                       dtype=str(torch_dtype).removeprefix("torch."))
