"""What ``probes rehearse`` leaves in its copy to say how far it got: the workspace's committed outputs removed
before any stage runs (:func:`stale_outputs`), and REHEARSAL.md with timings.json (:func:`write`), written at the
end and also when a stage failed, an error stopped it or Ctrl-C came (a partial rehearsal, saying which stages
completed)."""

from __future__ import annotations

from pathlib import Path

from probes.progress import Progress


def stale_outputs(work: Path) -> list[str]:
    """Remove from the copy the stage outputs git tracks (the reports, tables and figures under results/ and
    reports/ committed with the workspace's own run, its .gitignore files kept): left there, a report no stage of
    the rehearsal has rewritten yet (a stage that failed, or one not reached when Ctrl-C came) would read as the
    rehearsal's. Returns their paths."""
    gone = []
    for folder in ("results", "reports"):
        for path in sorted((work / folder).rglob("*")) if (work / folder).is_dir() else []:
            if path.is_file() and path.name != ".gitignore":
                path.unlink()
                gone.append(path.relative_to(work).as_posix())
    return gone


def write(work: Path, project: Path, notes: list[str], removed: int, stages: list[str],
                 progress: Progress, unfinished_: list[str], state: str) -> Path:
    """REHEARSAL.md in ``work`` (and timings.json: each stage's seconds, what ``--estimate`` reads), at the end or
    when the rehearsal stopped early (``state``: how it ended): the stages that completed (with their time), those
    that did not, those not reached."""
    from probekit.outputs.atomic import write_json, write_text

    done = progress.completed
    named = {s.split(":")[0] for s in unfinished_}
    unfinished_ = unfinished_ + [f"{s}: stopped while it ran" for s in progress.stopped if s not in named]
    reached = set(done) | set(progress.unchanged) | named | set(progress.stopped)
    left = [s for s in stages if s not in reached]
    write_json(work / "timings.json", {"stages": {s: round(progress.seconds[s], 2) for s in done},
                                       "unchanged": progress.unchanged, "state": state})
    text = ("# Rehearsal of the paper profile\n\n" + f"Made by `probes rehearse` (probes/rehearse.py) from "
            f"{project}; params.yaml is the paper profile with the caps of `rehearsal_params`. The numbers measure "
            f"nothing.\n\n**{state}**\n\n"
            f"{removed} committed outputs of the workspace (results/, reports/) were removed from the copy: what is "
            "there now was written by this rehearsal.\n\n"
            "Stand-in files (made-up rows in the sources' layouts):\n\n" + ("".join(f"- {n}\n" for n in notes)
                                                                               or "- none written yet\n")
            + f"\nStages that completed ({len(done) + len(progress.unchanged)}"
            + (f" of {len(stages)}" if stages else "") + "):\n\n"
            + "".join(f"- {s} ({progress.seconds[s]:.1f}s)\n" for s in done)
            + "".join(f"- {s} (up to date)\n" for s in progress.unchanged)
            + "\nStages that did not complete:\n\n" + ("".join(f"- {s}\n" for s in unfinished_) or "- none\n")
            + ("\nStages not reached:\n\n" + "".join(f"- {s}\n" for s in left) if left else ""))
    write_text(work / "REHEARSAL.md", text)
    return work / "REHEARSAL.md"
