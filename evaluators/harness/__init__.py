"""lm-evaluation-harness integration (an optional extra): probekit's probes as harness tasks that score as probekit
does, and probekit's masked-LM scoring offered to the harness as the model type ``probekit-mlm``."""
