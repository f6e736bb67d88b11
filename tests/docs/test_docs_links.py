"""The docs hold together: every relative link in README.md and docs/*.md reaches a file
of the repository (and a heading, when it names one), every page is in the docs index,
the README stays a short front door, and pyproject's readme is there."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+).+?\1")
# [text](target "title"), the text possibly holding [brackets]; the target is group 1.
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]"
                          r"\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked out."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(_CODE_SPAN.sub("", line))
    return out


def links(page: Path) -> list[str]:
    found = []
    for line in prose_lines(page.read_text()):
        found += _INLINE_LINK.findall(line)
        found += _REFERENCE_DEF.findall(line)
    return found


def anchors(page: Path) -> set[str]:
    """The ids a code host gives the page's headings (GitHub's rules, duplicates numbered)."""
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text().replace("`", "")):
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def local(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("//")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    checked = 0
    for target in links(page):
        if not local(target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert dest.exists(), f"{page.name}: {target} does not exist"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: {target}: no such heading"
        checked += 1
    if page.name == "README.md" and page.parent == ROOT:
        assert checked, "the README links to no page of docs/: the link scan is broken"


def test_the_link_check_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [gone](missing.md), [here](#title) and `[not](code.md)`.\n"
                    "```\n[also not](fenced.md)\n```\n")
    assert links(page) == ["missing.md", "#title"]
    assert anchors(page) == {"title"}


def test_every_docs_page_is_in_the_index():
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / t).resolve() for t in links(index) if local(t)}
    missing = [p.name for p in PAGES if p.parent == index.parent and p != index
               and p.resolve() not in listed]
    assert not missing, f"docs/README.md does not list {missing}"


def test_readme_is_a_short_front_door():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= 200, f"README.md has {lines} lines; move the detail into docs/"


def test_pyproject_readme_exists():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (ROOT / project["readme"]).is_file(), project["readme"]
