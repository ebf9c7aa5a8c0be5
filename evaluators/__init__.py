"""Evaluators: a model and a dataset -> per-example predictions and metrics."""
