"""A change merged into a YAML mapping's text, round-trip (:func:`merged`): only the keys the change sets are written,
comments, key order, quoting, indentation and the lines of every other key kept; a key the file holds as neither the
change's old value nor its new one (a hand edit) refused. The text is read and written as YAML 1.1, as PyYAML and DVC
read it back (``yes`` stays a string, ``1.0e-05`` a float), and the result is read back: it must hold the file's data
with the change and nothing else, or it is refused. The writer that uses it: :mod:`probekit.outputs.userfile`."""

from __future__ import annotations

import functools
import io
import re
from typing import Any, Mapping

import yaml

from probekit import yamlfile
from probekit.errors import SHOWN, UsageError, clipped

KEYS = 5
"""A refusal names at most this many keys (then how many more)."""
MISSING = object()
"""A key's value where the key is absent."""


def merged(text: str, new: Mapping, base: Mapping, *, label: str, command: str, advice: str = ""
           ) -> tuple[Any, str, list[str]]:
    """``text`` (a YAML mapping) with the change from ``base`` to ``new`` applied (:func:`edit_yaml`): its data,
    its text and the keys written; or the :class:`UsageError` naming the keys it refuses."""
    from ruamel.yaml import YAML

    current = plain(text, label)
    if not isinstance(current, Mapping):
        raise UsageError(f"{label}: not a YAML mapping (key: value lines); {command} edits keys in it")
    rt = YAML()
    rt.preserve_quotes, rt.width, rt.version = True, 4096, (1, 1)   # YAML 1.1: what PyYAML (and DVC) read back
    rt.indent(**_indents(text))
    rt.Representer = _representer(_null(text))
    try:
        doc = rt.load(text)
    except Exception as exc:   # ruamel's own reading of a file PyYAML reads: not one it can write back as it was
        raise UsageError(f"{label}: {command} cannot edit it keeping its layout ({type(exc).__name__}: "
                         f"{clipped(' '.join(str(exc).split()), SHOWN)}): make the change by hand") from None
    comments_only = doc is None
    if comments_only:
        from ruamel.yaml.comments import CommentedMap

        doc = CommentedMap()
    expected, keys, lost = _unshared(current), [], []
    _merge(doc, expected, current, base, new, (), keys, lost)
    if lost:
        more = f" and {len(lost) - KEYS} more" if len(lost) > KEYS else ""
        raise UsageError(f"{label}: {command} would lose your edit of {', '.join(lost[:KEYS])}{more} (the file does "
                         f"not hold there what {command} took it to hold, and {command} changes "
                         f"{'that key' if len(lost) == 1 else 'those keys'}): {advice or f'undo the edit, or make the change by hand'}; "
                         f"nothing was changed")
    if not keys:
        return current, text, keys
    if doc:
        out = io.StringIO()
        rt.dump(doc, out)
        edited = _undirected(out.getvalue(), text)
        if comments_only:
            edited = (text.rstrip("\n") + "\n" if text.strip() else "") + edited
    else:   # no key left: the comments stay
        edited = "".join(line + "\n" for line in text.splitlines() if line.lstrip().startswith("#"))
    try:
        after = yamlfile.loads(edited, label) if edited.strip() else {}
    except yaml.YAMLError:
        after = MISSING
    if not _same(after or {}, expected):
        raise UsageError(f"{label}: {command} cannot set {', '.join(keys[:KEYS])} without changing other keys of "
                         f"this file (an anchor or alias shared with them?): set {'it' if len(keys) == 1 else 'them'} "
                         f"by hand; nothing was changed")
    return expected, edited, keys


def plain(text: str, label: str) -> Any:
    """The data of ``text`` as probekit reads it (:mod:`probekit.yamlfile`); not valid YAML is a :class:`UsageError`
    naming ``label``."""
    try:
        return yamlfile.loads(text, label) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{label}: not valid YAML: {' '.join(str(exc).split())[:200]}; fix it first") from None


def _merge(doc, plain: dict, current: Mapping, base: Mapping, new: Mapping, path: tuple, keys: list, lost: list
           ) -> None:
    """Apply to ``doc`` (ruamel's mapping, ``current`` its data, ``plain`` a copy changed alike) each key where
    ``new`` differs from ``base``; a key whose value in the file is neither is added to ``lost``."""
    order = list(new)
    for key in [*new, *(k for k in base if k not in new)]:
        was, want, have = base.get(key, MISSING), new.get(key, MISSING), current.get(key, MISSING)
        here = (*path, key)
        if _same(was, want) or _same(have, want):
            continue
        if isinstance(want, Mapping) and isinstance(have, Mapping) and (was is MISSING or isinstance(was, Mapping)):
            _merge(doc[key], plain[key], have, was if was is not MISSING else {}, want, here, keys, lost)
        elif not _same(have, was):
            lost.append(".".join(clipped(str(p), SHOWN) for p in here))
        else:
            keys.append(".".join(clipped(str(p), SHOWN) for p in here))
            if want is MISSING:
                _delete(doc, key)
                plain.pop(key, None)
            else:
                _set(doc, key, want, order)
                plain[key] = _unshared(want)


