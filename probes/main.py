"""The ``probes`` command: one subcommand per kind of DVC stage (sources, generate, evaluate, report).

Argument parsing and input checks import nothing heavy, so mistakes come back at once; torch and
transformers are imported only when a model is about to be loaded.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import time

from probekit import __version__, outputs
from probekit.outputs import gate, guard, overlap
from probekit.errors import ProbekitError, UsageError, clipped
from probes.project import check_project_code
from probes.options import PARAMS_HELP, accesses, building, check_device, named

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


EVALUATE = ("evaluate", "olmpics-report", "pararel-report", "train", "calum-report", "grid", "publish", "versions")
"""The commands whose modules add ``probes evaluate`` setups too (or, ``grid``, read every setup's parser)."""
COMMANDS = {"sources": ("sources", "tables"), "generate": ("generate", "fidelity", "tokenizers"), "harness": ("export",),
            "harness_run": ("lm-eval",), "zeroshot": ("audit", "report"), "run": ("run",), "rehearse": ("rehearse",),
            "annotate": ("annotate",), "new": ("new",), "diff": ("diff",), "code": ("code",), "browse": ("browse",)}
"""The top-level commands each ``probes.<module>`` adds besides :data:`EVALUATE`'s."""
EVALUATE_MODULES = ("zeroshot", "olmpics", "pararel", "calum", "grid", "publish")
"""The modules that add :data:`EVALUATE`'s commands, in the order :func:`parser` adds them."""

SETUPS = ("evaluate", "train")
"""The commands whose subcommand is a protocol (``probes evaluate curve``, ``probes train consistency``)."""
EVERY_SETUP = ("grid",)
"""The commands that read every protocol's parser (a grid spec's options are checked by its protocol's)."""


def modules_of(command: str) -> list[str]:
    """The ``probes.<module>`` names :func:`parser` imports for top-level ``command`` (their top level and the
    functions that add its options run for every call of it)."""
    found = list(EVALUATE_MODULES) if command in EVALUATE else []
    return found + [name for name, names in COMMANDS.items() if command in names and name not in found]


def _cli(name: str):
    return importlib.import_module(f"probes.{name}")


def parser(command: str | None = None, setup: str | None = None) -> argparse.ArgumentParser:
    """The ``probes`` parser; ``command``: build only what that top-level command needs (its modules imported, no
    other), as :func:`main` does, so ``probes evaluate zeroshot`` imports nothing of generators/ or the sources;
    ``setup``: of ``evaluate`` and ``train``, only that subcommand's protocol options are built (its protocol's
    ``runs`` module imported, no other's: :func:`probes.options.protocol_options`); every one's for the whole
    parser, ``probes grid`` (which checks a spec with them) and ``probes evaluate --help``; none for a command that
    runs no protocol (``probes olmpics-report``). A probe or table-set name is checked when its command runs
    (:class:`probes.options.OneOf`)."""
    wants = (lambda *names: True) if command is None else (lambda *names: command in names)
    every = command is None or command in EVERY_SETUP or (command in SETUPS and setup is None)
    p = argparse.ArgumentParser(prog="probes", description=__doc__, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"probes (probekit) {__version__}")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command_(parent, name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return building(parent.add_parser(name, help=help, description=description or help, formatter_class=_Formatter),
                        every or (command in SETUPS and name == setup))

    if wants(*COMMANDS["sources"]):
        _cli("sources").add_commands(sub, command_)
    if wants(*COMMANDS["generate"]):
        _cli("generate").add_commands(sub, command_)
    if wants(*EVALUATE):
        ev = command_(sub, "evaluate", "evaluate a model on probe data")
        ev_sub = ev.add_subparsers(dest="setup", required=True, metavar="SETUP")
        _cli("zeroshot").add_evaluate(ev_sub, command_)
        for name in EVALUATE_MODULES[1:]:
            _cli(name).add_commands(sub, ev_sub, command_, PARAMS_HELP)
    for name in ("harness", "harness_run"):
        if wants(*COMMANDS[name]):
            _cli(name).add_commands(sub, command_)
    if wants(*COMMANDS["zeroshot"]):
        _cli("zeroshot").add_commands(sub, command_)
    for name in ("run", "rehearse", "annotate", "new", "diff", "code", "browse"):   # probes rehearse (probes/rehearse.py), ...
        if wants(*COMMANDS[name]):
            _cli(name).add_commands(sub, command_)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The top-level command ``argv`` names (its first word that is no option), when it is one; else None (the
    whole parser is built: ``--help``, a typo argparse answers with the choices)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    known = {*EVALUATE, *(n for names in COMMANDS.values() for n in names)}
    return word if word in known else None


def _setup_of(argv: list[str], command: str | None) -> str | None:
    """``argv``'s protocol subcommand (the word after ``evaluate`` or ``train``), or None (every subcommand's
    options built: ``probes evaluate --help``, or a command that reads every protocol's parser, ``probes grid``)."""
    if command not in SETUPS:
        return None
    words = [a for a in argv if not a.startswith("-")]
    return words[1] if len(words) > 1 else None


def resolve_device(device: str) -> str:
    """``--device auto``: ``cuda`` when torch sees a GPU, else ``cpu`` (logged); any other device as given
    (:func:`probekit.device.resolve_device`, the one place ``auto`` is resolved)."""
    from probekit.device import resolve_device as resolved

    return resolved(device)


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

    @property
    def device_given(self) -> str:
        """``--device`` as given: the library resolves ``auto`` when it is about to load the model (so argument,
        input and output-path errors still come back first)."""
        return self.__dict__["_device"]


def main(argv: list[str] | None = None) -> int:
    """``probes`` with ``argv``; its exit status. SIGTERM ends it as a Ctrl-C does (:func:`probes.children.terminable`:
    temporary files removed on the way out, a child command's process group ended first), exiting 143 (130)."""
    from probes.children import terminable

    with terminable():
        return _main(sys.argv[1:] if argv is None else list(argv))


def _interrupted(where: str, exc: KeyboardInterrupt) -> int:
    code = getattr(exc, "code", 128 + signal.SIGINT)
    print(f"{where}: {'interrupted' if code == 128 + signal.SIGINT else 'terminated'}", file=sys.stderr)
    return code


def _main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["lm-eval"] and argv[1:2] not in (["-h"], ["--help"]):
            # everything after `lm-eval` is the harness's own options, which argparse's REMAINDER cannot take
            args = parser("lm-eval").parse_args(["lm-eval"], namespace=_Args())
            args.harness_args = argv[1:]
        else:
            command = _command_of(argv)
            args = parser(command, _setup_of(argv, command)).parse_args(argv, namespace=_Args())
    except KeyboardInterrupt as exc:
        return _interrupted("probes", exc)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("probes: %(levelname)s: %(message)s"))
    log = logging.getLogger("probekit")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    where = f"probes {args.command}"
    try:
        check_project_code()   # inside a project, only its own generators/ and evaluators/ run
        check_device(args.__dict__.get("_device"))   # a GPU torch does not see: before anything loads
        # the gate: every path the command reads or writes, checked together before any work; what it then
        # writes is watched (a write it did not declare is refused); a folder claimed with --force is replaced by
        # this command only
        gate.check(named(args))   # what the options name, before anything of theirs is read
        declared = gate.check(accesses(args))
        reads = [(a.said, a.path) for a in declared if not a.writes]
        started = time.perf_counter()
        with outputs.claims(), overlap.reading(reads), guard.watching(
                " ".join(filter(None, (args.command, args.__dict__.get("setup"), args.__dict__.get("action")))),
                [a.path for a in declared if a.writes], replaced=[a.path for a in declared if a.role == gate.WRITE]):
            code = args.func(args)
        if code == 0:   # each stage's time in `dvc repro`'s output: the durations the docs quote come from it
            log.info("%s: done in %.1f s", " ".join(filter(None, (where, args.__dict__.get("setup")))),
                     time.perf_counter() - started)
        return code
    except KeyboardInterrupt as exc:
        return _interrupted(where, exc)
    except Exception as exc:
        if args.debug:
            raise
        message = clipped(" ".join(str(exc).split()), MESSAGE)
        if isinstance(exc, ProbekitError):
            print(f"{where}: error: {message}", file=sys.stderr)
            return 2 if isinstance(exc, UsageError) else 1
        if isinstance(exc, OSError):
            from probekit.outputs.atomic import disk_reason

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
