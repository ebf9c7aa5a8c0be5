"""What the reports say about results of the params' ``smoke`` profile (every protocol at a tiny scale that
checks the pipeline runs end to end and measures nothing): a banner under the title, and a marker on each row
from such a run. A result without ``profile`` (written before profiles existed) is not smoke."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

SMOKE = "smoke"
MARK = "(smoke)"   # not §: the ParaRel report cites the paper's §8
BANNER = ("> **Smoke scale** (params profile `smoke`): these numbers check that the pipeline runs end to end; they "
          "measure nothing. Run the paper's settings with `dvc exp run -S profile=paper` (README).")
LEGEND = "a run of params profile `smoke`, at a scale that checks the pipeline and measures nothing"
"""What :data:`MARK` means (a report's legend line: ``f"{MARK}: {LEGEND}."``)."""
CAPPED = "‡"
"""The mark of a run with capped settings (CALUM's ``capped: true``: fewer steps or examples than the paper's). Not
``†``: every report keeps ``†`` for "MLM head newly initialised"."""


def is_smoke(metrics: Mapping[str, Any]) -> bool:
    """Whether a metrics.json is of a smoke-scale run."""
    return metrics.get("profile") == SMOKE


def any_smoke(results: Iterable[Mapping[str, Any]]) -> bool:
    return any(is_smoke(m) for m in results)


def with_banner(lines: list[str], smoke: bool) -> list[str]:
    """``lines`` (the title first, then a blank line) with the banner right under the title when ``smoke``."""
    return [*lines[:2], BANNER, "", *lines[2:]] if smoke else lines


def profile_of(results: Iterable[Mapping[str, Any]]) -> str | None:
    """The profile of a row drawn from several results: ``smoke`` when any is, else their one profile (None when
    they differ or have none)."""
    values = {m.get("profile") for m in results}
    if SMOKE in values:
        return SMOKE
    return values.pop() if len(values) == 1 else None
