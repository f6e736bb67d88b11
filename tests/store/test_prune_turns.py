"""`max_snapshots` counts an agent hook's checkpoints by turn (issue 47): a run of one
turn's checkpoints counts once, the history is cut below the oldest checkpoint of the
N-th newest turn and one more (the state before it), and every other checkpoint (the
Python API's, Hermes's, the CLI's) counts one, as in Hermes."""

from __future__ import annotations

from pathlib import Path

from rewindfs.store import take
from rewindfs.store.history import checkpoints


def hook(turn: str, session: str = "s1") -> dict[str, str]:
    return {"Rewind-Agent": "claude-code", "Rewind-Session": session, "Rewind-Turn": turn,
            "Rewind-Step": f"claude-code:{turn}", "Rewind-Phase": "before"}


def chain(store, project: Path, steps: list[tuple[str, dict[str, str] | None]], keep: int
          ) -> list[str]:
    """Takes a checkpoint per step (a file changed before each), pruning at `keep`; the
    reasons of what is left, newest first."""
    for reason, trailers in steps:
        (project / "state.txt").write_text(f"{reason}\n")
        result = take(store, project, reason, trailers=trailers, keep=keep)
    return [cp.reason for cp in checkpoints(store.project(project).repo, result.project)
            if not cp.past_break]


def test_a_hook_turn_counts_once(store, project: Path) -> None:
    steps = [(f"t{t}.{c}", hook(f"t{t}")) for t in range(6) for c in range(4)]
    # keep 3: the last three turns whole, and the checkpoint before the oldest of them.
    assert chain(store, project, steps, keep=3) == [
        "t5.3", "t5.2", "t5.1", "t5.0", "t4.3", "t4.2", "t4.1", "t4.0",
        "t3.3", "t3.2", "t3.1", "t3.0", "t2.3"]


def test_other_checkpoints_count_one_each(store, project: Path) -> None:
    steps = [("api 1", None), ("api 2", None), *[(f"t1.{c}", hook("t1")) for c in range(3)],
             ("api 3", None), ("api 4", None)]
    assert chain(store, project, steps, keep=4) == ["api 4", "api 3", "t1.2", "t1.1",
                                                    "t1.0", "api 2"]
    assert chain(store, project, [("api 5", None)], keep=3) == ["api 5", "api 4", "api 3"]


def test_the_same_turn_of_another_session_is_another_turn(store, project: Path) -> None:
    # One turn id in two sessions: two turns (one would take "x" along as the state
    # before it).
    steps = [("x", None), ("a", hook("t1", "s1")), ("b", hook("t1", "s2"))]
    assert chain(store, project, steps, keep=1) == ["b", "a"]
