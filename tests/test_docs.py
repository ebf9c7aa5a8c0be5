"""The README and docs/: every relative link resolves, the README stays short, and it opens with the set-up and
test commands that .ci/run runs. Fast, no network; paths from this file, not the working directory."""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").glob("*.md"))]

CHROMIUM = "(command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium))"
"""The set-up's first step: Debian's chromium where it is missing (the browser tests drive it; tests/browse)."""
SETUP = (f"{CHROMIUM} && "
         "python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e '.[offline,dev]' "
         "&& probes sources mirror ../shared/raw && dvc repro")
TEST = ".venv/bin/python -m pytest -n 2 -m \"not slow\""

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+).*?\1")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def _bash_blocks(text: str) -> list[str]:
    return [body.strip() for body in re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            anchors.add(slug if count == 0 else f"{slug}-{count}")
            seen[slug] = count + 1
    return anchors


def _pipeline_outputs() -> set[Path]:
    """Every literal path a dvc.yaml stage writes (outs, metrics, plots): a link to one of them is valid before
    the pipeline has run in this checkout."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    paths = set()
    for stage in stages.values():
        body = stage.get("do", stage)
        for key in ("outs", "metrics", "plots"):
            for item in body.get(key) or []:
                for path in (item if isinstance(item, dict) else {item: None}):
                    if "${" not in path:
                        paths.add((ROOT / path).resolve())
    return paths


def _links(path: Path) -> list[tuple[int, str]]:
    return [(number, target) for number, line in _prose_lines(path.read_text(encoding="utf-8"))
            for target in LINK.findall(CODE_SPAN.sub("", line))]


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    outputs = _pipeline_outputs()
    broken = []
    for number, target in _links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):   # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        where = f"{doc.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            if dest not in outputs:
                broken.append(f"{where}: no such file (nor a dvc.yaml output)")
            continue
        if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_the_link_parser_finds_links():
    readme = {target for _, target in _links(README)}
    assert "docs/README.md" in readme and "results/zeroshot.png" in readme   # a link and an embedded figure
    assert len({target for _, target in _links(ROOT / "docs" / "README.md")}) >= 10


def test_every_docs_page_is_in_the_index():
    index = {target.partition("#")[0] for _, target in _links(ROOT / "docs" / "README.md")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= index, f"docs/README.md does not list {sorted(pages - index)}"


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200; move reference text to docs/)"


def test_readme_opens_with_the_setup_and_test_commands():
    blocks = _bash_blocks(README.read_text(encoding="utf-8"))
    assert blocks[:2] == [SETUP, TEST]


SLOW_LANE = ".venv/bin/python -m pytest -n 2 -m slow"


def test_ci_runs_the_readme_commands():
    setup, test = _bash_blocks(README.read_text(encoding="utf-8"))[:2]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    pytest_lines = [line.split("#")[0].strip() for line in ci if re.search(r"-m pytest\b", line)]
    assert pytest_lines[:1] == [test], f".ci/run runs {pytest_lines}, the README says {test!r}"
    # and the slow lane, which README names with its command (README's command leaves it out)
    assert test.endswith('-m "not slow"') and pytest_lines[1:] == [SLOW_LANE], pytest_lines
    assert f"`{SLOW_LANE}`" in README.read_text(encoding="utf-8")
    # .ci/run installs as the README says (quietly): the set-up up to the install, with pip's -q dropped
    install = setup.removeprefix(f"{CHROMIUM} && ").split(" && probes ")[0]
    installs = [re.sub(r"\s-q\b", "", line.strip()) for line in ci if "pip install" in line]
    assert install in installs, f".ci/run installs with {installs}, the README with {install!r}"
    # and Debian's chromium where it is missing, before the tests (CI runs as root)
    apt = [i for i, line in enumerate(ci) if re.search(r"apt-get install -y( -q)? chromium$", line.strip())]
    assert apt and apt[0] < ci.index(next(line for line in ci if "pip install" in line)), ".ci/run installs no chromium"
    assert any("/usr/bin/chromium" in line and line.lstrip().startswith("if") for line in ci[:apt[0]])
