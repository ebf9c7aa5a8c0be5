"""A fake Hugging Face Hub on loopback, speaking the few endpoints ``huggingface_hub`` uses to publish a dataset
or a static Space: create a repo, a branch and a tag, repo info, validate a README's YAML, preupload (every file
answered "regular", so no LFS), commit (ndjson; the parent commit is checked), the tree of a revision (its files),
and resolve (HEAD/GET of a file at a revision). A revision is a branch, a tag or a commit sha (URL-quoted in a path:
unquoted); ``tags(repo)`` lists a repo's tags. A repo is a dataset or a Space (``kind(repo)``, ``sdk(repo)``): the
routes of the other type answer 404 for it.

It keeps every commit's snapshot and, per branch and path, the last commit that changed the path; ``fail(endpoint,
n)`` answers the next ``n`` requests of an endpoint with a 503 (``n=-1``: always). Write requests must carry the
token it was made with.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from helpers import LoopbackServer

REPO = r"(?P<kind>datasets|spaces)/(?P<repo>[\w.-]+/[\w.-]+)"
ROUTES = [
    ("POST", "create", re.compile(r"^/api/repos/create$")),
    ("POST", "validate", re.compile(r"^/api/validate-yaml$")),
    ("POST", "branch", re.compile(rf"^/api/{REPO}/branch/(?P<rev>[^/]+)$")),
    ("POST", "tag", re.compile(rf"^/api/{REPO}/tag/(?P<rev>[^/]+)$")),
    ("POST", "preupload", re.compile(rf"^/api/{REPO}/preupload/(?P<rev>[^/]+)$")),
    ("POST", "commit", re.compile(rf"^/api/{REPO}/commit/(?P<rev>[^/]+)$")),
    ("GET", "tree", re.compile(rf"^/api/{REPO}/tree/(?P<rev>[^/]+)$")),
    ("GET", "info", re.compile(rf"^/api/{REPO}(?:/revision/(?P<rev>[^/]+))?$")),
    ("GET", "resolve", re.compile(rf"^/{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")),
]
KIND = {"dataset": "datasets", "space": "spaces"}
"""``create``'s ``type`` (absent: a dataset here) -> the word of the routes."""


@dataclass
class Repo:
    private: bool
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)    # sha -> {path: content}
    branches: dict[str, str] = field(default_factory=dict)                # branch -> head sha
    last_commit: dict[str, dict[str, str]] = field(default_factory=dict)  # branch -> {path: sha}
    history: list[str] = field(default_factory=list)                      # every commit, in order
    tags: dict[str, str] = field(default_factory=dict)                    # tag -> sha
    kind: str = "datasets"                                                # datasets | spaces
    sdk: str | None = None                                                # a Space's sdk

    def sha(self, rev: str) -> str | None:
        """The commit a branch, tag or sha names (None: none)."""
        sha = self.branches.get(rev) or self.tags.get(rev) or rev
        return sha if sha in self.commits else None

    def files(self, rev: str) -> dict[str, bytes] | None:
        sha = self.sha(rev)
        return None if sha is None else self.commits[sha]


