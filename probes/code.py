"""``probes code``: the code each ``probes`` command runs, one small text file per command (``code/<command>.txt``:
a sha256 and a path a line), the DVC stage ``code``'s outputs. A stage depends on the file of the command it runs,
not on whole folders, so an edit re-runs exactly the stages whose commands can run the edited file, and ``git diff
code/`` says which file made a stage re-run (docs/pipeline.md "What a stage depends on").

A command's code is the static import closure of what it runs (:mod:`probekit.imports`): ``probes`` itself, the CLI
functions that build its options and its handler, and what those import (an evaluate command's handler imports its
protocol's ``runs`` module, which declares and runs it); a grid and ``probes run`` add every paper's ``runs`` module
(they list every protocol); ``probes generate PROBE`` adds that probe's folder (its generator and YAML), ``probes
tables NAME`` that table set's loader."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from probes.options import Written, add_force, out_folder
from probes.project import project_code

EVERY_PROTOCOL = (("grid",), ("run",), ("code",))
"""The commands that list every protocol (:func:`evaluators.protocols.every`, which imports each paper's ``runs``
module by name) or build every protocol's options (``probes code`` builds the whole parser); an evaluate command's
handler imports its protocol's ``runs`` module itself, and builds its own options only."""

HEADER = "# {command}: the files it runs and reads beside its code (written by `probes code`; a stage that runs it " \
         "depends on this file: an edit to one of them re-runs the stage)\n"


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    """Every command of ``parser`` that runs something, as its words (``("evaluate", "zeroshot")``) -> its handler."""
    found = {}
    for action in parser._actions:   # noqa: SLF001 (argparse has no public walk of its subcommands)
        if isinstance(action, argparse._SubParsersAction):   # noqa: SLF001
            for name, sub in action.choices.items():
                found |= commands(sub, (*words, name))
    handler = parser.get_default("func")
    if handler is not None and not found:
        found[words] = handler
    return found


def key_name(argv: list[str], known: dict[tuple[str, ...], object] | None = None) -> str | None:
    """The key file (name without ``.txt``) of the command ``argv`` runs (``["evaluate", "zeroshot", "--model", ...]``
    -> ``evaluate-zeroshot``; ``generate`` and ``tables``: with the probe or table set), None if it names none."""
    from probes.main import parser

    known = commands(parser()) if known is None else known
    words = [a for a in argv if not a.startswith("-")]
    for n in range(len(words), 0, -1):
        if tuple(words[:n]) in known:
            name = "-".join(words[:n])
            if words[:n] in (["generate"], ["tables"]):
                return f"{name}/{words[n]}" if len(words) > n else None
            return name
    return None


def entries(words: tuple[str, ...], handler, graph) -> dict[str, list[str]]:
    """The key files of command ``words``: file name -> the entries (:meth:`probekit.imports.Graph.closure`) of what
    it runs. ``generate`` and ``tables`` have one file per probe and per table set."""
    from probes.main import modules_of

    base = ["probes.__main__", "probes.main:main"]
    for name in modules_of(words[0]):
        module = graph.modules[f"probes.{name}"]
        base += [f"probes.{name}:{fn}" for fn in ("add_commands", "add_evaluate") if fn in module.functions]
    base.append(f"{handler.__module__}:{handler.__name__}")
    name = "-".join(words)
    if words in EVERY_PROTOCOL:   # evaluators.protocols.every(): each paper's runs module, imported by name
        from evaluators.protocols import RUNS

        base += [m for m in graph.modules if m.startswith("evaluators.") and m.endswith(f".{RUNS}")
                 and m.count(".") == 2]
    if words == ("generate",):
        from probekit.params import probes_in

        probes = probes_in(graph.root / "generators")
        return {f"{name}/{probe}": base + [m for m in graph.modules if m.startswith(f"generators.{probe}.")
                                           or m == f"generators.{probe}"] for probe in probes}
    if words == ("tables",):
        loaders = sorted(m.rpartition(".")[2] for m in graph.modules
                         if m.startswith("probekit.sources.loaders.") and not m.rpartition(".")[2].startswith("_"))
        return {f"{name}/{loader}": base + [f"probekit.sources.loaders.{loader}"] for loader in loaders}
    return {name: base}


def keys(root: Path | None = None) -> dict[str, str]:
    """Every command's key file: its name (``evaluate-zeroshot``, ``generate/age_comparison``) -> its text."""
    from probekit.imports import Graph
    from probes.main import parser

    root = root or project_code()
    graph = Graph(root)
    texts, digests = {}, {}   # each file hashed once, whatever number of commands run it
    for words, handler in sorted(commands(parser()).items()):
        for name, entry in entries(words, handler, graph).items():
            lines = []
            for path in graph.files(graph.closure(entry)):
                if path not in digests:
                    digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
                lines.append(f"{digests[path]}  {path.relative_to(root).as_posix()}\n")
            shown = " ".join(["probes", *words] + ([name.partition("/")[2]] if "/" in name else []))
            texts[name] = HEADER.format(command=shown) + "".join(lines)
    return texts


def _code(args) -> int:
    from probekit.outputs import atomic

    out = out_folder(args.out, "one file per command", kind="code", force=args.force)
    texts = keys()
    with atomic.atomic_path(out, kind="code") as tmp:
        for name, text in texts.items():
            path = tmp / f"{name}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    print(f"{out}: the code of {len(texts)} commands")
    return 0


def add_commands(sub, command) -> None:
    """``probes code``."""
    p = command(sub, "code", "write the code each command runs, a file per command (the DVC stage `code`)")
    p.add_argument("--out", type=Written, required=True, help="folder for <command>.txt")
    add_force(p)
    p.set_defaults(func=_code)
