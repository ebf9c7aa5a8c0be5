"""The vocabulary of scoring: the model families (which head scores a model) and each family's scoring rules,
written once and imported by the command line's choices, the params models and the engine alike."""

from __future__ import annotations

FAMILIES = ("mlm", "causal", "seq2seq")
"""The model families a scoring rule applies to: masked, causal and sequence-to-sequence LMs."""

FAMILY_WORDS = {"mlm": "a masked LM", "causal": "a causal LM", "seq2seq": "a seq2seq LM"}
HEADS = {"mlm": "masked-LM", "causal": "causal-LM", "seq2seq": "seq2seq-LM"}
"""The LM head each family scores with, as a message names it."""

SCORINGS = ("auto", *FAMILIES)
"""``--scoring`` / ``scoring.family``: a family, or ``auto`` (read from the model's config)."""

MLM_RULES = ("mask-logit", "pll", "pll-statement")
CAUSAL_RULES = ("statement", "choice", "harness")
SEQ2SEQ_RULES = ("sentinel", "statement")
RULES = {"mlm": MLM_RULES, "causal": CAUSAL_RULES, "seq2seq": SEQ2SEQ_RULES}
"""family -> its scoring rules, the default first."""

MULTI_TOKEN_RULES = ("error", "first")
"""mask-logit's answer to a choice of several tokens: refused, or scored by its first token."""

ALL_RULES = tuple(dict.fromkeys(rule for rules in RULES.values() for rule in rules))
"""Every rule name (``--rule``'s choices)."""

DTYPES = ("auto", "float32", "bfloat16", "float16")
"""A model's weights' dtype (``--dtype`` / ``scoring.dtype``)."""
