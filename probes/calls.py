"""The evaluate commands' one way into the library: the parsed options as a call of
:func:`evaluators.evaluate` (a grid's cell makes the same call)."""

from __future__ import annotations

CLI_ONLY = ("func", "command", "setup", "objective", "debug")
"""What the command line sets that is no option of a run: the handler and the subcommand's names."""


def call(protocol: str, args) -> list:
    """``probes evaluate PROTOCOL`` (or ``train consistency``) as a library call: :func:`evaluators.evaluate`
    with every option as its keyword (``--batch-size`` as ``batch_size``), ``--device`` as given (the library
    resolves ``auto`` when the model is about to load). A grid's cell makes the same call."""
    from evaluators import evaluate

    options = {k: v for k, v in vars(args).items() if k not in CLI_ONLY and not k.startswith("_")}
    return evaluate(protocol, **options, device=args.device_given)
