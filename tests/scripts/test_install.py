"""scripts/install (issue 35): `rewind` as a user's tool, in a fresh HOME whose PATH holds
only ~/.local/bin and the system's bin folders, from a copy of this clone.

With the wheel cache warm (scripts/setup built the patched wheels) and the compilers
shadowed by programs that fail and say so, the install builds nothing; `rewind --version`
and `rewind doctor --json` answer from ~/.local/bin; the tool's environment holds neither
pytest nor any agent CLI; `rewind hooks install claude-code` writes a hook that runs the
tool's interpreter; a second install (an upgrade, the sources changed) keeps it; with the
clone deleted, the real Claude Code (offline, tests/agentsim) still gets its checkpoint
before `rm`; and `--uninstall --yes` takes the hooks out (one installed with
CLAUDE_CONFIG_DIR too, run without it) and leaves no file of the install behind. Stock
mode (PyPI's pygit2, no libfuse3 headers) installs everything but the mount, which says in
one line how to get it.

Nothing reaches the network: uv runs offline (REWIND_OFFLINE=1) from the cache setup
filled, pinned to the versions this venv holds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CACHE = Path(os.environ.get("REWINDFS_CACHE") or Path(
    os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rewindfs")
UV_CACHE = Path(os.environ.get("UV_CACHE_DIR") or Path(
    os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv")
# pip's configuration of the person running the tests (the indexes uv's cache answers
# for): a fresh HOME would lose its user-level file.
USER_PIP_CONF = next((str(p) for p in (
    Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip" / "pip.conf",
    Path.home() / ".pip" / "pip.conf") if p.exists()), None)
# The interpreter this venv was made from: the one setup built the cached wheels for.
BASE_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
COMPILERS = ("cc", "gcc", "g++", "c++", "cmake", "make", "ld")
DEV_ONLY = ("pytest", "hypothesis", "ruff", "hermes-agent", "pytest-xdist")

pytestmark = [pytest.mark.long]


def _runtime_pins() -> str:
    """rewindfs[mount]'s dependencies at the versions this venv holds (uv's cache has
    them: setup installed them from it), so an offline resolution finds every wheel."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    from compile_runtime import runtime_closure

    pins = []
    for dist in runtime_closure("rewindfs", "pyfuse3", "trio"):
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if name not in ("rewindfs", "pygit2", "pyfuse3"):
            pins.append(f"{name}=={dist.version}")
    return "".join(p + "\n" for p in sorted(pins))


