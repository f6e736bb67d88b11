"""Table-driven tests for rewindfs.agent.classify: which shell commands need a snapshot first."""

from __future__ import annotations

import pytest

from rewindfs.agent.classify import PARSE_FAILURE, classify

DESTRUCTIVE = [
    # plain deleters, movers and copiers
    "rm -rf build",
    "rm file.txt",
    "rmdir empty",
    "unlink old.txt",
    "mv a.py b.py",
    "cp template.py src/app.py",
    "install -m 755 tool bin/tool",
    "shred -u secret.txt",
    "truncate -s 0 app.log",
    "mkfs.ext4 /dev/sdb1",
    "wipefs -a /dev/sdb",
    "rimraf node_modules",
    "npx rimraf dist",
    "sponge data.json",
    "dd if=/dev/zero of=disk.img bs=1M count=1",
    "patch -p1 < fix.diff",
    # how the program is spelled
    "/bin/rm x",
    r"\rm x",
    '"rm" x',
    "'rm' -f x",
    # prefixes and wrappers
    "sudo rm -rf /var/tmp/x",
    "sudo -u www-data rm x",
    "sudo FOO=1 rm x",
    "doas rm x",
    "env VAR=x rm x",
    "env -i PATH=/bin rm x",
    "env -S 'rm -rf build'",
    "FOO=1 BAR=2 rm x",
    "find . -name '*.pyc' | xargs rm -f",
    "find . -print0 | xargs -0 -I{} mv {} /tmp",
    "nice -n 10 rm x",
    "nohup rm x &",
    "timeout 10 rm x",
    "timeout -s KILL 5s rm x",
    "time rm x",
    "command rm x",
    "exec rm x",
    "stdbuf -oL rm x",
    "ionice -c3 rm x",
    "bash -c 'rm -rf build'",
    'sh -c "git reset --hard"',
    "bash -lc 'echo hi && rm x'",
    "eval 'rm -rf build'",
    "uv run rm x",
    "python -m pip install requests",
    # control operators, subshells and substitutions
    "ls; rm x",
    "ls && rm x",
    "ls || rm x",
    "ls | xargs rm",
    "ls\nrm x",
    "(cd build && rm -rf out)",
    "echo $(rm x)",
    "echo `rm x`",
    'echo "$(rm x)"',
    "x=$(rm -rf build)",
    "echo $((cd x; rm y) )",
    "diff <(ls a) >(rm x)",
    "if [ -f x ]; then rm x; fi",
    "for f in *.py; do sed -i 's/a/b/' \"$f\"; done",
    'case $f in *.py) rm "$f";; esac',
    # redirects
    "echo x > src/app.py",
    "echo x >| f",
    "ls 1> out.txt",
    "make &> build.log",
    "pytest 2> err.log",
    "echo x >&out.txt",
    ": > f",
    "> f",
    "exec > log",
    'echo x > "$OUT"',
    "cat <<EOF > file\nhello\nEOF",
    "{ echo a; echo b; } > out",
    "while read -r l; do echo \"$l\"; done < in > out",
    "[ a > b ]",
    # heredocs that run code
    "bash <<EOF\nrm -rf build\nEOF",
    "cat <<EOF\n$(rm -rf x)\nEOF",
    "sudo bash <<< 'rm -rf x'",
    # in-place editors
    "sed -i 's/a/b/' f",
    "sed -i.bak s/a/b/ f",
    "sed -ie s/a/b/ f",
    "sed --in-place=.orig s/a/b/ f",
    "sed -Ei s/a/b/ f",
    "perl -pi -e 's/a/b/' f",
    "perl -i.bak -pe 's/a/b/' f",
    "ruby -i -pe 'gsub(/a/, \"b\")' f",
    "tee out.txt",
    "echo x | sudo tee /etc/hosts",
    # links, permissions, sync
    "ln -sf a b",
    "ln -f a b",
    "ln --force a b",
    "ln -sfn target link",
    "chmod -R 755 dir",
    "chmod --recursive u+w dir",
    "chown -R bob dir",
    "chgrp -R staff dir",
    "rsync -a --delete src/ dst/",
    "rsync -av --delete-after a/ b/",
    "rsync -av src/ dst/",
    # find
    "find . -name '*.tmp' -delete",
    r"find . -exec rm {} \;",
    "find . -execdir rm {} +",
    r"find . -exec mv {} /tmp \;",
    r"find . -exec sh -c 'rm \"$1\"' _ {} \;",
    # archives
    "tar xzf a.tgz",
    "tar -xvf a.tar",
    "tar --extract -f a.tar",
    "tar -C out -xf a.tar",
    "unzip a.zip",
    "unzip -o a.zip -d out",
    "7z x a.7z",
    "gunzip a.gz",
    "bunzip2 a.bz2",
    "unxz a.xz",
    "gzip big.log",
    # git
    "git reset --hard",
    "git reset HEAD~1",
    "git clean -fdx",
    "git checkout -- file.py",
    "git checkout main",
    "git restore .",
    "git switch main",
    "git stash",
    "git stash pop",
    "git stash drop",
    "git rm file.py",
    "git mv a.py b.py",
    "git apply x.patch",
    "git am 0001.patch",
    "git pull",
    "git merge feature",
    "git rebase main",
    "git cherry-pick abc123",
    "git revert abc123",
    "git -C sub reset --hard",
    "git --no-pager checkout x",
    "git -c core.x=y clean -f",
    "git branch -D old",
    # package managers
    "npm install",
    "npm i lodash",
    "npm ci",
    "npm audit fix",
    "yarn",
    "yarn add react",
    "pnpm install",
    "pnpm add zod",
    "pip install requests",
    "pip install --user requests",
    "pip3 install -r requirements.txt",
    "python3.12 -m pip install x",
    "cargo add serde",
    "poetry add httpx",
    "poetry install",
    "uv add httpx",
    "uv sync",
    "uv pip install x",
    "go get example.com/x",
    "go mod tidy",
    "bundle install",
    "composer install",
    "composer require monolog/monolog",
    # formatters and downloads that rewrite files
    "black .",
    "ruff check --fix .",
    "ruff format .",
    "npx prettier --write .",
    "gofmt -w .",
    "cargo fmt",
    "curl -o page.html https://example.com",
    "curl -sSLo install.sh https://example.com",
    "wget -O data.csv https://example.com",
    "trap 'rm -f $tmp' EXIT",
]

