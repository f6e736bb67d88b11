"""Whether this machine and user are ready (`rewind doctor`): one Check per concern, each
with the one command that fixes what is wrong.

A check is "ok", "warn" (something to fix, checkpoints are still taken), "off" (not
set up: the mount, an agent's hook; the user's choice) or "fail" (checkpoints would not
be taken: no store can be written, pygit2 does not load, an installed hook cannot run).
Everything is read and nothing is changed (but for the store's probe: a file a checkpoint
would write, written and removed at once), and nothing heavy is imported: the builds'
versions come from their metadata (pyfuse3 and trio stay unimported), pygit2 is imported
because a pygit2 that does not load is the first thing that blocks checkpoints.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from rewindfs import __version__

OK, WARN, OFF, FAIL = "ok", "warn", "off", "fail"
LOW_SPACE = 256 * 1024 * 1024     # free bytes under which checkpoints are at risk
LOW_INODES = 64                   # free inodes under which a checkpoint may not fit
SIZE_WALK = 200_000               # store files counted at most (a size, not an audit)
INSTALL_FIX = "./scripts/install (from a clone of rewindfs)"
FUSERMOUNT_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin")


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _version(dist: str) -> str | None:
    """The installed version of `dist`, from its dist-info folder's name on sys.path
    (importlib.metadata would import the email package to parse it)."""
    for folder in sys.path:
        try:
            found = [n for n in os.listdir(folder or ".")
                     if n.lower().startswith(f"{dist}-") and n.endswith(".dist-info")]
        except OSError:
            continue
        if found:
            return found[0][len(dist) + 1:-len(".dist-info")]
    return None


def install_kind() -> Check:
    """Where this rewind comes from: the tool (scripts/install), a checkout, or pip."""
    from rewindfs.hooks.runner import TOOL_RECEIPT, what

    python = f"Python {sys.version.split()[0]}"
    if (Path(sys.prefix) / TOOL_RECEIPT).exists():
        where = what(os.path.join(sys.prefix, "bin", "python"))
    else:
        package = Path(__file__).resolve().parent
        checkout = package.parent
        where = (f"a checkout at {checkout}" if (checkout / "pyproject.toml").exists()
                 else f"installed in {sys.prefix}")
    return Check("rewind", OK, f"{__version__}, {where}, {python}")


def pygit2_build() -> Check:
    try:
        from rewindfs.store.objects import odbguard
    except Exception as exc:  # noqa: BLE001 - a broken pygit2 is what this reports
        return Check("pygit2", FAIL, f"pygit2 does not load ({type(exc).__name__}: {exc})",
                     INSTALL_FIX)
    if odbguard.patched():
        return Check("pygit2", OK, f"{odbguard.describe()} (stock libgit2 would hang)")
    return Check("pygit2", WARN, f"{odbguard.describe()}; rewindfs's build fails fast on "
                                 "its own, without the slower check", INSTALL_FIX)


def pyfuse3_build() -> Check:
    version = _version("pyfuse3")
    if version is None or _version("trio") is None:
        return Check("pyfuse3", OFF, "not installed: no `rewind mount` (everything else works)",
                     "sudo apt-get install libfuse3-dev pkg-config, then " + INSTALL_FIX)
    if "+rewindfs." in version:
        return Check("pyfuse3", OK, f"{version}, rewindfs's build: the mount's listings, "
                                    "file contents and links come from the kernel's cache")
    return Check("pyfuse3", WARN, f"{version}, stock: the mount serves every open and "
                                  "listing itself (slower)", INSTALL_FIX)


def fuse(allow_other: bool = False) -> Check:
    from rewindfs.fs.lifecycle import FUSERMOUNT, FuseUnavailable, check_fuse

    try:
        fusermount = check_fuse()
    except FuseUnavailable as exc:
        if "not found" not in str(exc):
            return Check("fuse", OFF, f"no mount here: {exc}", None)
        found = next((d for d in FUSERMOUNT_DIRS
                      if os.access(os.path.join(d, FUSERMOUNT), os.X_OK)), None)
        if found is None:
            return Check("fuse", OFF, f"no mount here: {exc}", "sudo apt-get install fuse3")
        return Check("fuse", OFF, f"no mount here: {FUSERMOUNT} is in {found}, which is not "
                                  "on PATH", f"add {found} to PATH (fuse3 is installed)")
    detail = f"/dev/fuse usable, fusermount3 at {fusermount}"
    if allow_other:
        try:
            conf = Path("/etc/fuse.conf").read_text()
        except OSError:
            conf = ""
        if not any(line.strip() == "user_allow_other" for line in conf.splitlines()):
            return Check("fuse", WARN, f"{detail}; --allow-other needs user_allow_other in "
                                       "/etc/fuse.conf",
                         "echo user_allow_other | sudo tee -a /etc/fuse.conf")
        detail += "; user_allow_other set"
    return Check("fuse", OK, detail)


def _size(store: Path) -> tuple[int, bool]:
    """Bytes the store's files take on disk (st_blocks), and whether all were counted."""
    total, seen, pending = 0, 0, [str(store)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > SIZE_WALK:
                        return total, False
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue
    return total, True


def store(base: Path) -> Check:
    """The store tried as a checkpoint uses it (store.objects.probe: a write, a rename, a
    lock where a checkpoint does them; free bytes and inodes), then its size and checks."""
    from rewindfs.cli.output.human import human_age, human_bytes
    from rewindfs.store.objects import probe

    layout_store = base / "store"
    tried = probe.try_store(layout_store)
    if not tried.ok:
        return Check("store", FAIL, f"{tried.detail}: no checkpoint can be taken", tried.fix)
    space = f"{human_bytes(tried.free_bytes)} free"
    if tried.free_inodes is not None:
        space += f", {tried.free_inodes} inodes"
    if tried.free_bytes < LOW_SPACE:
        return Check("store", FAIL, f"{base}: only {space}", "rewind prune (or free space)")
    if tried.free_inodes is not None and tried.free_inodes < LOW_INODES:
        return Check("store", FAIL, f"{base}: only {space}",
                     "delete files on its filesystem (rewind prune drops old checkpoints)")
    if not (layout_store / "HEAD").exists():
        return Check("store", OK, f"{layout_store}: none yet (the first checkpoint makes it); "
                                  f"{space}")
    size, whole = _size(layout_store)
    detail = f"{layout_store}: {'' if whole else 'over '}{human_bytes(size)}, {space}"
    from rewindfs.store.objects import Layout, lastcheck

    last = lastcheck.last_check(Layout(base))
    if last is None:
        return Check("store", OK, f"{detail}; never checked", "rewind check")
    when = human_age(last["time"])
    if last["damaged"]:
        return Check("store", WARN, f"{detail}; checked {when}: {last['damaged']} damaged",
                     "rewind check --repair")
    return Check("store", OK, f"{detail}; checked {when}: no damage")


def helper() -> Check:
    from rewindfs.hooks import helper as resident
    from rewindfs.hooks import hooklog

    problem = hooklog.refusal()
    if problem is not None:
        return Check("hooks", FAIL, problem, f"chmod 700 {hooklog.hooks_dir()}")
    if not resident.enabled():
        return Check("helper", OFF, "the hooks' helper is off (REWIND_HOOK_HELPER=0): each "
                                    "hook takes its checkpoint itself")
    pid = resident.running()
    return Check("helper", OK, f"resident process running (pid {pid})" if pid else
                 "resident process not running (the next hook or command starts it)")


def watches() -> list[Check]:
    """Per project the resident process has been asked about: whether its checkpoints
    read only what changed (watched) or walk the whole tree, and why."""
    from rewindfs.resident.source import ask

    found = ask({"kind": "status"}) or {}
    out = []
    for project in found.get("projects", []):
        root, state = str(project.get("root")), project.get("state")
        if state == "ready":
            out.append(Check(f"watch {root}", OK, f"watched ({project.get('dirs')} "
                             "directories): checkpoints read only what changed"))
        elif state == "starting":
            out.append(Check(f"watch {root}", OK, "being watched: until then, checkpoints "
                             "walk the whole tree"))
        else:
            fix = ("raise fs.inotify.max_user_watches (sysctl)"
                   if "watch limit" in str(project.get("why")) else None)
            out.append(Check(f"watch {root}", WARN, f"not watched: {project.get('why')}; "
                             "checkpoints walk the whole tree (slower, never wrong)", fix))
    return out


def agents() -> list[Check]:
    """A line for each agent's hook wherever one was installed (the install records name
    every config file, whatever the environment says now: hooks.records), saying whether
    it runs and whether its last run failed."""
    from rewindfs.hooks import hooklog, install, records
    from rewindfs.hooks.payloads import AGENTS

    log = hooklog.entries() if hooklog.refusal() is None else []
    projects = [r for r in records.recorded() if r.project is not None]
    out = []
    for agent in AGENTS:
        places = [(None, path) for path in records.every(agent)] + [
            (r.project, r.path) for r in projects if r.agent == agent]
        lines = [line for project, path in places
                 if (line := _agent_line(agent, project, path, install, records, log))]
        out += lines or [Check(agent, OFF, "no hook", f"rewind hooks install {agent}")]
    return out


def _agent_line(agent: str, project: Path | None, path: Path, install, records,
                log: list[tuple[str, str, str, str]]) -> Check | None:
    from rewindfs.hooks import runner

    found = install.installed(agent, project, path)
    if not found.found:
        return Check(agent, FAIL, f"{path}: {found.problem}", None) if found.problem else None
    again = records.placing(agent, project, path)
    if found.problem:
        fix = ("trust it in Codex's /hooks" if found.trust not in (None, "trusted") else again)
        return Check(agent, FAIL, f"{path}: {found.problem}", fix)
    runs = f"runs {runner.what(found.python)}" if found.python else ""
    trust = ", trusted" if found.trust == "trusted" else ""
    failed = _last_run_failed(agent, log)
    if failed is not None:
        when, message = failed
        return Check(agent, FAIL, f"active{trust}, {runs} ({path}), but its last run failed "
                                  f"({when}): {message}",
                     "what it says (the store line above when it names the store); the next "
                     "checkpoint the hook takes clears this")
    return Check(agent, OK, f"active{trust}, {runs} ({path})")


def _last_run_failed(agent: str, log: list[tuple[str, str, str, str]]
                     ) -> tuple[str, str] | None:
    """(when, what) of the hook's last run, when it failed (an error, or a checkpoint
    skipped for time); None when it worked or never ran."""
    from rewindfs.hooks import hooklog

    mine = [e for e in log if e[1] == agent]
    if not mine:
        return None
    when, _agent, level, message = mine[-1]
    failed = level == hooklog.ERROR or (level == hooklog.SKIPPED
                                        and not message.startswith("ignored"))
    return (when, message) if failed else None


def remotes(base: Path) -> list[Check]:
    from rewindfs.store.objects import Layout

    layout = Layout(base)
    if not layout.remotes_dir.is_dir():
        return []
    from rewindfs.cli.output.human import human_age
    from rewindfs.store.remote import remotes as known

    out = []
    for remote in known.every(layout):
        state = known.read_state(layout, remote.name)
        words, status, fix = [], OK, None
        for verb, key in (("pushed", "push"), ("fetched", "fetch")):
            outcome = state.get(key)
            if not isinstance(outcome, dict):
                words.append(f"never {verb}")
            elif not outcome.get("ok"):
                words.append(f"{verb} {human_age(outcome.get('time'))}: failed")
                status, fix = WARN, f"rewind {key} {remote.name}"
            else:
                words.append(f"{verb} {human_age(outcome.get('time'))}")
        out.append(Check(f"remote {remote.name}", status, ", ".join(words), fix))
    return out


def everything(base: Path, allow_other: bool = False) -> list[Check]:
    return [install_kind(), pygit2_build(), pyfuse3_build(), fuse(allow_other), store(base),
            helper(), *watches(), *agents(), *remotes(base)]


def ready(checks: list[Check]) -> bool:
    """Nothing blocks checkpoints."""
    return not any(c.status == FAIL for c in checks)
