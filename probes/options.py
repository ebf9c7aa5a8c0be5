"""What several ``probes`` command groups share: argparse value types and help texts, and the manifest path."""

from __future__ import annotations

import argparse
from pathlib import Path

from probekit.errors import UsageError

PARAMS_HELP = "params file over the built-in defaults (default: ./params.yaml if present, else built-in only)"


MANIFEST_HELP = "sources manifest (default: ./raw/sources.yaml, else the one of this probekit checkout)"


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
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


def report_out(out: str) -> Path:
    """A report command's ``--out`` (``pararel-report``, ``calum-report``): the markdown file, its JSON beside it."""
    out = Path(out)
    if out.suffix != ".md":
        raise UsageError(f"--out {out}: the markdown report (…/name.md); its JSON is written beside it")
    return out
