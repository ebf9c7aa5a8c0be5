"""The one YAML reader of every file probekit reads (probe YAMLs, params files, ``conf/``, grid specs, the sources
manifest, the published-results tables): PyYAML's safe loader, plus one refusal. A key given twice in one mapping is
an error naming the file and both lines, where plain YAML keeps the last one silently (a second ``original:`` variant
that redefines the first, a second ``zeroshot:`` section that replaces the first wholesale). A key a merge
(``<<: *base``) brings in may still be overridden, also in a mapping that is merged in turn (where PyYAML 6.0 alone
would bring in the overridden value).

The booleans are YAML 1.2's (``true``/``false`` in three cases), not YAML 1.1's: ``yes``, ``no``, ``on`` and ``off``
(any case) are the strings they spell. DVC reads ``params.yaml`` as YAML 1.2 (ruamel), so its ``${...}`` interpolation
passes ``limit: on`` on as the text ``on``; read as YAML 1.1's ``True`` here, the same file would mean one thing to
DVC and another to probekit (``limit: on`` becoming 1). Read as the word, it is refused where a number belongs (a
typed model's error names the file and the key) and kept where text belongs: an answer ``no`` or a variant ``on``
stays the word the user wrote. (Refusing the words instead would refuse those words as text too.)

What the safe loader already bounds stays as it is: aliases are shared references, never expanded (a YAML alias bomb
loads as a few nested lists), and the duplicate check compares scalar keys only, so it never hashes a huge value.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from probekit.errors import DataError, shown

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.YAMLError):
    """A mapping gives the same key twice. A :class:`yaml.YAMLError`, so every reader's ``except yaml.YAMLError``
    reports it as invalid YAML in that file; its text says where (line and column) without the file name, which
    the reader adds."""

    def __init__(self, key: Any, first: yaml.Mark, again: yaml.Mark):
        super().__init__(key, first, again)
        self.key, self.first, self.again = key, first, again

    def __str__(self) -> str:
        return (f"line {self.again.line + 1}, column {self.again.column + 1}: key {shown(self.key)} is given twice "
                f"in one mapping (first on line {self.first.line + 1}); YAML would keep only the last one, so remove "
                f"or rename one of them")


BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
"""YAML 1.2's booleans (the core schema): the only plain scalars read as ``True``/``False``."""


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in a mapping. The keys written in the mapping itself are
    compared; those a merge (``<<: *base``) brings in may be overridden, as YAML allows."""

    yaml_implicit_resolvers = {   # the safe loader's, less YAML 1.1's booleans: see BOOL_12
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, stream):
        super().__init__(stream)
        self._checked: set[int] = set()   # the mappings checked: each once, as written

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        if id(node) in self._checked:   # flattened already: merged again by a later mapping
            return super().flatten_mapping(node)
        self._checked.add(id(node))
        self._refuse_repeats(node)
        super().flatten_mapping(node)
        # Its merged keys are spliced in before its own now: one pair per key, in the place of its first and with
        # its last value, so a later mapping that merges this one gets the overrides too (PyYAML 6.0's merge keeps
        # the first pair of a key it meets) and the keys keep their order.
        pairs: list = []
        place: dict[Any, int] = {}
        for pair in node.value:
            if isinstance(pair[0], yaml.ScalarNode):
                key = self.construct_object(pair[0])
                if key in place:
                    pairs[place[key]] = pair
                    continue
                place[key] = len(pairs)
            pairs.append(pair)
        node.value = pairs

    def _refuse_repeats(self, node: yaml.MappingNode) -> None:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                continue   # a merge, or a collection as a key (never hashed: it may be an alias bomb)
            key = self.construct_object(key_node)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:   # an unhashable scalar: impossible for the safe loader's scalars, but never fatal
                continue
            if first is not key_node.start_mark:
                raise DuplicateKeyError(key, first, key_node.start_mark)


def loads(text: str, name: str = "<string>") -> Any:
    """The document in ``text`` (``name``: the file it came from, for PyYAML's own error marks)."""
    loader = _Loader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load(path: str | os.PathLike) -> Any:
    """The YAML document in the file at ``path`` (UTF-8). Raises :class:`OSError` when it cannot be read and
    :class:`yaml.YAMLError` (:class:`DuplicateKeyError` among them) when it is not valid YAML; each reader turns
    those into its own error naming the file."""
    path = Path(path)
    return loads(path.read_text(encoding="utf-8"), str(path))


def read(path: str | os.PathLike) -> Any:
    """:func:`load`, with YAML that is not valid a :class:`DataError` naming the file (``<path>: not valid YAML:
    line 4, column 1: ...``): the reading of a data file (a published table, a pattern file, a grid spec)."""
    try:
        return load(path)
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML: {exc}") from None


_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", BOOL_12, list("tTfF"))
