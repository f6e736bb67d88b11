"""What a remote says about a project is validated before use (issue 34, cases 3 and 4):
a record never chooses where a restore writes, and what reaches a terminal from a remote
is shown, never obeyed. Remotes crafted with plain git."""

from __future__ import annotations

import json
from pathlib import Path

from crafted import Crafted, h16
from remote_servers import Machine, bare_repo

RAW = ("\x1b", "\x07", "\x9b")  # ESC, BEL, CSI: a terminal acts on them


def victim(root: Path) -> Path:
    """A project of this machine, with files a wrong restore would delete."""
    app = root / "victim"
    (app / ".git").mkdir(parents=True)
    (app / "keep.txt").write_text("mine\n")
    (app / "sub").mkdir()
    (app / "sub" / "also.txt").write_text("mine too\n")
    return app


def test_a_record_never_chooses_where_a_restore_writes(tmp_path: Path):
    """`"workdir": "."`, a relative path, `victim/sub/..`, a path that is no project here:
    a restore without --to refuses them, run in the victim project; nothing changes."""
    app = victim(tmp_path)
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"evil.txt": ("100644", evil.blob(b"pwned\n"))}), "evil")
    for n, workdir in enumerate([".", "relative/dir", f"{app}/sub/..", str(tmp_path),
                                 f"{app}//sub", f"{app}/"], start=1):
        evil.project(h16(n), tip, {"workdir": workdir, "host": f"host{n}"})
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("checkpoint", app, "-m", "mine")
    fetched = b.rewind("fetch", "evil").stdout
    listed = json.loads(b.rewind("list", "--remote", "evil", "--json").stdout)
    names = {p["name"] for p in listed}
    assert ".." not in {n.rsplit("/", 1)[1] for n in names}, names
    usable = {p["name"]: p["directory"] for p in listed if p["directory"]}
    assert usable == {"@evil/" + tmp_path.name: str(tmp_path)}, listed  # only the normal path
    before = {p: p.read_bytes() for p in app.rglob("*") if p.is_file() and ".git" not in p.parts}

    for name in sorted(names):
        done = b.rewind("restore", "1", "-C", name, "--yes", cwd=app, check=False)
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "--to DIR" in done.stderr, \
            done.stderr
    after = {p: p.read_bytes() for p in app.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before and not (app / "evil.txt").exists()
    assert "pwned" not in (tmp_path / "victim" / "keep.txt").read_text()
    # Into a new directory, as asked: fine.
    out = tmp_path / "out"
    b.rewind("restore", "1", "-C", sorted(names)[0], "--to", out, cwd=app)
    assert (out / "evil.txt").read_bytes() == b"pwned\n"
    assert "relative/dir" not in fetched and "sub/.." not in fetched


def test_a_record_naming_this_project_is_restored_into_it_only_as_that_project(tmp_path: Path):
    """The same absolute path as a local project: restored in place (undo takes it back);
    `--remote` picks it from inside the project."""
    app = victim(tmp_path)
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"keep.txt": ("100644", evil.blob(b"theirs\n"))}), "theirs")
    evil.project(h16(1), tip, {"workdir": str(app), "host": "sandbox"})
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("checkpoint", app, "-m", "mine")
    b.rewind("fetch", "evil")
    b.rewind("restore", "1", "-C", f"@evil/{app.name}", "--yes")
    assert (app / "keep.txt").read_text() == "theirs\n"
    b.rewind("undo", "-C", app)
    assert (app / "keep.txt").read_text() == "mine\n"
    b.rewind("restore", "1", "--remote", "evil", "--yes", cwd=app)
    assert (app / "keep.txt").read_text() == "theirs\n"


def test_control_characters_from_a_remote_are_shown_never_obeyed(tmp_path: Path):
    """ESC/BEL sequences and newlines in a record's path or host, in a checkpoint's message,
    in a remote's error: fetch, list, status, show, grep and the error line show them
    written out; a host or path holding them is not used as a name."""
    evil = Crafted(tmp_path / "evil.git")
    title = "\x1b]0;pwned\x07\x1b[2J"
    tip = evil.commit(evil.tree({"f.txt": ("100644", evil.blob(f"x{title}y\n".encode()))}),
                      f"clear{title}screen\nrewind: fake line")
    evil.project(h16(1), tip, {"workdir": f"/srv/a{title}b", "host": "h"})
    evil.project(h16(2), tip, {"workdir": "/srv/app", "host": f"h{title}\n"})
    evil.project(h16(3), tip, {"workdir": "/srv/web\nfake", "host": "h\u202eevil"})
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    outputs = [b.rewind("fetch", "evil")]
    outputs += [b.rewind(*args) for args in (["list", "--all-projects"], ["status"],
                                             ["list", "--remote", "evil"],
                                             ["show", "1", "-C", "@evil/app"],
                                             ["grep", "x", "-C", "@evil/app"])]
    for done in outputs:
        for raw in RAW:
            assert raw not in done.stdout and raw not in done.stderr, done.args
    listed = outputs[1].stdout
    assert "clear\\x1b]0;pwned\\x07\\x1b[2Jscreen" in listed, listed
    assert "\nrewind: fake line" not in listed
    assert "\\x1b]0;pwned" in outputs[5].stdout  # the matched line, written out

    # A remote's own words in a failed push: a hook on it prints escapes.
    served = bare_repo(tmp_path / "hooked.git")
    hook = served / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nprintf 'error: \\033]0;pwned\\007\\033[2J refused\\n' >&2\n"
                    "exit 1\n")
    hook.chmod(0o755)
    app = tmp_path / "app"
    (app / ".git").mkdir(parents=True)
    (app / "f").write_text("1\n")
    b.rewind("checkpoint", app)
    b.rewind("remote", "add", "hooked", served)
    failed = b.rewind("push", "hooked", "-C", app, check=False)
    assert failed.returncode == 1 and len(failed.stderr.strip().splitlines()) == 1
    assert not any(raw in failed.stderr for raw in RAW), failed.stderr
    assert "\\x1b]0;pwned\\x07" in failed.stderr, failed.stderr
    shown = b.rewind("remote", "list").stdout
    assert not any(raw in shown for raw in RAW), shown
