"""rewindfs: a filesystem safety net for AI coding agents.

Checkpoints of working directories live in one shared git object store
(Hermes Agent v2 layout); every checkpoint can be mounted read-only and
restored, and every restore can itself be undone.
"""

__all__ = ["CheckpointManager", "RewindError"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Imported on first use: `import rewindfs` runs before anything of the CLI, which
    # answers `rewind --version` without importing more (and takes Ctrl-C over first).
    if name == "CheckpointManager":
        from rewindfs.agent.manager import CheckpointManager

        return CheckpointManager
    if name == "RewindError":
        from rewindfs.errors import RewindError

        return RewindError
    raise AttributeError(name)
