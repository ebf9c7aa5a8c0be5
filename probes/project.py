"""The code a ``probes`` command runs, and the project it runs in: inside a probekit project, that project's own
``generators/`` and ``evaluators/`` must be what runs, since DVC records them as the stages' dependencies."""

from __future__ import annotations

from pathlib import Path


def project_code() -> Path:
    """The folder holding the packages this ``probes`` runs (probekit/, probes/, evaluators/, generators/)."""
    import probekit

    return Path(probekit.__file__).resolve().parent.parent


def check_project_code(start: Path | None = None) -> None:
    """Inside a probekit project (a folder at or above ``start``, default the current one, with ``dvc.yaml`` and
    ``generators/`` and ``evaluators/``), refuse to run code from anywhere else: DVC records the project's files as a
    stage's dependencies, so the code that runs must be them (:class:`UsageError`, one line naming both places)."""
    from probekit.errors import UsageError

    start = (Path.cwd() if start is None else start).resolve()
    project = next((f for f in (start, *start.parents) if (f / "dvc.yaml").is_file()), None)
    if project is None or not all((project / n).is_dir() for n in ("generators", "evaluators")):
        return
    runs = project_code()
    if runs != project:
        raise UsageError(f"{project} is a probekit project, but this `probes` runs the code in {runs} (installed "
                         f"from another checkout, or as a package), which DVC does not track: run "
                         f"`pip install -e {project}`, or set PYTHONPATH={project}")
