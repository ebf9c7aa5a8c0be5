"""A new probe made from an existing one (``probes new NAME --from PROBE``): ``generators/PROBE/`` copied to
``generators/NAME/`` with the probe renamed inside, NAME added to PROBE's list ``probes.<format>`` and given an
empty section in conf/config.yaml (:mod:`.conf_text`: its probe.yaml's defaults apply), and params.yaml changed as
its composition changes, its comments and hand edits kept (:mod:`probekit.outputs.userfile`, the one writer of the user's
files). All or nothing: on any error no folder is left and neither params file changes; a read-only one is refused
before any change; two at once run one after the other."""

from __future__ import annotations

import copy
import keyword
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

import yaml

from generators.shared.conf_text import add_probe
from generators.shared.registry import MODULE, TEMPLATE
from probekit import yamlfile
from probekit.outputs import userfile
from probekit.errors import ParamsError, UsageError
from probekit.names import why_invalid
from probekit.params import SECTIONS, compose, probes_in
from probekit.recompose import hand_edits, listed_once, made_with

NAME = re.compile(r"[a-z][a-z0-9_]*")
FORMATS = ("mc_mlm", "mc_qa")
"""The params lists ``probes.<format>`` a probe is generated and evaluated from (a probe is in one of them)."""
CONF, PARAMS = Path("conf/config.yaml"), Path("params.yaml")
CITATION = ("# citation: a key of probekit/data/papers.yaml or a BibTeX entry: the paper that introduces this probe, "
            "cited by its dataset card (none: no citation)")
OWN_GENERATORS = {"pararel": "ParaRel's cloze set", "calum": "CALUM's sentence-pair sets"}
"""Probes not copied: their datasets are not built from a template's variants (no MC-MLM or MC-QA rows)."""


def _read(path: Path, label: str) -> dict:
    try:
        return yamlfile.load(path) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"{label}: not valid YAML: {exc}") from None


def _format_of(conf: dict, source: str) -> str:
    lists = conf.get("probes")
    if not isinstance(lists, dict):
        raise ParamsError(f"{CONF}: probes: must be a mapping format -> list of probes ({', '.join(FORMATS)})")
    found = [fmt for fmt in FORMATS if source in (lists.get(fmt) or [])]
    if not found:
        why = (f"{source} builds {OWN_GENERATORS[source]}, not MC-MLM or MC-QA rows: it is not a template for a "
               f"new probe" if source in OWN_GENERATORS else
               f"only the probes of probes.{' or probes.'.join(FORMATS)} are copied")
        raise UsageError(f"--from {source}: not in {CONF}'s probes.{' or probes.'.join(FORMATS)}: {why}")
    return found[0]


def _check_name(name: str, root: Path, conf: dict, params: dict) -> None:
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise UsageError(f"{name!r}: a probe's name must be a Python identifier in lower case (letters, digits, _), "
                         f"e.g. part_of: it names its folder generators/NAME and its module")
    if why_invalid(name):   # the one rule's other refusals (a device name: nul, con, com1...)
        raise UsageError(f"{name!r}: not a probe's name: {why_invalid(name)}")
    if (root / "generators" / name).exists():
        raise UsageError(f"{name}: generators/{name} already exists (a probe folder or module of that name)")
    taken = {str(CONF): conf, str(PARAMS): params}
    taken |= {str(p.relative_to(root)): _read(p, str(p.relative_to(root)))
              for p in sorted((root / "conf" / "profile").glob("*.yaml"))}   # a profile's list too: no second list
    for label, data in taken.items():
        data = data if isinstance(data, dict) else {}
        lists = data.get("probes") if isinstance(data.get("probes"), dict) else {}
        where = [f"probes.{fmt}" for fmt, names in lists.items() if name in (names or [])]
        if name in data:
            where.append(f"section {name}")
        if where:
            raise UsageError(f"{name}: already in {label} ({', '.join(where)})")
    if name in SECTIONS:
        raise UsageError(f"{name}: the name of a params section probekit reads ({SECTIONS[name]})")


def renamed(text: str, source: str, name: str) -> str:
    """``text`` with every whole-word ``source`` (the registered name, ``PROBE = ...``, imports
    ``generators.<source>.``, docstrings, the params section in comments) written ``name``."""
    return re.sub(rf"\b{re.escape(source)}\b", name, text)


def _fresh_spec(text: str, source: str, name: str) -> str:
    """probe.yaml renamed, its version back to 1, its citation a comment (a new probe is not its source's paper)."""
    text = re.sub(r"^version:[ \t]*[^\s#]+", "version: 1", renamed(text, source, name), count=1, flags=re.M)
    text = re.sub(r"^citation:.*(?:\n[ \t]+.*)*", CITATION, text, count=1, flags=re.M)   # a block value too
    if CITATION not in text:
        text = re.sub(r"^(license:.*\n)", rf"\1{CITATION}\n", text, count=1, flags=re.M)
    return f"# Made by `probes new {name} --from {source}`: edit the templates, the answers and the generator.\n" + text


