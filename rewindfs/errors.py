"""Errors a user can act on.

Each carries a one-line message; the CLI prints it and exits with ``exit_code``
(never a traceback). Anything else escaping to the CLI is a bug.
"""


class RewindError(Exception):
    """Base class: a one-line, user-actionable failure."""

    exit_code = 1


class NotFound(RewindError):
    """A checkpoint reference, project or path that does not exist."""


class InvalidInput(RewindError):
    """Input that is malformed or unsafe (a path escaping the project, a bad label)."""


class Refused(RewindError):
    """An operation refused by a guard (too broad a directory, too many files)."""


class StoreError(RewindError):
    """The store is missing, corrupt, or could not be written (disk full, permissions)."""

    exit_code = 3


class StoreDamaged(StoreError):
    """One store file is damaged: named, with what is wrong with it."""

    def __init__(self, path: object, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"store damaged: {path} ({problem}); run `rewind check`")


class UnknownFormat(RewindError):
    """Another agent's data (Kilo, OpenCode) in a layout or schema version rewindfs cannot
    read: named with its version, so the user knows which tool to update."""


class Busy(RewindError):
    """Another process holds a lock that this operation may not wait for."""

    exit_code = 4


class RemoteFailed(RewindError):
    """A git remote could not be pushed to or fetched from: git's own reason, in one line."""