NOT_DESTRUCTIVE = [
    "",
    "   ",
    "\n",
    "# rm -rf /",
    "ls # && rm -rf /",
    "ls -la",
    "cat README.md",
    "grep -r foo .",
    "rg foo src",
    "head -n 5 f",
    "tail -f app.log",
    "wc -l f",
    "pwd",
    "true",
    "cd dir",
    "export X=1",
    "X=1",
    "mkdir -p build",
    "touch newfile",
    # quoting: the dangerous text is data
    'echo "a > b"',
    "echo 'rm -rf /'",
    "grep rm file",
    "grep -r 'rm -rf' .",
    "echo rm",
    "printf '%s > %s' a b",
    'git commit -m "rm -rf everything"',
    "echo '$(rm x)'",
    # redirects that cannot clobber a file
    "echo x >> log",
    "cmd 2>&1",
    "cmd >&2",
    "echo x >& 2",
    "cmd > /dev/null",
    "cmd 2>/dev/null",
    "cmd &> /dev/null",
    "cmd >/dev/null 2>&1",
    "cmd 2>>err.log",
    "cat < in.txt",
    "sort <<< \"$x\"",
    "diff <(ls a) <(ls b)",
    '[[ $a > $b ]] && echo y',
    "echo $((3 > 2))",
    # heredoc bodies are data
    "cat <<EOF\nrm -rf /\nEOF",
    "cat <<'EOF' | grep x\n$(rm -rf /)\nEOF",
    # find, sed, tee, ln, chmod without their destructive options
    "find . -name '*.py'",
    "find . -type f -exec grep -l foo {} +",
    "sed -n p file",
    "sed s/a/b/ file",
    "sed -e 's/-i/x/' f",
    "perl -e 'print 1'",
    "perl -ne 'print if /die/' f",
    "tee -a log",
    "echo x | tee /dev/null",
    "echo x | tee",
    "ln -s a b",
    "chmod +x file",
    "chmod 644 f",
    "chown bob f",
    "dd if=/dev/sda bs=512 count=1",
    "rsync -avn a/ b/",
    "patch --dry-run -p1 < x.diff",
    # archives: listing, testing, creating
    "tar tf x.tar",
    "tar -tzf x.tgz",
    "tar czf out.tgz dir",
    "tar xOf a.tar file",
    "unzip -l a.zip",
    "gunzip -c a.gz",
    "zcat a.gz",
    "7z l a.7z",
    # git read-only forms
    "git status",
    "git log --oneline",
    "git diff",
    "git show HEAD",
    "git branch",
    "git branch -a",
    "git fetch",
    "git blame f",
    "git stash list",
    "git stash show -p",
    "git clean -n",
    "git clean -nd",
    "git apply --check x.patch",
    "git -c color.ui=always log",
    "git merge-base a b",
    "git add .",
    # running things whose effects are opaque
    "python script.py",
    "python -c 'import shutil'",
    "bash script.sh",
    "pytest -q",
    "make test",
    "make",
    "npm test",
    "npm run build",
    "yarn test",
    "uv run pytest",
    "poetry run pytest",
    "cargo build",
    "cargo test",
    "go test ./...",
    "pip list",
    "pip install --dry-run x",
    # check-only formatters and downloads to stdout
    "black --check .",
    "ruff check .",
    "prettier --check .",
    "gofmt -l .",
    "cargo fmt --check",
    "curl https://example.com",
    "curl -o - https://example.com",
    "wget -qO- https://example.com",
    # looking a command up is not running it
    "command -v rm",
    "which rm",
    "type rm",
    "man rm",
    "ssh host ls",
]


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive(command: str) -> None:
    destructive, reason = classify(command)
    assert destructive, command
    assert reason


