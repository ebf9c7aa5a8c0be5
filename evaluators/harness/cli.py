"""The harness's own command line with ``probekit-mlm`` registered: lm-eval 0.4.13 discovers no plugin model
types (no entry points: its registry knows only the classes imported into it), so the model module is imported
first and then the harness's CLI runs in this process, as the ``lm_eval`` console script does
(``lm_eval.__main__:cli_evaluate``)."""

from __future__ import annotations

import sys
from typing import Sequence


def run_harness(argv: Sequence[str]) -> int:
    """``lm_eval <argv>`` (``run`` is implied, as in the harness) with ``probekit-mlm`` available; the exit
    status (0: done). ``sys.argv`` is restored afterwards."""
    import evaluators.harness.masked_lm  # noqa: F401  (registers probekit-mlm)
    from lm_eval.__main__ import cli_evaluate

    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    except SystemExit as exc:  # argparse's --help and errors, the harness's own exits
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)  # sys.exit("message"): what the interpreter would print
        return 1
    finally:
        sys.argv = saved
    return 0
