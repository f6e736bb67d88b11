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
  (the store's maintenance, the automatic push and import) are isolated too.
"""

from __future__ import annotations

import os


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
