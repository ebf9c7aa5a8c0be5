"""The project's code as a static import graph: which of its files a command can run, read from the source alone
(nothing is imported). It is what a DVC stage's code dependency is derived from (``probes code``, docs/pipeline.md
"What a stage depends on").

The closure errs on the side of more: every import a module makes counts, at its top or inside any function, and so
does every ``"package.module:function"`` string (a registry's lazy reference) and every ``import_module`` call whose
name is a constant or an f-string (a placeholder matches every module its pattern fits). Only a command's own module,
in the CLI layer, is read function by function: its handler, what the handler calls in that module and the functions
it imports by name from other CLI modules, so ``probes report`` does not depend on what ``probes evaluate`` runs.
A module's package files count too (its ``__init__.py`` and its parents'), and the data files beside it (a probe's
YAML, the papers' published numbers): a command reads those through ``Path(__file__).parent``."""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("probekit", "probes", "evaluators", "generators")
"""The project's top-level packages: the code a stage can run."""
FUNCTION_LEVEL = ("probes",)
"""The packages read function by function (the CLI: one module holds several commands' handlers)."""
REGISTRIES = ("probes.main", "evaluators.protocols", "probekit.sources.loaders", "generators.shared.registry")
"""The modules that import by a name the command gives (its subcommand's CLI module, its protocol's run, its table
set's loader, its probe's generator): their name references are not followed; ``probes code`` adds the one the
command names."""
_REFERENCE = re.compile(r"^(?:%s)(?:(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?|:[A-Za-z_]\w*)$" % "|".join(PACKAGES))


@dataclass
class _Module:
    name: str
    path: Path
    package: bool
    top: set[str] = field(default_factory=set)                      # modules imported at the module's level
    functions: dict[str, set[str]] = field(default_factory=dict)    # top-level def/class -> modules it imports
    calls: dict[str, set[str]] = field(default_factory=dict)        # top-level def/class -> names it uses
    by_name: dict[str, tuple[str, str]] = field(default_factory=dict)   # an imported name -> (module, name)


