"""Pushing the upload folder of :mod:`probekit.hub.export` to one Hub dataset repo, and comparing with what is
published there.

One publish is one commit: the configs whose fingerprint differs from the Hub's card (their old files deleted,
their new Parquet files added) and the new card; none when no config's ``probekit`` block changed (its
"Changes" aside, :mod:`changelog`). Each uploaded config gets a new "Changes" entry, counted against the Hub's
Parquet files of the version it replaces, and a tag on the new commit (``<config>-v<semver>-<fingerprint12>``).
A network failure is retried (bounded, with backoff), each attempt re-reading the Hub first, so the repo is
either as it was or fully updated. The token comes from ``HF_TOKEN`` or the saved login and is never printed.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from probekit import __version__
from probekit.errors import ProbekitError, UsageError
from probekit.hub import bump, changelog, parquet
from probekit.hub.card import Card, render
from probekit.hub.export import CARD, Export, export
from probekit.hub.parquet import write_parquet

RETRIES = 5       # attempts of one publish
BACKOFF_S = 2.0   # wait before the second attempt; doubled after each failure


class PublishError(ProbekitError):
    """The Hub refused or could not be reached; the message says what was done."""


@dataclass
class Outcome:
    repo_id: str
    commit: str | None = None
    url: str | None = None
    uploaded: list[str] = field(default_factory=list)    # configs whose files were (re)uploaded
    described: list[str] = field(default_factory=list)   # configs whose card entry alone changed
    unchanged: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)        # one per uploaded config, on the new commit
    changes: dict[str, str] = field(default_factory=dict)  # uploaded config: its entry's "+added -removed ~changed"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


def token() -> str:
    """``HF_TOKEN``, else the saved login."""
    from huggingface_hub import get_token

    value = get_token()
    if not value:
        raise UsageError("no Hugging Face token: set HF_TOKEN or log in with `hf auth login`")
    return value


def hub_api(token: str | None = None):
    """An ``HfApi`` on ``$HF_ENDPOINT`` (read now, not at import) or the Hub."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None, token=token, library_name="probekit",
                 library_version=__version__)


def one_line(exc: BaseException, secret: str | None = None) -> str:
    """The error in one line (an HTTP error as its status, request and the server's message), no token in it."""
    from huggingface_hub.errors import HfHubHTTPError

    response = getattr(exc, "response", None) if isinstance(exc, HfHubHTTPError) else None
    if response is not None:
        server = " ".join(str(getattr(exc, "server_message", "") or "").split())
        text = f"HTTP {response.status_code} on {response.request.method} {response.request.url}" + (
            f": {server}" if server else "")
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
    text = text if len(text) <= 400 else text[:400] + "…"
    return text.replace(secret, "<token>") if secret else text


def _transient(exc: BaseException) -> bool:
    import httpx
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if isinstance(exc, HfHubHTTPError):
        code = exc.response.status_code if exc.response is not None else None
        return code is None or code in (408, 409, 412, 425, 429) or code >= 500
    return isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError, LocalEntryNotFoundError))


def hub_card(api, repo_id: str, revision: str | None = None):
    """``(README text or None, repo info)`` of the repo at ``revision``."""
    info = api.repo_info(repo_id, repo_type="dataset", revision=revision)
    if CARD not in {s.rfilename for s in info.siblings or []}:
        return None, info
    with tempfile.TemporaryDirectory() as cache:
        path = api.hf_hub_download(repo_id, CARD, repo_type="dataset", revision=info.sha, cache_dir=cache)
        return Path(path).read_text(encoding="utf-8"), info


def _norm(block) -> str:
    return json.dumps(block, sort_keys=True)


def restricted_refusal(blocks: dict, repo_id: str, why: str) -> str | None:
    """The one-line refusal of a public push of restricted configs (None when there are none)."""
    reasons: dict[str, list[str]] = {}
    for name, b in blocks.items():
        if b.get("restricted"):
            reasons.setdefault(b["restricted"], []).append(name)
    if not reasons:
        return None
    listed = "; ".join(f"{', '.join(names[:3])}{f' and {len(names) - 3} more' if len(names) > 3 else ''}: {r}"
                       for r, names in reasons.items())
    n = sum(map(len, reasons.values()))
    return (f"{repo_id} {why}, and {plural(n, 'config')} {'is' if n == 1 else 'are'} restricted ({listed}): "
            f"publish them with --private, or pass --accept-restricted-licences to acknowledge their licences")


