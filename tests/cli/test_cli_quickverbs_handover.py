"""The quick paths (issue 21) hand over to the click command wherever the click command
would say more than the quick reader knows: a history broken in the middle (issue 27),
a damaged label ref, an unreadable project record, another agent's `kilo:N` step, the
automatic import of other agents' snapshots (issue 25); and answer as the click command
does from its history records (issue 23). Each case runs the real `rewind` and the click
group beside it (test_cli_quickverbs.both) and compares what they print."""
# Its fixtures `env` and `history` are test_cli_quickverbs's, imported by name:
# ruff: noqa: F811

from __future__ import annotations

import json
import re

import pygit2
import pytest
from test_cli_quickverbs import AGE, SLOW, both, env, history, same_output  # noqa: F401

from rewindfs.store import project_hash

CASES = [["list"], ["list", "--json"], ["cat", "1", "new2.txt"], ["cat", "v1", "new1.txt"]]


def slow(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in SLOW}


def alike(quick, click) -> None:
    """The same exit, stderr and stdout (ages, each from its own "now", as words; the age
    column's width with them, so runs of spaces as one)."""
    assert (quick.returncode, quick.stderr) == (click.returncode, click.stderr)

    def words(out: bytes) -> str:
        return re.sub(" +", " ", AGE.sub(" AGE", out.decode()))

    assert words(quick.stdout) == words(click.stdout)


def records_file(store_dir, project):
    return store_dir / "caches" / f"{project_hash(project)}.history"


@pytest.fixture
def broken(history, project, store_dir) -> list[str]:
    """`history` with the loose commit of its newest checkpoint deleted: a break below
    the restore's pre-rollback snapshot, the labelled one and the first past it."""
    repo = pygit2.Repository(str(store_dir))
    tip = repo.references[f"refs/hermes/{project_hash(project)}"].peel(pygit2.Commit)
    middle = tip.parents[0]
    loose = store_dir / "objects" / str(middle.id)[:2] / str(middle.id)[2:]
    assert loose.is_file(), "the middle checkpoint must be a loose object"
    loose.unlink()
    return [str(middle.id)]


@pytest.mark.parametrize("args", [*CASES, ["cat", "3", "README.md"]], ids=" ".join)
def test_a_broken_history_is_the_click_commands(args, broken, project, env):
    """The quick reader meets the missing commit and hands over: the same rows (`?` past
    the break), the same one warning line, the same refusals, in click's words."""
    quick, click, modules = both(args, project, env)
    assert slow(modules), "the quick path answered a broken history"
    alike(quick, click)
    if args[0] == "list":
        assert b"history broken at checkpoint" in quick.stderr


def test_the_break_is_listed_past_it(broken, project, env):
    quick, _, _ = both(["list"], project, env)
    assert b"(history broken here" in quick.stdout and b"\n  ?  " in quick.stdout, quick.stdout


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_a_list_read_from_the_records_is_what_the_quick_path_prints(args, history, project,
                                                                    env, store_dir, run_rewind,
                                                                    take_more):
    """The click command lists from the project's history records (written by its first
    read, kept up by the next after new checkpoints); the quick path, walking the objects
    itself, prints the same."""
    both(["list"], project, env)  # the click run writes the records
    assert records_file(store_dir, project).is_file()
    take_more()
    assert not slow(same_output(args, project, env))
    assert records_file(store_dir, project).stat().st_size > 0


@pytest.fixture
def take_more(project, store):
    def take() -> None:
        from rewindfs.store import take as take_checkpoint

        (project / "new2.txt").write_text("after the records\n")
        take_checkpoint(store, project, "after the records")

    return take


def test_a_damaged_label_ref_is_the_click_commands(history, project, env, store_dir):
    """libgit2 leaves a label ref it cannot parse out of its list, and the click command
    says so: the quick reader cannot parse it either and hands over."""
    labels = store_dir / "refs" / "rewind" / "labels" / project_hash(project)
    (labels / "broken").write_text("not an object id\n")
    quick, click, modules = both(["list"], project, env)
    assert slow(modules)
    alike(quick, click)
    assert b"label 'broken' is unreadable" in quick.stderr


def test_an_unreadable_project_record_is_said_as_click_says_it(history, project, env,
                                                                store_dir):
    other = store_dir / "projects" / ("0" * 16 + ".json")
    other.write_text("{not json")
    alike(*both(["list"], project, env)[:2])


@pytest.mark.parametrize("args", [["cat", "kilo:1", "README.md"],
                                  ["cat", "opencode:latest", "README.md"]], ids=" ".join)
def test_another_agents_step_is_the_click_commands(args, history, project, env):
    quick, click, modules = both(args, project, env)
    assert "click" in modules
    assert (quick.returncode, quick.stderr) == (click.returncode, click.stderr)


@pytest.mark.parametrize("args", [["list"], ["cat", "1", "new2.txt"]], ids=" ".join)
def test_auto_import_hands_over_to_click(args, history, project, env):
    """With `auto_import` set, every command starts the import once it is done: that is
    the click command's (cli.group), so the quick path steps aside."""
    env["REWIND_AUTO_IMPORT"] = "kilo,opencode"
    quick, click, modules = both(args, project, env)
    assert "click" in modules
    assert (quick.returncode, quick.stderr) == (click.returncode, click.stderr)
    if args[0] == "list":
        assert json.loads(both(["list", "--json"], project, env)[0].stdout)
