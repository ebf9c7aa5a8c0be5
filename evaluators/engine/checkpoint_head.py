"""The LM head at the checkpoint's own precision, for a model loaded in bf16 or fp16.

Loading a float32 checkpoint in bfloat16 rounds every weight to 8 significant bits. For the encoder that is the
precision asked for; for the output projection it is not: two answers whose output rows (or output biases) differ
by less than bf16 resolves get the same row, and their margin becomes a tie or another number altogether, however
precisely the projection is computed afterwards. So the head runs in float32 on weights read back from the
checkpoint's files at the precision they are stored in (:class:`Checkpoint`: safetensors, sharded or not, or a
torch ``pytorch_model.bin``):

- a masked LM's whole head, the transform (dense, activation, LayerNorm) and the projection: every parameter
  outside the encoder (:class:`Float32MlmHead`); for ``mask-logit`` only the candidates' rows of the projection
  (``rows``), for the full-vocabulary rules (PLL) all of them;
- a causal or seq2seq LM's projection (:func:`projection32`; what comes before it, GPT-2's final LayerNorm, T5's
  rescaling, is the network's own, run in its dtype like every other layer).

Each tensor read is checked against the loaded parameter: rounded to the model's dtype it must be that parameter,
bit for bit. A key the checkpoint does not hold under the parameter's names (a head newly initialised, a key
converted at load) is not used: the loaded parameter is, upcast to float32. A float32 model is left as it is.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

from probekit.tokens.checkpoint import weights_file

log = logging.getLogger("probekit")
REDUCED = (torch.bfloat16, torch.float16)


def checkpoint_folder(model) -> Path | None:
    """The folder of the files ``model`` was loaded from: its local folder, or its Hub snapshot in the local cache
    (at the commit loaded); None when neither is found."""
    config = getattr(model, "config", None)
    name = str(getattr(model, "name_or_path", "") or getattr(config, "_name_or_path", "") or "")
    if not name:
        return None
    if Path(name).is_dir():
        return Path(name)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json", revision=getattr(config, "_commit_hash", None))
    except Exception:  # not a Hub id (a path that is gone): nothing to read
        return None
    return Path(cached).parent if isinstance(cached, str) else None


class Checkpoint:
    """The named tensors of a checkpoint folder, read at their stored dtype without loading the rest (safetensors
    memory-mapped; a torch zip loaded with ``mmap``)."""

    def __init__(self, folder: Path, config: dict | None = None):
        self.folder, self.files, self._torch = folder, {}, {}
        chosen = weights_file(folder, config)   # the file from_pretrained read
        if chosen is None or not chosen.is_file():
            return
        if chosen.name.endswith(".index.json"):
            weight_map = json.loads(chosen.read_text(encoding="utf-8")).get("weight_map", {})
            self.files = {key: folder / name for key, name in weight_map.items()}
        else:
            self.files = {key: chosen for key in self._keys_of(chosen)}

    @classmethod
    def of(cls, model) -> "Checkpoint | None":
        """The checkpoint ``model`` was loaded from (:func:`checkpoint_folder`), or None where it is not found."""
        folder = checkpoint_folder(model)
        if folder is None:
            return None
        explicit = getattr(getattr(model, "config", None), "transformers_weights", None)
        return cls(folder, {"transformers_weights": explicit} if isinstance(explicit, str) else None)

    def _keys_of(self, path: Path) -> list[str]:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), "pt") as f:
                return list(f.keys())
        return list(self._torch_file(path))

    def _torch_file(self, path: Path) -> dict:
        """A torch checkpoint's state dict, memory-mapped; empty where it cannot be (a pre-zip torch file)."""
        if path not in self._torch:
            try:
                self._torch[path] = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
            except Exception:  # the loaded weights serve instead (with a warning for the projection)
                self._torch[path] = {}
        return self._torch[path]

    def get(self, key: str, rows: np.ndarray | None = None) -> torch.Tensor | None:
        """Tensor ``key`` as stored (its rows ``rows`` only, when given), or None when the checkpoint lacks it."""
        path = self.files.get(key)
        if path is None:
            return None
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), "pt") as f:
                if rows is None:
                    return f.get_tensor(key)
                part = f.get_slice(key)
                if len(part.get_shape()) == 0:
                    return None
                return torch.cat([part[int(r):int(r) + 1] for r in rows]) if len(rows) else None
        tensor = self._torch_file(path).get(key)
        if tensor is None or rows is None:
            return tensor
        return tensor[torch.as_tensor(rows, dtype=torch.long)].clone() if tensor.dim() else None


def _stored_names(name: str, prefix: str) -> list[str]:
    """The keys a parameter ``name`` may be stored under: as named, without or with the base model's prefix, and
    the legacy ``LayerNorm.gamma``/``beta`` (bert-base-uncased's own files)."""
    names = [name]
    if prefix:
        names.append(name[len(prefix) + 1:] if name.startswith(prefix + ".") else f"{prefix}.{name}")
    for n in list(names):
        if n.endswith("LayerNorm.weight"):
            names.append(n[:-len("weight")] + "gamma")
        elif n.endswith("LayerNorm.bias"):
            names.append(n[:-len("bias")] + "beta")
    return names


def aliases(model, param: torch.Tensor) -> list[str]:
    """Every name of ``param`` in ``model`` (tied weights have several: BERT's decoder and word embeddings)."""
    return [name for name, p in model.named_parameters(remove_duplicate=False) if p is param]


