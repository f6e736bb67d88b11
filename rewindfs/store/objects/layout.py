"""Where things live in the shared store (Hermes Agent v2 layout, plus rewindfs extras).

    $HERMES_HOME/checkpoints/            base
      store/                             bare git repo shared by every project
        refs/hermes/<h16>                project branch tip (Hermes's name)
        refs/rewind/labels/<h16>/<name>  named checkpoints (rewindfs only)
        refs/notes/rewind/<h16>          agent state and actions per checkpoint (history.notes)
        refs/rewind/git/<h16>            the project repository's states its checkpoints
                                         recorded, kept alive (history.gitkeep)
        projects/<h16>.json              project record
        indexes/<h16>                    Hermes's per-project index (we never touch it)
        worktrees/<h16>/                 rewindfs's per-project git worktree admin dir:
                                         its own index (stat cache) and workdir
        locks/<h16>.lock                 flock files (a lock dies with its process)
        steps/<h16>.jsonl                agent step log (store.history.metadata.steplog)
        actions/<h16>.jsonl              external actions not yet carried by a checkpoint
        refs/rewind/remotes/<remote>/m/  what each git remote holds (store.remote)
        rewind-remotes/<remote>.json     a remote's URL; <remote>.state.json its last push/fetch
        rewind-machine-id                this store's name on remotes (random, made once)
      .last_prune
      legacy-<YYYYmmdd-HHMMSS>/
"""

from __future__ import annotations

try:  # the sha256 of hashlib without loading OpenSSL (hashlib's import: milliseconds)
    from _sha256 import sha256
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha256
import os
from dataclasses import dataclass
from pathlib import Path

from rewindfs.store.objects import private

REFS_PREFIX = "refs/hermes/"
LABELS_PREFIX = "refs/rewind/labels/"
NOTES_PREFIX = "refs/notes/rewind/"
# One commit per project whose parents are the repository states (store.projectgit) its
# checkpoints name: what keeps their objects from gc (store.history.gitkeep).
GIT_PREFIX = "refs/rewind/git/"
# What a git remote holds, mirrored here (store.remote): a project fetched from one is
# named by a key `<remote>/<machine>/<h16>` wherever a local project's h16 goes.
REMOTES_PREFIX = "refs/rewind/remotes/"
# Store directories whose files are not named by a project hash (every other one
# holds per-project files: steps/<h16>.jsonl, indexes/<h16>, ...).
NOT_PER_PROJECT = {"objects", "refs", "locks", "worktrees", "logs", "hooks", "info",
                   "rewind-remotes"}
# rewindfs's caches (store/caches/<h16>.<kind>): what can be read again from the objects,
# kept so that reading it costs what changed since the last read
CACHES = "caches"


def default_home() -> Path:
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def normalize_workdir(path: str | os.PathLike[str]) -> Path:
    """The canonical form Hermes hashes: absolute, user-expanded, symlinks resolved."""
    return Path(path).expanduser().resolve()


def objects_dir(gitdir: Path) -> Path:
    """The objects folder of the store or of a project admin dir (through `commondir`)."""
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return gitdir / "objects"
    return (gitdir / common).resolve() / "objects"


