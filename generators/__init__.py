"""Generators: a probe is a folder ``generators/<probe>/`` named after it, holding its definition ``probe.yaml``,
its generator module ``generator.py`` and its private helpers. What several probes share sits beside the folders in
:mod:`generators.shared`: the registry (every generator called one way), the MC-MLM/MC-QA build, the one-token
filters, the number tuples, the hashed split and the construction rules the fidelity report checks."""
