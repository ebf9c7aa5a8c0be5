"""Publishing a built results site (``probes browse build``) as a static Hugging Face Space: the site's files and a
``README.md`` whose YAML front matter makes it a Space (``sdk: static``, ``app_file: index.html``; the Hub's
"Spaces configuration reference"), in one commit that also deletes the files an earlier site left there.

Only the site's own files are published (:mod:`.own`: regular files reached without a link, no hidden name), the
ones ``probes browse serve`` serves: a link inside the site (to a private file, to a folder) is never followed, a
FIFO never opened; what was left out is named in one warning line. A site whose ``index.html`` or ``data/site.json``
is a link is refused (:func:`~evaluators.browse.serve.site_folder`).

The README is staged beside a copy of the site, never written into the site folder. ``dry_run``: that staged folder
is written instead (atomically, a ``space`` output of probekit's), nothing is sent. The token comes from ``token``,
``HF_TOKEN`` or the saved login and is never printed; a network failure is retried as ``probes publish`` retries
(:func:`probekit.hub.publish._retrying`: a commit is all or nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evaluators.browse.own import open_own, read_own, walk_own
from evaluators.browse.serve import SITE_JSON, site_folder

README = "README.md"
APP_FILE = "index.html"
SDK = "static"
DESCRIPTION = "Every model's answer on every probe example"
"""The Space's ``short_description`` (the Hub takes at most 60 characters)."""


@dataclass
class SpaceOutcome:
    """What :func:`publish_space` did: the Space, its commit and URL (None for a dry run), the files sent (or
    written to the dry-run folder), README first."""

    repo_id: str
    files: list[str] = field(default_factory=list)
    commit: str | None = None
    url: str | None = None
    folder: Path | None = None   # the dry-run folder


SHOWN = 8
"""How many left-out entries the warning names (then a count)."""


def site_files(site: Path) -> list[str]:
    """The site's own files as paths relative to it (``/``-separated, sorted): regular files reached without a
    link, hidden ones left out (probekit's marker and ledger, a temporary folder): what the Space serves, as
    ``probes browse serve`` serves it."""
    return walk_own(site)[0]


def warn_left_out(site: Path, left: list[str]) -> None:
    """One line on stderr naming what of the site is not published (links, FIFOs, other special files)."""
    if left:
        shown = ", ".join(left[:SHOWN]) + (f" and {len(left) - SHOWN} more" if len(left) > SHOWN else "")
        print(f"{site}: warning: left out {len(left)} {'entry' if len(left) == 1 else 'entries'} that "
              f"{'is' if len(left) == 1 else 'are'} no regular file of the site's own (a link is never followed): "
              f"{shown}", file=sys.stderr)


def _place(site: Path, rel: str, target: Path, link: bool) -> None:
    """``target``: the site's own file ``rel``, reached without following a link (:func:`open_own`), hard-linked
    to when ``link`` and the file system allows, else copied; :class:`OSError` when it is no longer one."""
    *folders, name = rel.split("/")
    if link:
        parent, _ = open_own(site, folders)
        try:
            os.link(name, target, src_dir_fd=parent, follow_symlinks=False)   # the entry itself, never its target
        except OSError:
            pass   # another file system: copied
        else:
            if stat.S_ISREG(os.lstat(target).st_mode):
                return
            target.unlink()   # a link or a FIFO put there since the walk
            raise FileNotFoundError(rel)
        finally:
            os.close(parent)
    fd, folder = open_own(site, [*folders, name])
    if folder:
        os.close(fd)
        raise IsADirectoryError(rel)
    with open(fd, "rb") as source, open(target, "xb") as out:
        shutil.copyfileobj(source, out)


