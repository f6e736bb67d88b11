"""`rewind mount` and `rewind umount`: every checkpoint as a read-only directory."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.errors import RewindError
from rewindfs.store import Layout, project_hash

LOG_NAME = "rewind-mount.log"


@click.command(epilog=examples(
    "rewind mount                          # every project under $HERMES_HOME/mnt",
    "ls ~/.hermes/mnt/myproject/3/",
    "diff -r ~/.hermes/mnt/myproject/3/ .",
    "rewind mount /tmp/view -C ~/src/app   # one project only",
    "rewind mount /srv/ckpt --allow-other  # other users: owner-only modes",
))
@click.argument("mountpoint", required=False, type=click.Path(file_okay=False))
@click.option("-C", "--project", "project_dir", type=click.Path(), metavar="DIR",
              help="Show only this project (default: every project in the store).")
@click.option("-f", "--foreground", is_flag=True,
              help="Serve in this process until unmounted or interrupted.")
@click.option("--allow-other", is_flag=True,
              help="Let other local users reach the mount. Files show as owned by the "
                   "store's owner, the kernel checks permissions, and group/other "
                   "permission bits are off, so only the owner (and root) can read them.")
@click.option("--share-modes", is_flag=True,
              help="With --allow-other, keep the stored group/other bits (644/755): every "
                   "local user can then read every checkpoint.")
@click.option("--force", is_flag=True,
              help="Mount even inside a project, over a project, or over a non-empty "
                   "directory.")
@click.option("--no-kernel-cache", is_flag=True,
              help="Serve every open and listing from the daemon, as with stock pyfuse3 "
                   "(slower; for comparison and debugging).")
@click.option("--ready-fd", type=int, hidden=True)
@click.pass_obj
def mount(app: App, mountpoint: str | None, project_dir: str | None, foreground: bool,
          allow_other: bool, share_modes: bool, force: bool, no_kernel_cache: bool,
          ready_fd: int | None) -> None:
    """Mount every checkpoint read-only at MOUNTPOINT (default $HERMES_HOME/mnt).

    Each project is a directory of numbered links (1 = newest, as in `rewind list`),
    latest, labels, and one stable directory per checkpoint. Runs in the background
    until `rewind umount`.
    """
    from rewindfs.fs import lifecycle

    handshake = _Handshake(ready_fd)
    layout = Layout(app.settings.base.absolute())
    target = Path(mountpoint) if mountpoint else app.settings.mount_dir
    only_dir = app.project_dir(project_dir) if project_dir else None
    only = project_hash(only_dir) if only_dir else None
    try:
        lifecycle.check_pyfuse3()
        lifecycle.check_fuse()
        path = lifecycle.prepare_mountpoint(target, layout, force=force or ready_fd is not None)
        if not foreground:
            home = str(app.settings.home.resolve())  # the child runs from /
            argv = [sys.executable, "-m", "rewindfs.cli", "--home", home,
                    "mount", str(path), "--foreground", "--ready-fd", "{ready_fd}"]
            if only:
                argv += ["--project", str(app.project_dir(project_dir))]
            for flag, on in (("--allow-other", allow_other), ("--share-modes", share_modes),
                             ("--no-kernel-cache", no_kernel_cache)):
                if on:
                    argv.append(flag)
            lifecycle.spawn_background(argv, path, app.settings.home / "logs" / LOG_NAME)
            click.echo(str(path))
            return
        _serve(layout, path, only_dir, allow_other, share_modes or not allow_other,
               not no_kernel_cache, handshake)
    except RewindError as exc:
        handshake.send(f"error: {exc}\n".encode())
        raise


def _serve(layout: Layout, path: Path, only: Path | None, allow_other: bool,
           share_modes: bool, kernel_cache: bool, handshake: _Handshake) -> None:
    from rewindfs.fs.model import Model
    from rewindfs.fs.serve import serve

    # The mode the mount runs in (kernel cache or stock) and trouble go to stderr: the
    # terminal in the foreground, the mount log in the background.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stderr)

    def ready() -> None:
        if handshake.fd is None:
            click.echo(f"rewindfs mounted at {path} (Ctrl-C to unmount)", err=True)
        handshake.send(b"ready\n")

    try:
        model = Model(layout, only_project=project_hash(only) if only else None,
                      only_workdir=only, share_modes=share_modes)
        serve(model, path,
              allow_other=allow_other, on_ready=ready, kernel_cache=kernel_cache)
    except RuntimeError as exc:  # pyfuse3 reports a failed mount this way
        hint = " (allow_other needs user_allow_other in /etc/fuse.conf)" if allow_other else ""
        raise RewindError(f"could not mount at {path}: {exc}{hint}") from None


class _Handshake:
    """Tells the waiting parent (background mode) how the mount went, exactly once."""

    def __init__(self, fd: int | None):
        self.fd = fd
        self._sent = fd is None

    def send(self, message: bytes) -> None:
        if self._sent or self.fd is None:
            return
        self._sent = True
        try:
            os.write(self.fd, message)
            os.close(self.fd)
        except OSError:
            pass


@click.command(epilog=examples(
    "rewind umount",
    "rewind umount /tmp/view --lazy     # detach now although a shell is still inside",
))
@click.argument("mountpoint", required=False, type=click.Path(file_okay=False))
@click.option("-z", "--lazy", is_flag=True, help="Detach now even if busy; release when unused.")
@click.pass_obj
def umount(app: App, mountpoint: str | None, lazy: bool) -> None:
    """Unmount the checkpoints mounted at MOUNTPOINT (default $HERMES_HOME/mnt)."""
    from rewindfs.fs import lifecycle

    path = lifecycle.unmount(mountpoint or app.settings.mount_dir, lazy=lazy)
    click.echo(f"unmounted {path}")


COMMANDS = [mount, umount]