class Graph:
    """The import graph of the packages under ``root`` (:data:`PACKAGES`)."""

    def __init__(self, root: Path, packages: tuple[str, ...] = PACKAGES):
        self.root = Path(root)
        self.modules: dict[str, _Module] = {}
        self._data_files: dict[Path, set[Path]] = {}
        for package in packages:
            for path in sorted((self.root / package).rglob("*.py")):
                rel = path.relative_to(self.root)
                if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                    continue
                parts = list(rel.with_suffix("").parts)
                is_package = parts[-1] == "__init__"
                name = ".".join(parts[:-1] if is_package else parts)
                self.modules[name] = _Module(name, path, is_package)
        for module in self.modules.values():
            self._read(module)

    # --- reading one module -------------------------------------------------------------------------------------
    def _resolve(self, module: _Module, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = module.name.split(".") if module.package else module.name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def _targets(self, module: _Module, node: ast.AST) -> set[str]:
        """The project modules one node imports or names (its own package files added by :meth:`closure`)."""
        found: set[str] = set()
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = self._resolve(module, node)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif module.name in REGISTRIES:
            pass
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _REFERENCE.match(node.value):
            found.add(node.value.partition(":")[0])
        elif isinstance(node, ast.Call) and _called(node.func) == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.JoinedStr):
                pattern = "".join(v.value if isinstance(v, ast.Constant) else "*" for v in arg.values)
                found |= set(fnmatch.filter(self.modules, pattern))
        return {name for name in found if name in self.modules}

    def _read(self, module: _Module) -> None:
        tree = ast.parse(module.path.read_bytes(), filename=str(module.path))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                imports, names, handlers = set(), set(), set()
                for inner in ast.walk(node):
                    imports |= self._targets(module, inner)
                    if isinstance(inner, ast.Name):
                        names.add(inner.id)
                    elif isinstance(inner, ast.keyword) and inner.arg == "func" and isinstance(inner.value, ast.Name):
                        handlers.add(inner.value.id)   # set_defaults(func=_handler): bound, run only by its command
                names -= handlers
                module.functions[node.name] = imports
                module.calls[node.name] = names
            else:
                for inner in ast.walk(node):
                    module.top |= self._targets(module, inner)
                    if isinstance(inner, ast.ImportFrom):
                        base = self._resolve(module, inner)
                        for alias in inner.names:
                            module.by_name[alias.asname or alias.name] = (base, alias.name)

    # --- the closure ----------------------------------------------------------------------------------------------
    def closure(self, entries: list[str]) -> set[str]:
        """The modules that running ``entries`` can import: each a module (all of it) or ``module:function`` (in a
        :data:`FUNCTION_LEVEL` package: that module's top level, the function and what it reaches). :attr:`why`
        then names, for each module, the one that brought it in."""
        whole: set[str] = set()
        scoped: dict[str, set[str]] = {}
        todo: list[tuple[str, str | None]] = []
        self.why: dict[str, str] = {}

        def push(name: str, function: str | None, by: str) -> None:
            self.why.setdefault(name, by)
            todo.append((name, function))

        for entry in entries:
            push(entry.partition(":")[0], entry.partition(":")[2] or None, "(entry)")
        while todo:
            name, function = todo.pop()
            if name not in self.modules:
                raise KeyError(f"no module {name} under {self.root}")
            for parent in _parents(name):
                if parent in self.modules and parent not in whole:
                    push(parent, None, name)
            module = self.modules[name]
            if not name.startswith(FUNCTION_LEVEL):
                if name in whole:
                    continue
                whole.add(name)
                for target in set(module.top).union(*module.functions.values()):
                    push(target, None, name)
                continue
            first = name not in scoped
            seen = scoped.setdefault(name, set())
            if first:
                for target in module.top:
                    push(target, None, name)
            stack = [function] if function else []
            while stack:
                fn = stack.pop()
                if fn in seen or fn not in module.functions:
                    continue
                seen.add(fn)
                for target in module.functions[fn]:
                    push(target, None, f"{name}:{fn}")
                for used in module.calls[fn]:
                    if used in module.functions:
                        stack.append(used)
                    elif used in module.by_name:
                        source, attr = module.by_name[used]
                        if source in self.modules and source.startswith(FUNCTION_LEVEL):
                            push(source, attr, f"{name}:{fn}")
        return whole | set(scoped)

    def files(self, modules: set[str]) -> list[Path]:
        """The files of ``modules``, their packages' ``__init__.py`` and the data files beside each (sorted)."""
        found: set[Path] = set()
        for name in modules:
            for parent in [*_parents(name), name]:
                if parent in self.modules:
                    path = self.modules[parent].path
                    found.add(path)
                    found |= self._data_beside(path.parent)
        return sorted(found)

    def _data_beside(self, folder: Path) -> set[Path]:
        """The data files of ``folder`` (:func:`_data`) and every file of its data folders (a subfolder that is no
        package: ParaRel's ``patterns/``, the browser's ``static/``), listed once per graph."""
        if folder not in self._data_files:
            found = {p for p in folder.iterdir() if p.is_file() and _data(p)}
            for sub in folder.iterdir():
                if sub.is_dir() and _data_folder(sub):
                    found |= {p for p in sub.rglob("*") if p.is_file() and not _hidden(p.relative_to(folder))}
            self._data_files[folder] = found
        return self._data_files[folder]


def _data(path: Path) -> bool:
    """A data file a module reads from beside itself (YAML, JSON, text), not code or a cache."""
    return not path.name.startswith(".") and path.suffix in (".yaml", ".yml", ".json", ".txt", ".tsv", ".csv")


def _data_folder(path: Path) -> bool:
    """A folder of package data beside modules: no package (no ``__init__.py``), no cache, not hidden."""
    return (not path.name.startswith((".", "__")) and not (path / "__init__.py").exists()
            and not any(p.suffix == ".py" for p in path.rglob("*.py")))


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _called(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
