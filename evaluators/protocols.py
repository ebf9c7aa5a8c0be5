"""The protocols, each declared once, beside its run: ``@protocol(...)`` on the function that runs it in its paper's
``runs`` module (``evaluators/<paper>/runs.py``). A protocol is a way of evaluating a model on data (zero-shot MC,
a learning curve, ParaRel's queries, CALUM's fine-tuning...): the model families it applies to, its paper (the
params' ``runs.<paper>`` lists the models that run it), the params sections it reads (their typed models), what
``probes run`` reproduces and limits for it, and where the pipeline writes its results.

A command imports the ``runs`` module of its protocol, which declares it; :func:`get` (and so
:func:`evaluators.evaluate`) imports every ``runs`` module when the protocol asked for is not declared yet (a
notebook's first call), and :func:`every` lists them all (the grid, ``probes run``). ``probekit`` keeps only the
vocabulary the params need: the papers (:data:`probekit.papers.PAPERS`) and the model families."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from probekit.errors import UsageError
from probekit.papers import PAPERS
from probekit.scoring import FAMILIES

RUNS = "runs"
"""The module of a paper's folder that declares its protocols."""


@dataclass(frozen=True)
class Protocol:
    name: str
    title: str                         # as a skip reason names it ("MC-MLM learning curves: for a masked LM only")
    families: tuple[str, ...]          # the model families it applies to (the others: skipped, said why)
    paper: str                         # the params' `runs.<paper>` list: the models that run it
    reported: str                      # the `probes run --probes` choice (the report that shows its results)
    reads: Mapping[str, type] = field(default_factory=dict)   # params section -> its typed model, read where the
    #                                                           call is silent
    options: Mapping[str, tuple[str, str]] = field(default_factory=dict)   # option -> (section, field): what a call
    #                                                                        may set over the params, one run's
    profiled: bool = False             # its metrics.json records the params' `profile` (part of a grid cell's key)
    stages: tuple[str, ...] = ()       # the report stages `probes run` reproduces for it ({key}: the model's alias)
    limits: tuple[str, ...] = ()       # the params `probes run --limit N` sets for it
    results: tuple[str, ...] = ()      # where the pipeline writes its runs
    run: Callable | None = None        # the function :func:`evaluators.evaluate` calls (None: a command of its own)
    order: int = 0                     # its place among its module's declarations

    @property
    def sections(self) -> tuple[str, ...]:
        """The params sections it reads: those of its typed models (:attr:`reads`)."""
        return tuple(self.reads)

    def field_of(self, option: str):
        """The params model's field (pydantic's ``FieldInfo``) that ``option`` sets."""
        section, name = self.options[option]
        return self.reads[section].model_fields[name]

    def settings(self, params, **given) -> dict[str, Any]:
        """Each section it reads (:attr:`reads`) from ``params`` (a :class:`~probekit.params.ParamsFile`), with the
        call's values of its :attr:`options` over it (None: left out, the params' value stays), each validated as
        its field (:func:`over`, the one place where a call meets the params). An option it
        does not take is a ``TypeError`` naming those it does."""
        from probekit.params import section

        unknown = sorted(set(given) - set(self.options))
        if unknown:
            raise TypeError(f"protocol {self.name!r} takes no option {', '.join(unknown)} (its options: "
                            f"{', '.join(self.options) or 'none'})")
        return {name: over(section(params, name, model), **{f: given.get(o) for o, (s, f) in self.options.items()
                                                            if s == name})
                for name, model in self.reads.items()}


_DECLARED: dict[str, Protocol] = {}