def _unshared(data: Any) -> Any:
    """A copy of ``data`` in which no two keys share a value (YAML aliases are shared references)."""
    if isinstance(data, Mapping):
        return {k: _unshared(v) for k, v in data.items()}
    return [_unshared(v) for v in data] if isinstance(data, list) else data


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same kind at every depth (1 is not 1.0 nor True)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b if a is not MISSING and b is not MISSING else a is b


def _set(doc, key, value, order: list) -> None:
    """``doc[key] = value``, a list kept in place (its style and comments), a new key placed where ``order`` has it;
    the comment lines that came after what is now followed by new lines stay after them (before the next key)."""
    old = doc.get(key) if key in doc else MISSING
    if isinstance(value, list) and hasattr(old, "ca") and isinstance(old, list):
        last = len(old) - 1
        for i, item in enumerate(value[:len(old)]):
            if not _same(old[i], item):
                old[i] = _node(item)
        if 0 < len(value) <= last:
            _move_tail(_tail(old, last), _tail(old, len(value) - 1))
        del old[len(value):]
        old.extend(_node(item) for item in value[len(old):])
        if 0 <= last < len(old) - 1:
            _move_tail(_tail(old, last), _tail(old, len(old) - 1))
        return
    if old is not MISSING:
        doc[key] = _node(value)
        return
    before = [k for k in order[:order.index(key)] if k in doc] if key in order else list(doc)
    pos = list(doc).index(before[-1]) + 1 if before else 0
    doc.insert(pos, key, _node(value))
    if pos > 0:
        _move_tail(_tail(doc, before[-1]), _tail(doc, key))


def _node(value):
    """``value`` as ruamel's round-trip types (block style), so a comment can be attached at its end."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        return CommentedMap((k, _node(v)) for k, v in value.items())
    if isinstance(value, list):
        return CommentedSeq(_node(v) for v in value)
    return value


def _tail(container, key) -> tuple[dict, Any, int]:
    """Where ruamel keeps the comment lines after the value of ``container[key]``: the comment slot of its last
    line (the deepest last entry of a block collection)."""
    value = container[key]
    if hasattr(value, "ca") and len(value) and not value.fa.flow_style():
        return _tail(value, len(value) - 1 if isinstance(value, list) else list(value)[-1])
    return container.ca.items, key, 0 if isinstance(container, list) else 2


def _move_tail(source: tuple[dict, Any, int], dest: tuple[dict, Any, int]) -> None:
    """Move the full comment lines held after ``source`` (:func:`_tail`) to after ``dest``, the end-of-line
    comment staying where it is."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    items, key, slot = source
    token = (items.get(key) or [None] * 4)[slot]
    if token is None or "\n" not in token.value.rstrip("\n"):
        return
    eol, _, rest = token.value.partition("\n")
    if eol.strip():
        token.value = eol + "\n"
    else:
        items[key][slot] = None
    items, key, slot = dest
    entry = items.setdefault(key, [None] * 4)
    if entry[slot] is None:
        entry[slot] = CommentToken("\n" + rest, CommentMark(0), None)
    else:
        entry[slot].value = entry[slot].value.rstrip("\n") + "\n" + rest


def _delete(doc, key) -> None:
    """Remove ``key``, the comment lines after its value (before the next key) kept after the key before it."""
    keys = list(doc)
    i = keys.index(key)
    if i > 0:
        _move_tail(_tail(doc, key), _tail(doc, keys[i - 1]))
    del doc[key]


def _indents(text: str) -> dict[str, int]:
    """The file's own indentation (of a nested mapping, and of a block list's dash under its key), for ruamel to
    write the file as it was written; PyYAML's and OmegaConf's (2, dash at the key's column) where it shows none."""
    mapping = offset = None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for above, line in zip(lines, lines[1:]):
        if not above.rstrip().endswith(":") and not (":" in above and above.split(":", 1)[1].strip()
                                                     .startswith("#")):
            continue
        step = (len(line) - len(line.lstrip())) - (len(above) - len(above.lstrip()))
        if line.lstrip().startswith("- ") and offset is None and step >= 0:
            offset = step
        elif not line.lstrip().startswith("- ") and mapping is None and step > 0:
            mapping = step
    mapping, offset = mapping or 2, offset or 0
    return {"mapping": mapping, "sequence": offset + 2, "offset": offset}


@functools.cache
def _representer(null: str) -> type:
    """ruamel's round-trip representer writing a null as ``null`` (its own class: ruamel's is shared)."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        pass

    Representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", null))
    return Representer


def _null(text: str) -> str:
    """How the file writes a null (``null`` as DVC and OmegaConf write it, ``~``, or nothing), for ruamel to write
    every null as the file does."""
    for word in ("null", "~", "Null", "NULL"):
        if re.search(rf"(:|^\s*-)[ \t]+{re.escape(word)}[ \t]*(#|$)", text, re.M):
            return word
    return ""


def _undirected(out: str, original: str) -> str:
    """ruamel's output without the ``%YAML 1.1`` directive a YAML 1.1 dump starts with (unless the file had it)."""
    if original.lstrip().startswith("%YAML"):
        return out
    out = out.removeprefix("%YAML 1.1\n").removeprefix("---\n")
    return "---\n" + out if original.startswith("---") else out
