"""The ``probes`` command (the top layer): one module per command group, argparse and checks only; each
subcommand calls one library function. Nothing imports this package."""