def project_hash(workdir: str | os.PathLike[str]) -> str:
    """sha256 of the resolved absolute path, first 16 hex digits (Hermes's h16)."""
    raw = os.fsencode(str(normalize_workdir(workdir)))
    return sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class Layout:
    """Paths of one checkpoint base."""

    base: Path

    def __post_init__(self) -> None:
        # The base and the home above it are a person's choice (symlinks allowed);
        # everything rewindfs keeps below them is reached without following one.
        private.trust(self.base, self.base.parent)

    @classmethod
    def for_home(cls, home: str | os.PathLike[str] | None = None) -> Layout:
        return cls((Path(home).expanduser() if home else default_home()) / "checkpoints")

    @property
    def store(self) -> Path:
        return self.base / "store"

    @property
    def prune_marker(self) -> Path:
        return self.base / ".last_prune"

    def project_record(self, h16: str) -> Path:
        return self.store / "projects" / f"{h16}.json"

    def worktree_admin(self, h16: str) -> Path:
        return self.store / "worktrees" / h16

    def sizes_cache(self, h16: str) -> Path:
        """{first checkpoint id: bytes}: the sizes `rewind list` shows, a cache."""
        return self.store / CACHES / f"{h16}.sizes.json"

    def lock_file(self, name: str) -> Path:
        return self.store / "locks" / f"{name}.lock"

    @staticmethod
    def project_ref(h16: str) -> str:
        return _remote_refs(h16) + "checkpoints" if "/" in h16 else REFS_PREFIX + h16

    @staticmethod
    def label_ref(h16: str, label: str) -> str:
        if "/" in h16:
            return f"{_remote_refs(h16)}labels/{label}"
        return f"{LABELS_PREFIX}{h16}/{label}"

    @staticmethod
    def notes_ref(h16: str) -> str:
        return _remote_refs(h16) + "notes" if "/" in h16 else NOTES_PREFIX + h16

    @staticmethod
    def git_ref(h16: str) -> str:
        return GIT_PREFIX + h16

    def step_log(self, h16: str) -> Path:
        return self.store / "steps" / f"{h16}.jsonl"

    def pending_actions(self, h16: str) -> Path:
        return self.store / "actions" / f"{h16}.jsonl"

    @property
    def remotes_dir(self) -> Path:
        return self.store / "rewind-remotes"

    @property
    def machine_id_file(self) -> Path:
        return self.store / "rewind-machine-id"

    @property
    def last_check(self) -> Path:
        """When `rewind check` last ran and what it found (store.objects.verify.check)."""
        return self.store / "rewind-last-check.json"

    @property
    def damaged_objects(self) -> Path:
        """Ids (hex, one a line) of objects found damaged; the next checkpoint whose
        working tree still holds one writes it again (store.capture)."""
        return self.store / "rewind-damaged-objects"


def is_remote_key(h16: str) -> bool:
    """Whether `h16` names a project fetched from a remote (`<remote>/<machine>/<h16>`)."""
    return "/" in h16


def split_remote_ref(ref: str) -> tuple[str, str, str, str] | None:
    """(remote, machine, h16, rest) of a ref mirroring a remote project, else None."""
    if not ref.startswith(REMOTES_PREFIX):
        return None
    parts = ref[len(REMOTES_PREFIX):].split("/", 4)
    if len(parts) < 5 or parts[1] != "m" or not _is_hex16(parts[2]) or not _is_hex16(parts[3]):
        return None
    return parts[0], parts[2], parts[3], parts[4]


def _is_hex16(text: str) -> bool:
    return len(text) == 16 and all(c in "0123456789abcdef" for c in text)


def _remote_refs(key: str) -> str:
    """The folder of refs mirroring a remote project (see store.remote.names)."""
    remote, machine, h16 = key.split("/")
    return f"{REMOTES_PREFIX}{remote}/m/{machine}/{h16}/"


def layout_of(gitdir: str | os.PathLike[str]) -> Layout:
    """The Layout of the store behind `gitdir` (the store or a project admin dir): what a
    reader holding only a repository needs to name a damaged file."""
    return Layout(objects_dir(Path(gitdir)).parent.parent)


def pack_files(objects_dir: Path) -> dict[str, list[int]]:
    """{file name: [size, mtime_ns]} of every pack and pack index (a pack never changes:
    another size or mtime means damage, a missing one a repack)."""
    out: dict[str, list[int]] = {}
    try:
        with os.scandir(objects_dir / "pack") as entries:
            for entry in entries:
                if entry.name.endswith((".pack", ".idx")):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    out[entry.name] = [st.st_size, st.st_mtime_ns]
    except OSError:
        pass
    return out
