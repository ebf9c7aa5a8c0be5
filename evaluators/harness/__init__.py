"""probekit's probe datasets as lm-evaluation-harness tasks (YAML configs, groups) that score as probekit does."""
