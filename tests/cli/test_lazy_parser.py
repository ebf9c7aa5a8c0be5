"""Building the ``probes`` parser imports no registry: a stage that evaluates does not depend on generators/ or
the sources' loaders (DVC deps follow imports)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHECK = """
import json, sys
from probes import main
argv = json.loads(sys.argv[1])
p = main.parser(main._command_of(argv)) if hasattr(main, "_command_of") else main.parser()
if argv:
    p.parse_args(argv)
print(json.dumps(sorted(m for m in sys.modules if m == "generators" or m.startswith(("generators.",
                                                                                     "probekit.sources")))))
"""


@pytest.mark.parametrize("argv", [[], ["evaluate", "zeroshot", "--model", "m", "--data", "d", "--out", "o"]])
def test_building_the_parser_imports_no_generator_or_source(argv):
    done = subprocess.run([sys.executable, "-c", CHECK, json.dumps(argv)], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []


def test_a_probe_name_is_checked_when_generate_runs(capsys):
    from generators.shared import registry as generators
    from probes.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["generate", "nope", "--out", "x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"invalid choice: 'nope' (choose from {', '.join(map(repr, generators.available()))})" in err
    from probes.main import parser

    gen = parser("generate")._subparsers._group_actions[0].choices["generate"]
    assert ", ".join(generators.available()) in " ".join(gen.format_help().split())


def test_every_command_is_built_by_its_own_modules_alone():
    """Each top-level command of the whole parser is in :data:`probes.main.COMMANDS` (or ``EVALUATE``), and the
    parser :func:`probes.main.main` builds for it (its modules only) holds it: a command missing from the table
    would build the whole parser, so its stage would import, and depend on, every command's code."""
    from probes.main import _command_of, modules_of, parser

    every = parser()._subparsers._group_actions[0].choices
    for name in every:
        assert _command_of([name]) == name, f"probes {name}: not in probes.main.COMMANDS"
        lazy = parser(name)._subparsers._group_actions[0].choices
        assert name in lazy, f"probes {name}: not added by {modules_of(name)}"
