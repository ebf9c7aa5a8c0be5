"""What several ``probes`` command groups share: argparse value types and help texts, and the manifest path."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path
from typing import Iterator

from probekit.errors import shown
from probekit.outputs.paths import out_file, out_folder  # noqa: F401  (out_folder: the commands import it from here)

PARAMS_HELP = "params file over the built-in defaults (default: ./params.yaml if present, else built-in only)"


MANIFEST_HELP = "sources manifest (default: ./raw/sources.yaml, else the one of this probekit checkout)"


class Names:
    """A registry's names as an argument's ``choices``, read when a value is checked or the help shown (``help=
    "one of: %(choices)s"``), not when the parser is built: building it imports no registry. ``read``: the
    function that lists them, as ``module:function`` (``generators:available``), imported when first needed."""

    def __init__(self, read: str):
        self._read = read

    def _names(self) -> list[str]:
        module, _, name = self._read.partition(":")
        return getattr(importlib.import_module(module), name)()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, value) -> bool:
        return value in self._names()


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {shown(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def batch_size(text: str) -> int | str:
    return text if text == "auto" else positive(text)


DEVICE_HELP = "cpu, cuda, cuda:1, ..., mps, or auto (cuda when torch sees a GPU, else cpu)"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:[0-9]{1,4})?")


def device(text: str) -> str:
    """``--device``'s form: auto, cpu, cuda, cuda:N or mps (anything else a usage error when parsed, no import).
    Whether torch sees it is :func:`check_device`'s question."""
    if not _DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda, cuda:N (a GPU's index) or mps, got "
                                         f"{shown(text)}")
    kind, _, index = text.partition(":")
    return f"{kind}:{int(index)}" if index else text


def check_device(value: str | None) -> None:
    """A ``--device`` torch does not see is a usage error, raised before anything loads
    (:func:`probekit.device.check_device`; torch is imported for cuda and mps only)."""
    from probekit.device import check_device as checked

    checked(value)


MODEL_HELP = "an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id"


FORCE_HELP = ("replace an output that probekit did not write (or of another kind, or a link), and everything in it, "
              "after saying what that deletes. Never touched, even with --force: a repository (.git, .dvc, .hg) at "
              "any depth, the project's DVC cache, a results store (only added to), the current folder, the project, "
              "the home folder, or a folder holding one of them")


def add_force(parser) -> None:
    """The ``--force`` of a command that writes outputs."""
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


class Read(str):
    """A path option's value that the command reads (``type=Read``): no output may overlap it
    (:func:`io_paths`)."""


class Written(str):
    """A path option's value that the command writes (``type=Written``): it may not overlap what the command
    reads; its own claim checks the rest (:mod:`probekit.outputs`)."""


class Searched(str):
    """A folder searched for dataset folders (``--data`` of export and publish): the command checks its outputs
    against the folders it finds, not the whole of it."""


class ReadPath(type(Path())):
    """:class:`Read` for an option whose value is a :class:`~pathlib.Path`."""


class WrittenPath(type(Path())):
    """:class:`Written` for an option whose value is a :class:`~pathlib.Path`."""


POSITIONAL = ("results", "path", "answers", "folder")
"""The path arguments that are positional (said by name in a refusal: ``RESULTS``)."""


def io_paths(args) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The paths a parsed command line writes and reads (its options typed :class:`Written` and :class:`Read`), each
    with its option (``--data``; a positional argument by its name)."""
    writes, reads = [], []
    for dest, value in vars(args).items():
        for v in value if isinstance(value, list) else [value]:
            flag = dest.upper() if dest in POSITIONAL else f"--{dest.replace('_', '-')}"
            if isinstance(v, (Written, WrittenPath)):
                writes.append((flag, str(v)))
            elif isinstance(v, (Read, ReadPath)):
                reads.append((flag, str(v)))
    return writes, reads


def report_out(out: str, force: bool = False) -> Path:
    """A report command's ``--out`` (``pararel-report``, ``calum-report``): the markdown file, its JSON beside it."""
    return out_file(out, "the markdown report", suffix=".md", beside=".json", force=force)
