"""The tree reads as four layers (README "Layout", ../DESIGN): each imports only the layers below it, no import
circle anywhere, no module over 400 lines, names that do not repeat their folder. Checked on the source with
``ast`` (every import counts, also one inside a function), so a new upward import fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("probekit", "generators", "evaluators", "probes")
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: a relative import (the layers read best absolute)"
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(full if full in MODULES else _resolve(node.module or ""))
    return {m for m in found if m and m != module}


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def layer(module: str) -> tuple[int, str]:
    """(layer, unit): 4 the CLI; 3 generators and evaluators (a unit per protocol folder); 2 probekit.tokens;
    1 the rest of probekit (a unit per sub-package, ``probekit`` for its top-level modules)."""
    parts = module.split(".")
    if parts[0] == "probes":
        return 4, "probes"
    if parts[0] == "generators":
        return 3, "generators"
    if parts[0] == "evaluators":
        return 3, ".".join(parts[:2])   # a folder, or a top-level module (the registry); `evaluators`: __init__
    if len(parts) > 1 and parts[1] == "tokens":
        return 2, "probekit.tokens"
    sub = parts[1] if len(parts) > 1 and (ROOT / "probekit" / parts[1]).is_dir() else ""
    return 1, "probekit." + sub if sub else "probekit"


# Within a layer, a unit may import the units listed here (besides itself): the order inside layers 1 and 3.
BELOW = {
    "probekit": set(),
    "probekit.outputs": {"probekit"},   # what probekit wrote: markers, atomic writes, output paths checked
    "probekit.data": {"probekit", "probekit.outputs"},
    "probekit.probes": {"probekit", "probekit.outputs", "probekit.data"},
    "probekit.sources": {"probekit", "probekit.outputs", "probekit.data"},
    "probekit.hub": {"probekit", "probekit.outputs", "probekit.data", "probekit.probes"},
    "probekit.versions": {"probekit", "probekit.outputs", "probekit.data", "probekit.hub"},   # the sides read
    # dataset folders and the Hub
    "evaluators.protocols": set(),   # the protocols' records, declared by the papers' runs modules
    "evaluators.engine": set(),
    "evaluators.shared": {"evaluators.engine", "evaluators.protocols"},   # calls, bootstrap, training, report,
    # params, applicability: what papers share
    "evaluators": {"evaluators.shared", "evaluators.protocols"},   # the package's `evaluate`: one hop to the run
    "evaluators.olmpics": {"evaluators.shared", "evaluators.engine", "evaluators.protocols"},
    "evaluators.pararel": {"evaluators.shared", "evaluators.engine", "evaluators.protocols"},
    "evaluators.calum": {"evaluators.shared", "evaluators.engine", "evaluators.protocols"},
    "evaluators.harness": {"evaluators.shared", "evaluators.engine"},   # lm-evaluation-harness model types
    "evaluators.grid": {"evaluators", "evaluators.shared", "evaluators.engine", "evaluators.protocols",
                        "evaluators.olmpics", "evaluators.pararel", "evaluators.calum"},
    "evaluators.predictions": {"evaluators.shared"},   # the prediction files read back, beside their rows
    "evaluators.browse": {"evaluators.predictions", "evaluators.shared"},   # the results browser, built on them
    "generators": set(),
}


def test_every_import_runs_down_the_layers():
    wrong = []
    for module, targets in GRAPH.items():
        (level, unit) = layer(module)
        for target in targets:
            (t_level, t_unit) = layer(target)
            if t_unit == unit:
                continue
            if t_level > level or (t_level == level and t_unit not in BELOW.get(unit, set())):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_generators_and_evaluators_never_import_each_other_and_nothing_imports_the_cli():
    sideways = [f"{m} -> {t}" for m, ts in GRAPH.items() for t in ts
                if {m.split(".")[0], t.split(".")[0]} == {"generators", "evaluators"}
                or (t.split(".")[0] == "probes" and m.split(".")[0] != "probes")]
    assert sideways == []


def test_the_core_names_no_package_above_it_not_even_by_a_string():
    """probekit imports nothing of generators/, evaluators/ or probes/, also not by name (``import_module``,
    ``find_spec``): what it needs of them (a probe's generator, the release rules) its caller gives it."""
    import ast

    found = []
    for module, path in MODULES.items():
        if not module.startswith("probekit"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                    "import_module", "find_spec", "__import__") and node.args:
                arg = node.args[0]
                text = arg.value if isinstance(arg, ast.Constant) else (
                    arg.values[0].value if isinstance(arg, ast.JoinedStr) and arg.values
                    and isinstance(arg.values[0], ast.Constant) else "")
                if str(text).split(".")[0] in ("generators", "evaluators", "probes"):
                    found.append(f"{module}: {text}")
    assert found == []


def test_no_import_circle():
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):   # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert circles == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_hold_one_job_in_at_most_400_lines_and_do_not_repeat_their_folder(module):
    path = MODULES[module]
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES
    folder = path.parent.name
    assert not path.stem.startswith(folder + "_"), f"{path}: name repeats its folder {folder!r}"


