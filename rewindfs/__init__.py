"""rewindfs: a filesystem safety net for AI coding agents.

Checkpoints of working directories live in one shared git object store
(Hermes Agent v2 layout); every checkpoint can be mounted read-only and
restored, and every restore can itself be undone.
"""

from rewindfs.errors import RewindError

__all__ = ["CheckpointManager", "RewindError"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Imported lazily so `import rewindfs` stays cheap for the CLI's fast paths.
    if name == "CheckpointManager":
        from rewindfs.agent.manager import CheckpointManager

        return CheckpointManager
    raise AttributeError(name)