def read_float32(model, checkpoint: Checkpoint | None, param: torch.Tensor, names: Iterable[str],
                 rows: np.ndarray | None = None) -> tuple[torch.Tensor, bool]:
    """``param`` (its rows ``rows``) as float32 on the CPU, from the checkpoint under one of ``names`` where the
    stored tensor, rounded to the model's dtype, is the loaded parameter bit for bit; else the loaded parameter
    upcast. The flag says whether the checkpoint's was used."""
    loaded = param.detach()
    loaded = (loaded if rows is None else loaded[torch.as_tensor(rows, dtype=torch.long, device=loaded.device)]).cpu()
    if checkpoint is not None:
        prefix = getattr(model, "base_model_prefix", "")
        for name in names:
            for key in _stored_names(name, prefix):
                stored = checkpoint.get(key, rows)
                if (stored is not None and stored.is_floating_point() and stored.shape == loaded.shape
                        and torch.equal(stored.to(loaded.dtype), loaded)):
                    return stored.float(), True
    return loaded.float(), False


def projection(model) -> torch.nn.Linear | None:
    """The model's projection onto the vocabulary, when it is a reduced-precision linear layer: None for a float32
    model, and where the output embeddings are something else (DeBERTa-v2's non-legacy head: its MLM transform's
    dense layer, the projection a matmul with the input embeddings)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if (not isinstance(head, torch.nn.Linear) or head.weight.dtype not in REDUCED
            or head.out_features != getattr(model.config, "vocab_size", head.out_features)):
        return None
    return head


_warned: set[tuple[str, str]] = set()


def _warn_rounded(model, checkpoint: "Checkpoint | None", weight: torch.Tensor) -> None:
    """Once per model and folder: the projection runs on its loaded, rounded weights."""
    folder = checkpoint.folder if checkpoint else None
    name = str(getattr(model, "name_or_path", "") or type(model).__name__)
    where = f"in the checkpoint's files ({folder})" if folder else "(no checkpoint files found for the model)"
    if (name, str(folder)) not in _warned:
        _warned.add((name, str(folder)))
        log.warning("%s: the output projection's weights were not found at their own precision %s; its loaded "
                    "%s weights are used, upcast (answers whose margins are below that resolution may tie)",
                    name, where, str(weight.dtype).removeprefix("torch."))


def projection32(model) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The output projection's weight and bias at the checkpoint's precision, float32 on the model's device (the
    full ``[vocab, hidden]`` matrix: what the full-vocabulary rules need), or None where the model is float32 or
    has no such projection."""
    head = projection(model)
    if head is None:
        return None
    checkpoint = Checkpoint.of(model)
    weight, found = read_float32(model, checkpoint, head.weight, aliases(model, head.weight))
    if not found:
        _warn_rounded(model, checkpoint, head.weight)
    bias = None if head.bias is None else read_float32(model, checkpoint, head.bias, aliases(model, head.bias))[0]
    device = head.weight.device
    return weight.to(device), None if bias is None else bias.to(device)


def _to_float32(_module, args, kwargs):
    cast = lambda x: x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa: E731
    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


class Float32MlmHead:
    """A masked LM's head (every module outside the encoder: BERT's ``cls``, RoBERTa's ``lm_head``, DistilBERT's
    ``vocab_*``) run in float32 on the checkpoint's weights: ``head(**inputs)`` is ``model(**inputs)`` with the
    head's parameters replaced (``torch.func.functional_call``) and its inputs cast to float32. With ``rows`` only
    those rows of the projection are used: the logits' last axis is ``rows`` (:meth:`columns` maps token ids to
    it). The model itself is not changed.

    :meth:`of` gives None where the model is float32, or its head cannot be told from its encoder (remote code
    whose ``base_model`` is the model itself)."""

    def __init__(self, model, params: dict[str, torch.Tensor], modules: list[torch.nn.Module],
                 rows: torch.Tensor | None):
        self.model, self.params, self.modules, self.rows = model, params, modules, rows

    @classmethod
    def of(cls, model, rows: np.ndarray | None = None) -> "Float32MlmHead | None":
        proj = projection(model)
        if proj is None or model.base_model is model:
            return None
        prefix = model.base_model_prefix + "."
        named = [(n, p) for n, p in model.named_parameters(remove_duplicate=False) if not n.startswith(prefix)]
        projected = {id(proj.weight), id(proj.bias)}
        if rows is not None and any(id(p) not in projected and proj.out_features in p.shape for _, p in named):
            rows = None  # another vocabulary-sized weight in the head (MobileBERT's): the full projection
        checkpoint = Checkpoint.of(model)
        device, params, done = proj.weight.device, {}, {}
        for name, p in named:
            if id(p) not in done:
                part = rows if rows is not None and id(p) in projected else None
                done[id(p)], found = read_float32(model, checkpoint, p, aliases(model, p), part)
                if p is proj.weight and not found:
                    _warn_rounded(model, checkpoint, p)
                done[id(p)] = done[id(p)].to(device)
            params[name] = done[id(p)]
        modules = [m for m in model.children() if m is not model.base_model]
        return cls(model, params, modules, None if rows is None else torch.as_tensor(rows, device=device))

    def columns(self, tokens: torch.Tensor) -> torch.Tensor:
        """The logits' columns of vocabulary ids ``tokens`` (each one of ``rows``)."""
        return tokens if self.rows is None else torch.searchsorted(self.rows, tokens)

    def __call__(self, **inputs):
        handles = [m.register_forward_pre_hook(_to_float32, with_kwargs=True) for m in self.modules]
        try:
            out = torch.func.functional_call(self.model, self.params, (), inputs, tie_weights=False, strict=False)
        finally:
            for handle in handles:
                handle.remove()
        if self.rows is not None and out.logits.shape[-1] != len(self.rows):
            raise RuntimeError(f"the MLM head returned {out.logits.shape[-1]} columns for {len(self.rows)} rows")
        return out