class FakeHub(LoopbackServer):
    methods = ("GET", "HEAD", "POST")
    protocol = "HTTP/1.1"

    def __init__(self, token: str):
        self.token, self.repos, self.failures = token, {}, {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        super().__init__()

    def respond(self, request):
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        code, payload, headers = self.handle(request.command, request.path, dict(request.headers), body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return code, data, {"Content-Type": "application/json", **headers}

    def fail(self, endpoint: str, times: int) -> None:
        self.failures[endpoint] = times

    def commits(self, repo_id: str) -> list[str]:
        return list(self.repos[repo_id].history) if repo_id in self.repos else []

    def files(self, repo_id: str, rev: str = "main") -> dict[str, bytes]:
        return dict(self.repos[repo_id].files(rev) or {})

    def tags(self, repo_id: str) -> dict[str, str]:
        """``{tag: commit sha}`` of a repo."""
        return dict(self.repos[repo_id].tags) if repo_id in self.repos else {}

    def last_commit(self, repo_id: str, branch: str = "main") -> dict[str, str]:
        return dict(self.repos[repo_id].last_commit.get(branch, {}))

    def kind(self, repo_id: str) -> str:
        """``datasets`` or ``spaces``."""
        return self.repos[repo_id].kind

    def sdk(self, repo_id: str) -> str | None:
        return self.repos[repo_id].sdk

    # --- routing ---------------------------------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, headers: dict, body: bytes):
        path = urlsplit(raw_path).path
        lookup = "GET" if method == "HEAD" else method
        for verb, name, pattern in ROUTES:
            m = pattern.match(path)
            if verb == lookup and m:
                args = {k: unquote(v) for k, v in m.groupdict().items() if v is not None}
                with self.lock:
                    self.requests.append((method, path))
                    left = self.failures.get(name, 0)
                    if left:
                        self.failures[name] = left - 1 if left > 0 else left
                        return 503, {"error": "Service Unavailable (fake hub)"}, {}
                    if verb == "POST" and headers.get("Authorization", headers.get("authorization")) \
                            != f"Bearer {self.token}":
                        return 401, {"error": "Invalid credentials"}, {}
                    kind = args.pop("kind", None)
                    if kind and args["repo"] in self.repos and self.repos[args["repo"]].kind != kind:
                        return self._not_found()
                    return getattr(self, f"_{name}")(headers=headers, body=body, **args)
        return 404, {"error": f"no route {method} {path}"}, {}

    def _repo(self, repo: str):
        return self.repos.get(repo)

    def _not_found(self, what="Repository not found"):
        return 404, {"error": what}, {"X-Error-Code": "RepoNotFound", "X-Error-Message": what}

    def _new_commit(self, repo: Repo, branch: str, files: dict[str, bytes], changed: set[str], message: str) -> str:
        parent = repo.branches.get(branch, "")
        sha = hashlib.sha1(json.dumps([parent, message, len(repo.history), sorted(changed)]).encode()).hexdigest()
        repo.commits[sha], repo.branches[branch] = files, sha
        repo.history.append(sha)
        last = repo.last_commit.setdefault(branch, {})
        for p in changed:
            if p in files:
                last[p] = sha
            else:
                last.pop(p, None)
        return sha

    # --- endpoints -------------------------------------------------------------------------------------------

    def _create(self, body, **_):
        payload = json.loads(body)
        repo_id = f"{payload.get('organization') or 'user'}/{payload['name']}"
        kind = KIND.get(payload.get("type") or "dataset")
        if kind is None:
            return 400, {"error": f"the fake hub makes dataset and space repos, not {payload['type']}"}, {}
        if repo_id in self.repos:
            return 409, {"error": f"You already created this {payload.get('type') or 'dataset'} repo",
                         "url": f"{self.url}/{kind}/{repo_id}"}, {}
        repo = self.repos[repo_id] = Repo(private=bool(payload.get("private")) or payload.get("visibility") == "private",
                                          kind=kind, sdk=payload.get("sdk"))
        self._new_commit(repo, "main", {".gitattributes": b"*.parquet filter=lfs\n"}, {".gitattributes"}, "initial")
        return 200, {"url": f"{self.url}/{kind}/{repo_id}", "name": repo_id}, {}

    def _validate(self, **_):
        return 200, {"errors": [], "warnings": []}, {}

    def _branch(self, repo, rev, **_):
        r = self._repo(repo)
        if r is None:
            return self._not_found()
        if rev in r.branches:
            return 409, {"error": "Reference already exists"}, {}
        r.branches[rev] = r.branches["main"]
        r.last_commit[rev] = dict(r.last_commit["main"])
        return 200, {}, {}

    def _tag(self, repo, rev, body, **_):
        r = self._repo(repo)
        if r is None:
            return self._not_found()
        sha, payload = r.sha(rev), json.loads(body or b"{}")
        if sha is None:
            return 404, {"error": f"Invalid rev id: {rev}"}, {"X-Error-Code": "RevisionNotFound"}
        if not payload.get("tag"):
            return 400, {"error": "no tag given"}, {}
        if payload["tag"] in r.tags or payload["tag"] in r.branches:
            return 409, {"error": "Reference already exists"}, {}
        r.tags[payload["tag"]] = sha
        return 200, {}, {}

    def _info(self, repo, rev="main", **_):
        r = self._repo(repo)
        if r is None:
            return self._not_found()
        sha = r.sha(rev)
        if sha is None:
            return 404, {"error": f"Invalid rev id: {rev}"}, {"X-Error-Code": "RevisionNotFound",
                                                              "X-Error-Message": f"Invalid rev id: {rev}"}
        return 200, {"id": repo, "sha": sha, "private": r.private,
                     "siblings": [{"rfilename": p} for p in sorted(r.commits[sha])]}, {}

    def _preupload(self, repo, body, **_):
        if self._repo(repo) is None:
            return self._not_found()
        files = json.loads(body)["files"]
        return 200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                               for f in files]}, {}

    def _commit(self, repo, rev, body, **_):
        r = self._repo(repo)
        if r is None or rev not in r.branches:
            return self._not_found()
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = lines[0]["value"]
        if header.get("parentCommit") and header["parentCommit"] != r.branches[rev]:
            return 412, {"error": "A commit has happened since. Please refresh and try again."}, {}
        files, changed = dict(r.commits[r.branches[rev]]), set()
        for op in lines[1:]:
            key, value = op["key"], op["value"]
            if key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
                changed.add(value["path"])
            elif key == "deletedFile":
                files.pop(value["path"], None)
                changed.add(value["path"])
            elif key == "deletedFolder":
                for p in [p for p in files if p.startswith(value["path"].rstrip("/") + "/")]:
                    files.pop(p)
                    changed.add(p)
            else:
                return 400, {"error": f"unsupported operation {key} (the fake hub takes regular files only)"}, {}
        sha = self._new_commit(r, rev, files, changed, header["summary"])
        return 200, {"commitUrl": f"{self.url}/{r.kind}/{repo}/commit/{sha}", "commitOid": sha, "success": True}, {}

    def _tree(self, repo, rev, **_):
        r = self._repo(repo)
        files = r.files(rev) if r is not None else None
        if files is None:
            return self._not_found()
        return 200, [{"type": "file", "path": p, "size": len(c), "oid": hashlib.sha1(c).hexdigest()}
                     for p, c in sorted(files.items())], {}

    def _resolve(self, repo, rev, path, **_):
        r = self._repo(repo)
        files = r.files(rev) if r is not None else None
        if files is None:
            return self._not_found()
        if path not in files:
            return 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"}
        content = files[path]
        return 200, content, {"X-Repo-Commit": r.sha(rev),
                              "ETag": f'"{hashlib.sha1(content).hexdigest()}"',
                              "Content-Type": "application/octet-stream"}


@contextmanager
def fake_hub(monkeypatch, tmp_path, token: str):
    """A :class:`FakeHub` that ``huggingface_hub`` talks to (``HF_ENDPOINT``, ``HF_TOKEN`` ``token``, ``HF_HOME`` in
    ``tmp_path``, offline mode off), closed at the end; probekit's publish retries without waiting."""
    import huggingface_hub.constants

    from probekit.hub import publish

    server = FakeHub(token)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(publish, "BACKOFF_S", 0.0)
    try:
        yield server
    finally:
        server.close()
