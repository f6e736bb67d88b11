"""`rewind hooks install|uninstall AGENT --mcp`: rewindfs's MCP server in the agent's own MCP
configuration (hooks.mcpconfig says where), installed and removed as the hooks are
(hooks.install): every other key stays, the file keeps its style, mode, owner and symlink
(hooks.configfile), a second install changes nothing, and an uninstall of an install
nobody touched since puts back exactly the bytes the file had (its own record, apart from
the hooks' record of the same file: hooks.configrecord). When the file changed in between
(agents rewrite theirs), uninstall takes out only rewindfs's server entry.

Codex's file is TOML, which Python only reads: rewindfs's table is a block of text it
appends (after a comment naming it), found again by that comment or by its header.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from rewindfs.errors import Refused
from rewindfs.hooks import configfile
from rewindfs.hooks import configrecord as rec
from rewindfs.hooks.install import Outcome
from rewindfs.hooks.mcpconfig import SERVER, McpSpec, allows_restore, is_ours, spec

KIND = "mcp"  # the install records' kind (hooks.configrecord)
MARK = "# rewindfs: `rewind mcp` (rewind hooks uninstall codex --mcp removes it)"


def _not_ours(s: McpSpec) -> Refused:
    return Refused(f"{s.path} already has an MCP server named {SERVER!r} that is not "
                   "rewindfs's; left as it is")


# -- JSON ---------------------------------------------------------------------------------

def _table(s: McpSpec, data: dict[str, Any]) -> dict[str, Any] | None:
    table = data.get(s.table)
    if table is not None and not isinstance(table, dict):
        raise Refused(f"{s.path}: {s.table!r} is not an object; left as it is")
    return table


def _json_with(s: McpSpec, raw: bytes | None) -> tuple[bytes, list[str]]:
    data = rec.parse(s.path, raw)
    table = _table(s, data)
    if table is not None and SERVER in table and not is_ours(table[SERVER]):
        raise _not_ours(s)
    added = [] if table is not None else [s.table]
    data.setdefault(s.table, {})[SERVER] = s.entry
    return rec.dump(data, raw), added


def _json_without(s: McpSpec, raw: bytes, added: list[str]) -> bytes | None:
    data = rec.parse(s.path, raw)
    table = _table(s, data)
    if not table or not is_ours(table.get(SERVER)):
        return None
    del table[SERVER]
    if not table and s.table in added:
        del data[s.table]
    return rec.dump(data, raw)


# -- TOML (Codex) -------------------------------------------------------------------------

def _toml(s: McpSpec, raw: bytes | None) -> dict[str, Any]:
    try:
        return tomllib.loads((raw or b"").decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise Refused(f"{s.path} is not valid TOML ({exc}); left as it is") from None


def _toml_block(s: McpSpec) -> str:
    # JSON's string escapes are TOML's basic-string escapes.
    return (f"{MARK}\n[{s.table}.{SERVER}]\ncommand = {json.dumps(s.entry['command'])}\n"
            f"args = [{', '.join(json.dumps(a) for a in s.entry['args'])}]\n")


def _toml_cut(text: str) -> str | None:
    """`text` without rewindfs's table (its comment, header and keys), or None when it is
    not there as a table of its own."""
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"^\s*\[\s*mcp_servers\s*\.\s*\"?{SERVER}\"?\s*\]\s*(#.*)?$")
    for i, line in enumerate(lines):
        if header.match(line.rstrip("\n")):
            start = i - 1 if i and lines[i - 1].rstrip("\n") == MARK else i
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith("["):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1  # blank lines before the next table stay
            if start and not lines[start - 1].strip() and (end == len(lines)):
                start -= 1  # the blank line install put before it
            return "".join(lines[:start] + lines[end:])
    return None


def _toml_with(s: McpSpec, raw: bytes | None) -> tuple[bytes, list[str]]:
    current = _toml(s, raw).get(s.table, {}).get(SERVER)
    text = (raw or b"").decode("utf-8")
    if current is not None:
        if not is_ours(current):
            raise _not_ours(s)
        cut = _toml_cut(text)
        if cut is None:
            raise Refused(f"{s.path}: rewindfs's MCP server is not a table of its own "
                          f"([{s.table}.{SERVER}]); left as it is")
        text = cut
    # One blank line between the file's last table and rewindfs's.
    sep = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    return (text + sep + _toml_block(s)).encode(), []


def _toml_without(s: McpSpec, raw: bytes, added: list[str]) -> bytes | None:
    if not is_ours(_toml(s, raw).get(s.table, {}).get(SERVER)):
        return None
    cut = _toml_cut(raw.decode("utf-8"))
    return None if cut is None else cut.encode()


# -- the verbs ----------------------------------------------------------------------------

def _with(s: McpSpec, raw: bytes | None) -> tuple[bytes, list[str]]:
    return _toml_with(s, raw) if s.kind == "toml" else _json_with(s, raw)


def _without(s: McpSpec, raw: bytes, added: list[str]) -> bytes | None:
    return _toml_without(s, raw, added) if s.kind == "toml" else _json_without(s, raw, added)


def install(agent: str, project: Path | None = None, other_owner: bool = False,
            allow_restore: bool = False) -> Outcome:
    s = spec(agent, project, allow_restore)
    raw = rec.read(s.path)
    new, added = _with(s, raw)
    how = "restores allowed" if allow_restore else "read-only"
    if raw == new:
        return Outcome(agent, s.path, False, f"MCP server already installed in {s.path} ({how})")
    configfile.check_owner(s.path, configfile.target(s.path), other_owner)
    record = rec.read_record(s.path, KIND)
    if record is None or record.get("written") != (rec.digest(raw) if raw is not None else None):
        # First install, or the file changed since ours: what it is now (without an entry
        # of ours nobody recorded) is what uninstall brings back.
        original = raw
        if raw is not None:
            original = _without(s, raw, []) or raw
        record = {"path": str(s.path), "created_dirs": rec.missing_dirs(s.path), "added": added,
                  "original": None if original is None else
                  original.decode("utf-8", "surrogateescape")}
    configfile.make_dirs(s.path)
    record["written"] = rec.digest(new)
    rec.write_record(s.path, record, KIND)
    configfile.write(s.path, new, other_owner)
    return Outcome(agent, s.path, True, f"MCP server installed in {s.path} ({how})")


def uninstall(agent: str, project: Path | None = None, other_owner: bool = False) -> Outcome:
    s = spec(agent, project)
    raw = rec.read(s.path)
    if raw is None:
        rec.forget(s.path, KIND)
        return Outcome(agent, s.path, False, f"MCP server not installed ({s.path} does not "
                                             "exist)")
    record = rec.read_record(s.path, KIND)
    configfile.check_owner(s.path, configfile.target(s.path), other_owner)
    if record and record.get("written") == rec.digest(raw):
        original = record.get("original")
        if original is None and not s.path.is_symlink():  # install made the file
            configfile.remove(s.path, other_owner)
            for folder in record.get("created_dirs") or []:
                rec.rmdir_if_empty(Path(folder))
            rec.forget(s.path, KIND)
            return Outcome(agent, s.path, True, f"MCP server removed from {s.path}")
        if original is not None:
            configfile.write(s.path, original.encode("utf-8", "surrogateescape"), other_owner)
            rec.forget(s.path, KIND)
            return Outcome(agent, s.path, True, f"MCP server removed from {s.path}")
    new = _without(s, raw, (record or {}).get("added") or [])
    rec.forget(s.path, KIND)
    if new is None:
        return Outcome(agent, s.path, False, f"MCP server not installed in {s.path}")
    configfile.write(s.path, new, other_owner)
    rec.hand_over(s.path, KIND, record, raw, new)   # the hooks' install, made after ours
    return Outcome(agent, s.path, True, f"MCP server removed from {s.path} (the rest of the "
                                        "file as you left it)")


def installed(agent: str, project: Path | None = None) -> tuple[Path, bool | None]:
    """(the file, None: not installed, else whether it allows restores)."""
    s = spec(agent, project)
    raw = rec.read(s.path)
    if raw is None:
        return s.path, None
    try:
        data = _toml(s, raw) if s.kind == "toml" else rec.parse(s.path, raw)
    except Refused:
        return s.path, None
    table = data.get(s.table)
    entry = table.get(SERVER) if isinstance(table, dict) else None
    return s.path, (allows_restore(entry) if is_ours(entry) else None)
