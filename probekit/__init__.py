"""probekit: probe datasets for language models, generated from sources and evaluated as DVC stages."""

from probekit import moved as _moved

__version__ = "0.1.0"

_moved.install()   # an old module name (before the four layers) fails with the new one named
