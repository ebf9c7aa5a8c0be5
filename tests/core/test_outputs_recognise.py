"""The parts of issue 51's items 3, 4 and 8 (probekit.outputs): which stage outputs a ``probes`` command wrote
(:mod:`probekit.outputs.stages`), DVC's configuration read as DVC reads it, and what is not a regular file."""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
from pathlib import Path

import pytest
import yaml

from probekit import outputs
from probekit.outputs import dvcconfig, legacy, stages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cmd, out, folder, kind", [
    ("probes generate age --out gen", "gen", True, "dataset"),
    ("python -m probes generate age --out=gen", "gen", True, "dataset"),
    ("/opt/venv/bin/probes report r --out r.md --heatmaps figs", "figs", True, "figures"),
    ("python3.11 -m probes report r --out r.md --heatmaps figs", "r.md", False, "file"),
    ("probes fidelity --probes d --out f.md", "f.json", False, "file"),           # the JSON beside the report
    ("probes evaluate curve --model m --out res", "res/mlp", True, "results"),    # inside the folder it writes
    ("probes evaluate zeroshot --model m --data d/{probe} --out res/m/{probe}", "res/m", True, "results"),
    ("probes grid --spec s.yaml --out store", "store/summary.jsonl", False, "store"),
    (["probes diff d --json m.json"], "m.json", False, "file"),
    ("probes sources fetch x --dest raw/x", "raw/x", True, "file"),
    # the user's: another command, a shell around it, another option, another shape, an abbreviation
    ("python make.py --out gen", "gen", True, None),
    ("probes generate age --out gen && python post.py gen", "gen", True, None),
    ("probes report r --out r.md > log.txt", "r.md", False, None),
    ("probes report r --out r.md; rm -rf figs", "r.md", False, None),
    (["probes generate age --out gen", "python post.py"], "gen", True, None),
    ("probes diff d --json m.json", "other.json", False, None),
    ("probes diff d --json m.json", "m.json", True, None),
    ("probes generate age --out gen", "gen", False, None),
    ("probes generate age --ou gen", "gen", True, None),
    ("probes generate age --out gen --out other", "gen", True, None),   # argparse takes the last
    ("probes generate age --data gen --out x", "gen", True, None),      # what it reads is not what it writes
    ("probes report r --out $OUT", "r.md", False, None),
    ("probes rehearse --out gen", "gen", True, None),
    ("probes-helper generate age --out gen", "gen", True, None),
])
def test_a_stage_output_is_probekits_only_when_its_probes_command_writes_it(cmd, out, folder, kind, tmp_path):
    assert stages.written_kind(cmd, tmp_path / out, folder, tmp_path) == kind


def test_every_option_the_cli_writes_is_known_to_the_stage_reader():
    """stages.WRITES is the CLI's table of written options (type=Written), so that a new command's outputs count
    as probekit's in dvc.lock; `sources list --dest` names the folder it lists, and writes nothing."""
    from probes.main import parser
    from probes.options import Added, Written, WrittenPath

    found = set()

    def walk(p, words):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, words + [name])
            elif isinstance(action.type, type) and issubclass(action.type, (Written, WrittenPath, Added)):
                found.add((" ".join(words), action.option_strings[0]))

    walk(parser(), [])
    known = {(name, flag) for name, flags in stages.WRITES.items() for flag in flags}
    assert found - {("sources list", "--dest")} == known


def test_every_output_of_probekits_own_pipeline_is_probekits():
    """The other side: this project's own dvc.lock, every stage a probes command, every output recognised."""
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())
    recorded = legacy._outs(ROOT / "dvc.lock", legacy._stamp(ROOT / "dvc.lock"), legacy._stamp(ROOT / "dvc.yaml"))
    paths = {ROOT / o["path"] for stage in lock["stages"].values() for o in stage.get("outs") or ()
             if o.get("hash") == "md5"}
    assert paths and paths == set(recorded)


