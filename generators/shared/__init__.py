"""What several probes share: :mod:`.registry` (discovers the probe folders; one call shape for every generator),
:mod:`.build` (MC-MLM and MC-QA variants and their controls), :mod:`.single_token`, :mod:`.number_tuples`,
:mod:`.hashed_split` and :mod:`.release_rules` (the construction rules checked against the original release)."""
