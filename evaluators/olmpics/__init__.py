"""oLMpics (Talmor et al. 2020): zero-shot MC-MLM, learning curves (MLP/LINEAR heads, WS/MAX), MC-QA, the
GloVe/ESIM baselines, results, report and plots."""
