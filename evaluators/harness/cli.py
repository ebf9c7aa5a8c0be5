"""The harness's own command line with ``probekit-mlm`` registered: lm-eval 0.4.13 discovers no plugin model
types (no entry points: its registry knows only the classes imported into it), so the model module is imported
first and then the harness's CLI runs in this process, as the ``lm_eval`` console script does
(``lm_eval.__main__:cli_evaluate``). The run's task names are checked first (:func:`check_tasks`), so an unknown
one is one line, before any model loads."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Sequence

from probekit.errors import UsageError, clipped, shown


def run_harness(argv: Sequence[str]) -> int:
    """``lm_eval <argv>`` (``run`` is implied, as in the harness) with ``probekit-mlm`` available; the exit
    status (0: done). ``sys.argv`` is restored afterwards."""
    check_tasks(argv)
    import evaluators.harness.masked_lm  # noqa: F401  (registers probekit-mlm)
    from lm_eval.__main__ import cli_evaluate

    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    except SystemExit as exc:  # argparse's --help and errors, the harness's own exits
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)  # sys.exit("message"): what the interpreter would print
        return 1
    finally:
        sys.argv = saved
    return 0


def _refuse(message: str) -> None:
    raise ValueError(message)


def task_args(argv: Sequence[str]) -> tuple[list[str], str | None] | None:
    """The task names and ``--include_path`` of a harness run's command line, read as the harness reads them
    (``--tasks``/``-t``, space- or comma-separated, repeatable, abbreviated); None for the harness's other
    subcommands (``ls``, ``validate``), ``--help``, a ``--config`` file (which may name them), or a line that does
    not parse (the harness then says why)."""
    argv = list(argv)
    if argv[:1] == ["run"]:
        argv = argv[1:]
    elif argv[:1] and not argv[0].startswith("-"):
        return None
    reader = argparse.ArgumentParser(add_help=False)
    reader.add_argument("--tasks", "-t", nargs="+", action="append", default=[])
    reader.add_argument("--include_path")
    reader.add_argument("--config", "-C")
    reader.add_argument("--help", "-h", action="store_true")
    reader.error = _refuse
    try:
        known, _ = reader.parse_known_args(argv)
    except ValueError:
        return None
    if known.help or known.config:
        return None
    return [n for given in known.tasks for v in given for n in v.split(",")], known.include_path


def check_tasks(argv: Sequence[str]) -> None:
    """Every task a harness run names is one the harness knows (its tasks, groups and tags, and those under
    ``--include_path``; a glob matching one), else a :class:`UsageError` of one line naming the unknown ones and
    the closest known names. Task config files (``*.yaml``) and folders are the harness's to read. The names under
    ``--include_path`` are indexed first (milliseconds); the harness's own (about 15,000, seconds) only for a
    name not found there."""
    found = task_args(argv)
    if not found:
        return
    names, include = found
    names = [n for n in dict.fromkeys(names) if not (n.endswith(".yaml") or (n and Path(n).is_dir()))]
    if not names:
        return
    from lm_eval.tasks import TaskManager

    if include:
        own = TaskManager(include_path=include, include_defaults=False)
        names = [n for n in names if not own.match_tasks([n])]
    if not names:
        return
    manager = TaskManager(include_path=include)
    unknown = [n for n in names if not manager.match_tasks([n])]
    if not unknown:
        return
    said = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(name, manager.all_tasks, n=3)
        said.append(f"{shown(name)} ({'closest: ' + ', '.join(close) if close else 'nothing close'})")
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    where = f" and those under --include_path {clipped(include, 200)}" if include else \
        " (a task of your own needs --include_path FOLDER)"
    listing = f"probes lm-eval ls tasks{f' --include_path {clipped(include, 200)}' if include else ''}"
    raise UsageError(f"--tasks: unknown task{'s' if len(unknown) > 1 else ''} {', '.join(said)}{more}; known: "
                     f"lm-evaluation-harness's tasks, groups and tags{where}; `{listing}` lists them")
