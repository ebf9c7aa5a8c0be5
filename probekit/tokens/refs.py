"""Model references: what the user typed (an alias of the params' ``models``, a folder, ``pkg:<package>``, a Hub
id) resolved to a location ``from_pretrained`` can read, before anything heavy is imported. Generators (one-token
filters) and evaluators (loading) both start here.

``random:<model>`` (``random@<seed>:<model>``) is the random-init baseline of ``<model>`` (any of the above): its
architecture (config.json) and tokenizer with freshly initialised weights, from ``<seed>`` (default: the loader's
seed, params ``scoring.seed``). Its scores are what the architecture and the tokenizer give without pretraining,
the row a pretrained model's must beat before they can be read as knowledge."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from probekit.errors import UsageError, shown
from probekit.tokens.checkpoint import check_folder, read_config

PACKAGE_PREFIX = "pkg:"
RANDOM = re.compile(r"random(?:@(?P<seed>-?\w+))?:(?P<target>.+)", re.S)
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


@dataclass(frozen=True)
class ModelRef:
    name: str       # what the user typed (an alias, an id, a path)
    spec: str       # the alias's target (its ``id`` when pinned), or ``name`` itself
    location: str   # a local folder or a Hub id, ready for ``from_pretrained``
    revision: str | None = None   # the Hub branch, tag or commit the params pin (``models.<alias>.revision``)
    random_init: bool = False     # ``random:<model>``: the architecture and tokenizer, no pretrained weights
    init_seed: int | None = None  # ``random@<seed>:``'s seed (None: the loader's seed)

    @property
    def pinned(self) -> dict:
        """``from_pretrained``'s keyword for the pinned revision (none when not pinned)."""
        return {"revision": self.revision} if self.revision else {}


def entry_parts(entry) -> tuple[str, str | None]:
    """``(id, revision)`` of a ``models`` entry: a string (revision None) or ``{id, revision}`` (checked by
    :meth:`probekit.params.ParamsFile.models`)."""
    if isinstance(entry, Mapping):
        given = entry["id"]
        if isinstance(given, (list, tuple, Mapping, set)):   # never stringified: an alias bomb would expand
            raise TypeError(f"a models entry's id must be a string, got a {type(given).__name__}")
        return str(given), entry.get("revision")
    return entry, None


def resolve_model(name: str, aliases: Mapping[str, str | Mapping], params_label: str,
                  needs: str | None = "weights") -> ModelRef:
    """An alias of the params' ``models``, a folder, ``pkg:<package>``, or a Hub id (cached, or found
    online): whatever fails says everything that was tried. An alias may pin a Hub revision
    (``{id: ..., revision: ...}``); a local model cannot have one.

    ``needs``: what the caller reads, checked in a local model before anything loads (:mod:`.checkpoint`):
    ``"weights"`` (config, tokenizer, weights), ``"tokenizer"`` (config and tokenizer: one-token filters, the
    audit, the family), None (nothing: only where the model is). A Hub model's cached config is checked too."""
    if needs not in ("weights", "tokenizer", None):
        raise ValueError(f"needs: weights, tokenizer or None, got {needs!r}")
    spec, revision = entry_parts(aliases.get(name, name))
    random = RANDOM.fullmatch(spec)
    if random:
        return _random_init(name, random, revision, aliases, params_label, needs)
    known = f"known aliases in {params_label} `models`: {', '.join(aliases) or 'none'}"
    local = spec.startswith(PACKAGE_PREFIX) or Path(spec).expanduser().exists() or not _HUB_ID.fullmatch(spec)
    if revision is not None and local:
        raise UsageError(f"--model {name}: {params_label} models.{name}.revision: {shown(revision)} pins a Hub "
                         f"revision, but {shown(spec)} is a local model (a folder or pkg:), which has none: remove "
                         f"the revision or give a Hub id")
    if spec.startswith(PACKAGE_PREFIX):
        folder = _package_folder(spec, name)
        if needs:
            check_folder(Path(folder), name, weights=needs == "weights")
        return ModelRef(name, spec, folder)
    path = Path(spec).expanduser()
    if path.exists() or not _HUB_ID.fullmatch(spec):  # a path, not an `org/name` Hub id
        if not path.is_dir():
            raise UsageError(f"--model {name}: no model folder {spec}" + ("" if name in aliases else f" ({known})"))
        if not (path / "config.json").is_file():
            raise UsageError(f"--model {name}: folder {path} has no config.json (not a saved model)")
        if needs:
            check_folder(path, name, weights=needs == "weights")
        return ModelRef(name, spec, str(path))
    config = _check_hub(name, spec, "" if name in aliases else f"; not an alias either ({known}) nor a folder",
                        revision)
    if needs and config:   # the architecture; tokenizer and weights are downloaded, or read from the cache, at load
        read_config(Path(config), f"--model {name}: the config.json of {shown(spec)} (Hub cache)", needs_type=False)
    return ModelRef(name, spec, spec, revision)


