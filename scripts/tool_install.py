"""The tool-install half of scripts/install (which finds Python, uv or pipx, and the wheels).

    PYTHON -I scripts/tool_install.py install --installer uv|pipx --uv UV --source ROOT
                                              --pygit2 WHEEL --pyfuse3 WHEEL
    PYTHON -I scripts/tool_install.py uninstall --installer uv|pipx --uv UV [--yes]

install: builds rewindfs's wheel (pure Python, a second or two; cached by the sources'
sum), installs the tool from it and the given wheels (an upgrade in place when it is
there: the environment, and so the interpreter every hook runs, stays where it was),
then lays the manual page and bash's completion where man and bash-completion look, and
writes a receipt into the tool's environment (`rewindfs-install.json`) naming every
file and folder it added outside it. uv resolves from its cache first, then online,
through pip's configuration (scripts/uv_pip.py); REWIND_OFFLINE=1: the cache only.

uninstall: the hooks that run the tool's interpreter come out first (after asking;
--yes: without), the hooks helper it started is stopped, then the tool, then what the
receipt names. The checkpoints stay: they are the user's data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import uv_pip  # noqa: E402 - scripts/ is not a package

NAME = "rewindfs"
RECEIPT = "rewindfs-install.json"
SOURCES = ("pyproject.toml", "README.md", "man", "rewindfs")



def _own_process() -> dict[str, str]:
    """The environment `rewind` runs in from here: in its own process, starting no resident
    process (an install or uninstall leaves none behind)."""
    return {**os.environ, "REWIND_NO_SERVER": "1"}

def say(message: str) -> None:
    print(f"install: {message}", flush=True)


def fail(message: str) -> None:
    print(f"install: error: {message}", file=sys.stderr)
    sys.exit(1)


def home() -> Path:
    return Path(os.path.expanduser("~"))


def cache() -> Path:
    return Path(os.environ["REWINDFS_CACHE"])


def offline_only() -> bool:
    return os.environ.get("REWIND_OFFLINE") == "1"


# -- pip's configuration, for uv ------------------------------------------------------------

def index_args() -> tuple[list[str], dict[str, str]]:
    """uv's index arguments and environment from pip's configuration (none without pip)."""
    try:
        return uv_pip.index_options(uv_pip.pip_settings())
    except (uv_pip.Unsupported, subprocess.CalledProcessError, OSError, ValueError,
            SyntaxError) as exc:
        say(f"pip's configuration not followed ({exc}): uv's defaults")
        return [], {}


def uv_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment uv runs in: the user's own UV_* places, never a Python download."""
    keep = ("UV_CACHE_DIR", "UV_TOOL_DIR", "UV_TOOL_BIN_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k in keep}
    env.update(extra, UV_PYTHON_DOWNLOADS="never")
    return env


def run_uv(uv: str, args: list[str], env: dict[str, str], what: str) -> None:
    """`uv ARGS` from the cache alone first, then (unless REWIND_OFFLINE=1) online."""
    tries = [True] if offline_only() else [True, False]
    for offline in tries:
        done = subprocess.run([uv, *args[:1], "--no-config", *(["--offline"] if offline else []),
                               *args[1:]], env=env, capture_output=True, text=True)
        if done.returncode == 0:
            return
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    print("\n".join(lines[-12:]), file=sys.stderr)
    fail(f"uv could not {what}")


# -- rewindfs's own wheel -------------------------------------------------------------------

def source_files(root: Path) -> list[Path]:
    out = []
    for name in SOURCES:
        path = root / name
        if path.is_file():
            out.append(path)
        else:
            out += sorted(p for p in path.rglob("*") if p.is_file()
                          and "__pycache__" not in p.parts and not p.name.endswith(".pyc"))
    return out


def build_wheel(root: Path, python: str, uv: str, index: list[str], env: dict[str, str]
                ) -> Path:
    """rewindfs's wheel, built from a copy of its sources (the clone is left as it was),
    cached by their sum."""
    files = source_files(root)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    folder = cache() / "rewindfs" / digest.hexdigest()[:12]
    found = sorted(folder.glob(f"{NAME}-*.whl"))
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(prefix="rewindfs-wheel.") as work:
        src = Path(work) / "src"
        for path in files:
            target = src / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        out = Path(work) / "dist"
        # pip's constraints cap its build environments too: uv build's own option.
        index = ["--build-constraint" if arg == "--constraint" else arg for arg in index]
        run_uv(uv, ["build", "--wheel", "--quiet", "--python", python, *index,
                    "--out-dir", str(out), str(src)], env, "build rewindfs's wheel")
        [wheel] = out.glob(f"{NAME}-*.whl")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(str(wheel), folder / f".{wheel.name}.{os.getpid()}")
        os.replace(folder / f".{wheel.name}.{os.getpid()}", folder / wheel.name)
        return folder / wheel.name


# -- where things go --------------------------------------------------------------------------

def uv_dirs(uv: str) -> tuple[Path, Path]:
    """(the tool's environment, the folder its `rewind` goes into)."""
    env = uv_env({})
    tools = subprocess.run([uv, "tool", "dir", "--no-config"], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    bin_dir = subprocess.run([uv, "tool", "dir", "--bin", "--no-config"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
    return Path(tools) / NAME, Path(bin_dir)


def pipx_dirs() -> tuple[Path, Path]:
    def value(name: str) -> str | None:
        done = subprocess.run(["pipx", "environment", "--value", name], capture_output=True,
                              text=True)
        return done.stdout.strip() or None if done.returncode == 0 else None

    venvs = value("PIPX_LOCAL_VENVS") or str(home() / ".local" / "pipx" / "venvs")
    bin_dir = value("PIPX_BIN_DIR") or str(home() / ".local" / "bin")
    return Path(venvs) / NAME, Path(bin_dir)


def man_dir(bin_dir: Path) -> Path:
    """man-db searches DIR/share/man for each DIR/bin on PATH (~/.local/share/man)."""
    return bin_dir.parent / "share" / "man" / "man1"


def completion_dir() -> Path:
    """Where bash-completion loads a command's completion from when it is first completed."""
    data = os.environ.get("XDG_DATA_HOME") or str(home() / ".local" / "share")
    return Path(os.environ.get("BASH_COMPLETION_USER_DIR") or f"{data}/bash-completion") / \
        "completions"


def missing_dirs(folders: list[Path]) -> list[str]:
    """Each folder (and its parents up to the home) that does not exist yet."""
    out: list[str] = []
    top = home()
    for folder in folders:
        while folder != top and top in folder.parents and not folder.exists():
            if str(folder) not in out:
                out.append(str(folder))
            folder = folder.parent
    return out


def block_signal(script: Path) -> None:
    """The `rewind` launcher starts Python through `env --block-signal=INT`, as
    scripts/setup's does (rewindfs.cli.interrupts says why); left as the installer wrote
    it where env lacks the option, the line would be too long, or REWIND_PORTABLE says
    so (rewindfs.portable)."""
    from rewindfs import portable

    if not portable.linux("block-signal"):
        return
    lines = script.read_bytes().split(b"\n", 1)
    python = lines[0][2:].decode(errors="replace")
    line = f"#!/usr/bin/env -S --block-signal=INT {python}"
    if not lines[0].startswith(b"#!/") or any(c in python for c in " \t\\$\"'") \
            or len(line) >= 250:
        return
    if subprocess.run(["/usr/bin/env", "--block-signal=INT", "true"],
                      capture_output=True).returncode != 0:
        return
    tmp = script.with_name(f".{script.name}.tmp")
    tmp.write_bytes(line.encode() + b"\n" + lines[1])
    tmp.chmod(0o755)
    os.replace(tmp, script)


def read_receipt(venv: Path) -> dict:
    try:
        data = json.loads((venv / RECEIPT).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def install_with_uv(args: argparse.Namespace, wheel: Path, index: list[str],
                    env: dict[str, str]) -> None:
    spec = f"{NAME}{'[mount]' if args.pyfuse3 else ''} @ {wheel.as_uri()}"
    extra = [arg for w in (args.pygit2, args.pyfuse3) if w for arg in ("--with", w)]
    # In place: uv keeps the environment's folder (and so the interpreter the hooks run),
    # replacing what changed; rewindfs's wheel keeps its version between builds.
    run_uv(args.uv, ["tool", "install", "--quiet", "--python", sys.executable, *index,
                     "--compile-bytecode", "--reinstall-package", NAME, *extra, spec], env,
           "install the tool")


def install_with_pipx(args: argparse.Namespace, wheel: Path, work: Path) -> None:
    """pipx (pip inside): the patched wheels pinned by version from their folders."""
    pins, links = [], []
    for given in (args.pygit2, args.pyfuse3):
        if given:
            name, version = Path(given).name.split("-")[:2]
            pins.append(f"{name}=={version}")
            links += ["--find-links", str(Path(given).parent)]
    (work / "pins.txt").write_text("".join(p + "\n" for p in pins))
    spec = f"{NAME}{'[mount]' if args.pyfuse3 else ''} @ {wheel.as_uri()}"
    pip_args = " ".join([*links, "--constraint", str(work / "pins.txt")])
    done = subprocess.run(["pipx", "install", "--force", "--python", sys.executable,
                           "--pip-args", pip_args, spec], capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        fail("pipx could not install the tool")


def pip_wheel(root: Path) -> Path:
    """rewindfs's wheel built by pip (pipx's way, where there is no uv)."""
    files = source_files(root)
    work = Path(tempfile.mkdtemp(prefix="rewindfs-wheel."))
    for path in files:
        target = work / "src" / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(work / "dist"), str(work / "src")], capture_output=True,
                          text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        fail("pip could not build rewindfs's wheel")
    return next((work / "dist").glob(f"{NAME}-*.whl"))


def install(args: argparse.Namespace) -> None:
    started = time.monotonic()
    root = Path(args.source)
    sys.path.insert(0, str(root))   # rewindfs.portable, for the launcher's switch
    if args.installer == "uv":
        index, extra_env = index_args()
        env = uv_env(extra_env)
        wheel = build_wheel(root, sys.executable, args.uv, index, env)
        venv, bin_dir = uv_dirs(args.uv)
    else:
        wheel = pip_wheel(root)
        venv, bin_dir = pipx_dirs()
    places = [bin_dir, venv.parent, man_dir(bin_dir), completion_dir()]
    created = set(read_receipt(venv).get("created_dirs") or []) | set(missing_dirs(places))
    if args.installer == "uv":
        install_with_uv(args, wheel, index, env)
    else:
        with tempfile.TemporaryDirectory() as work:
            install_with_pipx(args, wheel, Path(work))
    rewind = venv / "bin" / "rewind"
    if not rewind.exists():
        fail(f"the installer left no {rewind}")
    block_signal(rewind)
    files = []
    page = venv / "share" / "man" / "man1" / "rewind.1"
    target = man_dir(bin_dir) / "rewind.1"
    if target.exists() and target.samefile(page):
        pass   # pipx (1.5+) links the page there itself, and removes it with the tool
    elif page.exists():
        man_dir(bin_dir).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, man_dir(bin_dir) / "rewind.1")
        files.append(str(man_dir(bin_dir) / "rewind.1"))
    script = subprocess.run([str(rewind), "completion", "bash"], capture_output=True,
                            env=_own_process())
    if script.returncode == 0 and script.stdout:
        completion_dir().mkdir(parents=True, exist_ok=True)
        (completion_dir() / "rewind").write_bytes(script.stdout)
        files.append(str(completion_dir() / "rewind"))
    receipt = {"installer": args.installer, "python": sys.executable, "source": str(root),
               "installed_at": int(time.time()), "venv": str(venv),
               "bin": str(bin_dir / "rewind"),
               "wheels": {"rewindfs": str(wheel), "pygit2": args.pygit2 or "stock",
                          "pyfuse3": args.pyfuse3 or "none (no mount)"},
               "files": files,
               "created_dirs": sorted(d for d in created if Path(d).exists())}
    (venv / RECEIPT).write_text(json.dumps(receipt, indent=2) + "\n")
    version = subprocess.run([str(rewind), "--version"], capture_output=True,
                             text=True, env=_own_process()).stdout.split()[-1:] or ["?"]
    say(f"rewind {version[0]} installed in {time.monotonic() - started:.1f}s: "
        f"{bin_dir / 'rewind'} (a {args.installer} tool in {venv}; pygit2 "
        f"{'patched' if args.pygit2 else 'stock'}, "
        f"{'mount with kernel caching' if args.pyfuse3 else 'no mount'})")
    on_path = str(bin_dir) in os.environ.get("PATH", "").split(os.pathsep)
    if not on_path:
        say(f"{bin_dir} is not on your PATH: add `export PATH=\"{bin_dir}:$PATH\"` to "
            "your shell's startup file")
    say("completion: bash loads it by itself (bash-completion); zsh: eval \"$(rewind "
        "completion zsh)\" in ~/.zshrc; fish: rewind completion fish | source")
    say("next: `rewind doctor`, then `rewind hooks install claude-code` (or codex, gemini, "
        "cursor, opencode, kilo); hooks installed before keep working")


# -- uninstall ----------------------------------------------------------------------------

def tool_hooks(rewind: Path, venv: Path) -> tuple[list[tuple[str, str | None, str]],
                                                   int | None, list[tuple[str, str]]]:
    """(agent, project or None, config file) of every hook that runs the tool's
    interpreter, the pid of the hooks helper, and (agent, config file) of every MCP
    server registration (`rewind hooks install AGENT --mcp`), as `rewind hooks status
    --json` says."""
    done = subprocess.run([str(rewind), "hooks", "status", "--json"], capture_output=True,
                          text=True, env=_own_process())
    if done.returncode != 0:
        fail(f"`rewind hooks status` failed: {done.stderr.strip()[-300:]}")
    status = json.loads(done.stdout)
    inside = str(venv) + os.sep
    found = []
    for row in [*status["agents"], *status.get("recorded", [])]:
        if row.get("installed", True) and (row.get("python") or "").startswith(inside):
            key = (row["agent"], row.get("project"), row["path"])
            if key not in found:
                found.append(key)
    servers = [(row["agent"], row["mcp"]["path"]) for row in status["agents"]
               if row.get("mcp")]
    return found, status.get("helper"), servers


def confirm(question: str) -> bool:
    try:
        with open("/dev/tty", "r+") as tty:
            tty.write(question)
            tty.flush()
            return tty.readline().strip().lower() in ("y", "yes")
    except OSError:
        fail("no terminal to ask on: run `scripts/install --uninstall --yes` to remove "
             "them without asking")
    return False


def helper_is_ours(pid: int, venv: Path) -> bool:
    """Whether the hooks helper `pid` runs the tool's code (its command line names it)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return os.fsencode(str(venv) + os.sep) in fh.read()
    except OSError:
        return True   # no /proc: stopped all the same (the next checkpoint starts one)


def remove_dirs(folders: list[str], tool_dir: Path) -> None:
    for folder in sorted(folders, key=lambda f: f.count(os.sep), reverse=True):
        path = Path(folder)
        if path == tool_dir:   # what uv keeps there of its own, once no tool is left
            for name in (".lock", ".gitignore"):
                if path.exists() and {p.name for p in path.iterdir()} <= {".lock", ".gitignore"}:
                    (path / name).unlink(missing_ok=True)
        try:
            path.rmdir()
        except OSError:
            pass


def uninstall(args: argparse.Namespace) -> None:
    venv, bin_dir = uv_dirs(args.uv) if args.installer == "uv" else pipx_dirs()
    rewind = venv / "bin" / "rewind"
    if not rewind.exists():
        say(f"rewind is not installed as a {args.installer} tool (nothing at {venv})")
        return
    receipt = read_receipt(venv)
    hooks, helper, servers = tool_hooks(rewind, venv)
    if hooks or servers:
        listing = "".join(f"\n  {agent:<12} {path}" for agent, _project, path in hooks) + \
            "".join(f"\n  {agent:<12} {path} (its MCP server)" for agent, path in servers)
        say(f"these agents' hooks run the tool and stop working without it:{listing}")
        if not args.yes and not confirm("Remove them, then rewind? [y/N] "):
            say("nothing removed")
            sys.exit(1)
        for agent, project, path in hooks:
            where = ["--project", project] if project else []
            # That very file (`--file`: the records name it, whatever the environment
            # says now); a tool older than `--file` (a usage error) removes the one its
            # environment names.
            done = subprocess.run([str(rewind), "hooks", "uninstall", agent, *where,
                                   "--file", path], capture_output=True, text=True,
                                  env=_own_process())
            if done.returncode == 2 and "--file" in done.stderr:
                done = subprocess.run([str(rewind), "hooks", "uninstall", agent, *where],
                                      capture_output=True, text=True, env=_own_process())
            if done.returncode != 0:
                fail(f"could not remove {agent}'s hook: {done.stderr.strip()[-300:]}; "
                     "nothing else removed")
            say(done.stdout.strip())
        for agent, _path in servers:
            done = subprocess.run([str(rewind), "hooks", "uninstall", agent, "--mcp"],
                                  capture_output=True, text=True, env=_own_process())
            if done.returncode != 0:
                fail(f"could not remove {agent}'s MCP server: {done.stderr.strip()[-300:]}; "
                     "nothing else removed")
            say(done.stdout.strip())
    if helper and helper_is_ours(helper, venv):
        try:
            os.kill(helper, 15)
        except OSError:
            pass
    if args.installer == "uv":
        done = subprocess.run([args.uv, "tool", "uninstall", "--no-config", NAME],
                              env=uv_env({}), capture_output=True, text=True)
    else:
        done = subprocess.run(["pipx", "uninstall", NAME], capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{args.installer} could not remove the tool: {done.stderr.strip()[-300:]}")
    for name in receipt.get("files") or []:
        Path(name).unlink(missing_ok=True)
    remove_dirs(receipt.get("created_dirs") or [], venv.parent)
    hermes = os.environ.get("HERMES_HOME") or str(home() / ".hermes")
    say(f"rewind removed ({venv}, {bin_dir / 'rewind'} and what install added); your "
        f"checkpoints stay in {hermes}/checkpoints (remove that folder to drop them)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/install")
    parser.add_argument("verb", choices=("install", "uninstall"))
    parser.add_argument("--installer", choices=("uv", "pipx"), required=True)
    parser.add_argument("--uv", default="")
    parser.add_argument("--source", default="")
    parser.add_argument("--pygit2", default="")
    parser.add_argument("--pyfuse3", default="")
    parser.add_argument("--yes", action="store_true")
    args = parser.parse_args(argv)
    (install if args.verb == "install" else uninstall)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
