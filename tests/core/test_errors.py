"""What an error message quotes of a value: ``probekit.errors.shown``, a repr cut short with bounded work."""

from __future__ import annotations

import pytest
import yaml

from probekit.errors import shown

from helpers import alias_bomb


@pytest.mark.parametrize("value", [None, 0, -3, 1.5, True, "", "it's", "x" * 78, b"\x00b", [38], [], (), (1,),
                                   ("a", 2), {}, {"a": [1, (2,)]}, set(), {3}, frozenset(), frozenset({"a"}),
                                   [[[]]], {"k": None}, list(range(20))])
def test_a_short_value_is_its_repr(value):
    assert shown(value) == repr(value)


@pytest.mark.parametrize("value, size", [("y" * 1000, "(1,000 characters)"), (b"z" * 90, "(90 bytes)"),
                                          (list(range(500)), "(500 items)"), ({i: i for i in range(50)}, "(50 items)"),
                                          ([["q" * 200]], "(1 item)")])
def test_a_long_value_is_cut_and_says_its_size(value, size):
    text = shown(value)
    assert text.startswith(repr(value)[:79]) and text.endswith("… " + size)
    assert len(text) <= 80 + len(" " + size)


def test_huge_and_recursive_values_are_never_expanded():
    bomb = yaml.safe_load(alias_bomb())["a7"]   # 9**7 strings as shared references; its repr has 34 million characters
    assert shown(bomb) == "[[[[[[[['x'], ['x'], ['x'], ['x'], ['x'], ['x'], ['x'], ['x'], ['x']], [['x'], … (9 items)"
    loop = []
    loop.append(loop)
    assert shown(loop, limit=10) == "[[[[[[[[[… (1 item)"
    assert shown(10 ** 5000) == "<int of 16610 bits>"   # past int's str limit: repr() raises
    assert len(shown("a" * 10 ** 7, limit=20)) == 20 + len(" (10,000,000 characters)")
