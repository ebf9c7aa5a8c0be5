"""``probes lm-eval``: lm-evaluation-harness's own command line with probekit's masked-LM model type
``probekit-mlm`` registered (``lm-eval`` is an optional extra). Every argument after ``lm-eval`` goes to the
harness (``probes.main`` hands them over as they are). The work is in :mod:`evaluators.harness.cli`."""

from __future__ import annotations

import argparse

from probekit.errors import UsageError


def _harness_paths(args) -> list:
    """What the harness writes and reads among its own options: ``--output_path`` (``-o``; its results and samples are
    added there) and ``--include_path`` (task configs read)."""
    from probekit.outputs.gate import ADD, READ, Access

    found, words = [], list(args.harness_args or [])
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in ("--output_path", "-o", "--include_path"):
            value = value if eq else (words[i + 1] if i + 1 < len(words) else None)
            if value:
                found.append(Access(READ if name == "--include_path" else ADD, value, name))
    return found


def _harness(args) -> int:
    try:
        from evaluators.harness.cli import run_harness
    except ImportError as exc:   # the optional extra is not installed
        raise UsageError(f"probes lm-eval needs lm-evaluation-harness: pip install 'probekit[lm-eval]' ({exc})") \
            from None
    return run_harness(args.harness_args)


def add_commands(sub, command) -> None:
    """``lm-eval``."""
    run = command(sub, "lm-eval", "run lm-evaluation-harness (its own options) with the masked-LM model type "
                  "probekit-mlm registered",
                  "Every argument goes to lm-evaluation-harness's command line, as `lm_eval ...` takes it; "
                  "probekit adds the model type probekit-mlm (masked LMs scored by PLL-word-l2r, docs/lm-eval.md). "
                  "Example: probes lm-eval --model probekit-mlm --model_args pretrained=bert-base-uncased --tasks "
                  "olmpics --include_path data/lm_eval --device cpu")
    run.add_argument("harness_args", nargs=argparse.REMAINDER, help="lm_eval's arguments")
    run.set_defaults(func=_harness, paths=_harness_paths)
