"""A few libgit2 functions pygit2 does not declare, bound from the very same library.

pygit2's cffi module declares only the libgit2 functions pygit2 itself calls. These
are public libgit2 API (stable since libgit2 0.2x): in-memory ignore rules of a
repository handle, and walking a diff's deltas without generating patches. They are
bound with ctypes through pygit2's own extension module (dlsym there also finds its
libgit2), so they run in the same libgit2 instance, on the same objects.
"""

from __future__ import annotations

import ctypes
import fnmatch
from collections.abc import Iterator
from contextlib import contextmanager

import pygit2
import pygit2.utils
from pygit2 import _libgit2 as _cffi_module
from pygit2.enums import DeltaStatus, DiffFlag, DiffOption
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.errors import StoreError

try:
    _lib = ctypes.CDLL(_cffi_module.__file__)
    _ignore_add_rule = _lib.git_ignore_add_rule
    _ignore_add_rule.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
    _ignore_clear = _lib.git_ignore_clear_internal_rules
    _ignore_clear.argtypes = (ctypes.c_void_p,)
    _path_is_ignored = _lib.git_ignore_path_is_ignored
    _path_is_ignored.argtypes = (ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
                                 ctypes.c_char_p)
    _num_deltas = _lib.git_diff_num_deltas
    _num_deltas.argtypes = (ctypes.c_void_p,)
    _num_deltas.restype = ctypes.c_size_t
    _get_delta = _lib.git_diff_get_delta
    _get_delta.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    _get_delta.restype = ctypes.c_void_p
    _diff_free = _lib.git_diff_free
    _diff_free.argtypes = (ctypes.c_void_p,)
    _index_to_index = _lib.git_diff_index_to_index
    _index_to_index.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    _glob_new = _lib.git_reference_iterator_glob_new
    _glob_new.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p)
    _next_name = _lib.git_reference_next_name
    _next_name.argtypes = (ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p)
    _iterator_free = _lib.git_reference_iterator_free
    _iterator_free.argtypes = (ctypes.c_void_p,)
    AVAILABLE = True
except (OSError, AttributeError):  # pragma: no cover - a libgit2 built without exports
    AVAILABLE = False

FLAG_EXISTS = int(DiffFlag.EXISTS)  # a delta's file exists on that side
DELETED, IGNORED = int(DeltaStatus.DELETED), int(DeltaStatus.IGNORED)  # a delta's status
_ADD_ALL = DiffOption.INCLUDE_TYPECHANGE | DiffOption.INCLUDE_UNTRACKED \
    | DiffOption.RECURSE_UNTRACKED_DIRS  # what libgit2's index_add_all diffs with


def _address(cdata) -> int:
    return int(ffi.cast("uintptr_t", cdata))


def add_ignore_rules(repo: pygit2.Repository, rules: list[bytes]) -> None:
    """Ignore rules in force for this repository handle only (never written anywhere),
    taking precedence over every ignore file."""
    if rules:
        check_error(_ignore_add_rule(_address(repo._repo), b"\n".join(rules)))


def path_is_ignored(repo: pygit2.Repository, path: bytes) -> bool:
    """Whether `path` (relative, bytes: names need not be UTF-8, which pygit2's own
    path_is_ignored cannot take) is ignored, its parent directories' rules included."""
    if not AVAILABLE:  # pragma: no cover - see above
        return repo.path_is_ignored(path.decode("utf-8", "surrogateescape"))
    out = ctypes.c_int(0)
    check_error(_path_is_ignored(ctypes.byref(out), _address(repo._repo), path))
    return bool(out.value)


def clear_ignore_rules(repo: pygit2.Repository) -> None:
    """Back to libgit2's built-in rules (".", "..", ".git") for this handle."""
    check_error(_ignore_clear(_address(repo._repo)))


