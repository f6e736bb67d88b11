"""What `rewind hooks install` records of a config file it changes, and how it reads and
writes JSON config files keeping their style: shared by the hooks' install (hooks.install)
and the MCP server's (hooks.mcpinstall).

The record (`rewind-hooks/installed/<key>.json`, in the private hooks folder) holds the
bytes the file had before install and a digest of what install wrote: an uninstall of an
install nobody touched since puts those bytes back exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rewindfs.errors import Refused
from rewindfs.hooks import hooklog
from rewindfs.store.objects import private

# The installs that record what they found in a file: the hooks' ("") and the MCP
# server's (hooks.mcpinstall.KIND); Gemini CLI keeps both in one settings.json.
KINDS = ("", "mcp")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_path(path: Path, kind: str = "") -> Path:
    """Where install keeps what it found in `path`; `kind` keeps another install's record
    of the same file apart (the MCP server's entry in a file that also holds the hooks)."""
    key = digest(os.fsencode(os.path.abspath(path)) + (b"\0" + kind.encode() if kind
                                                        else b""))[:24]
    return hooklog.hooks_dir() / "installed" / f"{key}.json"


def read_record(path: Path, kind: str = "") -> dict[str, Any] | None:
    """The record of what install found, read only from the private hooks folder (a
    folder someone else could write into is refused: hooklog.private_dir)."""
    record = record_path(path, kind)
    try:
        hooklog.private_dir(record.parent, create=False)
    except FileNotFoundError:
        return None
    except hooklog.Unsafe as exc:
        raise Refused(str(exc)) from None
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"cannot read {record}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise Refused(f"{record} is not yours alone (owner uid {st.st_uid}, mode "
                          f"{st.st_mode & 0o7777:04o}); not used: remove it")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = json.loads(fh.read())
    except ValueError:
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def write_record(path: Path, record: dict[str, Any], kind: str = "") -> None:
    try:
        hooklog.private_dir(record_path(path, kind).parent)
    except hooklog.Unsafe as exc:
        raise Refused(str(exc)) from None
    private.write_atomic(record_path(path, kind), json.dumps(record))


def hand_over(path: Path, kind: str, leaving: dict[str, Any] | None, before: bytes,
              after: bytes) -> None:
    """`kind`'s install was taken out of `path` (`before` -> `after`) while another one
    made after it is still there, untouched since: that one's record now says the file
    was, before it, what it was before `kind`'s install. Its uninstall then puts back the
    very bytes from before both, whichever of the two is taken out first."""
    if not leaving or leaving.get("written") is None:
        return
    for other in KINDS:
        if other == kind:
            continue
        record = read_record(path, other)
        if not record or record.get("written") != digest(before):
            continue
        original = record.get("original")
        if original is None or digest(original.encode("utf-8", "surrogateescape")) != \
                leaving["written"]:
            continue   # not installed straight on top of `kind`'s: it keeps its own record
        record.update(original=leaving.get("original"), written=digest(after),
                      created_dirs=leaving.get("created_dirs") or [])
        write_record(path, record, other)


def read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None


def missing_dirs(path: Path) -> list[str]:
    out, folder = [], path.parent
    while not folder.exists():
        out.append(str(folder))
        folder = folder.parent
    return out


# -- JSON files ---------------------------------------------------------------------------

def parse(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise Refused(f"{path} is not valid JSON ({exc}); left as it is") from None
    if not isinstance(data, dict):
        raise Refused(f"{path} does not hold a JSON object; left as it is")
    return data


def style(raw: bytes | None) -> tuple[str | int, bool]:
    """The file's indentation and whether it ends with a newline (defaults: 2, yes)."""
    if not raw:
        return 2, True
    for line in raw.decode("utf-8", "replace").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return ("\t" if lead.startswith("\t") else len(lead)), raw.endswith(b"\n")
    return 2, raw.endswith(b"\n")


def dump(data: dict[str, Any], raw: bytes | None) -> bytes:
    indent, newline = style(raw)
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return (text + ("\n" if newline else "")).encode()


def forget(path: Path, kind: str = "") -> None:
    try:
        record_path(path, kind).unlink()
    except FileNotFoundError:
        pass


def rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