def _copy(source: Path, target: Path, name: str) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                    copy_function=shutil.copyfile)   # the user's own mode bits are not copied: a new file is writable
    for path in sorted(p for p in target.rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if path == target / TEMPLATE:
            text = _fresh_spec(text, source.name, name)
        elif path.suffix == ".py":
            text = re.sub(r"(@register\w*\([^)]*?version=)\"[^\"]*\"", r'\1"1"', renamed(text, source.name, name))
        else:
            text = renamed(text, source.name, name)
        path.write_text(text, encoding="utf-8", newline="\n")
    spec = _read(target / TEMPLATE, f"generators/{source.name}/{TEMPLATE}")
    if spec.get("probe") != name:
        raise UsageError(f"generators/{source.name}/{TEMPLATE}: probe: is {spec.get('probe')!r}, not its folder's "
                         f"name {source.name}; fix it first")


def _compose(root: Path, conf_text: str, work: Path, overrides: Sequence[str]) -> dict:
    """params as ``dvc exp run`` composes them, from a copy of conf/ in ``work`` with ``conf_text`` as its config.yaml
    (links followed; a broken one left out, as Hydra cannot read it either)."""
    conf = work / "conf"
    shutil.copytree(root / "conf", conf, copy_function=shutil.copyfile, ignore_dangling_symlinks=True)
    (conf / "config.yaml").write_text(conf_text, encoding="utf-8", newline="\n")
    return compose(conf, overrides)


def _theirs(exc: BaseException, copies: dict[Path, Path]) -> BaseException:
    """``exc`` (raised while working on the temporary ``copies``) as the user's paths say it: a copy's path replaced
    by the path it stands for, a failed copy said of the user's file."""
    def said(text):
        if not isinstance(text, str):
            return text
        for tmp, theirs in copies.items():
            text = text.replace(str(tmp.resolve()), str(theirs)).replace(str(tmp), str(theirs))
        return text

    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        source, _, why = exc.args[0][0]
        more = f" (and {len(exc.args[0]) - 1} more)" if len(exc.args[0]) > 1 else ""
        return UsageError(f"{source}: cannot copy it{more}: {said(str(why))}; fix or remove it and run probes new "
                          f"again")
    try:
        out = copy.copy(exc)
        out.args = tuple(said(a) for a in exc.args)
    except Exception:   # an exception that cannot be copied: as it is
        return exc
    if isinstance(exc, OSError):
        out.filename, out.filename2 = said(exc.filename), said(exc.filename2)
    return out


def new_probe(name: str, source: str, root: Path | str = ".") -> tuple[Path, Path, Path, list[str]]:
    """Make probe ``name`` from probe ``source`` in the project at ``root``; returns what it wrote,
    ``generators/<name>/``, conf/config.yaml and params.yaml, and the keys of params.yaml's hand edits it kept.
    params.yaml changes as conf/'s composition (with the profile it names) changes, every other key of it kept as the
    user left it (:func:`probekit.outputs.userfile.edit_yaml`: comments, hand edits), or the change is refused naming the
    keys where it meets a hand edit. Refuses a bad or taken name, a source that is not an MC-MLM or MC-QA probe of the
    params lists, and a read-only params file. The project's lock (:func:`probekit.outputs.userfile.locked`) is held from the
    first read to the last write: two ``probes new`` at once run one after the other, each probe kept."""
    root = Path(root)
    conf_path, params_path = root / CONF, root / PARAMS
    if not conf_path.is_file():
        raise UsageError(f"{root}: no {CONF} here: run `probes new` in the project's root (or give --project)")
    probes = probes_in(root / "generators")
    if source not in probes:
        raise UsageError(f"--from {source}: no probe folder generators/{source} (with {TEMPLATE} and {MODULE}.py); "
                         f"the probes are {', '.join(probes)}")
    with userfile.locked(root):
        return _new_probe(name, source, root)


def _new_probe(name: str, source: str, root: Path) -> tuple[Path, Path, Path, list[str]]:
    conf_path, params_path = root / CONF, root / PARAMS
    for path in (conf_path, params_path):
        userfile.writable(path, "probes new", f"adding the probe {name}")
    conf_text = conf_path.read_text(encoding="utf-8")
    conf = _read(conf_path, str(CONF))
    params = _read(params_path, str(PARAMS)) if params_path.is_file() else {}
    _check_name(name, root, conf, params)
    fmt = _format_of(conf, source)
    edited = add_probe(conf_text, fmt, name, source, str(CONF))
    sets, before = made_with(root / "conf", params)
    existed = params_path.is_file()
    base = before if existed else {}
    folder = root / "generators" / name
    try:
        work = Path(tempfile.mkdtemp(prefix=f".probes-new-{name}-", dir=root))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(root.resolve())) from None

    def params_edit(write: bool) -> userfile.Edited:
        return userfile.edit_yaml(params_path, composed, base=base, command="probes new", write=write,
                                  advice="make the edit in conf/ instead, then run probes new again",
                                  check=lambda data: listed_once(data, f"{params_path} as probes new would write it"))

    try:
        try:
            _copy(root / "generators" / source, work / name, name)
            composed = _compose(root, edited, work, sets)
            if name not in ((composed.get("probes") or {}).get(fmt) or []):
                raise ParamsError(f"{CONF}: {name} added to probes.{fmt}, but the composed params do not list it "
                                  f"(a profile overrides probes.{fmt}?): add it there by hand")
            planned = params_edit(write=False)   # a hand edit it would lose: refused before any change
            os.replace(work / name, folder)
        except Exception as exc:
            raise _theirs(exc, {work / name: folder, work / "conf": root / "conf", work: root}) from exc
        try:
            userfile.edit_text(conf_path, lambda _: edited, command="probes new", what=f"adding the probe {name}")
            params_edit(write=True)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            userfile.edit_text(conf_path, lambda _: conf_text, command="probes new", what="undoing its edit")
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kept = [e.key for e in hand_edits(planned.before, before)] if existed else []
    return folder, conf_path, params_path, kept
