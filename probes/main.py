"""The ``probes`` command: one subcommand per kind of DVC stage (sources, generate, evaluate, report).

Argument parsing and input checks import nothing heavy, so mistakes come back at once; torch and
transformers are imported only when a model is about to be loaded.
"""

from __future__ import annotations

import argparse
import logging
import sys

from probekit import __version__, outputs
from probekit.errors import ProbekitError, UsageError, clipped
from probes import annotate as annotate_cli
from probes import calum as cli_calum
from probes import generate as generate_cli
from probes import grid as cli_grid
from probes import harness as harness_cli
from probes import harness_run as harness_run_cli
from probes import olmpics as cli_curves
from probes import pararel as cli_pararel
from probes import publish as cli_publish
from probes import run as run_cli
from probes import sources as sources_cli
from probes import zeroshot as zeroshot_cli
from probes.options import PARAMS_HELP, check_device

MESSAGE = 2000
"""The most characters of an error the command prints (its line; values in it are already cut short: `shown`)."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Every option's default shown in its help (where it has one); descriptions kept as written."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS \
                or not action.option_strings \
                or "default" in (action.help or ""):
            return action.help
        return f"{action.help} (default: {action.default})"


def parser() -> argparse.ArgumentParser:
    import generators  # globs, no imports of probe or loader modules
    from probekit.sources import loaders

    probes, table_sets = generators.available(), loaders.available()
    p = argparse.ArgumentParser(prog="probes", description=__doc__, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"probes (probekit) {__version__}")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(parent, name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help, description=description or help, formatter_class=_Formatter)

    sources_cli.add_commands(sub, command, table_sets)
    generate_cli.add_commands(sub, command, probes)
    ev = command(sub, "evaluate", "evaluate a model on probe data")
    ev_sub = ev.add_subparsers(dest="setup", required=True, metavar="SETUP")
    zeroshot_cli.add_evaluate(ev_sub, command)
    cli_curves.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_pararel.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_calum.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_grid.add_commands(sub, ev_sub, command, PARAMS_HELP, run=main)
    cli_publish.add_commands(sub, ev_sub, command, PARAMS_HELP)
    harness_cli.add_commands(sub, command)
    harness_run_cli.add_commands(sub, command)

    zeroshot_cli.add_commands(sub, command)
    run_cli.add_commands(sub, command)
    __import__("probes.rehearse").rehearse.add_commands(sub, command)   # probes rehearse (probes/rehearse.py)
    annotate_cli.add_commands(sub, command)
    return p


def resolve_device(device: str) -> str:
    """``--device auto``: ``cuda`` when torch sees a GPU, else ``cpu`` (logged); any other device as given. The one
    place ``auto`` is resolved (torch is imported only for it)."""
    if device != "auto":
        return device
    import torch

    resolved = "cuda" if torch.cuda.is_available() else "cpu"
    logging.getLogger("probekit").info("--device auto: %s", resolved)
    return resolved


class _Args(argparse.Namespace):
    """The parsed arguments; ``--device auto`` (every command's default) is resolved when the command first reads
    ``args.device``, so that argument, input and output-path errors still come back before torch is imported."""

    @property
    def device(self) -> str:
        try:
            value = self.__dict__["_device"]
        except KeyError:
            raise AttributeError("device") from None
        if value == "auto":
            value = self.__dict__["_device"] = resolve_device(value)
        return value

    @device.setter
    def device(self, value: str) -> None:
        self.__dict__["_device"] = value


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["lm-eval"] and argv[1:2] not in (["-h"], ["--help"]):
            # everything after `lm-eval` is the harness's own options, which argparse's REMAINDER cannot take
            args = parser().parse_args(["lm-eval"], namespace=_Args())
            args.harness_args = argv[1:]
        else:
            args = parser().parse_args(argv, namespace=_Args())
    except KeyboardInterrupt:
        print("probes: interrupted", file=sys.stderr)
        return 130
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("probes: %(levelname)s: %(message)s"))
    log = logging.getLogger("probekit")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    where = f"probes {args.command}"
    try:
        check_device(args.__dict__.get("_device"))   # a GPU torch does not see: before anything loads
        with outputs.claims():   # a folder claimed with --force: replaced by this command only
            return args.func(args)
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        message = clipped(" ".join(str(exc).split()), MESSAGE)
        if isinstance(exc, ProbekitError):
            print(f"{where}: error: {message}", file=sys.stderr)
            return 2 if isinstance(exc, UsageError) else 1
        if isinstance(exc, OSError):
            from probekit.atomic import disk_reason

            reason = disk_reason(exc)
            if reason and exc.filename:
                message = clipped(f"{exc.filename}: {reason}", MESSAGE)
            print(f"{where}: error: {message}", file=sys.stderr)
            return 1
        print(f"{where}: internal error: {type(exc).__name__}: {message} (run `probes --debug {args.command} ...` "
              f"for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
