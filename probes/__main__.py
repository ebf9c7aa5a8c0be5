"""``python -m probes``: the same as the ``probes`` command."""

import sys

from probes.main import main

sys.exit(main())
