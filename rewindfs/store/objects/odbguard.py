"""Which libgit2 reads the store, and the fallback that keeps a stock one from hanging.

Stock libgit2 (1.9.x, as bundled in the PyPI pygit2 wheels) spins forever, holding
the GIL, when it inflates a truncated loose object (libgit2 issue 7342). rewindfs
fixes that at the root: `scripts/setup` builds pygit2 against a libgit2 carrying
patches/libgit2/ and marks the wheel with a `+rewindfs.<key>` version label.

With a stock pygit2, every repository rewindfs opens gets an object database whose
loose objects are read by `VerifiedLoose` (Python: the zlib stream must be complete
and the size as declared) instead of libgit2's loose backend, so libgit2 never
inflates a loose object itself. Packs are still read by libgit2 (its pack reader
already stops on a stream that makes no progress). Reading a damaged loose object
fails with StoreDamaged, and `damaged()` remembers it for error messages.

`REWIND_LOOSE_GUARD=on|off` forces the fallback on (to measure it) or off (to show
the hang it prevents); the default is on exactly when the libgit2 is stock.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pygit2

from rewindfs.errors import StoreDamaged

ENV = "REWIND_LOOSE_GUARD"
_damaged: dict[str, StoreDamaged] = {}
_damaged_lock = threading.Lock()


def patched() -> bool:
    """Whether pygit2 is rewindfs's build, whose libgit2 fails fast on truncated objects."""
    return "+rewindfs." in pygit2.__version__


def guarded() -> bool:
    setting = os.environ.get(ENV, "").strip().lower()
    if setting in {"on", "1", "true", "yes"}:
        return True
    if setting in {"off", "0", "false", "no"}:
        return False
    return not patched()


def describe() -> str:
    """One line for `rewind status` / `rewind check`: which libgit2, and how reads are bounded."""
    lib = f"libgit2 {pygit2.LIBGIT2_VERSION}"
    if patched():
        how = f"{lib} with rewindfs's patches (pygit2 {pygit2.__version__})"
    else:
        how = f"stock {lib} (pygit2 {pygit2.__version__})"
    if guarded():
        return f"{how}; loose objects verified in Python before use (fallback)"
    if patched():
        return f"{how}; truncated objects fail fast"
    return f"{how}; loose-object guard off ({ENV}): a truncated object can hang"


def install(repo: pygit2.Repository, objects_dir: Path, force: bool = False) -> None:
    """Give `repo` the fallback object database when the guard is on (or `force`)."""
    if not (force or guarded()):
        return
    odb = pygit2.Odb()
    odb.add_backend(pygit2.OdbBackendPack(str(objects_dir)), 2)
    odb.add_backend(VerifiedLoose(objects_dir), 1)
    repo.set_odb(odb)


def damaged(oid: str) -> StoreDamaged | None:
    """Why the fallback refused the loose object `oid` in this process, if it did."""
    with _damaged_lock:
        return _damaged.get(oid)


class VerifiedLoose(pygit2.OdbBackend):
    """Loose objects read by store.objects.verify.loose; writes go to libgit2's loose backend.

    A damaged object raises StoreDamaged, never KeyError: pygit2 turns KeyError into
    "not found", which some libgit2 code takes as a normal answer (a capture then
    silently keeps the old state of a changed file). Any other exception fails the
    libgit2 call: pygit2 raises it, or, for calls made through cffi, Python raises
    SystemError with it as the cause (store.objects.damage finds it there).
    """

    def __init__(self, objects_dir: Path):
        from rewindfs.store.objects.verify import loose  # (a stock pygit2 only)

        self._loose = loose
        super().__init__()
        self._dir = Path(objects_dir)
        self._writer = pygit2.Odb()
        self._writer.add_backend(pygit2.OdbBackendLoose(str(objects_dir), -1, False), 1)

    def _read(self, oid: str) -> tuple[int, bytes]:
        try:
            return self._loose.read_verified(self._loose.path_of(self._dir, oid))
        except FileNotFoundError:
            raise KeyError(oid) from None
        except OSError as exc:
            damaged = StoreDamaged(self._loose.path_of(self._dir, oid),
                                   f"unreadable: {exc.strerror}")
            _remember(oid, damaged)
            raise damaged from None
        except StoreDamaged as exc:
            _remember(oid, exc)
            raise

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self._read(str(oid))

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        # The header alone (sizes for listings): a damaged body shows when it is read.
        path = self._loose.path_of(self._dir, str(oid))
        try:
            return self._loose.read_header(path)
        except FileNotFoundError:
            raise KeyError(str(oid)) from None
        except (OSError, StoreDamaged):
            kind, body = self._read(str(oid))  # says why (raises)
            return kind, len(body)

    def read_prefix_cb(self, prefix: str) -> tuple[int, bytes, pygit2.Oid]:
        oid = self.exists_prefix_cb(prefix)
        kind, body = self._read(str(oid))
        return kind, body, oid

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return self._loose.path_of(self._dir, str(oid)).exists()

    def exists_prefix_cb(self, prefix: str) -> pygit2.Oid:
        found = self._loose.find_prefix(self._dir, prefix)
        if not found:
            raise KeyError(prefix)
        if len(found) > 1:
            raise ValueError(prefix)  # pygit2: ambiguous
        return pygit2.Oid(hex=found[0])

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self._writer.write(kind, data)

    def refresh_cb(self) -> None:
        pass

    def __iter__(self):
        for oid in self._loose.all_ids(self._dir):
            yield pygit2.Oid(hex=oid)


def _remember(oid: str, why: StoreDamaged) -> None:
    with _damaged_lock:
        _damaged[oid] = why
