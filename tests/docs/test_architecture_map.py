"""The package map in docs/architecture.md stays true: it has an entry for every package
of rewindfs, names every module in its package's entry, and names nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rewindfs"
DESCRIPTION_COLUMN = 19  # where the map's descriptions start; a name starts before it


def map_entries() -> dict[str, str]:
    """Each entry of the map under rewindfs/: its path (`store/objects`, `config.py`) and
    its description, continuation lines included."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## Package map\n.*?```\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md: no code block under '## Package map'"
    entries: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (indent, name) of the entries above this one
    current = None
    for line in block.group(1).splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent < DESCRIPTION_COLUMN:
            name = line.split()[0]
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, name.rstrip("/")))
            current = None
            if stack[0][1] == "rewindfs" and len(stack) > 1 and not name.startswith("("):
                current = "/".join(n for _, n in stack[1:])
                entries[current] = line[indent + len(name):]
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)


def test_every_package_and_module_is_on_the_map():
    entries = map_entries()
    missing = []
    for module in sorted(PACKAGE.glob("*.py")):
        if module.name not in entries:
            missing.append(module.name)
    for package in packages():
        key = str(package.relative_to(PACKAGE))
        if key not in entries:
            missing.append(f"{key}/")
            continue
        for module in sorted(package.glob("*.py")):
            if module.name != "__init__.py" and not re.search(
                    rf"(?<![\w.]){re.escape(module.stem)}(?!\w)", entries[key]):
                missing.append(f"{key}/{module.name}")
    assert not missing, f"docs/architecture.md's package map does not name {missing}"


def test_the_map_names_nothing_that_is_gone():
    gone = [key for key in map_entries() if not (PACKAGE / key).exists()]
    assert not gone, f"docs/architecture.md's package map names what is not there: {gone}"
