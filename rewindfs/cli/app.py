"""Shared state of one `rewind` invocation: settings, store and manager, built on demand."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # each imported where first used: a command pays only for what it uses
    from rewindfs import config
    from rewindfs.agent.manager import CheckpointManager
    from rewindfs.cli.output.term import Terminal
    from rewindfs.store import Layout, Limits, Store


class App:
    def __init__(self, home: str | None, color: str = "auto", pager: bool = True,
                 settings: config.Settings | None = None):
        """`settings`: already loaded (their warnings are the caller's to show)."""
        self.home = home
        self.flags: dict[str, object] = {}
        self._term_options = (color, pager)
        self.notices: list[str] = []  # store.objects.notices met on the way (cli: said after)
        if settings is not None:
            self.__dict__["settings"] = settings  # the cached_property's own slot

    @cached_property
    def term(self) -> Terminal:
        from rewindfs.cli.output.term import Terminal

        return Terminal(*self._term_options)

    @cached_property
    def settings(self) -> config.Settings:
        from rewindfs import config

        loaded = config.load(self.home, self.flags)
        for warning in loaded.warnings:
            self.term.warn(warning)
        return loaded

    @cached_property
    def layout(self) -> Layout:
        from rewindfs.store.objects import Layout

        return Layout(self.settings.base)

    @cached_property
    def store(self) -> Store:
        from rewindfs.store import Store

        self.configure_bounds()
        return Store(self.layout)

    def configure_bounds(self) -> None:
        """What a tree fetched from a remote may hold to be read whole: a local
        checkpoint's bounds, from the settings (store.history.bounds)."""
        from rewindfs.store.history import bounds

        s = self.settings
        bounds.configure(s.max_files, s.max_file_size_bytes, s.max_total_size_mb * 1024 * 1024)

    @property
    def limits(self) -> Limits:
        from rewindfs.store import Limits

        return Limits(max_file_size=self.settings.max_file_size_bytes,
                      max_files=self.settings.max_files)

    @property
    def extra_excludes(self) -> tuple[str, ...]:
        return tuple(self.settings.extra_excludes)

    @cached_property
    def manager(self) -> CheckpointManager:
        from rewindfs.agent.manager import CheckpointManager

        s = self.settings
        return CheckpointManager(
            enabled=True,
            max_snapshots=s.max_snapshots,
            max_total_size_mb=s.max_total_size_mb,
            max_file_size_mb=s.max_file_size_mb,
            auto_prune=s.auto_prune,
            base=s.base,
            max_files=s.max_files,
            extra_excludes=s.extra_excludes,
            auto_push=s.auto_push,
            auto_push_delay=s.auto_push_delay,
            remote_timeout=s.remote_timeout,
            store=self.store,
        )

    def auto_import(self) -> None:
        """Keep the agents' snapshots of the project here (config `auto_import`), in the
        background; nothing here may stop or slow the command (sources.auto)."""
        try:
            agents = self.settings.auto_import
            if agents:
                from rewindfs.sources import auto

                auto.start(self.settings.home, self.layout, self.project_dir(None), agents)
        except Exception:  # noqa: BLE001 - a bad config is the command's to report
            pass

    def project_dir(self, given: str | None) -> Path:
        """The project around `given` (default: the current directory).

        An explicit directory inside a project names that project, exactly as the
        current directory does (`rewind checkpoint .` in `src/` must not start a
        nested project); one that does not exist (a deleted project) is taken as is.
        """
        from rewindfs.agent.workdir import working_dir_for_path

        if given:
            from rewindfs.store import normalize_workdir

            path = normalize_workdir(given)
            if not path.exists():
                return path
            return working_dir_for_path(self.layout, path)
        return working_dir_for_path(self.layout, os.getcwd())


def path_base(workdir: Path) -> Path:
    """Relative PATHs are taken from the cwd inside the project, else from the project root
    (e.g. `-C` naming a project, or one that no longer exists, from elsewhere)."""
    cwd = Path(os.getcwd())
    return cwd if cwd == workdir or workdir in cwd.parents else workdir


def cli_relative(workdir: Path, path: str) -> bytes:
    """A PATH typed on the command line, relative to the project (see `path_base`)."""
    from rewindfs.restore import project_relative

    return project_relative(path, workdir, cwd=path_base(workdir))
