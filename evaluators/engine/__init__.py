"""The scoring engine every protocol shares: model loading, the collator and runner, the rules per LM family
(mask-logit, PLL, causal, seq2seq, sentence pairs), kept models, the tokenization audit."""
