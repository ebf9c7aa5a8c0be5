"""What several ``probes`` command groups share: argparse value types and help texts, and the manifest path."""

from __future__ import annotations

import argparse
from pathlib import Path

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


def given(value, default):
    """An option's value, else its default from params (for options where 0 is a valid value)."""
    return default if value is None else value


def manifest_of(args) -> Path:
    from probekit.sources.manifest import default_manifest

    return Path(args.manifest) if args.manifest else default_manifest()


MODEL_HELP = "an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id"


def out_folder(out: str | Path | None, holds: str, flag: str = "--out") -> Path | None:
    """A command's output folder, checked before any work: a folder or nothing yet, never a file, and the folders
    above it can be made. ``holds``: what the folder is for, said when it is a file ("the probe's variants are
    written inside it"). None stays None (an option not given)."""
    if out is None:
        return None
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {out}: is a file; give a folder ({holds})")
    _makeable(path, flag)
    return path


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
    """The folders above ``path`` exist or can be made: the nearest one that exists is a folder."""
    for above in path.parents:
        if above.exists():
            if not above.is_dir():
                raise UsageError(f"{flag} {path}: {above} is a file, so no folder can be made inside it")
            return


def report_out(out: str) -> Path:
    """A report command's ``--out`` (``pararel-report``, ``calum-report``): the markdown file, its JSON beside it."""
    return out_file(out, "the markdown report", suffix=".md", beside=".json")
