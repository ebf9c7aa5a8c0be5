"""Outputs: probekit deletes or replaces a file only if its bytes are the ones probekit wrote there.

- Every folder probekit writes whole carries a marker (``.probekit.json``: its kind of output, and each file with its
  size and sha256); every loose file a command writes is listed, the same way, in its folder's ledger
  (``.probekit-files.json``). What an older probekit wrote counts when ``dvc.lock`` records its bytes
  (:mod:`.marker`, :mod:`.legacy`).
- Anything else is the user's: a file no record lists, or whose bytes changed, a link, a folder no marker lists,
  whatever the folder looks like (:mod:`.ownership`). A command refuses it before any work, in one line that names
  it; ``--force`` replaces it, after saying what that deletes (:mod:`.claim`).
- A folder of one kind (a dataset, results, an export...) is replaced by a command of another kind only with
  ``--force``; a results store is only ever added to.
- ``--force`` never crosses a repository, known by what it is (a ``.git``, ``.hg``, ``.svn``, ``.bzr``, ``.jj``,
  ``_darcs``… anywhere under the target, a bare repository, a Fossil file), a DVC cache (every level of DVC's
  configuration), Python's installs, a mount point, nor any folder holding them (:mod:`.boundary`).
- Only regular files and folders are opened or replaced: a FIFO, socket or device is refused, ``--force`` or not,
  and never waited on (:func:`non_regular`, :mod:`.regular`).
- Outputs never overlap inputs (:mod:`.overlap`).
"""

from probekit.outputs.boundary import forbidden
from probekit.outputs.claim import (
    OutputError,
    check_file,
    check_replace,
    checked_text,
    claim,
    claim_file,
    claim_into,
    claims,
    inside_writing,
    normal,
    not_empty,
    writing,
)
from probekit.outputs.marker import (
    KINDS,
    LEDGER,
    MARKER,
    MarkerError,
    forget_loose,
    mark_store,
    record_loose,
    write_marker,
)
from probekit.outputs.ownership import file_kind, inventory
from probekit.outputs.regular import non_regular
from probekit.outputs.removal import discard


def not_ours(folder, most: int | None = None) -> list[str]:
    """What under ``folder`` probekit did not write (relative paths; folders end in ``/``), the first ``most`` of
    them: empty when the folder is missing, empty, or all probekit's (:func:`inventory`)."""
    from pathlib import Path

    return inventory(Path(folder)).foreign[:most]

__all__ = ["KINDS", "LEDGER", "MARKER", "MarkerError", "OutputError", "check_file", "check_replace", "checked_text",
           "claim", "claim_file", "claim_into", "claims", "discard", "file_kind", "forbidden", "forget_loose",
           "inside_writing", "inventory", "mark_store", "non_regular", "normal", "not_empty", "not_ours",
           "record_loose", "write_marker", "writing"]