def test_a_stage_output_is_read_from_the_stages_wdir(tmp_path):
    """dvc.lock's paths are from the stage's wdir (dvc.yaml), as its command runs there."""
    (tmp_path / "sub" / "gen").mkdir(parents=True)
    (tmp_path / "sub" / "gen.json").write_text("{}\n")
    md5 = hashlib.md5(b"{}\n").hexdigest()
    (tmp_path / "dvc.yaml").write_text("stages:\n  tok:\n    wdir: sub\n    cmd: probes tokenizers --out gen.json\n"
                                       "    outs: [gen.json]\n")
    (tmp_path / "dvc.lock").write_text(f"schema: '2.0'\nstages:\n  tok:\n    cmd: probes tokenizers --out gen.json\n"
                                       f"    outs:\n    - path: gen.json\n      hash: md5\n      md5: {md5}\n")
    assert legacy.recorded_kind(tmp_path / "sub" / "gen.json") == "file"
    (tmp_path / "gen.json").write_text("{}\n")   # the same bytes where the lock's path would be without the wdir
    assert legacy.recorded_kind(tmp_path / "gen.json") is None


def test_dvcs_configuration_is_read_as_dvc_reads_it(tmp_path, monkeypatch):
    """Every level, the later shadowing the earlier, a relative path from its file's folder, quotes and comments."""
    from dvc.config import Config

    for level in ("system", "global"):
        (tmp_path / level).mkdir()
        monkeypatch.setenv(f"DVC_{level.upper()}_CONFIG_DIR", str(tmp_path / level))
    root = tmp_path / "proj"
    (root / ".dvc").mkdir(parents=True)
    (tmp_path / "system" / "config").write_text("[cache]\n    dir = /nowhere/system-cache\n")
    (tmp_path / "global" / "config").write_text("[ cache ]\n    DIR = 'global cache'  \n")
    (root / ".dvc" / "config").write_text("[core]\n    analytics = false\n")
    cases = [(None, tmp_path / "global" / "global cache"), ("config", root / "repo-cache"),
             ("config.local", tmp_path / "local-cache")]
    for name, expected in cases:
        if name:
            value = "../repo-cache  # a comment" if name == "config" else '"../../local-cache"'
            (root / ".dvc" / name).write_text(f"[cache]\n    dir = {value}\n")
        dvc = Config(dvc_dir=str(root / ".dvc"))["cache"]["dir"]
        assert Path(dvc) == expected == dvcconfig.cache_dir(root)
    protected = {path for _, path in dvcconfig.caches(root)}
    assert {Path("/nowhere/system-cache"), tmp_path / "global" / "global cache", root / "repo-cache",
            tmp_path / "local-cache", root / ".dvc" / "cache"} <= protected


def test_what_is_not_a_regular_file_is_named_and_never_opened(tmp_path):
    fifo, sock = tmp_path / "fifo", tmp_path / "s.sock"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        (tmp_path / "null").symlink_to("/dev/null")
        (tmp_path / "file").write_text("x")
        (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
        assert outputs.non_regular(fifo) == "is a FIFO (named pipe)"
        assert outputs.non_regular(sock) == "is a socket"
        assert outputs.non_regular("/dev/null") == "is a character device"
        assert outputs.non_regular(tmp_path / "null") == "is a link to a character device (/dev/null)"
        for fine in ("file", "dangling", "nothing", "."):
            assert outputs.non_regular(tmp_path / fine) is None
        with pytest.raises(OSError, match="not a regular file"):
            outputs.marker.digest(fifo)   # at once: a blocking open would never return
        assert legacy._md5(fifo) is None and not outputs.marker.same_bytes(fifo, (0, "0" * 64))
        inv = outputs.inventory(tmp_path)
        assert inv.special == ["fifo (a FIFO (named pipe))", "s.sock (a socket)"] and "fifo" in inv.foreign
    finally:
        server.close()
