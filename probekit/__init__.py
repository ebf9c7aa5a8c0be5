"""probekit: probe datasets for language models, generated from sources and evaluated as DVC stages."""

__version__ = "0.1.0"
