"""Evaluation grids: a YAML spec -> cells, executors (local, Ray), the results store, the report."""