def declare(name: str, *, title: str, families: tuple[str, ...] = FAMILIES, paper: str, reported: str | None = None,
            reads: Mapping[str, type] | None = None, profiled: bool = False, stages: tuple[str, ...] = (),
            limits: tuple[str, ...] = (), results: tuple[str, ...] = (), run: Callable | None = None,
            options: Mapping[str, str] | None = None) -> Protocol:
    """Declare protocol ``name`` (:class:`Protocol`'s fields; ``reported`` defaults to ``paper``; ``options``:
    option -> ``"section.field"``, a field of a section it reads). A name declared twice by two functions, a paper
    not in :data:`PAPERS`, a family not in :data:`FAMILIES` or an option that is no field of its sections fails at
    import."""
    fields = {}
    for option, where in (options or {}).items():
        section, _, name_ = where.partition(".")
        if section not in (reads or {}) or name_ not in reads[section].model_fields:
            raise ValueError(f"protocol {name!r}: option {option!r} sets {where!r}, not a field of the sections it "
                             f"reads ({', '.join(reads or {}) or 'none'})")
        fields[option] = (section, name_)
    if paper not in PAPERS:
        raise ValueError(f"protocol {name!r}: paper {paper!r} is not one of {', '.join(PAPERS)}")
    if not set(families) <= set(FAMILIES):
        raise ValueError(f"protocol {name!r}: families {families} are not all of {', '.join(FAMILIES)}")
    known = _DECLARED.get(name)
    if known is not None and known.run is not None and run is not None and \
            (known.run.__module__, known.run.__qualname__) != (run.__module__, run.__qualname__):
        raise ValueError(f"protocol {name!r} is declared twice: by {known.run.__module__}.{known.run.__qualname__} "
                         f"and {run.__module__}.{run.__qualname__}")
    record = Protocol(name, title, tuple(families), paper, reported or paper, dict(reads or {}), fields, profiled,
                      tuple(stages), tuple(limits), tuple(results), run,
                      known.order if known else len(_DECLARED))
    _DECLARED[name] = record
    return record


def protocol(name: str, **fields) -> Callable[[Callable], Callable]:
    """Decorator: declare protocol ``name`` (:func:`declare`'s fields), run by the function it decorates."""
    def register(run: Callable) -> Callable:
        declare(name, run=run, **fields)
        return run
    return register


@functools.cache
def load_all() -> None:
    """Import the ``runs`` module of every folder of :mod:`evaluators`, so that every protocol is declared (once a
    process)."""
    root = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(root)]), key=lambda i: i.name):
        if info.ispkg and (root / info.name / f"{RUNS}.py").is_file():
            importlib.import_module(f"evaluators.{info.name}.{RUNS}")


def every() -> dict[str, Protocol]:
    """protocol name -> its record, every protocol, in the papers' order (:data:`PAPERS`), then their declaring
    order."""
    load_all()
    return dict(sorted(_DECLARED.items(), key=lambda kv: (PAPERS.index(kv[1].paper), kv[1].order)))


def get(name: str) -> Protocol:
    """The record of protocol ``name`` (every ``runs`` module imported first when it is not declared yet); a
    :class:`UsageError` naming the protocols when there is none."""
    if name not in _DECLARED:
        load_all()
    try:
        return _DECLARED[name]
    except KeyError:
        raise UsageError(f"no protocol {name!r}; the protocols are {', '.join(every())}") from None


def reported() -> tuple[str, ...]:
    """``probes run --probes``' choices: the reports, each reproducing the runs of its protocols."""
    return tuple(dict.fromkeys(p.reported for p in every().values()))


def of_report(name: str) -> list[Protocol]:
    """The protocols whose runs ``name`` (a ``probes run --probes`` choice) reproduces, in :func:`every`'s order."""
    return [p for p in every().values() if p.reported == name]


def over(section, **given: Any):
    """``section`` (a params section's typed model, as :func:`probekit.params.section` read it) with the call's
    values ``given`` over its own, each validated as the section's field (a bad value fails before any work, naming
    it); a value of None is one the call left out, so the params' value stays. Every run merges its options over the
    params through this one function (:meth:`Protocol.settings`; ``batch_size=None``: the params'
    ``scoring.batch_size``)."""
    from pydantic import ValidationError

    given = {k: v for k, v in given.items() if v is not None}
    unknown = sorted(set(given) - set(type(section).model_fields))
    if unknown:
        raise TypeError(f"{type(section).__name__} has no field {', '.join(unknown)}")
    if not given:
        return section
    try:
        return type(section).model_validate({**section.model_dump(), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{where}: {err['msg']} (got {given.get(err['loc'][0])!r})") from None