@contextmanager
def index_to_workdir(repo: pygit2.Repository, index: pygit2.Index, pathspecs: list[bytes],
                     ignored: bool = False) -> Iterator[Iterator]:
    """The changes from `index` to the working tree, as `git add -A` sees them
    (untracked files one by one, typechanges), limited to `pathspecs` taken literally;
    `ignored`: ignored paths too (status IGNORED; an ignored directory as one delta, its
    path ending with "/", never walked).

    Yields an iterator of git_diff_delta pointers. Unlike libgit2's index_add_all,
    which builds a full patch of every delta (reading both sides) before calling back,
    this only compares stat data (and hashes a tracked file whose stat changed but not
    its size, as git does).
    """
    opts = ffi.new("git_diff_options *")
    check_error(C.git_diff_options_init(opts, 1))
    opts.flags = int(_ADD_ALL | (DiffOption.DISABLE_PATHSPEC_MATCH if pathspecs else 0)
                     | (DiffOption.INCLUDE_IGNORED if ignored else 0))
    strings = [ffi.new("char[]", p) for p in pathspecs]  # alive until the call returns
    array = ffi.new("char *[]", strings)
    opts.pathspec.strings = array
    opts.pathspec.count = len(strings)
    out = ffi.new("git_diff **")
    check_error(C.git_diff_index_to_workdir(out, repo._repo, index._index, opts), io=True)
    diff = _address(out[0])
    try:
        yield (ffi.cast("git_diff_delta *", _get_delta(diff, i))
               for i in range(_num_deltas(diff)))
    finally:
        _diff_free(diff)


@contextmanager
def index_to_index(repo: pygit2.Repository, old: pygit2.Index, new: pygit2.Index
                   ) -> Iterator[Iterator]:
    """The differences from index `old` to index `new` (compared by path, object id and
    mode, never reading a file): git_diff_delta pointers, as `index_to_workdir`."""
    opts = ffi.new("git_diff_options *")
    check_error(C.git_diff_options_init(opts, 1))
    out = ctypes.c_void_p()
    check_error(_index_to_index(ctypes.byref(out), _address(repo._repo), _address(old._index),
                                _address(new._index), _address(opts)))
    diff = out.value
    try:
        yield (ffi.cast("git_diff_delta *", _get_delta(diff, i))
               for i in range(_num_deltas(diff)))
    finally:
        _diff_free(diff)


# pygit2's internals rewindfs reaches past its public API (pyproject bounds pygit2 to the
# releases they were checked with; this says so clearly if another one is installed).
INTERNALS = ("Repository._repo", "Index._index", "pygit2._libgit2.__file__",
             "pygit2.utils.StrArray")
_checked = False


def check_internals(repo: pygit2.Repository) -> None:
    """Raise StoreError, in one line, when this pygit2 lacks an internal rewindfs uses
    (instead of an AttributeError deep inside a checkpoint). Checked once per process."""
    global _checked
    if _checked:
        return
    found = {
        "Repository._repo": getattr(repo, "_repo", None) is not None,
        "Index._index": getattr(pygit2.Index(), "_index", None) is not None,
        "pygit2._libgit2.__file__": bool(getattr(_cffi_module, "__file__", None)),
        "pygit2.utils.StrArray": hasattr(pygit2.utils, "StrArray"),
    }
    missing = [name for name in INTERNALS if not found[name]]
    if missing:
        raise StoreError(f"pygit2 {pygit2.__version__} lacks {', '.join(missing)}, which "
                         "rewindfs uses: install pygit2 1.21.x (scripts/setup builds it)")
    _checked = True


ITER_OVER = -31  # GIT_ITEROVER


def reference_names(repo: pygit2.Repository, glob: str) -> list[str]:
    """Names of the refs matching `glob` (`refs/rewind/labels/<h16>/*`); libgit2 reads
    only the loose refs under the glob's directory (and packed-refs), so the cost does
    not grow with the store's other refs."""
    if not AVAILABLE:
        return [name for name in repo.references if fnmatch.fnmatchcase(name, glob)]
    iterator = ctypes.c_void_p()
    check_error(_glob_new(ctypes.byref(iterator), _address(repo._repo), glob.encode()))
    names = []
    try:
        name = ctypes.c_char_p()
        while (err := _next_name(ctypes.byref(name), iterator)) == 0:
            names.append(name.value.decode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
        if err != ITER_OVER:
            check_error(err)
    finally:
        _iterator_free(iterator)
    return names
