"""`rewind check`: verify the whole store, say what is damaged and what can be repaired.

Like `git fsck` / `restic check`, in the order a failure would matter:
the repository itself (HEAD, config, `shallow`), refs (loose and packed; each must
name a readable commit), object files (every loose object inflated and hashed in
Python, never by libgit2; every pack and pack index against its checksum), then
reachability: every object of every checkpoint, label and note must exist. Then
rewindfs's own files: project records, per-project admin dirs and their indexes
(stat caches), restore journals and step/action logs, and leftovers (stale lock
files, a commit-graph naming pruned commits).

Only what cannot lose anything is repaired (`repair`): a damaged stat-cache index
is removed (the next checkpoint rebuilds it), stale lock files and temp files of
killed writers are removed, a stale commit-graph or multi-pack-index (caches git
rebuilds) is removed, unparsable lines of `shallow` are dropped, a project admin dir
whose bookkeeping files are damaged is rewritten from its project record, and damaged
loose objects are listed for the next checkpoint to write again (store.objects.heal).

The checks themselves: checkgit (git's files and objects), checkfiles (rewindfs's own
files); what they report: problems.
"""

from __future__ import annotations

from collections.abc import Iterator

from rewindfs.errors import StoreDamaged
from rewindfs.store.objects import heal
from rewindfs.store.objects.layout import (
    Layout,
)
from rewindfs.store.objects.verify import checkfiles, checkgit
from rewindfs.store.objects.verify.problems import Problem, Report, is_oid


def verify(layout: Layout) -> Report:
    """Every check, in order; the report lists each problem once."""
    report = Report(layout.store)
    if not (layout.store / "HEAD").exists() and not (layout.store / "objects").is_dir():
        return report  # no store yet: nothing to check
    seen: set[tuple[str, str]] = set()
    for problem in _all_checks(layout, report.counts):
        key = (str(problem.path), problem.problem)
        if key not in seen:
            seen.add(key)
            report.problems.append(problem)
    return report


def first_problem(layout: Layout) -> StoreDamaged | None:
    """The first damage found (cheap checks first), for naming it in an error."""
    if not layout.store.is_dir():
        return None
    for problem in _all_checks(layout, {}):
        if not problem.harmless:
            return problem.as_error()
    return None


def repair(report: Report) -> list[Problem]:
    """Apply every safe repair in `report`; returns the problems repaired."""
    done = []
    for problem in report.problems:
        if problem.fix is not None:
            problem.fix()
            done.append(problem)
    return done


def list_for_healing(layout: Layout, report: Report) -> int:
    """List the damaged loose objects in `report` for the next checkpoint to write again
    (store.objects.heal); returns how many. Part of `--repair`: nothing is deleted."""
    objects = layout.store / "objects"
    ids = [p.path.parent.name + p.path.name for p in report.damaged
           if p.path.parent.parent == objects and is_oid(p.path.parent.name + p.path.name)]
    if ids:
        heal.note(layout, ids)
    return len(ids)


def index_problems(layout: Layout) -> Iterator[StoreDamaged]:
    for problem in checkfiles.admin_dirs(layout, {}):
        if problem.path.name == "index":
            yield problem.as_error()


# -- the checks ---------------------------------------------------------------------


def _all_checks(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    yield from checkgit.repository(layout)
    damaged_objects: dict[str, Problem] = {}
    refs = yield from checkgit.refs(layout, counts)
    yield from checkgit.pack_files(layout, counts)
    for problem in checkgit.loose_objects(layout, counts):
        damaged_objects[problem.path.parent.name + problem.path.name] = problem
        yield problem
    yield from checkgit.reachability(layout, refs, damaged_objects, counts)
    yield from checkfiles.admin_dirs(layout, counts)
    yield from checkfiles.records(layout, counts)
    yield from checkfiles.logs(layout)
    yield from checkfiles.leftovers(layout)
    yield from checkfiles.commit_graph(layout)
