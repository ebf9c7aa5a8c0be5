"""What several ``probes`` command groups share: argparse value types and help texts, and the manifest path."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from probekit import outputs
from probekit.errors import UsageError, shown

PARAMS_HELP = "params file over the built-in defaults (default: ./params.yaml if present, else built-in only)"


MANIFEST_HELP = "sources manifest (default: ./raw/sources.yaml, else the one of this probekit checkout)"


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
    """A ``--device`` torch does not see (cuda, cuda:N, mps) is a usage error, raised as soon as the command line is
    parsed (:func:`probes.main.main`), before anything loads; torch is imported for these values only. Not in the
    argparse type: a grid's spec is parsed on a machine that need not have its workers' GPUs. GPUs are counted as
    ``torch.cuda.device_count`` counts them, through NVML where it can: CUDA does not start, so a fork stays safe
    and CALUM can still narrow ``CUDA_VISIBLE_DEVICES`` to cuda:N."""
    if value in (None, "auto", "cpu"):
        return
    import torch

    if value == "mps":
        if not torch.backends.mps.is_available():
            raise UsageError(f"argument --device: mps: torch {torch.__version__} sees no MPS device (an Apple GPU): "
                             f"use --device cpu or auto")
        return
    count = torch.cuda.device_count()
    if not count:
        build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a build without CUDA"
        raise UsageError(f"argument --device: {value}: torch sees no CUDA device (torch {torch.__version__}, "
                         f"{build}): use --device cpu or auto")
    index = int(value.partition(":")[2] or 0)
    if index >= count:
        raise UsageError(f"argument --device: {value}: torch sees {count} CUDA device{'s' * (count > 1)} (cuda:0"
                         f"{f' to cuda:{count - 1}' if count > 1 else ''})")


def given(value, default):
    """An option's value, else its default from params (for options where 0 is a valid value)."""
    return default if value is None else value


def manifest_of(args) -> Path:
    from probekit.sources.manifest import default_manifest

    return Path(args.manifest) if args.manifest else default_manifest()


MODEL_HELP = "an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id"


def out_folder(out: str | Path | None, holds: str, flag: str = "--out", *, force: bool = False,
               replaced: bool = True) -> Path | None:
    """A command's output folder, checked before any work: a folder or nothing yet, never a file; not the current
    folder, the project, the home folder or one holding them; one probekit wrote, or empty, or new
    (:func:`probekit.outputs.claim`; ``force``: replace a folder of someone else's); and writable: the nearest
    folder above it that exists takes new files. ``holds``: what the folder is for, said when it is a file ("the
    probe's variants are written inside it"). ``replaced=False``: a folder the command only adds files to (the
    downloads of ``probes sources fetch``), which need not be ours. None stays None (an option not given)."""
    if out is None:
        return None
    outputs.not_empty(out, flag)
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {out}: is a file; give a folder ({holds})")
    if replaced:
        outputs.claim(out, flag, force=force)
    _makeable(path, flag)
    return path


FORCE_HELP = "replace an output folder probekit did not write, and everything in it (never the current folder, the " \
             "project, the home folder or one holding them)"


def add_force(parser) -> None:
    """The ``--force`` of a command that writes output folders."""
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def out_file(out: str | Path | None, what: str, flag: str = "--out", *, suffix: str | None = None,
             beside: str | None = None) -> Path | None:
    """A command's output file, checked before any work: not a folder, its folder can be made, and it ends in
    ``suffix`` when given; ``beside``: the suffix of a second file written next to it (a report's ``.json``), which
    must not be a folder either, nor the file itself. ``what``: the file, in the user's terms ("the markdown
    report"). None stays None (an option not given)."""
    if out is None:
        return None
    path = Path(out)
    if suffix and path.suffix != suffix:
        raise UsageError(f"{flag} {out}: {what} (…/name{suffix})" + (f"; its {beside[1:].upper()} is written beside "
                                                                      f"it" if beside else ""))
    if beside and path.suffix == beside:
        raise UsageError(f"{flag} {out}: {what}; its {beside[1:].upper()} is written beside it "
                         f"({path.with_suffix(beside).name})")
    for target in (path, path.with_suffix(beside) if beside else None):
        if target is not None and target.is_dir():
            raise UsageError(f"{flag} {out}: {'' if target == path else f'{target}, written beside it, '}is a "
                             f"folder; give a file name ({what})")
    _makeable(path, flag)
    return path


def _makeable(path: Path, flag: str) -> None:
    """The folders above ``path`` exist or can be made, and new files can be written there: the nearest one that
    exists is a folder, on a file system that is not read-only or full, that this user may write in."""
    for above in path.absolute().parents:
        if above.exists():
            if not above.is_dir():
                raise UsageError(f"{flag} {path}: {above} is a file, so no folder can be made inside it")
            why = unwritable(above)
            if why:
                raise UsageError(f"{flag} {path}: cannot write in {above}: {why}")
            return


def unwritable(folder: Path) -> str | None:
    """Why no file can be written in ``folder`` (read-only file system, no space left, no permission), or None."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        stat = None
    if stat is not None and stat.f_flag & os.ST_RDONLY:
        return "the file system is read-only"
    if stat is not None and stat.f_bavail * stat.f_frsize < MIN_FREE:
        return "the disk is full (no space left on the device)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied (this user may not write there)"
    return None


MIN_FREE = 1 << 20
"""Bytes a file system must have free for a command to start writing to it (a full disk fails before any work)."""


def report_out(out: str) -> Path:
    """A report command's ``--out`` (``pararel-report``, ``calum-report``): the markdown file, its JSON beside it."""
    return out_file(out, "the markdown report", suffix=".md", beside=".json")
