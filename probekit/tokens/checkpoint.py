"""A local model folder checked before anything loads (:func:`probekit.tokens.refs.resolve_model`): its config.json
names an architecture the installed transformers has, its tokenizer files are there, and its weights are there and
whole (a safetensors header against the file's size, a torch zip's directory), all without reading a tensor. Each
failure is one :class:`~probekit.errors.UsageError` line naming the folder or the file and what to do."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from probekit.errors import UsageError, shown

WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
"""The weights ``from_pretrained`` reads from a folder, first found first (transformers 5: no TF, no Flax), unless
config.json names its own (``transformers_weights``)."""
TOKENIZER_FILES = "tokenizer.json, vocab.txt, vocab.json with merges.txt, or a SentencePiece *.model"
_SENTENCEPIECE = (".model", ".spm")   # spiece.model, sentencepiece.bpe.model, tokenizer.model, spm.model; source.spm
_LEGACY_TORCH = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19"   # torch.save before torch 1.6: a pickle of its magic
_LFS_POINTER = b"version https://git-lfs"
_MAX_HEADER = 100_000_000   # safetensors refuses a longer header
PATH_SHOWN = 200


def check_folder(folder: Path, name: str, *, weights: bool = True) -> None:
    """``folder`` (a local model of ``--model name``) has a config.json of a known architecture, tokenizer files,
    and, when ``weights``, whole weights; else a :class:`UsageError` naming what is wrong."""
    config = read_config(folder / "config.json", f"--model {name}: {where(folder / 'config.json')}")
    check_tokenizer(folder, name)
    if weights:
        check_weights(folder, config, name)


def read_config(path: Path, what: str, *, needs_type: bool = True) -> dict:
    """config.json at ``path`` as a dict, its ``model_type`` known to the installed transformers (``needs_type``
    False: a config without one passes, as a Hub model's, which transformers matches by name); ``what`` starts
    each error ("--model m: /models/m/config.json")."""
    try:
        config = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:   # ValueError: JSON, and bytes that are not UTF-8
        raise UsageError(f"{what}: not readable JSON ({' '.join(str(exc).split())}): re-save the model "
                         f"(save_pretrained) or copy config.json again") from None
    if not isinstance(config, dict):
        raise UsageError(f"{what}: not a model config (a JSON object), it holds a {type(config).__name__}")
    model_type = config.get("model_type")
    if model_type is None and not needs_type:
        return config
    if model_type is None or model_type == "":
        raise UsageError(f"{what}: no model_type (transformers reads the architecture from it): re-save the model "
                         f"with save_pretrained, or add its type, e.g. \"model_type\": \"bert\"")
    if not isinstance(model_type, str):
        raise UsageError(f"{what}: model_type must be a string (e.g. \"bert\"), got {shown(model_type, 40)}")
    import transformers   # lazily: its import pulls in torch
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        own = "; its auto_map names code of its own, which probekit does not run" if "auto_map" in config else ""
        raise UsageError(f"{what}: model_type {shown(model_type, 40)} is not an architecture transformers "
                         f"{transformers.__version__} has (a newer transformers may have it{own})")
    return config


def check_tokenizer(folder: Path, name: str) -> None:
    """``folder`` holds what a tokenizer is built from: the files of a fast tokenizer, a WordPiece or BPE
    vocabulary, a SentencePiece model, or every file its tokenizer_config.json's class names (none for the
    byte-level ones: ByT5, CANINE). Without them transformers builds an empty tokenizer that reads every word
    as [UNK]."""
    names = {p.name for p in folder.iterdir() if p.is_file()}
    if ("tokenizer.json" in names or "vocab.txt" in names or {"vocab.json", "merges.txt"} <= names
            or any(n.endswith(_SENTENCEPIECE) for n in names) or _class_files_present(folder, names)):
        return
    raise UsageError(f"--model {name}: folder {where(folder)} has no tokenizer files ({TOKENIZER_FILES}): save the "
                     f"model's tokenizer into it (tokenizer.save_pretrained)")


def _class_files_present(folder: Path, names: set[str]) -> bool:
    """Every file the tokenizer class of tokenizer_config.json reads (its ``vocab_files_names``) is in the folder."""
    try:
        declared = json.loads((folder / "tokenizer_config.json").read_bytes()).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return False
    if not isinstance(declared, str) or not declared.isidentifier():
        return False
    import transformers

    try:
        files = getattr(transformers, declared).vocab_files_names
    except Exception:   # no such class, or one that needs a library not installed
        return False
    return {file for key, file in files.items() if key != "tokenizer_config_file"} <= names


def check_weights(folder: Path, config: dict, name: str) -> None:
    """The weights ``from_pretrained`` would read from ``folder`` are there, every shard of a sharded index too,
    and each file is whole (:func:`weights_problem`)."""
    chosen, explicit = weights_file(folder, config), config.get("transformers_weights")
    if isinstance(explicit, str) and not chosen.is_file():
        raise UsageError(f"--model {name}: {where(folder / 'config.json')}: transformers_weights names "
                         f"{shown(explicit)}, which is not a file of the folder")
    if chosen is None:
        raise UsageError(f"--model {name}: folder {where(folder)} has no weights ({', '.join(WEIGHTS)}): save "
                         f"the model into it (model.save_pretrained), or copy its weights there")
    for file in _shards(chosen, name) if chosen.name.endswith(".index.json") else [chosen]:
        if problem := weights_problem(file):
            raise UsageError(f"--model {name}: {where(file)} {problem}")


def weights_file(folder: Path, config: dict | None = None) -> Path | None:
    """The weights file ``from_pretrained`` reads from ``folder``: the one config.json's ``transformers_weights``
    names (whether or not it exists), else the first of :data:`WEIGHTS` present; None when none is."""
    explicit = (config or {}).get("transformers_weights")
    if isinstance(explicit, str):
        return folder / explicit
    return next((folder / n for n in WEIGHTS if (folder / n).is_file()), None)


def _shards(index: Path, name: str) -> list[Path]:
    """The shard files a sharded checkpoint's index names (its ``weight_map``'s values), every one present."""
    try:
        files = sorted(set(json.loads(index.read_bytes())["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"--model {name}: {where(index)} is not a shard index (JSON with a weight_map of tensor "
                         f"to file): re-save the model (save_pretrained) or copy it again") from None
    if not all(isinstance(f, str) and f and Path(f).name == f for f in files):
        raise UsageError(f"--model {name}: {where(index)}: its weight_map names files outside the folder or no "
                         f"file ({shown(files)})")
    missing = [f for f in files if not (index.parent / f).is_file()]
    if missing:
        raise UsageError(f"--model {name}: {where(index)} names {len(missing)} shard(s) not in the folder "
                         f"({shown(missing)}): copy them there, or download the model again")
    return [index.parent / f for f in files]


def weights_problem(path: Path) -> str | None:
    """What is wrong with the weights file ``path`` (None: nothing found), read without loading a tensor: a
    safetensors file's header and its size against the tensors it describes; a torch checkpoint's zip
    directory (or torch's format before 1.6, not checked further); a Git LFS pointer in place of either."""
    try:
        with path.open("rb") as file:
            head = file.read(8)
            if head == _LFS_POINTER[:8] and file.read(len(_LFS_POINTER) - 8) == _LFS_POINTER[8:]:
                return "is a Git LFS pointer, not the weights: fetch them (git lfs pull) or download the model again"
            if path.name.endswith(".safetensors"):
                return _safetensors_problem(file, head, path.stat().st_size)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if path.name.endswith((".bin", ".pt", ".pth")):
        return _torch_problem(path, head)
    return None


def _safetensors_problem(file, head: bytes, size: int) -> str | None:
    again = "(an interrupted download or copy): copy or download it again"
    if len(head) < 8:
        return f"is truncated: {size:,} bytes, too short for a safetensors header {again}"
    length = int.from_bytes(head, "little")
    if length > _MAX_HEADER:
        return "is not a safetensors file (its first 8 bytes are no header length): copy or download it again"
    if 8 + length > size:
        return f"is truncated: {size:,} bytes, shorter than its own header ({8 + length:,} bytes) {again}"
    try:
        header = json.loads(file.read(length))
        ends = [info["data_offsets"][1] for key, info in header.items() if key != "__metadata__"]
        if not all(isinstance(end, int) for end in ends):
            raise TypeError
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return "is not a safetensors file (its header is not one): copy or download it again"
    expected = 8 + length + max(ends, default=0)
    if size < expected:
        return f"is truncated: {size:,} bytes of the {expected:,} its header describes {again}"
    if size > expected:
        return f"is damaged: {size:,} bytes, {size - expected:,} more than its header describes: copy or download " \
               f"it again"
    return None


def _torch_problem(path: Path, head: bytes) -> str | None:
    if head.startswith(b"PK\x03\x04"):   # torch.save since 1.6: a zip, its directory at the end
        try:
            with zipfile.ZipFile(path) as archive:
                archive.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            return f"is truncated or damaged (its zip directory cannot be read: {exc}): copy or download it again"
        return None
    with path.open("rb") as file:
        start = file.read(262)
    if start.startswith(_LEGACY_TORCH) or start[257:262] == b"ustar":   # torch.save before 1.6; before 0.4 (tar)
        return None
    return "is not a torch checkpoint (neither the zip of torch.save nor its older format): copy or download it again"


def damaged_weights(folder: Path) -> str | None:
    """After a load failed: the first weights file in ``folder`` (a local model, or a Hub model's snapshot in the
    cache) that is damaged, as ``"<file> <what is wrong>"``; only files present are read (a Hub snapshot holds
    what was downloaded). None: none found damaged."""
    for name in WEIGHTS:
        path = folder / name
        if not path.is_file():
            continue
        try:
            files = sorted({folder / f for f in json.loads(path.read_bytes())["weight_map"].values()
                            if isinstance(f, str) and Path(f).name == f}) if name.endswith(".json") else [path]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{where(path)} is not a shard index (JSON with a weight_map): download the model again"
        for file in files:
            if file.is_file() and (problem := weights_problem(file)):
                return f"{where(file)} {problem}"
    return None


def where(path: Path) -> str:
    """``path`` as an error shows it: whole up to :data:`PATH_SHOWN` characters, else its end (which names the
    file) after "…"."""
    text = str(path)
    return text if len(text) <= PATH_SHOWN else "…" + text[-(PATH_SHOWN - 1):]
