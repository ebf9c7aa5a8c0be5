"""lm-evaluation-harness integration: probekit's scoring offered to the harness (an optional extra)."""
