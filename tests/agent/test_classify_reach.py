"""Where a shell command can reach (agent.classify.reach), read from its text: each form the
docs name (docs/agents.md, "What the hook checkpoints"), and, for random command strings,
never an exception and never more than its bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewindfs.agent.classify.reach import MAX_PATHS, reach

HOME, HERE = "/home/u", "/home/u/mono/frontend"


@pytest.mark.parametrize("command,kind,path", [
    ("rm -rf ../backend", "paths", "/home/u/mono/backend"),
    ("cd ../backend && git stash -u", "dirs", "/home/u/mono/backend"),
    ("cd ../backend && git stash -u", "git", "/home/u/mono/backend"),
    ("git -C ../api reset --hard", "git", "/home/u/mono/api"),
    ("git --work-tree=../site checkout -f .", "git", "/home/u/mono/site"),
    ("bash -c 'cd ../x && make clean'", "dirs", "/home/u/mono/x"),
    ("dd if=/dev/zero of=../y/disk.img bs=1M count=1", "paths", "/home/u/mono/y/disk.img"),
    ("python3 -c \"import shutil; shutil.rmtree('../lib')\"", "paths", "/home/u/mono/lib"),
    ("cp -r src ~/other/", "paths", "/home/u/other"),
    ("(cd /srv/app && rm -rf cache)", "paths", "/srv/app/cache"),
    ("pushd ../docs; rm -f *.md; popd", "dirs", "/home/u/mono/docs"),
])
def test_each_documented_form_is_reached(command: str, kind: str, path: str) -> None:
    found = reach(command, HERE, HOME)
    assert HERE in found.dirs   # where the shell starts, always
    assert path in getattr(found, kind), (command, found.dirs, found.git, found.paths)


def test_a_harmless_command_reaches_where_it_stands() -> None:
    found = reach("ls -la", HERE, HOME)
    assert found.dirs == [HERE] and found.git == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_read_within_its_bound(command: str) -> None:
    found = reach(command, HERE, HOME)
    assert len(found.dirs) + len(found.git) + len(found.paths) <= MAX_PATHS
    assert all(p.startswith("/") for p in (*found.dirs, *found.git, *found.paths))
