"""The two sides of a comparison: what ``--old``/``--new`` name, read into the configs (dataset and variant, as the
Hub publishes them) they hold.

A side is
- a folder (the dataset folder or data tree that stands for PATH);
- a git revision of the project PATH is in: PATH at that revision, git-tracked and DVC-tracked files alike, read
  through DVC's own ``DVCFileSystem`` (the DVC cache; nothing is parsed by hand);
- a published Hub revision, ``hf://datasets/ORG/NAME[@REV]``: its card and Parquet files, as ``load_dataset``
  reads them.
Every error is one short line naming what is wrong (:class:`~probekit.errors.UsageError`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from probekit.data.jsonl import decoded, loads
from probekit.errors import DataError, ProbekitError, UsageError, shown

HUB = re.compile(r"^hf://datasets/(?P<repo>[\w.-]+/[\w.-]+)(?:@(?P<rev>.+))?$")
WORKTREE = "working tree"


@dataclass
class Entry:
    """One config of a side: its name (the Hub's), ``format``, the dataset and variant it is, its role (main,
    control, grid), the variant a control derives from, and ``load() -> {split: rows}``."""

    name: str
    format: str
    probe: str
    dataset: str
    variant: str
    role: str
    base: str | None
    load: Callable[[], dict[str, list[dict]]]
    digest: Callable[[], str] | None = None
    """The sha256 of the files its rows are read from (None: not known, a Hub side): two configs with one digest
    hold the same rows, which are then read once."""


@dataclass
class Side:
    """What one side holds: ``label`` (as the reports name it) and its configs by name."""

    label: str
    entries: dict[str, Entry]
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    project_file: Callable[[str], str | None] = lambda rel: None
    """The text of a file of the project at this side (a path relative to the project root, e.g. a stage's
    predictions), None when it has none there or the side is not a version of the project (a folder, the Hub)."""

    def close(self) -> None:
        for fn in self.cleanup:
            fn()
        self.cleanup.clear()


def _names(name: str, fmt: str, probe: str, role: str) -> tuple[str, str]:
    """``(dataset, variant)`` of a config name: ``<probe>[-<variant>][-<mode>]`` (MC), ``<probe>-<task>-<variant>``
    (pairs), ``<probe>-<relation>`` (ParaRel: a relation stands for the variant)."""
    if fmt == "pair_cls":
        dataset, _, variant = name.rpartition("-")
        return dataset, variant
    if fmt == "cloze_set":
        return probe, name[len(probe) + 1:] if name.startswith(probe + "-") else name
    suffix = ""
    if role == "grid" and name.endswith("-grid"):
        name, suffix = name[:-len("-grid")], "-grid"
    variant = "original" if name == probe else name[len(probe) + 1:] if name.startswith(probe + "-") else name
    return probe + suffix, variant


# --- a folder -----------------------------------------------------------------------------------------------------

def _configs(path: Path) -> list:
    """The configs (:class:`probekit.hub.export.Config`) of the dataset folders under the folder ``path``: those
    whose ``meta.json`` has a dataset format; [] when it holds none (an lm-eval export, cached features)."""
    from probekit.hub import export as hub_export

    try:
        return hub_export.discover(path)
    except UsageError:   # no dataset folder in it (the only UsageError of a folder that exists)
        return []


def folder_side(path: str | Path, label: str | None = None) -> Side:
    """The configs of the dataset folders under ``path`` (none when ``path`` does not exist: every config is
    added or removed); a folder holding none (an lm-eval export) is an error."""
    from probekit.hub.export import EXPORTERS

    path = Path(path)
    label = label or str(path)
    if not path.exists():
        return Side(label, {})
    if not path.is_dir():
        raise UsageError(f"{path}: not a folder (give a dataset folder or a data tree)")
    configs = _configs(path)
    if not configs:
        raise UsageError(f"{path}: no dataset folders in it (a meta.json with format {', '.join(EXPORTERS)})")
    entries, digests = {}, {}

    def digest(folder: Path) -> str:
        if folder not in digests:
            h = hashlib.sha256()
            for f in sorted(folder.rglob("*.jsonl")):
                h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
            digests[folder] = h.hexdigest()
        return digests[folder]

    for config in configs:
        meta = config.meta
        dataset, variant = _names(config.name, meta["format"], config.probe, config.role)
        base = (meta.get("definition") or {}).get("base")
        entries[config.name] = Entry(config.name, meta["format"], config.probe, dataset, variant, config.role, base,
                                     lambda c=config: c.load()[0], lambda c=config: digest(c.folder))
    return Side(label, entries)


# --- a git revision, through DVC ----------------------------------------------------------------------------------

def _git_root(folder: Path) -> Path | None:
    for f in [folder, *folder.parents]:
        if (f / ".git").exists():
            return f
    return None


def project_root(path: Path) -> Path:
    """The git work tree ``path`` lies in, ``..`` and links resolved (``path`` need not exist). A path outside the
    current folder's project (beside it, or its parent) is refused unless it lies in a project of its own: a git
    revision is read inside its project only."""
    here = path.resolve()
    root, current = _git_root(here), _git_root(Path.cwd().resolve())
    if current is not None and here in current.parents:   # the project's parent holds more than the project
        root = None
    if root is None:
        where = str(path) if str(path) == str(here) else f"{path} ({here})"
        if current is None:
            raise UsageError(f"{where}: not inside a git project, so a revision cannot be read (give --old and "
                             f"--new as folders)")
        raise UsageError(f"{where}: outside the git project at {current}, so a revision cannot be read there (give "
                         f"--old and --new as folders to compare plain folders)")
    return root


def _remote_hint(root: Path) -> str:
    try:
        from dvc.repo import Repo

        with Repo(str(root)) as repo:
            remote = repo.config["core"].get("remote")
    except Exception:  # noqa: BLE001 - the hint is best effort
        remote = None
    return (f"`dvc fetch -r {remote}` (or `dvc pull -r {remote}`) gets it from the remote '{remote}'" if remote else
            "no DVC remote is configured here (`dvc remote add -d NAME URL`), so `dvc repro` at that revision is "
            "the way to rebuild it")


def _missing(root: Path, rev: str, where: str) -> UsageError:
    return UsageError(f"{where} at {rev} is not in this project's DVC cache: {_remote_hint(root)}")


def _within(path: str, folders: list[str]) -> bool:
    """Whether ``path`` (posix, relative to the project) is one of ``folders`` or inside one."""
    return any(path == d or path.startswith(d + "/") for d in folders)


def _own_names(fn: Callable, copy: Path, own: str) -> Callable:
    """``fn`` whose errors name ``own`` (``REV:PATH``, as git names a file at a revision) for the temporary
    ``copy`` its files were read from."""
    def call(*args):
        try:
            return fn(*args)
        except (DataError, UsageError) as exc:
            raise type(exc)(str(exc).replace(str(copy), own)) from None
    return call


def _missing_datasets(root: Path, rev: str, rel: str, unread: list[str], folders: list[str]) -> list[str]:
    """What among ``unread`` (what the DVC cache cannot list at a revision, so its files are not known) holds
    dataset folders: one inside a dataset folder; one the working tree holds with dataset folders in it (one without,
    an lm-eval export or cached features, is not compared); one it lacks when it is PATH (``rel``) or holds it. Any
    other is not known to hold datasets: not compared, and logged."""
    out = []
    for u in sorted(unread):
        local = root / u
        if _within(u, folders):
            out.append(u)
        elif local.is_dir():
            if _configs(local):
                out.append(u)
        elif _within(rel, [u]):
            out.append(rel)
        else:
            logging.getLogger("probekit").warning(
                f"{u} at {rev} is not in this project's DVC cache, nor in the working tree: whether it holds dataset "
                f"folders is not known, so it is not compared")
    return out


def git_side(path: Path, rev: str) -> Side:
    """PATH as it was at ``rev``: its dataset folders copied out of git and the DVC cache into a temporary folder
    (only those: other DVC outputs under PATH are not read)."""
    from dvc.api import DVCFileSystem
    from dvc.scm import RevError

    from probekit.hub.export import EXPORTERS

    root = project_root(path)
    rel = path.resolve().relative_to(root).as_posix()
    try:
        fs = DVCFileSystem(str(root), rev=rev)
        fs.ls("/", detail=False)
    except RevError:
        raise UsageError(f"--old/--new {rev}: no such revision in the git project at {root}") from None
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"{root} at {rev}: cannot be read with DVC: {' '.join(str(exc).split())[:200]}") from None
    files: list[str] = []
    unread: list[str] = []   # DVC directories whose manifest is not cached: their files are not known

    def walk(p: str) -> None:
        try:
            info = fs.info(p)
        except FileNotFoundError:
            return
        except Exception:  # noqa: BLE001 - inside a DVC directory whose manifest is not cached
            unread.append(p)
            return
        if info["type"] != "directory":
            files.append(p)
            return
        try:
            if (info.get("dvc_info") or {}).get("isout"):
                files.extend(fs.find(p, detail=False))
                return
            children = sorted(fs.ls(p, detail=False))
        except Exception:  # noqa: BLE001
            unread.append(p)
            return
        for child in children:
            walk(child)

    walk(rel)
    label = f"{rel} at {rev}"
    folders: list[str] = []   # the dataset folders: the outermost with a meta.json of a known format
    for meta_path in sorted(f for f in files if f.rsplit("/", 1)[-1] == "meta.json"):
        folder = meta_path.rsplit("/", 1)[0]
        if _within(folder, folders):
            continue
        try:
            data = fs.cat_file(meta_path)
        except Exception:  # noqa: BLE001 - not in the cache: whether it is a dataset's is decided with the others
            unread.append(folder)
            continue
        text = decoded(data, f"{rev}:{meta_path}")
        try:
            meta = loads(text, f"{rev}:{meta_path}")
        except json.JSONDecodeError as exc:
            raise DataError(f"{rev}:{meta_path}: not valid JSON: {exc}") from None
        if isinstance(meta, dict) and meta.get("format") in EXPORTERS:
            folders.append(folder)
    missing = _missing_datasets(root, rev, rel, unread, folders)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise _missing(root, rev, missing[0] + more)
    tmp = Path(tempfile.mkdtemp(prefix="probekit-diff-"))
    local = tmp / Path(rel).name
    try:
        for f in files:
            if _within(f, folders):
                target = local / Path(f).relative_to(rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    fs.get_file(f, str(target))
                except Exception:  # noqa: BLE001
                    raise _missing(root, rev, f) from None
        side = _own_names(folder_side, local, f"{rev}:{rel}")(local, label) if folders else Side(label, {})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    side.cleanup.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    for entry in side.entries.values():
        entry.load = _own_names(entry.load, local, f"{rev}:{rel}")

    def read(rel_file: str) -> str | None:
        try:
            data = fs.cat_file(rel_file)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001
            raise _missing(root, rev, rel_file) from None
        return decoded(data, f"{rev}:{rel_file}")
    side.project_file = read
    return side


# --- a published Hub revision -------------------------------------------------------------------------------------

def _hub_error(repo: str, rev: str | None, exc: BaseException) -> UsageError:
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    from probekit.hub.publish import one_line

    where = f"hf://datasets/{repo}" + (f"@{rev}" if rev else "")
    if isinstance(exc, RevisionNotFoundError):
        return UsageError(f"{where}: no such revision on the Hub")
    if isinstance(exc, RepositoryNotFoundError):
        return UsageError(f"{where}: no such Hub dataset repo (or no access to it with this token)")
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return UsageError(f"{where}: the Hub ({endpoint}) cannot be reached or refused: {one_line(exc)}")


def hub_side(spec: str) -> Side:
    """A published revision's configs: its card's ``probekit`` blocks and, when loaded, a config's Parquet files."""
    from huggingface_hub import get_token

    from probekit.hub import parquet
    from probekit.hub.card import Card
    from probekit.hub.publish import hub_api, hub_card

    m = HUB.match(spec)
    if not m:
        raise UsageError(f"{shown(spec)}: a Hub side is hf://datasets/ORG/NAME or hf://datasets/ORG/NAME@REVISION")
    repo, rev = m["repo"], m["rev"]
    api = hub_api(get_token())
    try:
        text, info = hub_card(api, repo, rev)
    except ProbekitError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified by _hub_error
        raise _hub_error(repo, rev, exc) from None
    card = Card.parse(text)
    if not card.blocks:
        raise UsageError(f"{spec}: its card has no probekit configs (not published by probes publish)")
    files = {s.rfilename for s in info.siblings or []}

    def load(name: str) -> dict[str, list[dict]]:
        try:
            return parquet.hub_rows(api, repo, info.sha, files, name) or {}
        except Exception as exc:  # noqa: BLE001
            raise _hub_error(repo, rev, exc) from None

    entries = {}
    for name, b in card.blocks.items():
        fmt, probe, role = b.get("format"), b.get("probe") or name, b.get("role") or "main"
        if fmt is None:
            raise DataError(f"{spec}: the card's config {name} has no format")
        dataset, variant = _names(name, fmt, probe, role)
        base = re.search(r"base: `([^`]+)`", b.get("note") or "")
        entries[name] = Entry(name, fmt, probe, dataset, variant, role, base[1] if base else None,
                              lambda n=name: load(n))
    label = f"{spec}" + ("" if rev else " (main)") + f" ({info.sha[:12]})"
    return Side(label, entries)


def _worktree_file(path: Path) -> Callable[[str], str | None]:
    try:
        root = project_root(path)
    except UsageError:
        return lambda rel: None

    def read(rel: str) -> str | None:
        f = root / rel
        return decoded(f.read_bytes(), f) if f.is_file() else None
    return read


def _revision(spec: str | None) -> bool:
    return spec is not None and not spec.startswith("hf://") and not Path(spec).is_dir()


def check_path(path: Path, *specs: str | None) -> None:
    """``path`` lies in its git project when one of ``specs`` is a git revision (:func:`project_root`): checked
    before any side is read, so that a PATH outside the project (its parent) is not read whole first."""
    if any(_revision(spec) for spec in specs):
        project_root(path)


def open_side(spec: str | None, path: Path) -> Side:
    """The side ``spec`` names for ``path``: None (the working tree), ``hf://...``, a folder, else a git revision."""
    if spec is None:
        side = folder_side(path, f"{path} ({WORKTREE})")
        side.project_file = _worktree_file(path)
        return side
    if not _revision(spec):
        return hub_side(spec) if spec.startswith("hf://") else folder_side(Path(spec))
    return git_side(path, spec)
