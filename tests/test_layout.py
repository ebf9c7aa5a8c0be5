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
        sub = parts[1] if len(parts) > 2 or (len(parts) == 2 and (ROOT / "evaluators" / parts[1]).is_dir()) else ""
        return 3, "evaluators." + sub if sub else "evaluators"
    if len(parts) > 1 and parts[1] == "tokens":
        return 2, "probekit.tokens"
    sub = parts[1] if len(parts) > 1 and (ROOT / "probekit" / parts[1]).is_dir() else ""
    return 1, "probekit." + sub if sub else "probekit"


# Within a layer, a unit may import the units listed here (besides itself): the order inside layers 1 and 3.
BELOW = {
    "probekit": set(),
    "probekit.data": {"probekit"},
    "probekit.probes": {"probekit", "probekit.data"},
    "probekit.sources": {"probekit", "probekit.data"},
    "probekit.hub": {"probekit", "probekit.data", "probekit.probes"},
    "evaluators.engine": set(),
    "evaluators": {"evaluators.engine"},   # bootstrap, training, report, smoke, params: what protocols share
    "evaluators.olmpics": {"evaluators", "evaluators.engine"},
    "evaluators.pararel": {"evaluators", "evaluators.engine"},
    "evaluators.calum": {"evaluators", "evaluators.engine"},
    "evaluators.harness": {"evaluators", "evaluators.engine"},   # lm-evaluation-harness model types
    "evaluators.grid": {"evaluators", "evaluators.engine", "evaluators.olmpics", "evaluators.pararel",
                        "evaluators.calum"},
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
    if path.parent != ROOT / "generators":   # a probe's helper modules are named for the probe
        assert not path.stem.startswith(folder + "_"), f"{path}: name repeats its folder {folder!r}"


def test_the_layer_check_catches_an_upward_import_and_a_circle(monkeypatch):
    """The checks above can fail: an upward import and a circle added to the graph are found."""
    monkeypatch.setitem(GRAPH, "probekit.atomic", GRAPH["probekit.atomic"] | {"evaluators.engine.runner"})
    with pytest.raises(AssertionError):
        test_every_import_runs_down_the_layers()
    assert "evaluators.engine.collator" in GRAPH["evaluators.engine.runner"]
    monkeypatch.setitem(GRAPH, "evaluators.engine.collator",
                        GRAPH["evaluators.engine.collator"] | {"evaluators.engine.runner"})
    with pytest.raises(AssertionError):
        test_no_import_circle()


def test_an_old_module_name_fails_with_the_new_one_and_every_new_one_exists():
    import importlib

    from probekit.moved import MOVED, MovedModuleError

    for old, new in MOVED.items():
        assert old not in MODULES and new in MODULES, (old, new)
    with pytest.raises(MovedModuleError, match=r"probekit\.cli moved to probes\.main"):
        importlib.import_module("probekit.cli")
    with pytest.raises(MovedModuleError, match=r"evaluators\.pararel_metrics moved to evaluators\.pararel\.metrics"):
        importlib.import_module("evaluators.pararel_metrics")


# The CLI module of each `probes` command (argv prefix -> module): what a DVC stage's command runs.
COMMANDS = {("sources",): "probes.sources", ("tables",): "probes.sources", ("generate",): "probes.generate",
            ("fidelity",): "probes.generate", ("evaluate", "zeroshot"): "probes.zeroshot", ("audit",): "probes.zeroshot",
            ("report",): "probes.zeroshot", ("evaluate", "features"): "probes.olmpics",
            ("evaluate", "curve"): "probes.olmpics", ("evaluate", "mcqa"): "probes.olmpics",
            ("olmpics-report",): "probes.olmpics", ("evaluate", "pararel"): "probes.pararel",
            ("train",): "probes.pararel", ("pararel-report",): "probes.pararel", ("evaluate", "calum"): "probes.calum",
            ("calum-report",): "probes.calum", ("grid",): "probes.grid", ("publish",): "probes.publish",
            ("export", "lm-eval"): "probes.harness"}


def stage_modules(cmd: str) -> set[str]:
    """Every module a stage's ``probes ...`` command imports: its CLI module and ``probes.main`` (not the other
    command groups), the generator or loader it names (imported by name at run time), and all they import."""
    args = cmd.split()[cmd.split().index("probes") + 1:]
    starts = ["probes.main", next(m for key, m in COMMANDS.items() if tuple(args[:len(key)]) == key)]
    if args[0] == "generate":
        starts += [f"generators.{args[1]}", "generators.build"]
    if args[0] == "tables":
        starts.append(f"probekit.sources.loaders.{args[1]}")
    if args[0] == "fidelity":
        starts += [m for m in MODULES if m.startswith("generators.")]
    seen, todo = set(), list(starts)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += [t for t in GRAPH[module] if not t.startswith("probes.") or t in starts or t == "probes.options"]
    return seen


def test_every_stage_depends_on_the_code_its_command_runs():
    import yaml

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    missing = {}
    for name, stage in stages.items():
        stage = stage.get("do", stage)
        cmd = " ".join(stage["cmd"].split()) if isinstance(stage["cmd"], str) else " ".join(stage["cmd"])
        deps = [str(d) for d in stage.get("deps", [])]
        for module in stage_modules(cmd):
            path = MODULES[module].relative_to(ROOT).as_posix()
            if not any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps):
                missing.setdefault(name, []).append(path)
    assert missing == {}
