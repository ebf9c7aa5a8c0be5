"""What several ``probes`` command groups share: argparse value types and help texts, and the manifest path."""

from __future__ import annotations

import argparse
import importlib
import re
import types
import typing
from pathlib import Path
from typing import Iterator

from probekit.errors import shown
from probekit.outputs.paths import out_file, out_folder  # noqa: F401  (out_folder: the commands import it from here)

PARAMS_HELP = "params file over the built-in defaults (default: ./params.yaml if present, else built-in only)"


MANIFEST_HELP = "sources manifest (default: ./raw/sources.yaml, else the one of this probekit checkout)"


class Names:
    """A registry's names as an argument's ``choices``, read when a value is checked or the help shown (``help=
    "one of: %(choices)s"``), not when the parser is built: building it imports no registry. ``read``: the
    function that lists them, as ``module:function`` (``generators:available``), imported when first needed."""

    def __init__(self, read: str):
        self._read = read

    def _names(self) -> list[str]:
        module, _, name = self._read.partition(":")
        return getattr(importlib.import_module(module), name)()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, value) -> bool:
        return value in self._names()


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {shown(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def batch_size(text: str) -> int | str:
    return text if text == "auto" else positive(text)


DEVICE_HELP = "cpu, cuda, cuda:1, ..., mps, or auto (cuda when torch sees a GPU, else cpu)"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:[0-9]{1,4})?")


def device(text: str) -> str:
    """``--device``'s form: auto, cpu, cuda, cuda:N or mps (anything else a usage error when parsed, no import).
    Whether torch sees it is :func:`check_device`'s question."""
    if not _DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda, cuda:N (a GPU's index) or mps, got "
                                         f"{shown(text)}")
    kind, _, index = text.partition(":")
    return f"{kind}:{int(index)}" if index else text


def check_device(value: str | None) -> None:
    """A ``--device`` torch does not see is a usage error, raised before anything loads
    (:func:`probekit.device.check_device`; torch is imported for cuda and mps only)."""
    from probekit.device import check_device as checked

    checked(value)


MODEL_HELP = "an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id"


FORCE_HELP = ("replace an output that probekit did not write (or of another kind, or a link), and everything in it, "
              "after saying what that deletes. Never touched, even with --force: a repository at any depth (git, "
              "bare or not, Mercurial, Subversion, Bazaar, Jujutsu, Darcs, Pijul, Fossil), DVC's caches at every "
              "level of its configuration, the Python installation, a mount point, a FIFO or device, a results store "
              "(only added to), the current folder, the project, the home folder, or a folder holding one of them")


def add_force(parser) -> None:
    """The ``--force`` of a command that writes outputs."""
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


class Read(str):
    """A path option's value that the command reads (``type=Read``): no output may overlap it (:func:`accesses`)."""


class Written(str):
    """A path option's value that the command writes whole (``type=Written``), replacing what is there: it may not
    overlap what the command reads or its other outputs; its own claim checks the rest (:mod:`probekit.outputs`)."""


class WrittenReport(Written):
    """:class:`Written` for a report file whose JSON is written beside it (``r.md`` and ``r.json``): both are
    outputs."""


class Added(str):
    """A folder the command adds files to (``type=Added``: a results store, a source's download folder): what is in
    it stays; each file written is claimed on its own."""


class Searched(str):
    """A folder searched for dataset folders (``--data`` of export and publish): what the command reads is the
    datasets it finds there (:func:`searched`), so an output may sit beside them in it."""


class SearchedResults(str):
    """A folder searched for results (``--results`` of ``browse build``): what the command reads is each folder in it
    that holds prediction files (:func:`searched_results`), so its output may sit beside them (results/browser)."""


class ReadPath(type(Path())):
    """:class:`Read` for an option whose value is a :class:`~pathlib.Path`."""


class WrittenPath(type(Path())):
    """:class:`Written` for an option whose value is a :class:`~pathlib.Path`."""


POSITIONAL = ("results", "path", "answers", "folder", "dir")
"""The path arguments that are positional (said by name in a refusal: ``RESULTS``)."""


def _flag(dest: str) -> str:
    return dest.upper() if dest in POSITIONAL else f"--{dest.replace('_', '-')}"


def accesses(args) -> list:
    """Every path the parsed command line ``args`` reads or writes (:class:`probekit.outputs.gate.Access`): those its
    options name (:func:`named`); the params file it reads (``--params``, else ./params.yaml where the command takes
    one); the folder a ``--model`` alias names; and what its own ``paths`` hook adds (what params, a probe's section
    or a spec name). The one declaration :func:`probes.main.main` checks (:func:`probekit.outputs.gate.check`) before
    any work."""
    from probekit.outputs.gate import READ, Access

    found = named(args)
    if "params" in vars(args) and args.params is None and Path("params.yaml").is_file():
        found.append(Access(READ, "params.yaml", "params.yaml (--params left out)"))
    model = vars(args).get("model")
    for name in model if isinstance(model, list) else [model]:
        if isinstance(name, str):
            found += model_folder(name, vars(args).get("params"))
    hook = vars(args).get("paths")
    if hook is not None:
        found += hook(args)
    return found


def named(args) -> list:
    """The paths ``args``' own options name: typed :class:`Read`, :class:`Written`, :class:`Added` and
    :class:`Searched` (the datasets found there). Checked first, alone (a FIFO given as ``--params`` is refused
    before anything reads it), then with what they lead to (:func:`accesses`)."""
    from probekit.outputs.gate import ADD, READ, WRITE, Access

    found = []
    for dest, value in vars(args).items():
        for v in value if isinstance(value, list) else [value]:
            flag = _flag(dest)
            if isinstance(v, (Written, WrittenPath)):
                found.append(Access(WRITE, str(v), flag))
                if isinstance(v, WrittenReport) and Path(v).suffix != ".json":
                    found.append(Access(WRITE, str(Path(v).with_suffix(".json")), f"{flag} (its JSON beside it)"))
            elif isinstance(v, Added):
                found.append(Access(ADD, str(v), flag))
            elif isinstance(v, Searched):
                found += [Access(READ, str(p), f"{flag} {v}: the dataset") for p in searched(v)]
            elif isinstance(v, SearchedResults):
                option = "--" + dest.replace("_", "-")   # an option, whatever POSITIONAL holds
                found += [Access(READ, str(p), f"{option} {v}: the results") for p in searched_results(v)]
            elif isinstance(v, (Read, ReadPath)):
                found.append(Access(READ, str(v), flag))
    return found


def searched(folder: str) -> list[Path]:
    """The dataset folders found under ``folder`` (a ``meta.json`` with a known ``format``), each as the output that
    wrote it: the topmost folder below ``folder`` that probekit marked as a dataset (a probe's folder holds its
    variants), else the dataset folder itself."""
    from probekit.outputs.marker import MARKER

    root = Path(folder)
    if not root.is_dir():
        return []
    found = set()
    for meta in root.rglob("meta.json"):
        dataset = meta.parent
        top = next((p for p in reversed(dataset.relative_to(root).parents) if p != Path(".")
                    and (root / p / MARKER).is_file()), None)
        found.add(root / top if top is not None else dataset)
    return sorted(found)


def searched_results(folder: str) -> list[Path]:
    """The folders directly under ``folder`` that hold prediction files (``predictions.jsonl`` at any depth), and
    ``folder`` itself where it holds one at its top: what a results browser is built from."""
    root = Path(folder)
    if not root.is_dir():
        return []
    tops = set()
    for found in root.rglob("predictions.jsonl"):
        parts = found.relative_to(root).parts
        tops.add(root / parts[0] if len(parts) > 1 else root)
    return sorted(tops)


def model_folder(name: str, params: str | None) -> list:
    """The local folder ``--model NAME`` reads where NAME is an alias of the params' ``models`` (or a folder): the
    model's weights, which no output may overlap. A Hub id or ``pkg:`` model reads no folder of the user's."""
    from probekit import yamlfile
    from probekit.outputs.gate import READ, Access
    from probekit.tokens.refs import RANDOM, entry_parts

    models = {}
    source = params or ("params.yaml" if Path("params.yaml").is_file() else None)
    if source is not None:
        try:
            data = yamlfile.load(source)
            models = data.get("models") or {} if isinstance(data, dict) else {}
        except Exception:   # the command itself reports a params file it cannot read
            models = {}
    if not isinstance(models, dict):
        models = {}
    try:
        spec, _ = entry_parts(models.get(name, name))
    except (KeyError, TypeError):
        return []
    if not isinstance(spec, str):   # the command says what is wrong with it; nothing here may expand it (an alias bomb)
        return []
    random = RANDOM.fullmatch(spec)
    if random:
        try:
            spec, _ = entry_parts(models.get(random["target"], random["target"]))
        except (KeyError, TypeError):
            return []
        if not isinstance(spec, str):
            return []
    try:
        if spec.startswith("pkg:") or not Path(spec).expanduser().exists():
            return []
    except (OSError, ValueError):   # no path at all (too long, a NUL): the command says what it is
        return []
    said = f"--model {name}" + (f" (params models.{name})" if name in models else "")
    return [Access(READ, str(Path(spec).expanduser()), said)]


def report_out(out: str, force: bool = False) -> Path:
    """A report command's ``--out`` (``pararel-report``, ``calum-report``): the markdown file, its JSON beside it."""
    return out_file(out, "the markdown report", suffix=".md", beside=".json", force=force)


def protocol_options(parser: argparse.ArgumentParser, name: str, folder: str, *,
                     extra: dict[str, str] | None = None) -> None:
    """Add the options of protocol ``name`` (its record's :attr:`~evaluators.protocols.Protocol.options`) to
    ``parser``, each built from the params field it sets: ``batch_size`` as ``--batch-size``, its value parsed and
    validated as that field (a list comma-separated, a bool as ``--x`` / ``--no-x``, a path the run reads typed
    :class:`Read`), its help the field's description and where the value comes from when the option is left out
    (``extra``: words added to an option's help). ``folder``: the ``evaluators/`` folder whose ``runs`` module
    declares it, imported (no other). Only the command being run builds its options (:func:`building`): its handler
    imports the same module, so its code key lists it (``probes code``); a command that runs no protocol builds
    none."""
    if not getattr(parser, BUILD, True):
        return
    from evaluators import protocols

    importlib.import_module(".".join(("evaluators", folder, protocols.RUNS)))
    record = protocols.get(name)
    for option, (section, field_name) in record.options.items():
        info = record.field_of(option)
        flag = "--" + option.replace("_", "-")
        help_ = (f"{(info.description or field_name).replace('%', '%%')}{(extra or {}).get(option, '')} (default: "
                 f"the params' {section}.{field_name}; built in: {_shown_default(info.default)})")
        if info.annotation is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_)
            continue
        choices = _literal(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else ()
        parser.add_argument(flag, type=FieldValue(info, flag), help=help_,
                            metavar="{" + ",".join(map(str, choices)) + "}" if choices else None)


BUILD = "_probes_build"
"""The attribute :func:`building` sets on a command's parser: whether its protocol's options are built."""


def building(parser: argparse.ArgumentParser, wanted: bool) -> argparse.ArgumentParser:
    """Mark ``parser`` as the command being run (``wanted``), or one that only lists its name: only the first builds
    its protocol's options (:func:`protocol_options`)."""
    setattr(parser, BUILD, wanted)
    return parser


class FieldValue:
    """An option's ``type``: its text parsed as a params field (pydantic's ``FieldInfo``): a list field's items
    comma-separated, each value validated as the field validates it in ``params.yaml`` (its constraints and
    validators), an error an argparse one that says what was expected."""

    def __init__(self, info, flag: str):
        self.info = info
        self.__name__ = flag   # argparse names a type in its errors

    def __call__(self, text: str):
        from pydantic import TypeAdapter, ValidationError

        info = self.info
        kind = typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        value = [v.strip() for v in text.split(",") if v.strip()] if _listed(info.annotation) else text
        try:
            parsed = TypeAdapter(kind).validate_python(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            if err["type"] == "value_error":   # the field's own check, which says what it got
                raise argparse.ArgumentTypeError(err["msg"].removeprefix("Value error, ")) from None
            item = next((p for p in err["loc"] if isinstance(p, int)), None)
            words = _literal(info.annotation)
            raise argparse.ArgumentTypeError(
                (f"item {item + 1} ({shown(value[item])}): " if item is not None and isinstance(value, list) else "")
                + err["msg"] + (f" (or one of: {', '.join(map(str, words))})" if words and
                                typing.get_origin(info.annotation) is not typing.Literal else "")
                + f"; got {shown(text)}") from None
        role = (info.json_schema_extra or {}).get("role") if isinstance(info.json_schema_extra, dict) else None
        return Read(parsed) if role == "read" and isinstance(parsed, str) else parsed


def _listed(annotation) -> bool:
    """Whether a field of ``annotation`` holds a list (``list[int]``, ``list[str] | None``)."""
    origin = typing.get_origin(annotation)
    if origin is list:
        return True
    return origin in (typing.Union, types.UnionType) and any(_listed(a) for a in typing.get_args(annotation))


def _literal(annotation) -> tuple:
    """The values of a ``Literal[...]`` annotation, or of the ``Literal`` in a union (``PositiveInt |
    Literal["auto"]``); empty for any other."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return tuple(v for a in typing.get_args(annotation) for v in _literal(a))
    return ()


def _shown_default(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def edits(*paths: tuple[str, Path]) -> list:
    """The user's files a command edits in place (``(said, path)``): declared so that no output overlaps them and
    the watch lets the command write them."""
    from probekit.outputs.gate import EDIT, Access

    return [Access(EDIT, str(path), said) for said, path in paths]


def params_models(args) -> list:
    """Every local model folder the params' ``models`` name (and a ``--tokenizers`` file's): what a one-token filter
    may read the tokenizer of (``probes generate``, ``probes tokenizers``), so no output may be over one."""
    from probekit import yamlfile

    found, aliases = [], []
    sources = [vars(args).get("params") or ("params.yaml" if Path("params.yaml").is_file() else None)]
    for source in filter(None, sources):
        try:
            data = yamlfile.load(source)
            models = (data.get("models") or {}) if isinstance(data, dict) else {}
            aliases += [a for a in models if isinstance(a, str)] if isinstance(models, dict) else []
        except Exception:   # the command reports a params file it cannot read
            pass
    for alias in dict.fromkeys(aliases):
        found += model_folder(alias, vars(args).get("params"))
    tokenizers = vars(args).get("tokenizers")
    if tokenizers:
        try:
            listed = yamlfile.load(tokenizers)
            models = [m for v in listed.values() if isinstance(v, dict) for m in v.values()]
        except Exception:
            models = []
        found += [a for m in models if isinstance(m, str) for a in model_folder(m, None)]
    return found
