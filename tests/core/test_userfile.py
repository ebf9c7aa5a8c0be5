"""The one writer of the user's own YAML files (probekit/userfile.py): only the command's change is written (comments,
order, quoting and hand edits elsewhere kept), a hand edit the change would lose is refused in one line, a read-only
file is refused, a link is written through, the mode is kept, and the read-modify-write holds the folder's lock.
The commands that use it: tests/cli/test_run.py, tests/cli/test_new_params.py, tests/core/test_sources.py."""

from __future__ import annotations

import difflib
import os

import pytest
import yaml

from probekit.outputs import userfile
from probekit.errors import UsageError

TEXT = """\
# my notes: the GPU box
models:   # what I compare
  bert: bert-base-uncased  # the baseline

# the probes, as conf/ lists them
probes:
  mc_mlm:
  - a   # first
  - b
  mc_qa: [c, d]   # QA
scoring:
  batch_size: 4   # fits my GPU
  family: 'auto'
# the end
"""
BASE = {"models": {"bert": "bert-base-uncased"}, "probes": {"mc_mlm": ["a", "b"], "mc_qa": ["c", "d"]},
        "scoring": {"batch_size": "auto", "family": "auto"}}


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_only_the_changed_keys_are_written(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(TEXT)
    new = {"models": {**BASE["models"], "tiny": {"id": "/models/tiny", "revision": "v1"}},
           "probes": {**BASE["probes"], "mc_mlm": ["a", "b", "part_of"]}, "scoring": BASE["scoring"], "part_of": {}}
    done = userfile.edit_yaml(path, new, base=BASE, command="probes x")
    assert done.keys == ["models.tiny", "probes.mc_mlm", "part_of"]
    removed, added = _changed_lines(TEXT, path.read_text())
    assert removed == [] and added == ["  tiny:", "    id: /models/tiny", "    revision: v1", "  - part_of",
                                       "part_of: {}"]
    text = path.read_text()   # each new line where the composition has it, the comments before the next key kept
    assert text.index("revision: v1") < text.index("# the probes") and text.index("part_of: {}") < text.index(
        "# the end")
    assert yaml.safe_load(text) == {**new, "scoring": {"batch_size": 4, "family": "auto"}}   # the hand edit kept
    userfile.edit_yaml(path, BASE, base=new, command="probes x")   # and back: the same text
    assert path.read_text() == TEXT


def test_a_hand_edit_of_a_changed_key_is_refused_naming_it(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(TEXT)
    new = {**BASE, "scoring": {"batch_size": 8, "family": "auto"}}
    with pytest.raises(UsageError, match=rf"^{path}: probes x would lose your edit of scoring.batch_size \(.*"
                                         r"undo it; nothing was changed$"):
        userfile.edit_yaml(path, new, base=BASE, command="probes x", advice="undo it")
    assert path.read_text() == TEXT
    # a key the file already holds as the command wants it is no conflict, and nothing is written
    assert userfile.edit_yaml(path, {**BASE, "scoring": {"batch_size": 4, "family": "auto"}}, base=BASE,
                              command="probes x").keys == []


def test_values_are_written_as_yaml_1_1_reads_them(tmp_path):
    """PyYAML (and DVC) read YAML 1.1: `yes` and `on` are booleans there, `1e-05` a string."""
    path = tmp_path / "p.yaml"
    path.write_text("a: 1\n")
    new = {"a": 1, "word": "yes", "other": "on", "rate": 1e-05, "when": "2001-12-14", "none": None}
    userfile.edit_yaml(path, new, base={"a": 1}, command="probes x")
    assert yaml.safe_load(path.read_text()) == new


def test_a_change_through_an_anchor_is_refused(tmp_path):
    """`b` is an alias of `a`'s mapping: setting b.k would set a.k too; refused, nothing written."""
    path = tmp_path / "p.yaml"
    path.write_text("a: &shared {k: 1}\nb: *shared\n")
    with pytest.raises(UsageError, match="without changing other keys of this file"):
        userfile.edit_yaml(path, {"a": {"k": 1}, "b": {"k": 2}}, base={"a": {"k": 1}, "b": {"k": 1}},
                           command="probes x")
    assert path.read_text() == "a: &shared {k: 1}\nb: *shared\n"


def test_read_only_link_and_mode(tmp_path):
    real = tmp_path / "elsewhere" / "params.yaml"
    real.parent.mkdir()
    real.write_text("a: 1  # mine\n")
    link = tmp_path / "params.yaml"
    link.symlink_to(real)
    real.chmod(0o600)
    userfile.edit_yaml(link, {"a": 1, "b": 2}, base={"a": 1}, command="probes x")
    assert link.is_symlink() and real.read_text() == "a: 1  # mine\nb: 2\n"
    assert oct(real.stat().st_mode & 0o777) == oct(0o600)
    real.chmod(0o444)
    with pytest.raises(UsageError, match=rf"^{link}: is read-only; probes x edits it \(c\): make it writable"):
        userfile.edit_yaml(link, {"a": 1, "b": 2, "c": 3}, base={"a": 1, "b": 2}, command="probes x")
    assert oct(real.stat().st_mode & 0o777) == oct(0o444) and real.read_text() == "a: 1  # mine\nb: 2\n"
    (tmp_path / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(UsageError, match="a link to .*nowhere.yaml, which does not exist"):
        userfile.edit_yaml(tmp_path / "dangling.yaml", {"a": 1}, base={}, command="probes x")
    assert not (tmp_path / "nowhere.yaml").exists()


def test_a_file_left_empty_keeps_the_users_comment_or_goes(tmp_path):
    header = "# written by probekit\n"
    path = tmp_path / "local.yaml"
    userfile.edit_yaml(path, {"mirror": "/m"}, base={}, command="probes x", header=header, drop_empty=True)
    assert path.read_text() == header + "mirror: /m\n"
    userfile.edit_yaml(path, {}, base={"mirror": "/m"}, command="probes x", header=header, drop_empty=True)
    assert not path.exists()   # nothing but probekit's own header was left
    path.write_text(header + "# my NAS, mounted on Mondays\nmirror: /m\n")
    userfile.edit_yaml(path, {}, base={"mirror": "/m"}, command="probes x", header=header, drop_empty=True)
    assert path.read_text() == header + "# my NAS, mounted on Mondays\n"


def test_the_lock_is_reentrant_and_excludes_another_holder(tmp_path):
    """Within a thread the lock nests; another open of the folder (as another process has) cannot take it until the
    last holder is done; no lock file is left in the user's folder."""
    import fcntl

    def free() -> bool:
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    with userfile.locked(tmp_path):
        with userfile.locked(tmp_path):
            assert not free()
        assert not free()
    assert free() and not os.listdir(tmp_path)


def test_windows_line_ends_are_kept(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"# mine\r\na: 1\r\n")
    userfile.edit_yaml(path, {"a": 1, "b": 2}, base={"a": 1}, command="probes x")
    assert path.read_bytes() == b"# mine\r\na: 1\r\nb: 2\r\n"


def test_a_hard_linked_file_is_refused(tmp_path):
    """An atomic replace gives the name a new file: the file's other hard links would keep the old text, silently."""
    path, other = tmp_path / "params.yaml", tmp_path / "backup.yaml"
    path.write_text("a: 1\n")
    os.link(path, other)
    with pytest.raises(UsageError, match=rf"^{path}: has 1 other hard link\(s\); probes x replaces the file whole"):
        userfile.edit_yaml(path, {"a": 2}, base={"a": 1}, command="probes x")
    assert other.read_text() == path.read_text() == "a: 1\n"
