"""Shared state of one `rewind` invocation: settings, store and manager, built on demand."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from rewindfs import config
from rewindfs.agent.manager import CheckpointManager
from rewindfs.cli.term import Terminal
from rewindfs.store import Layout, Store, normalize_workdir


class App:
    def __init__(self, home: str | None, color: str = "auto", pager: bool = True):
        self.home = home
        self.flags: dict[str, object] = {}
        self.term = Terminal(color, pager)
        self.notices: list[str] = []  # store.objects.notices met on the way (cli: said after)

    @cached_property
    def settings(self) -> config.Settings:
        loaded = config.load(self.home, self.flags)
        for warning in loaded.warnings:
            self.term.warn(warning)
        return loaded

    @cached_property
    def manager(self) -> CheckpointManager:
        s = self.settings
        return CheckpointManager(
            enabled=True,
            max_snapshots=s.max_snapshots,
            max_total_size_mb=s.max_total_size_mb,
            max_file_size_mb=s.max_file_size_mb,
            base=s.base,
            max_files=s.max_files,
            extra_excludes=s.extra_excludes,
            auto_push=s.auto_push,
            auto_push_delay=s.auto_push_delay,
        )

    @property
    def store(self) -> Store:
        return self.manager.store

    def auto_import(self) -> None:
        """Keep the agents' snapshots of the project here (config `auto_import`), in the
        background; nothing here may stop or slow the command (sources.auto)."""
        try:
            agents = self.settings.auto_import
            if agents:
                from rewindfs.sources import auto

                auto.start(self.settings.home, Layout(self.settings.base),
                           self.project_dir(None), agents)
        except Exception:  # noqa: BLE001 - a bad config is the command's to report
            pass

    def project_dir(self, given: str | None) -> Path:
        """The project around `given` (default: the current directory).

        An explicit directory inside a project names that project, exactly as the
        current directory does (`rewind checkpoint .` in `src/` must not start a
        nested project); one that does not exist (a deleted project) is taken as is.
        """
        if given:
            path = normalize_workdir(given)
            if not path.exists():
                return path
            return Path(self.manager.get_working_dir_for_path(str(path)))
        return Path(self.manager.get_working_dir_for_path(os.getcwd()))
