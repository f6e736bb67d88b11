"""Secrets never stay in what rewindfs keeps (issue 33, case 3): the one redactor for
command text, with real-looking keys, and every reason a checkpoint keeps (the Python
API's included) passed through it before it reaches a commit, the reflog or a note."""

from __future__ import annotations

import random
import string
import subprocess

import pytest
from conftest import isolated_git_env

from rewindfs.store.history import redact

# Real-looking keys, the same in every pytest-xdist worker (they name the tests).
_RANDOM = random.Random(33)


def token(n: int = 40, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(n))


# (command, the secret in it, what must still be readable after redaction)
def cases() -> list[tuple[str, str, str]]:
    live, pw, gh, aws = f"sk-live-{token()}", f"Hunter2-{token(12)}", f"ghp_{token(36)}", \
        token(40)
    ant, slack, jwt_sig = f"sk-ant-api03-{token(80)}", f"xoxb-{token(30)}", token(43)
    pg, basic, glpat, hf = token(16), token(24), f"glpat-{token(20)}", f"hf_{token(34)}"
    return [
        (f'curl -H "Authorization: Bearer {live}" https://api.stripe.com/v1/charges '
         "&& rm -rf build", live, "rm -rf build"),
        (f"curl -H 'authorization: token {gh}' https://api.github.com", gh, "curl"),
        (f"mysql --password={pw} -u root app < dump.sql", pw, "mysql --password=***"),
        (f"mysql -u root -p{pw} app", pw, "-p***"),
        (f"mysqldump --password {pw} app > x.sql", pw, "mysqldump"),
        (f"export GITHUB_TOKEN={gh} && gh pr create", gh, "GITHUB_TOKEN=***"),
        (f"AWS_SECRET_ACCESS_KEY={aws} aws s3 rm --recursive s3://b", aws,
         "aws s3 rm --recursive"),
        (f"ANTHROPIC_API_KEY='{ant}' ./run.sh", ant, "./run.sh"),
        (f"git clone https://oauth2:{glpat}@gitlab.com/x/y.git", glpat, "gitlab.com/x/y.git"),
        (f"git push https://{gh}@github.com/x/y main", gh, "github.com/x/y"),
        (f"psql postgres://app:{pg}@db.internal/app -c 'drop table t'", pg, "drop table t"),
        (f"curl -u admin:{basic} https://ci/job", basic, "admin:***"),
        (f"curl 'https://x.io/v1?access_token={pg}&page=2'", pg, "page=2"),
        (f"echo {slack} > .slack", slack, "> .slack"),
        (f"echo {hf}", hf, "echo"),
        (f"echo AKIA{token(16, string.ascii_uppercase + string.digits)}", "AKIA", "echo"),
        (f"curl -H 'X-Api-Key: {pw}' -H 'Cookie: session={basic}' https://x", pw, "curl"),
        ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
         f"{jwt_sig}' https://x", jwt_sig, "curl"),
        (f"redis-cli -a {pw} flushall", pw, "flushall"),
    ]


@pytest.mark.parametrize("command,secret,kept", cases())
def test_each_form_is_redacted(command: str, secret: str, kept: str) -> None:
    out = redact(command)
    assert secret not in out if secret != "AKIA" else "AKIA***" in out, out
    assert kept in out and "***" in out, out
    assert redact(out) == out   # idempotent: a redacted text stays as it is


@pytest.mark.parametrize("command", ["rm -rf build", "git reset --hard HEAD~3",
                                     "sed -i 's/a/b/' src/app.py", "GIT_AUTHOR_NAME=x git commit",
                                     "rm secrets.env tokens.txt", "docker login --password-stdin",
                                     "before: Write notes.txt, more.txt", "ls --sort=time"])
def test_plain_commands_are_left_alone(command: str) -> None:
    assert redact(command) == command


def test_the_python_apis_reason_is_redacted_everywhere_it_is_kept(mgr, project, store_dir) \
        -> None:
    key = f"sk-proj-{token(48)}"
    assert mgr.ensure_checkpoint(str(project), f"before: OPENAI_API_KEY={key} python train.py")
    (project / "README.md").write_text("changed\n")
    mgr.new_turn()
    mgr.record_action(str(project), "deploy", "42", f"curl -H 'Authorization: Bearer {key}'")
    assert mgr.ensure_checkpoint(str(project), f"deploy with token {key}")
    [newest, first] = mgr.list_checkpoints(str(project))[:2]
    assert first["reason"] == "before: OPENAI_API_KEY=*** python train.py"
    assert newest["reason"] == "deploy with token sk-proj-***"
    # Everything git keeps: every object (commits, notes, trees, blobs), every ref, the
    # reflogs, and every other file of the store.
    env = isolated_git_env(GIT_DIR=str(store_dir))
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], env=env,
                             capture_output=True, timeout=60, check=True).stdout
    assert b"sk-proj-***" in objects   # the scenario: the reasons are there, redacted
    assert key.encode() not in objects
    for path in store_dir.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
