"""Imported at the start of every Python process whose ``sys.path`` holds this folder (a test puts it on PYTHONPATH):
with ``PROBEKIT_TEST_IMPORT_LOG`` set, each process appends, at its exit, its argv and the project's modules it
imported (name -> file) to that file, a JSON line. ``tests/core/test_code_keys.py`` and the pipeline test check them
against the key files of ``probes code``."""

import atexit
import json
import os
import sys

_LOG = os.environ.get("PROBEKIT_TEST_IMPORT_LOG")
_PACKAGES = ("probekit", "probes", "evaluators", "generators")

if _LOG:
    def _write() -> None:
        modules = {name: module.__file__ for name, module in list(sys.modules.items())
                   if name.partition(".")[0] in _PACKAGES and getattr(module, "__file__", None)}
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": sys.argv, "modules": modules}) + "\n")

    atexit.register(_write)
