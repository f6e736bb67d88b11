"""The shared checkpoint store: the only package that talks to git.

Public surface (everything else in here is an implementation detail):
    Layout, Store, Project          where things live; opening the store
    take, SnapshotResult            taking a checkpoint
    Checkpoint, checkpoints, resolve, stats, set_label    history
    diff_between, working_tree_tree differences
"""

from rewindfs.store import ledger, trees
from rewindfs.store.capture import Limits
from rewindfs.store.diff import DiffResult, working_tree_tree
from rewindfs.store.diff import between as diff_between
from rewindfs.store.history import Checkpoint, Stats, checkpoints, resolve, stats
from rewindfs.store.labels import set_label, validate_label
from rewindfs.store.layout import Layout, normalize_workdir, project_hash
from rewindfs.store.snapshot import SnapshotResult, take
from rewindfs.store.store import Project, Store

__all__ = [
    "ledger", "trees",
    "Checkpoint", "DiffResult", "Layout", "Limits", "Project", "SnapshotResult", "Stats",
    "Store", "checkpoints", "diff_between", "normalize_workdir", "project_hash", "resolve",
    "set_label", "stats", "take", "validate_label", "working_tree_tree",
]
