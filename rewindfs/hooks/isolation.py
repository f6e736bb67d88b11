"""The hooks run isolated from the project they protect: no import resolves from it, and
nothing they start finds a program in it.

An agent runs its hooks in the project, with its own environment. `python -m` alone puts
the cwd first on sys.path, so a repository's `json.py` or `rewindfs/` folder would run
inside the hook; PYTHONPATH or PYTHONSTARTUP could point into the project too, and a
PATH holding the project's folders (`./node_modules/.bin`, direnv's) would let a planted
`git` run in the store's maintenance. So:

- every hook command and the helper start Python with `isolation_flags()` (`-I`: no cwd,
  no PYTHON* variable, no user site-packages; `-E -P` when rewindfs itself lives in the
  user's site-packages, which -I would leave out);
- the hook drops every PYTHON* variable and keeps of PATH only absolute folders outside
  its cwd (`scrub_environment`) before it starts anything, so the workers it starts
  (the store's maintenance, the automatic push and import) are isolated too;
- the resident helper (hooks.helper) starts in /, with only the variables a checkpoint
  needs (`start_env`): no API key of the agent's lives on in its /proc/PID/environ.
"""

from __future__ import annotations

import os
import sys

# What the helper starts with of the environment of the hook that starts it.
START_KEYS = ("HOME", "HERMES_HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
              "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
# The helper's start: the rewindfs this hook runs goes first on the path only when
# isolation would find another (PYTHONPATH gave it, say), as the hook's did.
BOOT = ("import sys, importlib.util as u; s = u.find_spec('rewindfs'); "
        "p = sys.argv[1].rsplit('/', 2)[0]; "
        "(s is None or s.origin != sys.argv[1]) and sys.path.insert(0, p); "
        "from rewindfs.resident.server import main; sys.exit(main())")


def isolation_flags() -> list[str]:
    import site

    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    here = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if user_site and here.startswith(os.path.realpath(user_site) + os.sep):
        return ["-E", "-P"]
    return ["-I"]


def clean_path(path: str, cwd: str) -> str:
    """`path` (a PATH) with only absolute folders outside `cwd` (os.defpath if none)."""
    inside = cwd.rstrip("/") + "/"
    kept = [part for part in path.split(":")
            if part.startswith("/") and part != cwd and not part.startswith(inside)]
    return ":".join(kept) or os.defpath


def scrub_environment() -> None:
    """This process's environment, for what it starts: no PYTHON* variable, a clean PATH."""
    for name in [k for k in os.environ if k.startswith("PYTHON")]:
        del os.environ[name]
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    os.environ["PATH"] = clean_path(os.environ.get("PATH", os.defpath), cwd)


def start_env(cwd: str) -> dict[str, str]:
    """The environment a helper starts with: START_KEYS and the rewindfs settings, and of
    PATH only absolute folders outside `cwd` (the project the starting hook ran in)."""
    env = {k: v for k, v in os.environ.items() if k in START_KEYS or k.startswith("REWIND_")}
    env["PATH"] = clean_path(os.environ.get("PATH", os.defpath), cwd)
    return env


def start_helper() -> None:
    """Start the resident helper in the background (it exits at once if one runs)."""
    # Imported here: its own imports (locale, selectors) would cost every hook call.
    import subprocess

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    try:
        subprocess.Popen([sys.executable, *isolation_flags(), "-c", BOOT,
                          os.path.join(package, "__init__.py")],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                         cwd="/", env=start_env(cwd))
    except OSError:
        pass
