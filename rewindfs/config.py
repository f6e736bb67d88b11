"""Settings: defaults < $HERMES_HOME/config.yaml `checkpoints:` < environment < CLI flags.

The keys and defaults of Hermes Agent v2's `checkpoints:` section are kept, so one
config file drives both tools; rewindfs's own keys sit beside them. Every value
remembers where it came from (`rewind config` shows it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewindfs.errors import InvalidInput
from rewindfs.store.objects import default_home

if TYPE_CHECKING:  # PyYAML is imported when there is YAML to read (no config.yaml: none)
    import yaml

ENV_PREFIX = "REWIND_"


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"1", "true", "yes", "on"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


def _count(minimum: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("expected a whole number")
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            raise ValueError("expected a whole number") from None
        if number < minimum:
            raise ValueError(f"must be at least {minimum}")
        return number

    return parse


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a number") from None
    if number < 0:
        raise ValueError("must not be negative")
    return number


def _path_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected a path")
    return value


def _remote_name(value: Any) -> str | None:
    if value is None or value == "" or value is False:
        return None
    if not isinstance(value, str):
        raise ValueError("expected the name of a remote (`rewind remote list`)")
    try:
        from rewindfs.store.remote import validate_name  # (the remotes' code: rarely)

        return validate_name(value)
    except InvalidInput:
        raise ValueError("not a remote name (`rewind remote list` shows them)") from None


def _patterns(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and value.strip().startswith("["):
        # REWIND_EXTRA_EXCLUDES='["*.log", "tmp/"]': a YAML (or JSON) list, as in the file
        import yaml

        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ValueError("expected a YAML or JSON list of patterns") from None
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list) and all(isinstance(p, str) for p in value):
        return tuple(value)
    raise ValueError("expected a list of patterns")


AGENT_NAMES = ("kilo", "opencode")


def _agents(value: Any) -> tuple[str, ...]:
    """Agents whose snapshots every rewind command imports in the background."""
    names = _patterns(value)
    unknown = [n for n in names if n not in AGENT_NAMES]
    if unknown:
        raise ValueError(f"unknown agent {unknown[0]!r} (use {' or '.join(AGENT_NAMES)})")
    return names


# key -> (default, parser)
KEYS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    # Hermes Agent v2 keys and defaults
    "enabled": (False, _bool),
    "max_snapshots": (20, _count(1)),
    "max_total_size_mb": (500, _count(0)),
    "max_file_size_mb": (10, _number),
    "auto_prune": (True, _bool),
    "retention_days": (7, _number),
    "delete_orphans": (True, _bool),
    "min_interval_hours": (24, _number),
    # rewindfs
    # refuse a project with more files than this (0: no cap, however big: issue 43; the
    # hooks still refuse the wrong root: the home directory, `/`, a folder in no project)
    "max_files": (0, _count(0)),
    # the agent hooks checkpoint only before commands the classifier finds destructive,
    # instead of before every command not known to be harmless (hooks.gate)
    "only_destructive": (False, _bool),
    "mountpoint": (None, _path_or_none),
    "extra_excludes": ((), _patterns),
    # push to this remote after every checkpoint, batched in the background (store.remote)
    "auto_push": (None, _remote_name),
    "auto_push_delay": (5.0, _number),  # seconds a batch gathers checkpoints before it goes
    # seconds a push or fetch may make no progress before it is ended (0: no deadline)
    "remote_timeout": (60.0, _number),
    "auto_import": ((), _agents),
    # the project repository's state (store.projectgit): its objects at most, and the
    # seconds the copy of what is new may take (0: no limit)
    "max_git_size_mb": (2048, _count(0)),
    "git_timeout": (300.0, _number),
}


# REWIND_* variables that are not settings (read where they are used).
OTHER_ENV = {"REWIND_PAGER", "REWIND_NO_SERVER", "REWIND_PROGRESS_DELAY",
             # damaged stores: the Python loose-object reader, the CLI watchdog, and
             # scripts/setup keeping PyPI's pygit2 (docs/damaged-stores.md)
             "REWIND_LOOSE_GUARD", "REWIND_STALL_SECONDS", "REWIND_STOCK_PYGIT2",
             # scripts/setup and scripts/install_agents: the agent CLIs of the tests
             "REWIND_SKIP_AGENTS", "REWIND_AGENTS_CACHE",
             # the agent hooks: their deadline and their helper (rewindfs.hooks)
             "REWIND_HOOK_TIMEOUT", "REWIND_HOOK_HELPER", "REWIND_HOOK_HELPER_IDLE",
             # tests: a restore that stops midway (restore.pause), a helper's checkpoint
             # that stops before it starts (hooks.helper), a checkpoint that stops
             # before its ref moves (store.history.snapshot)
             "REWIND_TEST_PAUSE_RESTORE", "REWIND_TEST_STOP_HELPER_CHECKPOINT",
             "REWIND_TEST_STOP_CHECKPOINT",
             # Linux-only calls turned off for their portable fallbacks (rewindfs.portable);
             # scripts/install's installer and its offline mode
             "REWIND_PORTABLE", "REWIND_INSTALLER", "REWIND_OFFLINE"}


@dataclass(frozen=True)
class Settings:
    home: Path
    values: Mapping[str, Any]
    sources: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # unknown keys, each with the closest known one

    def __getattr__(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def base(self) -> Path:
        return self.home / "checkpoints"

    @property
    def mount_dir(self) -> Path:
        configured = self.values["mountpoint"]
        return Path(configured).expanduser() if configured else self.home / "mnt"

    @property
    def max_file_size_bytes(self) -> int:
        return int(self.values["max_file_size_mb"] * 1024 * 1024)

    def git_bounds(self, seconds: float | None = None) -> Any:
        """What of the project's repository is recorded at most (store.projectgit);
        `seconds`: a tighter time bound than git_timeout (a hook's deadline)."""
        from rewindfs.store.projectgit import Bounds

        limit = self.values["git_timeout"] or None
        if seconds is not None:
            limit = seconds if limit is None else min(limit, seconds)
        return Bounds(max_bytes=self.values["max_git_size_mb"] * 1024 * 1024, seconds=limit)


def load(home: str | os.PathLike[str] | None = None, flags: Mapping[str, Any] | None = None,
         environ: Mapping[str, str] | None = None) -> Settings:
    """Effective settings. A bad value raises InvalidInput naming the key and its source."""
    home_path = Path(home).expanduser() if home else default_home()
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, (default, _) in KEYS.items():
        values[key], sources[key] = default, "default"

    warnings: list[str] = []
    config_file = home_path / "config.yaml"
    for key, raw in _file_section(config_file).items():
        if key in KEYS:
            values[key], sources[key] = _parse(key, raw, str(config_file)), str(config_file)
        else:
            warnings.append(f"unknown setting checkpoints.{key} in {config_file}"
                            f"{_did_you_mean(str(key), KEYS)}")
    for key in KEYS:
        name = ENV_PREFIX + key.upper()
        if name in env:
            values[key], sources[key] = _parse(key, env[name], f"${name}"), f"${name}"
    known_env = {ENV_PREFIX + key.upper() for key in KEYS} | OTHER_ENV
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) and name not in known_env:
            warnings.append(f"unknown setting ${name}{_did_you_mean(name, known_env)}")
    for key, raw in (flags or {}).items():
        if raw is not None:
            values[key], sources[key] = _parse(key, raw, "command line"), "command line"
    return Settings(home_path, values, sources, tuple(warnings))