def _random_init(name: str, match: re.Match, revision: str | None, aliases: Mapping, params_label: str,
                 needs: str | None) -> ModelRef:
    """``random[@<seed>]:<model>``: ``<model>`` resolved (an alias too) for its config and tokenizer only."""
    target, seed = match["target"], match["seed"]
    if seed is not None and not seed.lstrip("-").isdigit():
        raise UsageError(f"--model {name}: {shown(match.string)}: the seed of random@<seed>:<model> must be an "
                         f"integer, got {shown(seed)}")
    if revision is not None:
        raise UsageError(f"--model {name}: {params_label} models.{name}.revision: a random-init model has no "
                         f"revision of its own: pin it on {shown(target)}'s entry")
    if target == name or RANDOM.fullmatch(entry_parts(aliases.get(target, target))[0]):
        raise UsageError(f"--model {name}: {shown(match.string)} must name a model (an alias, a folder, pkg: or a "
                         f"Hub id), not a random-init one")
    inner = resolve_model(target, aliases, params_label, needs="tokenizer" if needs else None)
    prefix = "random:" if seed is None else f"random@{int(seed)}:"
    return ModelRef(name, prefix + inner.spec, inner.location, inner.revision, random_init=True,
                    init_seed=None if seed is None else int(seed))


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


def _check_hub(name: str, repo_id: str, also: str, revision: str | None = None) -> str | None:
    """A Hub id (at ``revision``) must be in the local cache, or exist on a reachable Hub; offline fails at once.
    Its cached config.json, or None when it is not cached."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    if isinstance(cached, str):
        return cached
    if revision is not None:
        also = f" (at revision {shown(revision)})" + also
    if constants.HF_HUB_OFFLINE:
        raise UsageError(f"--model {name}: Hub id {shown(repo_id)} is not in the local cache and HF_HUB_OFFLINE "
                         f"is set{also}")
    try:
        model_info(repo_id, revision=revision, timeout=10)
    except RevisionNotFoundError:
        raise UsageError(f"--model {name}: {shown(repo_id)} has no revision {shown(revision)} on the Hub (check "
                         f"models.{name}.revision){also}") from None
    except GatedRepoError:
        raise UsageError(f"--model {name}: {shown(repo_id)} is gated on the Hub: accept its terms and log in "
                         f"(hf auth login){also}") from None
    except RepositoryNotFoundError:
        raise UsageError(f"--model {name}: no model {shown(repo_id)} on the Hub (or it is private){also}") from None
    except Exception as exc:  # no network: name resolution, refused connection, timeout
        raise UsageError(f"--model {name}: Hub id {shown(repo_id)} is not in the local cache and the Hub cannot be "
                         f"reached ({type(exc).__name__}: {' '.join(str(exc).split())}){also}") from None
    return None   # on the Hub, not cached: its files are downloaded at load
