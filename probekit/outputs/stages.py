"""Which outputs of a DVC stage a ``probes`` command wrote: the stage's command is one probekit command, and the
output is the value of one of that command's path options, of that option's kind.

A stage counts only when its ``cmd`` is a single command (no ``&&``, ``;``, pipe or redirection, one entry of a
list) run as ``probes …``, ``…/probes …`` or ``python -m probes …``; its output then is probekit's when its path
(from the stage's ``wdir``) is the value of one of the options that command writes (:data:`WRITES`: ``--out X``,
``--out=X``, the last one given, as argparse takes it), or a path inside a folder that option writes whole, or the
JSON a report writes beside its markdown (:data:`BESIDE`); and when its shape is the option's (a folder for a folder
output, a file for a file). An option spelled short (argparse's ``--ou``), a variable, or any other command, and the
output is the user's: the rule fails closed.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from pathlib import Path

FILE, FILES = "file", "files"
WRITES: dict[str, dict[str, str]] = {
    "sources fetch": {"--dest": FILES},
    "tables": {"--out": "tables"},
    "generate": {"--out": "dataset"},
    "tokenizers": {"--out": FILE},
    "fidelity": {"--out": FILE},
    "audit": {"--out": FILE},
    "evaluate zeroshot": {"--out": "results"},
    "evaluate features": {"--out": "results"},
    "evaluate curve": {"--out": "results", "--features": "results"},
    "evaluate curve-lr": {"--out": "results"},
    "evaluate mcqa": {"--out": "results"},
    "evaluate pararel": {"--out": "results"},
    "evaluate calum": {"--out": "results"},
    "train consistency": {"--out": "results"},
    "report": {"--out": FILE, "--metrics": FILE, "--plot": FILE, "--heatmaps": "figures", "--size-matrix": FILE},
    "olmpics-report": {"--out": FILE, "--metrics": FILE, "--plots": "figures"},
    "pararel-report": {"--out": FILE, "--plot": FILE},
    "calum-report": {"--out": FILE, "--plot": FILE},
    "grid": {"--out": "store"},
    "publish": {"--dry-run": "dry-run"},
    "export lm-eval": {"--out": "export"},
    "annotate export": {"--out": FILE},
    "annotate import": {"--out": FILE},
    "diff": {"--json": FILE, "--examples": FILE},
    "code": {"--out": "code"},
    "browse build": {"--out": "site"},
    "browse publish": {"--dry-run": "space"},
}
"""Every ``probes`` command that writes, with the options it writes and the kind of each (:data:`FILE`: a loose
file; :data:`FILES`: a folder of loose files; else the kind of the folder output, :data:`probekit.outputs.KINDS`)."""

BESIDE = {("fidelity", "--out"), ("audit", "--out"), ("pararel-report", "--out"), ("calum-report", "--out"),
          ("report", "--size-matrix")}
"""The file options whose command writes a ``.json`` beside the file too."""

_PYTHON = re.compile(r"python[0-9.]*(\.exe)?|py(\.exe)?", re.IGNORECASE)
_PUNCTUATION = set("();<>|&")


def written_kind(cmd, out: Path, folder: bool, wdir: Path) -> str | None:
    """The kind of output (``file`` for a loose file) that the stage command ``cmd`` (``dvc.lock``'s ``cmd``: a
    string or a list) writes at ``out`` (absolute; ``folder``: DVC records a folder there), the command run in
    ``wdir`` (absolute); None when it is not a probekit command, or not one that writes ``out``."""
    found = command_of(cmd)
    if found is None:
        return None
    name, options = found
    for flag, value in options.items():
        kind = _match(name, flag, value, out, folder, wdir)
        if kind:
            return kind
    return None


def command_of(cmd) -> tuple[str, dict[str, str]] | None:
    """The probekit command a stage runs (``evaluate zeroshot``) with the value of each option of it that writes
    (the last given), or None: not one plain ``probes`` command."""
    if isinstance(cmd, list):
        if len(cmd) != 1:
            return None
        cmd = cmd[0]
    if not isinstance(cmd, str):
        return None
    words = _words(cmd)
    if not words:
        return None
    first = words[0].replace("\\", "/").rsplit("/", 1)[-1]
    if first in ("probes", "probes.exe"):
        rest = words[1:]
    elif _PYTHON.fullmatch(first) and words[1:3] == ["-m", "probes"]:
        rest = words[3:]
    else:
        return None
    name = " ".join(rest[:2]) if " ".join(rest[:2]) in WRITES else rest[0] if rest and rest[0] in WRITES else None
    if name is None:
        return None
    flags, options = WRITES[name], {}
    words = rest[len(name.split()):]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            break
        flag, eq, value = word.partition("=")
        if flag in flags:
            if not eq:
                if i + 1 >= len(words):
                    break
                value, i = words[i + 1], i + 1
            options[flag] = value
        i += 1
    return name, options


def _words(cmd: str) -> list[str] | None:
    """``cmd`` split as a POSIX shell would; None when it holds a shell operator, a substitution or a variable."""
    if "`" in cmd or "$" in cmd:
        return None
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    if any(w and set(w) <= _PUNCTUATION for w in words):
        return None
    return words


def _match(name: str, flag: str, value: str, out: Path, folder: bool, wdir: Path) -> str | None:
    kind = WRITES[name][flag]
    if not value:
        return None
    parts = value.replace("\\", "/").split("/")
    templated = next((i for i, p in enumerate(parts) if "{" in p), None)
    if templated is not None:   # --out results/zeroshot/m/{probe}: one folder per probe under the root
        root = _absolute(wdir, "/".join(parts[:templated]) or ".")
        return kind if kind not in (FILE, FILES) and (out == root or root in out.parents) and out != wdir else None
    written = _absolute(wdir, value)
    if out == written:
        if kind == FILE:
            return FILE if not folder else None
        if kind == FILES:
            return FILE if folder else None
        return kind if folder else None
    if written in out.parents and kind != FILE:
        return FILE if kind == FILES else kind   # inside a folder the command writes
    if (name, flag) in BESIDE and not folder and out == written.with_suffix(".json"):
        return FILE
    return None


def _absolute(wdir: Path, value: str) -> Path:
    return Path(os.path.normpath(wdir / os.path.expanduser(value))) if not posixpath.isabs(value) else \
        Path(os.path.normpath(value))
