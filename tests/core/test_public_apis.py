"""probekit uses only the public API of ``datasets`` and ``transformers``: no import of (nor attribute path
through) one of their submodules outside the allow-list below, checked on the source with ``ast`` like
tests/test_layout.py, so code that reaches into a library's internals fails here, not on its next release.

Public, and so allowed:

- the package's top level (``import datasets``, ``from transformers import AutoConfig``): what a package
  exports there is its public API (``transformers`` builds its top level from its submodules' ``__all__``, so a
  name reachable there, like ``MODEL_FOR_CAUSAL_LM_MAPPING`` or ``transformers.logging``, is public);
- ``transformers.modeling_outputs``: documented as such (the "Model outputs" page of the reference,
  ``transformers.modeling_outputs.BaseModelOutput``), the output classes a custom head returns.

Everything else (``datasets.utils.*``, ``datasets.info``, ``datasets.features.features``, ``datasets.config``,
``transformers.models.auto.*``, ...) is internal and changes between releases. ``huggingface_hub`` is not
checked: the modules probekit imports from it (``huggingface_hub.errors``, ``huggingface_hub.constants``) are the
documented homes of its errors and settings.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("probekit", "generators", "evaluators", "probes")
CHECKED = ("datasets", "transformers")
PUBLIC = {"datasets", "transformers", "transformers.modeling_outputs"}


@lru_cache(maxsize=None)
def _submodules(package: str) -> frozenset[str]:
    """The names of a package's submodules, from its files (without importing it)."""
    spec = importlib.util.find_spec(package)
    names = set()
    for location in (spec.submodule_search_locations or []) if spec else []:
        for path in Path(location).iterdir():
            if path.suffix == ".py" and path.stem != "__init__" or (path / "__init__.py").is_file():
                names.add(path.stem)
    return frozenset(names)


def _public(module: str) -> bool:
    return module.split(".")[0] not in CHECKED or module in PUBLIC


def _is_submodule(package: str, name: str) -> bool:
    return package in CHECKED and name in _submodules(package)


def _attribute_path(node: ast.Attribute) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def non_public_uses(source: str) -> list[str]:
    """``line: module`` for every import of, or attribute path through, a non-public module of ``datasets`` or
    ``transformers`` in ``source``."""
    tree = ast.parse(source)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _public(alias.name):
                    found.append((node.lineno, alias.name))
                if alias.asname or "." not in alias.name:
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not _public(node.module):
                found.append((node.lineno, node.module))
            else:
                found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                          if _is_submodule(node.module, a.name) and not _public(f"{node.module}.{a.name}")]
    for node in ast.walk(tree):
        path = _attribute_path(node) if isinstance(node, ast.Attribute) else None
        if path and path[0] in aliases and len(path) > 2:  # package.submodule.name
            module = f"{aliases[path[0]]}.{path[1]}"
            if _is_submodule(aliases[path[0]], path[1]) and not _public(module):
                found.append((node.lineno, module))
    return [f"{line}: {module}" for line, module in sorted(set(found))]


def _sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]


def test_no_module_uses_a_non_public_module_of_datasets_or_transformers():
    bad = {str(p.relative_to(ROOT)): uses for p in _sources() if (uses := non_public_uses(p.read_text("utf-8")))}
    assert not bad, f"non-public modules of datasets/transformers used (use their top-level API): {bad}"


@pytest.mark.parametrize("snippet,module", [
    ("from datasets.utils.metadata import MetadataConfigs", "datasets.utils.metadata"),
    ("def f():\n    from datasets.features.features import generate_from_arrow_type", "datasets.features.features"),
    ("import transformers.models.auto.modeling_auto as m", "transformers.models.auto.modeling_auto"),
    ("from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
     "transformers.models.auto.modeling_auto"),
    ("from datasets import utils", "datasets.utils"),
    ("import datasets\ndatasets.utils.logging.is_progress_bar_enabled()", "datasets.utils"),
    ("import datasets as ds\nsize = ds.config.MAX_SHARD_SIZE", "datasets.config"),
])
def test_the_check_catches_a_non_public_use(snippet, module):
    assert [u.split(": ")[1] for u in non_public_uses(snippet)] == [module]


@pytest.mark.parametrize("snippet", [
    "import datasets\ndatasets.disable_progress_bars()\ndatasets.Features.from_arrow_schema",
    "from datasets import Dataset, Features, Json, load_dataset",
    "from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, AutoConfig",
    "import transformers\ntransformers.logging.set_verbosity_error()",
    "from transformers.modeling_outputs import BaseModelOutput",
    "from huggingface_hub.errors import HfHubHTTPError",
    "datasets = []\ndatasets.utils.append(1)",  # a variable, not the package
])
def test_the_check_allows_the_public_api(snippet):
    assert non_public_uses(snippet) == []