class Upload:
    """The configs of one publish: their card entries at once, their Parquet files (under ``folder``) only when a
    config must be uploaded, so a publish that changes nothing converts nothing."""

    def __init__(self, configs: list, data_root: Path, folder: Path,
                 on_config: Callable[[Export], None] | None = None):
        self.configs, self.data_root, self.folder = {c.name: c for c in configs}, data_root, folder
        self.infos: dict = {}
        self.exports: dict[str, Export] = {}
        card = Card.empty()
        for config in configs:
            exp = export(config, data_root)
            card = card.update(Card.of(exp))
            if on_config:
                on_config(exp)
        self.card = card

    def export(self, name: str) -> Export:
        """The config's rows and block, exported once (for a config that is uploaded)."""
        if name not in self.exports:
            self.exports[name] = export(self.configs[name], self.data_root)
        return self.exports[name]

    def info(self, name: str):
        """The config's ``dataset_info`` entry, its Parquet files written first if they are not yet."""
        if name not in self.infos:
            self.infos[name] = write_parquet(self.export(name), self.folder)
        return self.infos[name]


def _plan(old_text: str | None, upload: Upload, hub_files: set[str], repo_id: str,
          previous_rows: Callable[[str], dict | None] = lambda name: None):
    """``(operations, outcome parts)``; no operations when no config's block differs from the Hub's (its
    "Changes" aside). ``previous_rows(config)``: the rows of the version on the Hub, which the new entries are
    counted against."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    old, local, folder = Card.parse(old_text), upload.card, upload.folder
    changed = [n for n, b in local.blocks.items() if (old.blocks.get(n) or {}).get("fingerprint") != b["fingerprint"]]
    described = [n for n, b in local.blocks.items()
                 if n not in changed and _norm(changelog.bare(old.blocks.get(n))) != _norm(changelog.bare(b))]
    unchanged = [n for n in local.blocks if n not in changed and n not in described]
    if not changed and not described:
        return [], changed, described, unchanged, "", {}
    # a config whose rows did not change keeps its files on the Hub, and its dataset_info entry there
    infos, blocks = {}, {}
    for n, b in local.blocks.items():   # one changed config's rows in memory at a time
        infos[n] = old.infos[n] if n not in changed and n in old.infos else upload.info(n)
        blocks[n] = changelog.with_history(b, changelog.history(b, old.blocks.get(n), lambda n=n: upload.export(n).rows,
                                                                lambda n=n: previous_rows(n)))
        upload.exports.pop(n, None)
    new = old.update(Card(blocks, infos, local.datasets, local.sources))
    ops = []
    for name in changed:
        files = sorted(p.relative_to(folder).as_posix() for p in (folder / name).rglob("*.parquet"))
        ops += [CommitOperationDelete(path) for path in sorted(hub_files)
                if path.startswith(f"{name}/") and path not in files]
        ops += [CommitOperationAdd(path, str(folder / path)) for path in files]
    ops.append(CommitOperationAdd(CARD, render(new, repo_id).encode("utf-8")))
    lines = [f"{n}: {(old.blocks.get(n) or {}).get('version', 'new')} -> {local.blocks[n]['version']} "
             f"({_entry_summary(blocks[n])})" for n in changed] + [
        f"{n}: card entry updated ({local.blocks[n]['version']})" for n in described]
    return ops, changed, described, unchanged, "\n".join(lines), {n: _entry_summary(blocks[n]) for n in changed}


def _entry_summary(block: dict) -> str:
    """The newest "Changes" entry of a block in a few words: "first published" or "+added -removed ~changed"."""
    entries = block.get(changelog.KEY) or [{}]
    return changelog.FIRST if entries[0].get("since") is None else changelog.summary(entries[0].get("splits") or {})


def push(repo_id: str, upload: Upload, *, token: str, private: bool = False, revision: str | None = None,
         accept_restricted: bool = False, keep_version: bool = False, log: Callable[[str], None] = print) -> Outcome:
    """Publish the configs of ``upload`` to ``repo_id`` (at branch ``revision``); each uploaded config's new
    "Changes" entry is counted against the Hub's files of the version it replaces, and its version tagged on the
    new commit. A config whose definition changed under the published version is refused
    (:func:`probekit.hub.bump.refusal`) unless ``keep_version``."""
    local = upload.card
    if not private and not accept_restricted:
        refusal = restricted_refusal(local.blocks, repo_id, "would be public (no --private)")
        if refusal:
            raise PublishError(refusal)
    api, state = hub_api(token), {"sent": False}

    def attempt() -> Outcome:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if revision and revision != "main":
            api.create_branch(repo_id, repo_type="dataset", branch=revision, exist_ok=True)
        text, info = hub_card(api, repo_id, revision)
        if not accept_restricted and not info.private:
            refusal = restricted_refusal(local.blocks, repo_id, "exists and is public")
            if refusal:
                raise PublishError(refusal)
        if not keep_version:
            refused = bump.refusals(local.blocks, Card.parse(text).blocks)
            if refused:
                raise PublishError(refused[0] + (f" (and {plural(len(refused) - 1, 'config')} more alike)"
                                                 if len(refused) > 1 else ""))
        files = {s.rfilename for s in info.siblings or []}
        ops, changed, described, unchanged, lines, summaries = _plan(
            text, upload, files, repo_id, lambda name: parquet.hub_rows(api, repo_id, info.sha, files, name))
        out = Outcome(repo_id, uploaded=changed, described=described, unchanged=unchanged, changes=summaries)
        if not ops:
            return out
        summary = (f"probekit: {lines.splitlines()[0]}" if len(lines.splitlines()) == 1 else
                   f"probekit: {plural(len(changed), 'config')} uploaded, {plural(len(described), 'card entry')} "
                   "updated")
        state["sent"] = True
        commit = api.create_commit(repo_id, ops, commit_message=summary, commit_description=lines,
                                   repo_type="dataset", revision=revision, parent_commit=info.sha)
        out.commit, out.url = commit.oid, commit.commit_url
        return out

    def committed() -> str:
        return ("every commit attempt failed, and a Hub commit is all or nothing: the repo is as it was or "
                f"fully updated (`probes versions --repo-id {repo_id}` shows which)" if state["sent"]
                else "nothing was committed")

    out = _retrying(attempt, repo_id, token, log, committed)
    if out.commit is not None:
        for name in out.uploaded:
            name_tag = changelog.tag(name, local.blocks[name]["version"])

            def create(name=name, name_tag=name_tag) -> None:
                api.create_tag(repo_id, tag=name_tag, tag_message=f"probekit: {name} {local.blocks[name]['version']}",
                               revision=out.commit, repo_type="dataset", exist_ok=True)

            left = f"commit {out.commit[:12]} was made, not its tag {name_tag} and the tags after it"
            try:
                _retrying(create, repo_id, token, log, lambda left=left: left)
            except PublishError as exc:
                raise PublishError(str(exc) if str(exc).endswith(left) else f"{exc}; {left}") from None
            out.tags.append(name_tag)
    return out


def _retrying(fn: Callable, repo_id: str, token: str, log: Callable[[str], None], done: Callable[[], str]):
    """``fn()``, retried on a transient Hub or network error (:data:`RETRIES` attempts, with backoff); any
    other error, or the last, as one :class:`PublishError` line (``done()``: what was left done)."""
    for n in range(1, RETRIES + 1):
        try:
            return fn()
        except ProbekitError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified just below
            if not _transient(exc):
                code = getattr(getattr(exc, "response", None), "status_code", None)
                hint = (" (is the token, from HF_TOKEN or `hf auth login`, allowed to write there?)"
                        if code in (401, 403) else "")
                raise PublishError(f"{repo_id}: {one_line(exc, token)}{hint}") from None
            if n == RETRIES:
                raise PublishError(f"{repo_id}: gave up after {RETRIES} attempts (last: {one_line(exc, token)}); "
                                   f"{done()}") from None
            wait = BACKOFF_S * 2 ** (n - 1)
            log(f"{repo_id}: attempt {n} of {RETRIES} failed ({one_line(exc, token)}); retrying in {wait:g} s")
            time.sleep(wait)
    raise AssertionError("unreachable")


def published(repo_id: str | None = None, folder: str | Path | None = None,
              revision: str | None = None) -> changelog.Previous | None:
    """The last published card and its configs' rows: a Hub repo's (None when it does not exist yet) or a
    dry-run folder's."""
    if folder is not None:
        path = Path(folder) / CARD
        if not path.is_file():
            raise UsageError(f"--published {folder}: no {CARD} (write one with probes publish --dry-run)")
        return changelog.Previous(Card.parse(path.read_text(encoding="utf-8")),
                                  lambda name: parquet.folder_rows(Path(folder), name))
    from huggingface_hub import get_token
    from huggingface_hub.errors import RepositoryNotFoundError

    secret = get_token()
    api = hub_api(secret)
    try:
        text, info = hub_card(api, repo_id, revision)
    except RepositoryNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001
        raise PublishError(f"{repo_id}: cannot read the published card: {one_line(exc, secret)}") from None
    files = {s.rfilename for s in info.siblings or []}

    def rows(name: str):
        try:
            return parquet.hub_rows(api, repo_id, info.sha, files, name)
        except Exception as exc:  # noqa: BLE001
            raise PublishError(f"{repo_id}: cannot read the published files of {name}: "
                               f"{one_line(exc, secret)}") from None
    return changelog.Previous(Card.parse(text), rows)


def published_card(repo_id: str | None = None, folder: str | Path | None = None, revision: str | None = None):
    """The last published card: a Hub repo's (None when it does not exist yet) or a dry-run folder's."""
    previous = published(repo_id, folder, revision)
    return None if previous is None else previous.card