@pytest.mark.parametrize("command", NOT_DESTRUCTIVE)
def test_not_destructive(command: str) -> None:
    assert classify(command) == (False, "")


def test_tables_are_large_and_disjoint() -> None:
    assert len(DESTRUCTIVE) >= 60
    assert len(NOT_DESTRUCTIVE) >= 50
    assert not set(DESTRUCTIVE) & set(NOT_DESTRUCTIVE)


@pytest.mark.parametrize(
    "command",
    ["echo \"unterminated", "echo 'x", "echo $(ls", "ls `date", "(ls", "echo >", "cat <<"],
)
def test_unparsable_is_treated_as_destructive(command: str) -> None:
    assert classify(command) == (True, PARSE_FAILURE)


def test_deeply_nested_input_does_not_crash() -> None:
    assert classify("$(" * 3000) == (True, PARSE_FAILURE)


@pytest.mark.parametrize(
    ("command", "culprit"),
    [
        ("sudo rm -rf /", "rm"),
        ("ls && /bin/rm -f x", "rm"),
        ("echo x > src/app.py", "> src/app.py"),
        ("pytest 2> err.log", "2> err.log"),
        ('echo x > "my notes.txt"', "my notes.txt"),
        ("sed -i s/a/b/ f", "sed -i"),
        ("git reset --hard", "git reset"),
        ("find . -exec rm {} +", "find -exec"),
        ("find . -delete", "-delete"),
        ("echo x | tee out.txt", "out.txt"),
        ("bash -c 'git clean -fdx'", "git clean"),
        ("npm install", "npm install"),
        ("tar xzf a.tgz", "tar"),
        ("dd if=a of=b.img", "b.img"),
    ],
)
def test_reason_names_the_culprit(command: str, culprit: str) -> None:
    destructive, reason = classify(command)
    assert destructive
    assert culprit in reason


def test_heredoc_redirect_is_the_culprit_not_the_body() -> None:
    destructive, reason = classify("cat <<EOF > notes.md\nrm -rf /\nEOF")
    assert destructive
    assert reason == "overwriting redirect > notes.md"


def test_first_culprit_wins() -> None:
    assert classify("ls; mv a b; rm c")[1] == "mv moves or overwrites files"


def test_command_after_heredoc_is_classified() -> None:
    assert classify("cat <<'EOF' > /dev/null\nhello\nEOF\nrm y") == (True, "rm deletes files")
