"""The calum probe: its definition (probe.yaml), its generator (generator.py) and their helpers."""