def test_the_layer_check_catches_an_upward_import_and_a_circle(monkeypatch):
    """The checks above can fail: an upward import and a circle added to the graph are found."""
    atomic = "probekit.outputs.atomic"
    monkeypatch.setitem(GRAPH, atomic, GRAPH[atomic] | {"evaluators.engine.runner"})
    with pytest.raises(AssertionError):
        test_every_import_runs_down_the_layers()
    assert "evaluators.engine.collator" in GRAPH["evaluators.engine.runner"]
    monkeypatch.setitem(GRAPH, "evaluators.engine.collator",
                        GRAPH["evaluators.engine.collator"] | {"evaluators.engine.runner"})
    with pytest.raises(AssertionError):
        test_no_import_circle()


# The CLI module of each `probes` command (argv prefix -> module): what a DVC stage's command runs.
COMMANDS = {("sources",): "probes.sources", ("tables",): "probes.sources", ("generate",): "probes.generate",
            ("fidelity",): "probes.generate", ("evaluate", "zeroshot"): "probes.zeroshot", ("audit",): "probes.zeroshot",
            ("report",): "probes.zeroshot", ("evaluate", "features"): "probes.olmpics",
            ("evaluate", "curve"): "probes.olmpics", ("evaluate", "curve-lr"): "probes.olmpics",
            ("evaluate", "mcqa"): "probes.olmpics",
            ("olmpics-report",): "probes.olmpics", ("evaluate", "pararel"): "probes.pararel",
            ("train",): "probes.pararel", ("pararel-report",): "probes.pararel", ("evaluate", "calum"): "probes.calum",
            ("calum-report",): "probes.calum", ("grid",): "probes.grid", ("publish",): "probes.publish",
            ("browse", "build"): "probes.browse",
            ("export", "lm-eval"): "probes.harness"}


def stage_modules(cmd: str, cli: bool = True) -> set[str]:
    """Every module a stage's ``probes ...`` command imports: its CLI module and ``probes.main`` (not the other
    command groups), what it imports by name at run time (the generator or loader it names, the run function of the
    protocol it evaluates: :mod:`evaluators.protocols`), and all they import. ``cli=False``: from what it imports by
    name only (the CLI module's own imports are read handler by handler by ``probes code``, which the import log of
    tests/core/test_code_keys.py and of the pipeline test checks)."""
    from evaluators import protocols
    from evaluators.grid.plan import GRID

    args = cmd.split()[cmd.split().index("probes") + 1:]
    starts = ["probes.main", next(m for key, m in COMMANDS.items() if tuple(args[:len(key)]) == key)] if cli else []
    if args[0] == "generate":
        starts += [f"generators.{args[1]}.generator"] + (["generators.shared.build"] if cli else [])
    if args[0] == "tables":
        starts.append(f"probekit.sources.loaders.{args[1]}")
    if args[0] == "fidelity":   # every probe's generator and the release rules, by name
        starts += [m for m in MODULES if m.startswith("generators.")
                   and (cli or m.endswith(".generator") or m == "generators.shared.release_rules")]
    if args[0] in ("evaluate", "train"):
        starts.append(protocols.get(args[1]).run.__module__)
    if args[0] in ("evaluate", "train") and not cli:   # the CLI's one way into the library
        starts.append("evaluators")
    if args[0] == "grid":
        starts += [protocols.get(p).run.__module__ for p in GRID] + ["evaluators.grid.reports"]
    seen, todo = set(), list(starts)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += [t for t in GRAPH[module] if not t.startswith("probes.") or t in starts or t in ("probes.options", "probes.calls")]
    return seen


def resolved_stages(root: Path) -> dict[str, tuple[str, list[str]]]:
    """``{stage: (cmd, deps)}`` of ``root``'s dvc.yaml as DVC resolves it (foreach, matrix and params interpolated)."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return {stage.name: (" ".join(str(stage.cmd).split()),
                                   [Path(d.def_path).as_posix() for d in stage.deps])
                for stage in repo.index.stages if stage.cmd}


def test_every_stage_depends_on_the_code_its_command_runs():
    """A stage's code dependency is its command's key file (code/<command>.txt, `probes code`), which lists every
    module what its command imports by name (its generator, loader, protocol's run) runs, as this module's own graph
    finds them (an independent reading of the imports); no stage but `code` lists a code folder or module."""
    missing, folders = {}, {}
    for name, (cmd, deps) in resolved_stages(ROOT).items():
        code = [d for d in deps if d.split("/")[0] in PACKAGES]
        if name == "code":
            assert sorted(code) == sorted(PACKAGES)
            continue
        if code:
            folders[name] = code
        keys = [d for d in deps if d.startswith("code/")]
        assert len(keys) == 1, f"{name}: {keys}"
        listed = {line.split()[1] for line in (ROOT / keys[0]).read_text().splitlines() if not line.startswith("#")}
        for module in stage_modules(cmd, cli=False):
            path = MODULES[module].relative_to(ROOT).as_posix()
            if path not in listed:
                missing.setdefault(name, []).append(path)
    assert missing == {}
    assert folders == {}


def test_a_stage_imports_the_run_module_of_its_protocol_and_no_other_paper_s():
    """The evaluate command's handler imports its protocol's runs module (which declares it, evaluators.protocols):
    the stage's code includes it, and no other paper's."""
    modules = stage_modules("probes evaluate zeroshot --model m --data d --out o")
    assert {"evaluators.olmpics.runs", "evaluators.olmpics.zeroshot", "evaluators.engine.runner"} <= modules
    assert not any(m.startswith(("evaluators.calum", "evaluators.pararel", "generators")) for m in modules)
