"""Names: of remotes, of their URLs (never holding a credential), and of refs on both sides.

On the remote, everything rewindfs writes lives under `refs/rewind/m/`, a namespace no
code branch, tag or note can collide with (`git clone` and `git fetch` of branches
never see it), one folder per machine, so two machines, or two sandboxes checkpointing
the same path, never write the same ref:

    refs/rewind/m/<machine>/<h16>/checkpoints    the project's checkpoints (carried copies)
    refs/rewind/m/<machine>/<h16>/notes          their notes (agent state, actions, modes)
    refs/rewind/m/<machine>/<h16>/meta           its registry record and step log
    refs/rewind/m/<machine>/<h16>/labels/<name>  its labels

Here, what a remote holds is mirrored under `refs/rewind/remotes/<remote>/m/...`
(fetched, or written after a push), never under `refs/hermes/` nor any other local
ref. Code elsewhere names such a project by its key `<remote>/<machine>/<h16>`
(objects.layout maps a key to these refs).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from rewindfs.errors import InvalidInput
from rewindfs.store.objects.layout import REMOTES_PREFIX

REMOTE_NAMESPACE = "refs/rewind/m/"
CHAIN, NOTES, META, LABELS = "checkpoints", "notes", "meta", "labels/"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SCHEMES = {"file", "ssh", "git", "http", "https"}
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s]*)@")
_QUERY = re.compile(r"(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^?#\s'\"]*)(?P<mark>[?#])[^\s'\"]*")


def validate_name(name: str) -> str:
    """A remote's name: also a ref component and a file name."""
    if not _NAME.match(name or "") or ".." in name or name.endswith((".", ".lock")):
        raise InvalidInput(f"invalid remote name {name!r}: use 1-64 letters, digits, '.', '_' "
                           "or '-', starting with a letter or digit")
    return name


def check_url(url: str) -> str:
    """`url` if rewindfs may store and use it: file, ssh, git, http(s) or a local path,
    with no credential in it (credentials come from the ssh agent or git's credential
    helpers, never from rewindfs's files)."""
    text = (url or "").strip()
    if not text or text != url or any(ord(c) < 32 or c == "\x7f" for c in text):
        raise InvalidInput("invalid remote URL: empty, or with spaces or control characters "
                           "at either end")
    if text.startswith("-"):
        raise InvalidInput(f"invalid remote URL {text!r}: it may not start with '-'")
    if "::" in text.split("/", 1)[0]:
        raise InvalidInput(f"remote helper URLs ({text.split('::', 1)[0]}::...) are not "
                           "supported: use file, ssh, git, http or https")
    if "://" in text:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise InvalidInput(f"unsupported URL scheme {scheme!r}: use file, ssh, git, http "
                               "or https")
        user = unquote(parts.username or "")
        if parts.password is not None or ":" in user:  # ssh://user%3APASS@host too
            raise InvalidInput(f"refusing a URL with a password in it ({redact(text)}): "
                               "use your ssh agent or a git credential helper")
        if parts.query or parts.fragment or "?" in text or "#" in text:
            raise InvalidInput(f"refusing a URL with a query or fragment in it "
                               f"({redact(text)}): tokens sit there (`?private_token=`); "
                               "give credentials to git's credential helper")
        if parts.username is not None and scheme in ("http", "https"):
            raise InvalidInput(f"refusing an {scheme} URL with a user name or token in it "
                               f"({redact(text)}): give the user name to git's credential "
                               f"helper (git config --global credential.{scheme}://"
                               f"{parts.hostname}.username NAME)")
    elif "@" in text and ":" in text.split("@", 1)[0]:
        raise InvalidInput("refusing an ssh address with a password in it: use your ssh agent")
    return text


def redact(text: str) -> str:
    """`text` with whatever sits before `@` in a URL's authority, and a URL's query and
    fragment, replaced by `***` (a user name, `?private_token=...`: a token), for
    anything printed or logged."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + "***@", text)
    return _QUERY.sub(lambda m: m.group("url") + m.group("mark") + "***", text)


def remote_folder(machine: str) -> str:
    """This machine's refs on the remote, as `git ls-remote` is asked for them."""
    return f"{REMOTE_NAMESPACE}{machine}/*"


def remote_base(machine: str, h16: str) -> str:
    return f"{REMOTE_NAMESPACE}{machine}/{h16}/"


def tracking(name: str, remote_ref: str) -> str:
    """The local ref mirroring `remote_ref` (under refs/rewind/m/) of remote `name`."""
    return f"{REMOTES_PREFIX}{name}/{remote_ref[len('refs/rewind/'):]}"


def tracking_prefix(name: str, machine: str | None = None) -> str:
    return f"{REMOTES_PREFIX}{name}/m/" + (f"{machine}/" if machine else "")


def fetch_refspec(name: str, machine: str | None = None) -> str:
    """Everything the remote holds (or one machine's part of it), mirrored here."""
    remote = REMOTE_NAMESPACE + (f"{machine}/" if machine else "")
    return f"+{remote}*:{tracking_prefix(name, machine)}*"


def key(name: str, machine: str, h16: str) -> str:
    return f"{name}/{machine}/{h16}"
