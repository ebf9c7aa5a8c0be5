"""A probe added to conf/config.yaml by editing its text, so its comments and layout stay as written: the name
appended to a list ``probes.<format>`` and a section of its own (``probes new``, :mod:`.scaffold`). Every edit is
checked by parsing the result: only the intended keys may differ."""

from __future__ import annotations

import re

import yaml

from probekit import yamlfile
from probekit.errors import ParamsError

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(.*)$")
WIDTH = 120
"""A list that would grow past this many characters on its line goes on to the next."""


def _top_level(lines: list[str]) -> dict[str, tuple[int, int]]:
    """``{key: (first line, end)}`` of each top-level key: its line and the indented or blank lines after it
    (a column-0 comment or key ends it); trailing blank lines are not the section's."""
    spans, key, start = {}, None, 0
    for i, line in enumerate([*lines, "\0"]):
        if line[:1] not in (" ", "\t", "\n", "") and key is not None:
            end = i
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1
            spans[key], key = (start, end), None
        match = _KEY.match(line)
        if match:
            key, start = match.group(1), i
    return spans


def _flow_end(text: str, start: int) -> tuple[int, int]:
    """For the flow list opening at ``text[start] == "["``: the offset of its ``]`` and of the last character of
    its last item (``start`` when empty), skipping comments."""
    depth, last, i = 0, start, start
    while i < len(text):
        c = text[i]
        if c == "#" and text[i - 1] in " \t\n":
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i, last
        if not c.isspace() and i != start:
            last = i
        i += 1
    raise ValueError("unclosed [")


def _append_to_list(lines: list[str], span: tuple[int, int], fmt: str, name: str) -> list[str]:
    """``lines`` with ``name`` appended to the list ``fmt:`` inside the block ``span`` (``probes:``)."""
    start, end = span
    for i in range(start + 1, end):
        match = re.match(rf"^(\s+){re.escape(fmt)}:(\s*)(.*)$", lines[i])
        if not match:
            continue
        indent, value = match.group(1), match.group(3)
        if value.startswith("["):   # a flow list, maybe over several lines
            text = "".join(lines[i:end])
            offset = len(lines[i]) - len(lines[i].lstrip()) + len(fmt) + 1 + len(match.group(2))
            close, last = _flow_end(text, offset)
            item = name if last == offset else f", {name}"
            line_end = text.find("\n", last)
            if len(text[text.rfind("\n", 0, last) + 1:line_end if line_end >= 0 else None]) + len(item) > WIDTH:
                item = f",\n{' ' * (offset + 1)}{name}"   # on a line of its own, under the first item
            text = text[:last + 1] + item + text[last + 1:]
            return [*lines[:i], *text.splitlines(keepends=True), *lines[end:]]
        if not value or value.startswith("#"):   # a block list: after its last `- item`
            j = i + 1
            while j < end and (not lines[j].strip() or lines[j].lstrip().startswith(("#", "- "))
                               or len(lines[j]) - len(lines[j].lstrip()) > len(indent)):
                j += 1
            items = [k for k in range(i + 1, j) if re.match(r"^\s+- ", lines[k])]
            if not items:
                return [*lines[:i], f"{indent}{fmt}: [{name}]\n", *lines[i + 1:]]
            last = items[-1]
            dash = lines[last][:len(lines[last]) - len(lines[last].lstrip())]
            return [*lines[:last + 1], f"{dash}- {name}\n", *lines[last + 1:]]
        raise ValueError(f"{fmt}: not a list")
    indent = next((re.match(r"^(\s+)", lines[k]).group(1) for k in range(start + 1, end)
                   if re.match(r"^\s+\S", lines[k]) and not lines[k].lstrip().startswith("#")), "  ")
    return [*lines[:end], f"{indent}{fmt}: [{name}]\n", *lines[end:]]


def add_probe(text: str, fmt: str, name: str, after: str, label: str) -> str:
    """``text`` (conf/config.yaml, named ``label`` in errors) with ``name`` appended to ``probes.<fmt>`` and an empty
    section ``name: {}`` (no overrides: the probe YAML's ``params:`` apply) right after section ``after`` (else at
    the end). Checked by parsing: nothing else changes."""
    try:
        before = yamlfile.loads(text, label) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"{label}: not valid YAML: {exc}") from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    spans = _top_level(lines)
    if "probes" not in spans:
        raise ParamsError(f"{label}: probes: no such section (the lists of probes the pipeline runs, by format)")
    try:
        lines = _append_to_list(lines, spans["probes"], fmt, name)
    except ValueError as exc:
        raise ParamsError(f"{label}: probes.{fmt}: cannot add {name} ({exc}); add it by hand") from None
    end = _top_level(lines).get(after, (0, len(lines)))[1]
    section = f"{name}: {{}}   # overrides of the defaults in generators/{name}/probe.yaml's params: (none yet)\n"
    lines = [*lines[:end], "\n", section, *lines[end:]]
    edited = "".join(lines)
    want = {**before, "probes": {**before["probes"], fmt: [*(before["probes"].get(fmt) or []), name]}, name: {}}
    try:
        after = yamlfile.loads(edited, label) or {}
    except yaml.YAMLError:
        after = None
    if after != want:
        raise ParamsError(f"{label}: could not add {name} to probes.{fmt} and a section {name}: without changing "
                          f"something else (an unusual layout); add them by hand")
    return edited
