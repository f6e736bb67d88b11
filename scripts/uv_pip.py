"""`pip install ARGS` into a venv, done by uv; exits non-zero where pip should do it instead.

    VENV/bin/python scripts/uv_pip.py UV --local WHEEL...   local wheels, no index, no deps
    VENV/bin/python scripts/uv_pip.py UV ARGS...            resolve ARGS as pip would

Called by scripts/setup (and scripts/build_pyfuse3), which run pip when this fails.
uv ignores pip's configuration, so this reads it (`pip config list`, run with this
interpreter: the venv's pip, as setup's pip would run) and gives uv the same index,
extra indexes, find-links and certificate; a setting it cannot carry over sends the
install to pip. uv's own configuration (uv.toml, UV_* variables) is left out so the
result depends on pip's alone.

uv first resolves from its cache alone (about a second where the network costs ~20 s),
then online. Offline answers can lag PyPI, so once the last online resolution through
this configuration is a week old, online comes first (and refreshes uv's cache).
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

FRESH_DAYS = 7
# Settings of pip's that change nothing uv would install (config-file: PIP_CONFIG_FILE,
# whose settings `pip config list` has already read in).
HARMLESS = {
    "config-file",
    "cache-dir", "default-timeout", "disable-pip-version-check", "no-cache-dir", "no-color",
    "no-input", "progress-bar", "quiet", "retries", "root-user-action", "timeout", "verbose",
    "no-warn-script-location", "require-virtualenv", "break-system-packages", "log",
}


class Unsupported(Exception):
    """pip's configuration says something uv cannot be told."""


def pip_settings() -> dict[str, str]:
    """pip's configuration for `pip install`: its files' [global] then [install], then
    PIP_* variables, each overriding the one before (pip's own order)."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True, check=True).stdout
    layers: dict[str, dict[str, str]] = {"global": {}, "install": {}, ":env:": {}}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if section in layers:
            layers[section][name] = ast.literal_eval(value)
    return {**layers["global"], **layers["install"], **layers[":env:"]}


def index_options(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's arguments and environment for pip's settings."""
    args: list[str] = ["--index-strategy", "unsafe-best-match"]  # pip's: best of all indexes
    env: dict[str, str] = {}
    for name, value in settings.items():
        words = value.split()
        if name == "index-url":
            args += ["--index-url", value]
        elif name == "extra-index-url":
            for url in words:
                args += ["--extra-index-url", url]
        elif name == "find-links":
            for place in words:
                args += ["--find-links", place]
        elif name == "trusted-host":
            for host in words:
                args += ["--allow-insecure-host", host]
        elif name == "no-index":
            if value.lower() in ("1", "true", "yes", "on"):
                args.append("--no-index")
        elif name == "constraint":  # a list in pip: each file caps what it resolves
            for place in words:
                args += ["--constraint", place]
        elif name == "cert":
            env["SSL_CERT_FILE"] = value
        elif name not in HARMLESS:
            raise Unsupported(f"pip's configuration sets {name}")
    return args, env


def run_uv(uv: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([uv, "pip", "install", "--no-config", "-q", "--python",
                           sys.executable, *args], env=env, capture_output=True, text=True)


def last_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"exit {proc.returncode}"


def main(argv: list[str]) -> int:
    uv, *args = argv
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("UV_") or k == "UV_CACHE_DIR"}
    if args[:1] == ["--local"]:
        done = run_uv(uv, ["--offline", "--no-index", "--no-deps", "--reinstall", *args[1:]],
                      env)
        if done.returncode != 0:
            names = " ".join(Path(a).name for a in args[1:] if not a.startswith("-"))
            print(f"setup: uv could not install {names} ({last_line(done)}); "
                  "using pip", file=sys.stderr)
        return done.returncode
    try:
        options, extra_env = index_options(pip_settings())
    except (Unsupported, subprocess.CalledProcessError, ValueError, SyntaxError) as e:
        print(f"setup: installing with pip ({e})", file=sys.stderr)
        return 1
    env.update(extra_env)
    # uv's cache holds each index's answers apart, so freshness is per configuration (and
    # per uv cache: UV_CACHE_DIR or XDG_CACHE_HOME name another one).
    where = [env.get("UV_CACHE_DIR", ""), env.get("XDG_CACHE_HOME", "")]
    key = hashlib.sha256("\0".join(options + where).encode()).hexdigest()[:12]
    cache = os.environ.get("REWINDFS_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rewindfs"
    stamp = Path(cache) / "uv" / f"online-{key}"
    fresh = stamp.exists() and time.time() - stamp.stat().st_mtime < FRESH_DAYS * 86400
    tries = [True, False] if fresh else [False, True]
    online = None
    for offline in tries:
        done = run_uv(uv, [*options, *(["--offline"] if offline else []), *args], env)
        if done.returncode == 0:
            if not offline:
                stamp.parent.mkdir(parents=True, exist_ok=True)
                stamp.touch()
            return 0
        if not offline:
            online = done
    # The offline try fails whenever uv's cache lacks something: the online one says why.
    print(f"setup: uv could not install {' '.join(args)} ({last_line(online or done)}); "
          "using pip", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
