"""Secrets stay out by default (issue 11): well-known secret files and directories are not
captured, a `!pattern` in `.rewindignore` brings one back, and a checkpoint says once per
project that it left out files that look like private keys."""

from __future__ import annotations

import json

import pygit2
from test_restore_helpers import write

PRIVATE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
               "-----END OPENSSH PRIVATE KEY-----\n")
RSA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----\n"

# The 21 secret-like files the issue found captured, and a few more.
SECRETS = {
    "id_rsa": PRIVATE_KEY, "id_rsa.pub": "ssh-rsa AAAA\n", "id_ed25519": PRIVATE_KEY,
    "deploy/id_ecdsa": PRIVATE_KEY, "id_dsa": PRIVATE_KEY,
    ".ssh/id_rsa": PRIVATE_KEY, ".ssh/config": "Host x\n", ".ssh/known_hosts": "x\n",
    "server.key": RSA_KEY, "certs/site.pem": CERTIFICATE, "certs/bundle.p12": "\x30\x82",
    "certs/win.pfx": "\x30\x82", "tls/private.pem": RSA_KEY,
    ".aws/credentials": "[default]\naws_secret_access_key=x\n",
    "sub/.aws/credentials": "[default]\n", ".netrc": "machine x password y\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=x\n", ".pypirc": "[pypi]\npassword=x\n",
    ".git-credentials": "https://u:p@example.com\n",
    ".docker/config.json": '{"auths": {}}\n', ".kube/config": "users: []\n",
    "terraform.tfstate": "{}\n", "terraform.tfstate.backup": "{}\n", "infra/prod.tfstate": "{}\n",
    "vault.kdbx": "\x03\xd9", ".gnupg/private-keys-v1.d/k.key": "(key)\n",
    ".pgpass": "h:5432:db:u:p\n", ".env": "TOKEN=x\n", ".env.production": "TOKEN=y\n",
}
ORDINARY = {"src/keys.py": "KEY = 1\n", "docs/pem-format.md": "about PEM\n",
            "config.json": "{}\n", ".aws/config": "[default]\nregion=x\n",
            "keyboard.txt": "qwerty\n", "monkey.c": "int main;\n"}


def captured(store_dir, commit: str) -> set[str]:
    repo = pygit2.Repository(str(store_dir))
    out = set()
    stack = [("", repo[commit].peel(pygit2.Tree))]
    while stack:
        base, tree = stack.pop()
        for entry in tree:
            path = base + entry.name
            if entry.filemode == pygit2.enums.FileMode.TREE:
                stack.append((path + "/", repo[entry.id]))
            else:
                out.add(path)
    return out


def test_secrets_are_left_out_by_default(mgr, project, store_dir):
    write(project, {**SECRETS, **ORDINARY})
    result = mgr.take(str(project), "with secrets around")
    stored = captured(store_dir, result.commit)
    leaked = sorted(set(SECRETS) & stored)
    assert not leaked, f"secret files captured: {leaked}"
    assert set(ORDINARY) <= stored, sorted(set(ORDINARY) - stored)


def test_rewindignore_brings_one_back(mgr, project, store_dir):
    write(project, {**SECRETS, ".rewindignore": "!*.pem\n!.npmrc\n!.ssh/\n"})
    stored = captured(store_dir, mgr.take(str(project), "overrides").commit)
    assert {"certs/site.pem", "tls/private.pem", ".npmrc", ".ssh/config"} <= stored
    # a key name stays out: `!.ssh/` re-includes the directory, not `id_rsa*` in it
    assert ".ssh/id_rsa" not in stored
    assert not {"id_rsa", "server.key", ".netrc", ".aws/credentials"} & stored


def test_a_secret_captured_before_leaves_the_next_checkpoint(mgr, project, store_dir):
    write(project, {"server.key": RSA_KEY, ".rewindignore": "!*.key\n"})
    first = mgr.take(str(project), "key re-included")
    assert "server.key" in captured(store_dir, first.commit)
    (project / ".rewindignore").write_text("# the default again\n")
    second = mgr.take(str(project), "default again")
    assert second.taken and "server.key" not in captured(store_dir, second.commit)


def test_private_keys_left_out_are_named_once(mgr, project, run_rewind):
    write(project, {"certs/site.pem": CERTIFICATE, "notes.txt": "n\n"})
    proc = run_rewind("checkpoint", str(project), "-m", "a certificate only")
    assert proc.returncode == 0, proc.stderr
    assert "private key" not in proc.stderr, proc.stderr  # a certificate is not a key
    # keys arrive later, deep in the tree and in .ssh/
    write(project, {"deploy/keys/id_ed25519": PRIVATE_KEY, "server.key": RSA_KEY,
                    ".ssh/id_rsa": PRIVATE_KEY, "id_rsa.pub": "ssh-rsa AAAA\n",
                    "notes.txt": "m\n"})
    proc = run_rewind("checkpoint", str(project), "-m", "keys now")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "private key" in line]
    assert len(warnings) == 1, proc.stderr
    line = warnings[0]
    assert line.startswith("rewind: warning: left out 3 file(s) that look like private keys")
    for name in (".ssh/id_rsa", "deploy/keys/id_ed25519", "server.key"):
        assert name in line, line
    assert "id_rsa.pub" not in line and "site.pem" not in line
    assert "!PATTERN" in line and ".rewindignore" in line
    write(project, {"another.key": RSA_KEY, "notes.txt": "o\n"})
    proc = run_rewind("checkpoint", str(project), "-m", "once per project")
    assert proc.returncode == 0, proc.stderr
    assert "private key" not in proc.stderr, "warned twice"


def test_api_reports_private_keys_left_out(mgr, project):
    write(project, {"id_rsa": PRIVATE_KEY})
    out = mgr.checkpoint(str(project), "api")
    assert out["success"], out
    assert out["skipped_files"].get("private_keys") == ["id_rsa"], json.dumps(out)
