"""What both halves (generators, evaluators) need about a model before scoring it: resolving what the user typed
(alias, folder, ``pkg:`` package, Hub id) and how a tokenizer reads a word in context (one-token filters)."""
