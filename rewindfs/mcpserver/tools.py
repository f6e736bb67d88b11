"""What each MCP tool does, over the code the CLI uses (no second implementation):
references resolved by store.history.resolve as `rewind` resolves them (numbers, ids,
labels, times; `kilo:N` by sources, in mcpserver.steps), files read by pathlog.read_file,
diffs by store.diff_between, restores and undos carried out by restore.restoring.

Each returns text sized for a model (mcpserver.sizing). A problem the model can act on
raises a RewindError with one line saying so; mcpserver.server makes it an error result.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from pathlib import Path

from rewindfs import restore as rs
from rewindfs import store as st
from rewindfs.cli.output.human import human_age
from rewindfs.errors import InvalidInput, NotFound
from rewindfs.mcpserver import sizing, steps
from rewindfs.mcpserver.describe import checkpoint_name, restore_text, row, shell_word
from rewindfs.mcpserver.session import Session
from rewindfs.sources.stepref import is_step
from rewindfs.store.history import (
    Surprise,
    diffstat,
    page,
    pathlog,
    quote_path,
    since_previous,
    unquote_path,
)

NAMING = ("Name a checkpoint by its number (1 = newest), its id, a label or a time such as "
          "'10 minutes ago'.")


def _repo(session: Session, workdir: Path):
    store = session.app.store
    if not store.exists():
        raise NotFound(f"no checkpoints for {workdir}")
    return store.repo, st.project_hash(workdir)


def _rel(workdir: Path, path: str) -> bytes:
    """A path the model gives: relative to the project, or absolute inside it; in double
    quotes, a name as the tools show one that is not plain text (`"caf\\351.txt"`)."""
    return rs.project_relative(_name(path), workdir, cwd=workdir)


def _name(path: str) -> str:
    """The path a model's `path` names, as Python names files (bytes that are not UTF-8
    held as surrogates, as os.fsdecode does)."""
    return os.fsdecode(unquote_path(path))


def list_checkpoints(session: Session, project: str | None, limit: int | None) -> str:
    workdir = session.project(project)
    if limit is not None and limit < 1:
        raise InvalidInput(f"limit must be at least 1 (and is at most {sizing.LIST_MAX}), "
                           f"not {limit}")
    wanted = min(limit or sizing.LIST_DEFAULT, sizing.LIST_MAX)
    repo, key = _repo(session, workdir)
    shown, total = None, 0
    found = page(repo, key)
    if found is not None:
        try:
            shown, total = found.head(wanted), found.rows
        except Surprise:  # records no longer true: read the objects, as `rewind list` does
            shown = None
    if shown is None:
        every = st.checkpoints(repo, key)
        shown, total = every[:wanted], len(every)
    if not shown:
        return f"No checkpoints of {workdir} yet."
    now = time.time()
    more = total - len(shown)
    head = f"Checkpoints of {workdir}, newest first"
    if more and wanted < sizing.LIST_MAX:
        head += (f" ({len(shown)} of {total}; {more} more: pass a larger limit, up to "
                 f"{sizing.LIST_MAX}, or name older ones by time)")
    elif more:
        head += (f" ({len(shown)} of {total}; {more} more: at most {sizing.LIST_MAX} are "
                 f"listed, name older ones by number ({len(shown) + 1}, ...) or by time)")
    lines = [head + ":", *(row(cp, now) for cp in shown), "",
             NAMING + " Pre-rollback snapshots (-) are saved by every restore: use their id."]
    return "\n".join(lines)


def show_checkpoint(session: Session, ref: str, project: str | None) -> str:
    workdir = session.project(project)
    if is_step(ref):
        return steps.show(workdir, ref)
    repo, key = _repo(session, workdir)
    cp = st.resolve(repo, key, ref)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(cp.time))
    lines = [f"{checkpoint_name(cp)} of {workdir}", f"  id:      {cp.id}",
             f"  time:    {when} ({human_age(cp.time)})",
             f"  reason:  {sizing.one_line(cp.reason)}"]
    if cp.labels:
        lines.append(f"  labels:  {', '.join(sizing.one_line(x) for x in cp.labels)}")
    agent = cp.trailers.get("Rewind-Agent")
    if agent:
        lines.append(f"  agent:   {sizing.one_line(agent)}, turn "
                     f"{sizing.one_line(cp.trailers.get('Rewind-Turn', '?'))}")
    change = since_previous(repo, cp)
    lines.append(f"  changed since the previous checkpoint: {change.files_changed} file(s), "
                 f"+{change.insertions}/-{change.deletions}")
    named = [f"    {_status(patch)} {diffstat.print_name(f)}"
             for f, patch in zip(change.files, change.patches, strict=False)]
    lines += sizing.capped(named)
    lines.append("diff(ref) shows what changed since it; read_file(ref, path) a file as it "
                 "was; restore(ref) takes the project back to it.")
    return "\n".join(lines)


def _status(patch: str) -> str:
    head = patch[:400]
    if "\nnew file mode" in head:
        return "added   "
    if "\ndeleted file mode" in head:
        return "deleted "
    if "\nrename from" in head:
        return "renamed "
    return "modified"


def diff(session: Session, ref: str, path: str | None, ref2: str | None,
         project: str | None) -> str:
    workdir = session.project(project)
    paths = [_rel(workdir, path)] if path else None
    with ExitStack() as held:
        old = _tree(held, session, workdir, ref)
        new = _tree(held, session, workdir, ref2)
        result = st.diff_between(session.app.store.repo, old, new, paths)
    return _diff_text(result, ref, ref2, workdir)


def _tree(held: ExitStack, session: Session, workdir: Path, ref: str | None) -> str:
    """The tree a reference names for a diff: a checkpoint's, a step's (copied into the
    store while `held` lasts), or None's: the working tree's."""
    app = session.app
    if ref is None:
        if not workdir.is_dir():
            raise NotFound(f"{workdir} is not a directory to compare with: give two "
                           "checkpoints")
        return st.working_tree_tree(app.store, workdir, app.limits, app.extra_excludes)
    if is_step(ref):
        return held.enter_context(steps.tree_of(app.store, workdir, ref))
    repo, key = _repo(session, workdir)
    return st.resolve(repo, key, ref).tree_id


def _diff_text(result, ref: str, ref2: str | None, workdir: Path) -> str:
    to = f"checkpoint {ref2}" if ref2 else f"the working tree of {workdir}"
    if not result.files:
        return f"No changes from checkpoint {ref} to {to}."
    stat = [diffstat.print_name(f) + ("  (binary)" if f.binary else f"  +{f.added} -{f.deleted}")
            for f in result.files]
    lines = [f"Changes from checkpoint {ref} to {to}: {diffstat.summary(result.files).strip()}",
             *(f"  {s}" for s in sizing.capped(stat)), ""]
    patch = sizing.cut(sizing.clean(result.patch), sizing.PATCH_CHARS,
                       "pass path to see one file's changes")
    return "\n".join(lines) + patch


def read_file(session: Session, ref: str, path: str, project: str | None) -> str:
    workdir = session.project(project)
    rel = _rel(workdir, path)
    if not rel:
        raise InvalidInput("path names the whole project: name a file in it")
    if is_step(ref):
        data = steps.read_file(workdir, ref, rel)
        where = ref
    else:
        repo, key = _repo(session, workdir)
        cp = st.resolve(repo, key, ref)
        data = pathlog.read_file(repo, cp, rel)
        where = f"{checkpoint_name(cp)} ({cp.short})"
    advice = (f"restore(ref, paths=[{json.dumps(quote_path(rel))}]) puts the whole file "
              f"back, or the user can run `rewind cat {shell_word(ref)} {shell_word(rel)}`")
    return (f"{quote_path(rel)} in {where}, {len(data)} bytes:\n"
            + sizing.file_text(data, advice))


def restore(session: Session, ref: str, paths: list[str] | None, dry_run: bool,
            project: str | None, git: bool = False) -> str:
    if paths is not None and not paths:
        raise InvalidInput("paths is empty, and an empty list is not the whole project: "
                           "name files or directories, or leave paths out to restore "
                           "everything; nothing was changed")
    if git and paths:
        raise InvalidInput("git restores the whole repository: give no paths with it")
    workdir = session.project(project)
    named = [_name(p) for p in paths] if paths else None
    cli = f"rewind restore {shell_word(ref)}" + "".join(
        f" {shell_word(os.fsencode(p))}" for p in named or []) + (" --git" if git else "")
    with session.restoring(workdir, "restore", cli):
        app = session.app
        options = rs.Options(paths=named, cwd=workdir, limits=app.limits,
                             extra_excludes=app.extra_excludes, git=git,
                             git_bounds=app.settings.git_bounds() if git else None)
        with ExitStack() as held:
            target = held.enter_context(steps.restore_target(app.store, workdir, ref)) \
                if is_step(ref) else ref
            if dry_run:
                result = rs.dry_run(app.store, workdir, target, options)
            else:
                result = rs.restore(app.store, workdir, target, options)
    return restore_text(result, workdir, "restore")


def undo(session: Session, dry_run: bool, project: str | None) -> str:
    workdir = session.project(project)
    with session.restoring(workdir, "undo", "rewind undo"):
        app = session.app
        options = rs.Options(limits=app.limits, extra_excludes=app.extra_excludes)
        result = rs.undo(app.store, workdir, options, dry_run=dry_run)
    return restore_text(result, workdir, "undo")
