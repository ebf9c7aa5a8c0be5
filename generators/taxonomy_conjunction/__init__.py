"""The taxonomy_conjunction probe: its definition (probe.yaml), its generator (generator.py) and their helpers."""
