"""Evaluators: a model and a dataset -> per-example predictions and metrics."""

from probekit import moved as _moved

_moved.install()   # an old module name (before the four layers) fails with the new one named
