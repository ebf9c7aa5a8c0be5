"""Probe definitions: templates and their YAML, controls ``fn(row) -> row | None``, probe folders and cards,
word facts, fidelity against the original release."""
