"""`probes browse build|serve|publish` (probes/browse.py): each parses its options and calls its library function
with them; the parser imports none of evaluators/browse (nor huggingface_hub) until a handler runs; `probes browse
serve` end to end in its own process: it prints its URL, answers a range request and stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import types
import urllib.request

import pytest

from probes.main import main

from helpers import REPO
from toy_site import BLOB, PRED, write_toy_site


@pytest.fixture
def calls(monkeypatch) -> list:
    """``evaluators.browse.build`` replaced by a module whose ``build_site`` records its calls."""
    seen: list = []
    fake = types.ModuleType("evaluators.browse.build")
    fake.build_site = lambda out, **kw: seen.append((out, kw))
    monkeypatch.setitem(sys.modules, "evaluators.browse.build", fake)
    return seen


def test_build_passes_its_options(calls, tmp_path, capsys):
    diff = tmp_path / "diff.json"
    diff.write_text("{}")
    assert main(["browse", "build", "--out", str(tmp_path / "site"), "--data", "d", "--results", "r",
                 "--diff", str(diff), "--diff", str(diff) + "l", "--force"]) == 0
    assert calls == [(str(tmp_path / "site"), {"data": "d", "results": "r", "diff": [str(diff), str(diff) + "l"], "force": True})]
    assert f"wrote the site to {tmp_path / 'site'}" in capsys.readouterr().out


def test_build_defaults(calls, tmp_path):
    assert main(["browse", "build", "--out", str(tmp_path / "site")]) == 0
    assert calls == [(str(tmp_path / "site"), {"data": "data", "results": "results", "diff": None, "force": False})]


def test_build_needs_out(calls, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["browse", "build"])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err and calls == []


def test_serve_passes_dir_and_port(monkeypatch, tmp_path):
    from evaluators.browse import serve

    seen = []
    monkeypatch.setattr(serve, "serve", lambda directory, port: seen.append((directory, port)))
    assert main(["browse", "serve", str(tmp_path), "--port", "0"]) == 0
    assert main(["browse", "serve", str(tmp_path)]) == 0
    assert seen == [(str(tmp_path), 0), (str(tmp_path), 8000)]


@pytest.mark.parametrize("argv, says", [
    (["browse", "serve", "x", "--port", "70000"], "a port is 0 to 65535, got 70000"),
    (["browse", "serve", "x", "--port", "eighty"], "expected a port number (0: a free one), got 'eighty'"),
    (["browse", "publish", "x", "--repo-id", "nope"], "expected ORG/NAME (a Hub Space id), got 'nope'"),
    (["browse", "publish", "x"], "the following arguments are required: --repo-id"),
    (["browse"], "the following arguments are required: ACTION"),
])
def test_bad_arguments_are_usage_errors(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_serve_refuses_a_folder_that_is_no_site(tmp_path, capsys):
    assert main(["browse", "serve", str(tmp_path), "--port", "0"]) == 2
    assert f"probes browse: error: {tmp_path}: not a built results site (no data/site.json)" in capsys.readouterr().err


def test_publish_passes_its_options(monkeypatch, tmp_path, capsys):
    from evaluators.browse import space

    seen = []

    def fake(directory, repo_id, **kw):
        seen.append((directory, repo_id, kw))
        return space.SpaceOutcome(repo_id, ["README.md"], commit="c0ffee" * 7, url="http://hub/spaces/o/n")

    monkeypatch.setattr(space, "publish_space", fake)
    assert main(["browse", "publish", str(tmp_path), "--repo-id", "o/n", "--private"]) == 0
    assert seen == [(str(tmp_path), "o/n", {"private": True, "dry_run": None, "force": False,
                                               "accept_restricted": False})]
    assert "o/n: commit c0ffeec0ffee: 1 files; http://hub/spaces/o/n" in capsys.readouterr().out
    assert main(["browse", "publish", str(tmp_path), "--repo-id", "o/n", "--private", "--dry-run",
                 str(tmp_path.parent / f"{tmp_path.name}-out")]) == 2
    assert "--private goes with a push, not --dry-run" in capsys.readouterr().err and len(seen) == 1


LAZY = """
import json, sys
from probes import main
main.parser("browse").parse_args(json.loads(sys.argv[1]))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("evaluators", "huggingface_hub", "generators",
                                                                "probekit.sources", "torch", "pandas")))))
"""


@pytest.mark.parametrize("argv", [["browse", "serve", "x"], ["browse", "build", "--out", "o"],
                                  ["browse", "publish", "x", "--repo-id", "o/n"]])
def test_the_browse_parser_imports_no_library(argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", LAZY, json.dumps(argv)], capture_output=True, text=True, check=True,
                          env=env, cwd=REPO)
    assert json.loads(done.stdout) == []


def test_probes_browse_serve_end_to_end(tmp_path):
    """Its own process: the URL printed, a range answered 206, Ctrl-C ends it (exit 130, as any probes command)."""
    site = write_toy_site(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTHONFAULTHANDLER": "1"}   # a SIGABRT dumps every thread's stack: where a stop hangs, if one does
    proc = subprocess.Popen([sys.executable, "-m", "probes", "browse", "serve", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving {site} at http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() else "")
        url = line.split(" at ")[1].split()[0]
        request = urllib.request.Request(url + PRED, headers={"Range": "bytes=-3"})
        with urllib.request.urlopen(request, timeout=10) as r:
            assert r.status == 206 and r.read() == BLOB[-3:]
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:   # once in a fresh clone's CI run (20 s then): say where it waits
            proc.send_signal(signal.SIGABRT)
            proc.wait(timeout=20)
            pytest.fail(f"probes browse serve still ran 60 s after SIGINT; its stacks:\n{proc.stderr.read()[-6000:]}")
        assert code == 130
        assert "probes browse: interrupted" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