def capture_key(workdir: Path, home: Path | None = None,
                environ: Mapping[str, str] | None = None) -> str:
    """What, besides the project's files, decides what a checkpoint of `workdir` holds:
    the REWIND_* environment, the Hermes config file and the project's .git/info/exclude,
    by metadata (no YAML parsed). A stat stamp (store.history.stamp) is good only under
    the key it was written with."""
    import hashlib

    env = os.environ if environ is None else environ
    parts = [f"{k}={v}" for k, v in sorted(env.items()) if k.startswith(ENV_PREFIX)]
    home = default_home() if home is None else home
    for path in (home / "config.yaml", workdir / ".git" / "info" / "exclude"):
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
        except OSError:
            parts.append(f"{path}:-")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _did_you_mean(name: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else " (ignored)"


def _file_section(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InvalidInput(f"{path}:{line}:{column}: not UTF-8 (byte 0x{raw[exc.start]:02x}); "
                           "save the file as UTF-8") from None
    import yaml

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InvalidInput(_yaml_error(path, exc)) from None
    section = data.get("checkpoints") if isinstance(data, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise InvalidInput(f"{path}: `checkpoints` must be a mapping")
    return section


def _yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """`<file>:<line>:<column>: <problem>` (1-based, as editors and compilers say it)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: not valid YAML: {' '.join(str(problem).split())}"


def _parse(key: str, raw: Any, source: str) -> Any:
    try:
        return KEYS[key][1](raw)
    except ValueError as exc:
        raise InvalidInput(
            f"bad value for checkpoints.{key} in {source}: {exc} (got {raw!r})"
        ) from None