def readme(site_json: dict, repo_id: str) -> str:
    """The Space's README: the front matter that makes it a static Space, and a few lines on what it shows (the
    site's banner, e.g. the smoke scale's, when it has one)."""
    from huggingface_hub import SpaceCard, SpaceCardData

    from probekit import __version__

    title = str(site_json.get("title") or "probekit results")
    data = SpaceCardData(title=title, sdk=SDK, app_file=APP_FILE, emoji="🔎", colorFrom="blue", colorTo="gray",
                         pinned=False, short_description=DESCRIPTION, tags=["probekit", "evaluation", "probing"])
    runs, shards = len(site_json.get("runs") or []), len(site_json.get("shards") or [])
    banner = site_json.get("banner")
    body = (f"# {title}\n\nA static results browser built by {site_json.get('generated_by') or f'probekit {__version__}'}"
            f" (`probes browse build`; published with `probes browse publish --repo-id {repo_id}`): {runs} runs on "
            f"{shards} datasets. Every model's answer on every example, beside its controls, with the statistics "
            "computed when the site was built.\n" + (f"\n> {banner}\n" if banner else ""))
    return str(SpaceCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def stage(site: Path, folder: Path, repo_id: str, *, link: bool = False) -> list[str]:
    """Write into the new ``folder`` the site's files and the Space's README; the files, README first. ``link``:
    hard links where the file system allows (a temporary folder read by the upload), else copies. Only the site's
    own files (:func:`site_files`); what else it holds is named in one warning line (:func:`warn_left_out`)."""
    site_json = json.loads(read_own(site, SITE_JSON).decode("utf-8"))
    found, left = walk_own(site)
    files = []
    folder.mkdir(parents=True)
    for rel in found:
        if rel == README:
            continue   # the Space's README replaces any of the site's
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            _place(site, rel, target, link)
        except OSError:
            left.append(f"{rel} (changed while it was staged)")
            continue
        files.append(rel)
    warn_left_out(site, left)
    (folder / README).write_text(readme(site_json, repo_id), encoding="utf-8")
    return [README, *files]


def publish_space(site_dir: str | os.PathLike, repo_id: str, *, token: str | None = None, private: bool = False,
                  dry_run: str | os.PathLike | None = None, force: bool = False,
                  accept_restricted: bool = False, log: Callable[[str], None] = print) -> SpaceOutcome:
    """Publish the built site ``site_dir`` as the static Space ``repo_id`` (created, ``private`` if asked, when it
    does not exist), or with ``dry_run`` write the folder that would be uploaded there (``force``: replace a folder
    there that probekit did not write). A folder that is no built site is a usage error naming it. A public push
    of a site showing rows of a restricted dataset (``site.json``'s ``restricted``: a non-commercial or unlicensed
    source, as ``probes publish`` judges it) is refused unless ``accept_restricted``."""
    from probekit import outputs
    from probekit.outputs import atomic, overlap
    from probekit.outputs.paths import out_folder

    site = site_folder(site_dir)
    with outputs.claims(), overlap.reading([("DIR", site)]):
        if dry_run is not None:
            out = out_folder(dry_run, "the folder that would be uploaded is written inside it", "--dry-run",
                             kind="space", force=force)
            with atomic.atomic_path(out, kind="space") as tmp:
                files = stage(site, tmp, repo_id)
            return SpaceOutcome(repo_id, files, folder=out)
    reasons = json.loads(read_own(site, SITE_JSON).decode("utf-8")).get("restricted") or []
    if reasons and not private and not accept_restricted:
        from probekit.hub.publish import PublishError

        raise PublishError(f"{repo_id}: the Space would be public (no --private) and the site shows rows of "
                           f"restricted datasets: {'; '.join(reasons[:3])}{' …' if len(reasons) > 3 else ''}; push "
                           "it --private, or give --accept-restricted-licences after checking the licences")
    return _push(site, repo_id, token=token, private=private, log=log)


def _push(site: Path, repo_id: str, *, token: str | None, private: bool, log: Callable[[str], None]) -> SpaceOutcome:
    from probekit.hub import publish

    secret = token or publish.token()
    api = publish.hub_api(secret)
    with tempfile.TemporaryDirectory(prefix="probekit-space-") as tmp:
        folder = Path(tmp) / "space"
        files = stage(site, folder, repo_id, link=True)
        sent = {"commit": False}

        def attempt() -> SpaceOutcome:
            api.create_repo(repo_id, repo_type="space", space_sdk=SDK, private=private, exist_ok=True)
            sent["commit"] = True
            commit = api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=folder,
                                       commit_message=f"probekit: the results site ({len(files)} files)",
                                       delete_patterns="*")   # what an earlier site left; .gitattributes is kept
            return SpaceOutcome(repo_id, files, commit=commit.oid, url=commit.commit_url)

        def done() -> str:
            return ("a Hub commit is all or nothing: the Space is as it was or fully updated" if sent["commit"]
                    else "nothing was committed")

        try:
            return publish._retrying(attempt, repo_id, secret, log, done)
        except Exception as exc:
            if secret in str(exc):   # never let the token through, whatever raised
                raise publish.PublishError(publish.one_line(exc, secret)) from None
            raise
