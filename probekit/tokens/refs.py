"""Model references: what the user typed (an alias of the params' ``models``, a folder, ``pkg:<package>``, a Hub
id) resolved to a location ``from_pretrained`` can read, before anything heavy is imported. Generators (one-token
filters) and evaluators (loading) both start here."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from probekit.errors import UsageError, shown

PACKAGE_PREFIX = "pkg:"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


@dataclass(frozen=True)
class ModelRef:
    name: str       # what the user typed (an alias, an id, a path)
    spec: str       # the alias's target, or ``name`` itself
    location: str   # a local folder or a Hub id, ready for ``from_pretrained``


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
        raise UsageError(f"--model {name}: {spec}: no installed Python package {shown(module_name)} "
                         f"(pip install it, or give an alias, a folder or a Hub id)") from None
    getter = getattr(module, "get_model_path", None)
    folder = Path(getter() if getter else Path(module.__file__).parent / "model")
    if not (folder / "config.json").is_file():
        raise UsageError(f"--model {name}: package {shown(module_name)} ships no model at {folder}")
    return str(folder)


def _check_hub(name: str, repo_id: str, also: str) -> None:
    """A Hub id must be in the local cache, or exist on a reachable Hub; offline fails at once."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    if constants.HF_HUB_OFFLINE:
        raise UsageError(f"--model {name}: Hub id {shown(repo_id)} is not in the local cache and HF_HUB_OFFLINE "
                         f"is set{also}")
    try:
        model_info(repo_id, timeout=10)
    except GatedRepoError:
        raise UsageError(f"--model {name}: {shown(repo_id)} is gated on the Hub: accept its terms and log in "
                         f"(hf auth login){also}") from None
    except RepositoryNotFoundError:
        raise UsageError(f"--model {name}: no model {shown(repo_id)} on the Hub (or it is private){also}") from None
    except Exception as exc:  # no network: name resolution, refused connection, timeout
        raise UsageError(f"--model {name}: Hub id {shown(repo_id)} is not in the local cache and the Hub cannot be "
                         f"reached ({type(exc).__name__}: {' '.join(str(exc).split())}){also}") from None
