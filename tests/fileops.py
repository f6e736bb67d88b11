"""Random file operations on a project, each noting the paths it changed as inotify names
them (the entry changed, in its parent): for the tests that hold a capture from changed
paths (store.capture.graft, the resident watch) to a walk of the whole tree."""

from __future__ import annotations

import os
import random
import shutil
import stat
from pathlib import Path

import pygit2

NAMES = ["a", "b", "c", "A", "src", "lib", "node_modules", "build", "x.py", "y.txt",
         "caf\udce9", "deep", ".hidden", "z.log"]


class Ops:
    """File operations on a project, each noting the paths it changed (as inotify
    would name them: the entry changed, in its parent)."""

    def __init__(self, root: Path, rnd: random.Random):
        self.root, self.rnd, self.changed = root, rnd, set()

    def rel(self, path: Path) -> bytes:
        return os.fsencode(os.path.relpath(path, self.root))

    def entries(self, dirs: bool | None = None) -> list[Path]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in dirnames if dirs is not False else []:
                out.append(Path(dirpath) / name)
            for name in filenames if dirs is not True else []:
                out.append(Path(dirpath) / name)
        return sorted(out)

    def new_path(self) -> Path:
        parts = [self.rnd.choice(NAMES) for _ in range(self.rnd.randint(1, 4))]
        return self.root.joinpath(*parts)

    def make_parents(self, path: Path) -> bool:
        """Create `path`'s missing parents, noting the topmost one created; False when a
        parent is a file or a link."""
        top = None
        for parent in reversed(path.relative_to(self.root).parents[:-1]):
            full = self.root / parent
            if full.is_symlink() or (full.exists() and not full.is_dir()):
                return False
            if not full.exists():
                full.mkdir()
                top = top or full
        if top is not None:
            self.changed.add(self.rel(top))
        return True

    def data(self) -> bytes:
        size = self.rnd.choice([0, 1, 10, 100, 3999, 4000, 4001, 9000])
        return bytes(self.rnd.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)

    def run(self, op: str) -> None:
        getattr(self, op)()

    def create(self) -> None:
        path = self.new_path()
        if path.exists() or path.is_symlink() or not self.make_parents(path):
            return
        path.write_bytes(self.data()[: self.rnd.choice([0, 5, 5000])])
        self.changed.add(self.rel(path))

    def modify(self) -> None:
        files = [p for p in self.entries(dirs=False) if not p.is_symlink()]
        if files:
            path = self.rnd.choice(files)
            path.write_bytes(self.data())
            self.changed.add(self.rel(path))

    def delete(self) -> None:
        files = self.entries(dirs=False)
        if files:
            path = self.rnd.choice(files)
            path.unlink()
            self.changed.add(self.rel(path))

    def rmtree(self) -> None:
        dirs = [p for p in self.entries(dirs=True) if not p.is_symlink()]
        if dirs:
            path = self.rnd.choice(dirs)
            shutil.rmtree(path)
            self.changed.add(self.rel(path))

    def rename(self) -> None:
        entries = self.entries()
        if not entries:
            return
        src = self.rnd.choice(entries)
        dst = self.new_path() if self.rnd.random() < 0.7 else src.with_name(src.name.swapcase())
        if dst.exists() or dst.is_symlink() or dst == src or src in dst.parents:
            return
        if not self.make_parents(dst):
            return
        os.rename(src, dst)
        self.changed.update({self.rel(src), self.rel(dst)})

    def chmod(self) -> None:
        files = [p for p in self.entries(dirs=False) if not p.is_symlink()]
        if files:
            path = self.rnd.choice(files)
            path.chmod(path.stat().st_mode ^ stat.S_IXUSR)
            self.changed.add(self.rel(path))

    def symlink(self) -> None:
        path = self.new_path()
        if path.exists() or path.is_symlink() or not self.make_parents(path):
            return
        os.symlink(self.rnd.choice(["x.py", "../a", "/etc/passwd", "src"]), path)
        self.changed.add(self.rel(path))

    def replace(self) -> None:
        """A file becomes a directory (with a file in it) or a directory a file."""
        entries = [p for p in self.entries() if not p.is_symlink()]
        if not entries:
            return
        path = self.rnd.choice(entries)
        if path.is_dir():
            shutil.rmtree(path)
            path.write_bytes(b"now a file\n")
        else:
            path.unlink()
            path.mkdir()
            (path / "inside.txt").write_bytes(b"inside\n")
        self.changed.add(self.rel(path))

    def nested_repo(self) -> None:
        dirs = [p for p in self.entries(dirs=True) if not p.is_symlink()]
        if dirs:
            path = self.rnd.choice(dirs)
            if not (path / ".git").exists():
                pygit2.init_repository(str(path))
                self.changed.add(self.rel(path / ".git"))


    def ignore_edit(self) -> None:
        """A pattern added to a .gitignore or .rewindignore somewhere."""
        dirs = [self.root] + [p for p in self.entries(dirs=True) if not p.is_symlink()]
        folder = self.rnd.choice(dirs)
        name = self.rnd.choice([".gitignore", ".rewindignore"])
        path = folder / name
        if path.is_dir():
            return
        with open(path, "a") as out:
            out.write(self.rnd.choice(["*.py\n", "a\n", "!x.py\n", "src/\n", "*.txt\n"]))
        self.changed.add(self.rel(path))


OPS = ["create", "create", "modify", "modify", "delete", "rmtree", "rename", "rename",
       "chmod", "symlink", "replace", "nested_repo"]


def start(root: Path, rnd: random.Random, files: int = 25) -> None:
    """A project to begin with: `files` files, a .gitignore."""
    ops = Ops(root, rnd)
    for _ in range(files):
        ops.create()
    (root / ".gitignore").write_text("*.log\nignored/\n")
