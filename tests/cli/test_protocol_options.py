"""A protocol's command-line options are built from its params model: each option its record declares is on its
command, typed, validated and described by the field it sets, and no option of a protocol command sets a params
field by hand."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from evaluators import protocols
from probes.main import main, parser
from probes.options import FieldValue

COMMANDS = {"zeroshot": ("evaluate", "zeroshot"), "features": ("evaluate", "features"), "curve": ("evaluate", "curve"),
            "curve-lr": ("evaluate", "curve-lr"),
            "mcqa": ("evaluate", "mcqa"), "pararel": ("evaluate", "pararel"), "calum": ("evaluate", "calum"),
            "consistency": ("train", "consistency")}


def _command(words: tuple[str, ...]) -> argparse.ArgumentParser:
    found = parser()
    for word in words:
        found = next(a for a in found._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
    return found


def test_every_protocol_with_a_run_has_a_command():
    assert {n for n, r in protocols.every().items() if r.run is not None} == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_option_is_built_from_the_field_it_sets(name):
    record, command = protocols.get(name), _command(COMMANDS[name])
    actions = {a.dest: a for a in command._actions}
    for option, (section, field) in record.options.items():
        action, info = actions[option], record.field_of(option)
        assert action.option_strings == [f"--{option.replace('_', '-')}"] + (
            [f"--no-{option.replace('_', '-')}"] if info.annotation is bool else [])
        assert action.default is None   # left out: the params' value
        assert info.description and info.description.replace("%", "%%") in action.help
        assert f"(default: the params' {section}.{field}; built in: " in action.help
        if info.annotation is not bool:
            assert isinstance(action.type, FieldValue)
            default = info.default
            text = ",".join(map(str, default)) if isinstance(default, list) else str(default)
            if default is not None:   # the built-in value, as text, parses back to itself
                assert action.type(text) == default, option
    # no option of the command sets a field of a section it reads by hand (a field's name, typed some other way)
    fields = {f for model in record.reads.values() for f in model.model_fields}
    by_hand = {a.dest for a in command._actions if a.dest in fields and a.dest not in record.options}
    assert by_hand == PICKS.get(name, set()), by_hand


PICKS = {"calum": {"multitask"}, "mcqa": {"intermediate"}}
"""Options named like a field that pick within it rather than set it: ``--multitask GROUP`` one group of
``calum_eval.multitask``; ``--intermediate VARIANT`` this call's variant, where ``mcqa.intermediate`` maps each probe
to one."""


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "curve", "--setting", "mlp", "--sizes", "125,62"], "argument --sizes: expected increasing sizes"),
    (["evaluate", "mcqa", "--seeds", "1,1"], "argument --seeds: expected distinct seeds, got [1, 1]"),
    (["evaluate", "pararel", "--relations", "P19,place"], "argument --relations: item 2 ('place'): String should "
                                                          "match pattern"),
    (["evaluate", "pararel", "--top-k", "0"], "argument --top-k: Input should be greater than 0; got '0'"),
    (["evaluate", "calum", "--task", "rte", "--max-steps", "many"], "argument --max-steps: Input should be a valid "
                                                                    "integer"),
    (["train", "consistency", "--eval-relations", "p19"], "argument --eval-relations: item 1 ('p19')"),
    (["evaluate", "zeroshot", "--multi-token", "all"], "argument --multi-token: Input should be 'error' or 'first'"),
])
def test_a_value_the_params_would_refuse_is_refused_on_the_command_line(argv, message, tmp_path, capsys):
    """The same checks as in params.yaml (the model's constraints and validators), at parse time: exit 2, the
    option named, nothing run."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--model", "m", "--data", "d", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_the_same_values_in_params_yaml_are_refused_too(tmp_path):
    from evaluators.shared.params import CurveParams, ParaRelEvalParams

    with pytest.raises(ValueError, match="expected increasing sizes"):
        CurveParams(sizes=[125, 62])
    with pytest.raises(ValueError, match="should match pattern"):
        ParaRelEvalParams(relations=["place"])


CHECK = """
import json, sys
from probes import main
argv = json.loads(sys.argv[1])
command = main._command_of(argv)
main.parser(command, main._setup_of(argv, command))
print(json.dumps(sorted(m for m in sys.modules if m.startswith("evaluators.") and m.endswith(".runs"))))
"""


@pytest.mark.parametrize("argv, runs", [
    (["evaluate", "curve", "--model", "m"], ["evaluators.olmpics.runs"]),
    (["train", "consistency", "--model", "m"], ["evaluators.pararel.runs"]),
    (["evaluate", "calum", "--task", "rte"], ["evaluators.calum.runs"]),
    (["olmpics-report", "results"], []),
    (["grid", "spec.yaml"], ["evaluators.calum.runs", "evaluators.olmpics.runs", "evaluators.pararel.runs"]),
])
def test_a_command_builds_its_own_protocol_s_options_only(argv, runs):
    """Building the options imports the protocol's runs module: a command imports its own only (its code key lists
    no other paper's run), a command that runs no protocol none, a grid (which checks specs with every protocol's
    parser) all."""
    done = subprocess.run([sys.executable, "-c", CHECK, json.dumps(argv)], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == runs