def _copy_clone(dest: Path) -> Path:
    """This checkout's files (tracked and new, nothing ignored), as a fresh clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    for rel in listed.stdout.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def _files(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*") if not p.is_dir()} | \
        {str(p.relative_to(top)) + "/" for p in top.rglob("*") if p.is_dir()}


class Fresh:
    """A fresh HOME, its PATH (failing compilers first), and the commands run there."""

    def __init__(self, tmp: Path, **extra: str):
        self.home = tmp / "home"
        self.home.mkdir()
        self.shadow = tmp / "shadow"
        self.shadow.mkdir()
        self.calls = tmp / "compiler-calls.log"
        for name in COMPILERS:
            tool = self.shadow / name
            tool.write_text(f"#!/bin/sh\necho \"{name} $*\" >>{self.calls}\nexit 1\n")
            tool.chmod(0o755)
        (tmp / "pins.txt").write_text(_runtime_pins())
        self.env = {
            "HOME": str(self.home), "LANG": "C.UTF-8", "TERM": "dumb",
            "PATH": f"{self.shadow}:{self.home}/.local/bin:{SYSTEM_PATH}",
            "REWINDFS_CACHE": str(CACHE), "UV_CACHE_DIR": str(UV_CACHE),
            "REWIND_OFFLINE": "1", "PYTHON": BASE_PYTHON,
            "PIP_CONSTRAINT": str(tmp / "pins.txt"),
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_")
               and k != "PIP_CONSTRAINT"},
            **({"PIP_CONFIG_FILE": USER_PIP_CONF} if USER_PIP_CONF
               and "PIP_CONFIG_FILE" not in os.environ else {}),
            **extra,
        }

    def run(self, *argv: str | Path, cwd: Path | None = None, timeout: float = 600,
            **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(a) for a in argv], cwd=cwd or self.home,
                              env={**self.env, **extra}, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def rewind(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        done = self.run("rewind", *args, cwd=cwd)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    @property
    def venv(self) -> Path:
        return self.home / ".local" / "share" / "uv" / "tools" / "rewindfs"


def _warm_or_skip(fresh: Fresh) -> None:
    """The scenario is a warm cache: say why not, when it is not."""
    probe = fresh.run(ROOT / "scripts" / "get_uv", "--cached")
    if probe.returncode != 0:
        pytest.skip(f"uv is not in {CACHE} (scripts/setup fetches it)")
    for script in ("build_pygit2", "build_pyfuse3"):
        probe = fresh.run(ROOT / "scripts" / script, "--cached")
        if probe.returncode != 0:
            pytest.skip(f"no cached wheel from scripts/{script} for {BASE_PYTHON} in {CACHE} "
                        "(scripts/setup builds it)")
    assert shutil.which("cc", path=fresh.env["PATH"]) == str(fresh.shadow / "cc")


def _stop_helpers_of(venv: Path) -> None:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.fsencode(str(venv)) in Path(entry.path, "cmdline").read_bytes():
                    os.kill(int(entry.name), 9)
            except OSError:
                pass


def test_install_from_a_clone_outlives_it_and_uninstalls_cleanly(tmp_path: Path,
                                                                  monkeypatch) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    for name in [k for k in os.environ if k.startswith("REWIND_") or k == "HERMES_HOME"]:
        monkeypatch.delenv(name)
    fresh = Fresh(tmp_path)
    _warm_or_skip(fresh)
    clone = _copy_clone(tmp_path / "clone")
    before = _files(fresh.home)
    try:
        _install_use_and_uninstall(fresh, clone, tmp_path, before)
    finally:
        _stop_helpers_of(fresh.venv)


def _install_use_and_uninstall(fresh: Fresh, clone: Path, tmp_path: Path,
                               before: set[str]) -> None:
    started = time.monotonic()
    done = fresh.run(clone / "scripts" / "install")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"warm install: {took:.1f}s (load {os.getloadavg()[0]:.2f})")
    assert not fresh.calls.exists(), fresh.calls.read_text()   # nothing was compiled
    rewind = fresh.home / ".local" / "bin" / "rewind"
    assert shutil.which("rewind", path=fresh.env["PATH"]) == str(rewind)
    assert fresh.rewind("--version").stdout.split()[-1] == "0.1.0"
    assert (fresh.venv / "bin" / "rewind").read_text().startswith(
        f"#!/usr/bin/env -S --block-signal=INT {fresh.venv}/bin/python")
    installed_files = _files(fresh.home) - before
    assert ".local/share/man/man1/rewind.1" in installed_files
    assert ".local/share/bash-completion/completions/rewind" in installed_files

    report = json.loads(fresh.rewind("doctor", "--json").stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ready"] and "the rewind tool" in checks["rewind"]["detail"], report
    assert "+rewindfs." in checks["pygit2"]["detail"], checks["pygit2"]
    assert checks["pyfuse3"]["status"] == "ok", checks["pyfuse3"]

    # The tool's environment: rewindfs's runtime only.
    listed = fresh.run(fresh.venv / "bin" / "python", "-c",
                       "import importlib.metadata as m; "
                       "print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))")
    dists = set(listed.stdout.split())
    assert {"rewindfs", "pygit2", "pyfuse3", "click"} <= dists, dists
    assert not dists & set(DEV_ONLY), dists & set(DEV_ONLY)
    assert not any(p.name in ("node_modules", "claude") for p in fresh.venv.rglob("*")
                   if p.is_dir())

    fresh.rewind("hooks", "install", "claude-code")
    settings = fresh.home / ".claude" / "settings.json"
    [command] = [h["command"] for g in json.loads(settings.read_text())["hooks"]["PreToolUse"]
                 for h in g["hooks"]]
    assert command.startswith(f"{fresh.venv}/bin/python -I -m rewindfs.hooks "), command
    [row] = [r for r in json.loads(fresh.rewind("hooks", "status", "--json").stdout)["agents"]
             if r["agent"] == "claude-code"]
    assert row["active"] and row["runs"].startswith("the rewind tool"), row
    # A second Claude Code profile (CLAUDE_CONFIG_DIR), which the uninstall below, run
    # without that variable, finds all the same (issue 47).
    moved = fresh.home / "claude-work"
    done = fresh.run("rewind", "hooks", "install", "claude-code", CLAUDE_CONFIG_DIR=str(moved))
    assert done.returncode == 0 and (moved / "settings.json").exists(), done.stderr

    # An upgrade in place: new sources, the same environment, the hook as it was.
    with open(clone / "rewindfs" / "__init__.py", "a") as fh:
        fh.write("# upgraded\n")
    done = fresh.run(clone / "scripts" / "install")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# upgraded" in (next(fresh.venv.glob("lib/python*/site-packages/rewindfs"))
                            / "__init__.py").read_text()
    assert [h["command"] for g in json.loads(settings.read_text())["hooks"]["PreToolUse"]
            for h in g["hooks"]] == [command]

    shutil.rmtree(clone)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    with ModelServer([Shell("rm important.txt"), Say("Done.")], project=str(project)) as srv:
        session = Agent("claude-code", fresh.home, project, srv)
        run = session.run("remove it")
    log = fresh.home / ".hermes" / "rewind-hooks" / "hook.log"
    assert run.returncode == 0, (run.stderr[-2000:], log.read_text() if log.exists() else "")
    assert not (project / "important.txt").exists()
    after, cp = json.loads(fresh.rewind("list", "--json", cwd=project).stdout)
    assert (cp["reason"], after["reason"]) == ("before: rm important.txt",
                                               "after: rm important.txt"), (cp, after)
    fresh.rewind("restore", "2", "--yes", cwd=project)
    assert (project / "important.txt").read_text() == "keep me\n"

    used = _files(fresh.home)
    again = _copy_clone(tmp_path / "clone-again")
    done = fresh.run(again / "scripts" / "install", "--uninstall", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "claude-code" in done.stdout, done.stdout
    assert str(moved / "settings.json") in done.stdout, done.stdout
    assert not moved.exists(), sorted(_files(moved))
    after = _files(fresh.home)
    assert not (installed_files | {".claude/settings.json"}) & after, \
        (installed_files | {".claude/settings.json"}) & after
    # What stays is what using it made: the checkpoints and the hooks' log (the user's
    # data, named by the uninstall) and Claude Code's own files.
    kept = {f for f in used if f.startswith((".hermes/", ".claude"))
            or f in (".hermes/", ".claude/")} - {".claude/settings.json"}
    assert after - before <= kept, (sorted(after - before - kept), sorted(used - before))
    assert not (fresh.home / ".local").exists()


def test_stock_mode_without_libfuse3_headers_has_all_but_the_mount(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """PyPI's pygit2 (REWIND_STOCK_PYGIT2=1) and no libfuse3 headers (pkg-config shadowed
    by one that finds nothing): checkpoints and restore work, the doctor says what each
    build would buy, and `rewind mount` says in one line how to get the mount."""
    for name in [k for k in os.environ if k.startswith("REWIND_") or k == "HERMES_HOME"]:
        monkeypatch.delenv(name)
    stock = next(CACHE.glob("downloads/pygit2-1.21.0-cp*-manylinux*.whl"), None)
    if stock is None:
        pytest.skip(f"no stock pygit2 wheel in {CACHE}/downloads (scripts/setup fetches it)")
    # ... and the plain launcher, as where env lacks --block-signal (rewindfs.portable).
    fresh = Fresh(tmp_path, REWIND_STOCK_PYGIT2="1", REWIND_PORTABLE="block-signal",
                  PIP_FIND_LINKS=f"{os.environ.get('PIP_FIND_LINKS', '')} {stock.parent}")
    _warm_or_skip(fresh)
    pkg_config = fresh.shadow / "pkg-config"
    pkg_config.write_text("#!/bin/sh\nexit 1\n")
    pkg_config.chmod(0o755)
    clone = _copy_clone(tmp_path / "clone")
    done = fresh.run(clone / "scripts" / "install")
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "installing without the mount" in done.stderr, done.stderr
        assert not fresh.calls.exists(), fresh.calls.read_text()
        assert (fresh.venv / "bin" / "rewind").read_text().startswith(
            f"#!{fresh.venv}/bin/python\n")
        project = tmp_path / "proj"
        project.mkdir()
        (project / "a.txt").write_text("one\n")
        fresh.rewind("checkpoint", "-m", "first", cwd=project)
        (project / "a.txt").write_text("two\n")
        fresh.rewind("restore", "1", "--yes", cwd=project)
        assert (project / "a.txt").read_text() == "one\n"
        report = json.loads(fresh.rewind("doctor", "--json").stdout)
        checks = {c["name"]: c for c in report["checks"]}
        assert report["ready"], report
        assert checks["pygit2"]["status"] == "warn" and "stock" in checks["pygit2"]["detail"]
        assert checks["pyfuse3"]["status"] == "off" and "libfuse3-dev" in checks["pyfuse3"]["fix"]
        mounted = fresh.run("rewind", "mount", str(tmp_path / "mnt"))
        assert mounted.returncode != 0
        assert mounted.stderr.count("\n") == 1 and "libfuse3-dev" in mounted.stderr, \
            mounted.stderr
    finally:
        _stop_helpers_of(fresh.venv)
        fresh.run(clone / "scripts" / "install", "--uninstall", "--yes")
    assert not (fresh.home / ".local").exists()
