"""Settings: defaults < config.yaml `checkpoints:` < REWIND_* environment < flags."""

from __future__ import annotations

import json

import pytest

from rewindfs import config
from rewindfs.errors import InvalidInput

HERMES_DEFAULTS = {
    "enabled": False, "max_snapshots": 20, "max_total_size_mb": 500, "max_file_size_mb": 10,
    "auto_prune": True, "retention_days": 7, "delete_orphans": True, "min_interval_hours": 24,
}


def write_config(home, text):
    (home / "config.yaml").write_text(text)
    return home / "config.yaml"


def test_defaults(home):
    s = config.load(home, environ={})
    for key, value in HERMES_DEFAULTS.items():
        assert s.values[key] == value, key
        assert s.sources[key] == "default"
    assert s.max_files == 0   # no cap: a project of a million files is protected (issue 43)
    assert s.only_destructive is False   # the hooks' fail-safe gate (issue 47)
    assert s.extra_excludes == ()
    assert s.base == home / "checkpoints"
    assert s.mount_dir == home / "mnt"
    assert s.max_file_size_bytes == 10 * 1024 * 1024


def test_home_from_env(home):
    s = config.load()
    assert s.home == home


def test_config_file_section(home):
    path = write_config(home, """
model: some-llm          # other Hermes sections are ignored
checkpoints:
  enabled: true
  max_snapshots: 5
  max_file_size_mb: 0.5
  max_files: 1234
  extra_excludes: ["*.sqlite", "tmp/"]
  mountpoint: ~/snapshots
  unknown_future_key: 1
""")
    s = config.load(home, environ={})
    assert s.enabled is True
    assert s.max_snapshots == 5
    assert s.max_file_size_bytes == 512 * 1024
    assert s.max_files == 1234
    assert s.extra_excludes == ("*.sqlite", "tmp/")
    assert str(s.mount_dir).endswith("snapshots") and "~" not in str(s.mount_dir)
    assert s.sources["max_files"] == str(path)
    assert s.sources["retention_days"] == "default"


@pytest.mark.parametrize("text", ["", "checkpoints:\n", "other: 1\n", "# only a comment\n"])
def test_empty_or_missing_section(home, text):
    write_config(home, text)
    assert config.load(home, environ={}).max_files == 0


def test_env_overrides_file_and_flags_override_env(home):
    write_config(home, "checkpoints:\n  max_files: 100\n  enabled: false\n")
    s = config.load(home, environ={"REWIND_MAX_FILES": "200", "REWIND_ENABLED": "yes"})
    assert s.max_files == 200 and s.sources["max_files"] == "$REWIND_MAX_FILES"
    assert s.enabled is True
    s = config.load(home, flags={"max_files": 300, "enabled": None},
                    environ={"REWIND_MAX_FILES": "200"})
    assert s.max_files == 300 and s.sources["max_files"] == "command line"
    assert s.enabled is False  # a flag left unset (None) does not override
    s = config.load(home, environ={"REWIND_EXTRA_EXCLUDES": "a/, *.b ,"})
    assert s.extra_excludes == ("a/", "*.b")


def test_env_read_from_process_environment(home, monkeypatch):
    write_config(home, "checkpoints:\n  max_files: 100\n")
    monkeypatch.setenv("REWIND_MAX_FILES", "77")
    assert config.load(home).max_files == 77


@pytest.mark.parametrize("key,value", [
    ("max_files", '"lots"'), ("max_files", "-1"), ("max_files", "true"), ("enabled", "maybe"),
    ("only_destructive", "sometimes"),
    ("max_file_size_mb", "-1"), ("max_file_size_mb", "big"), ("extra_excludes", "{a: 1}"),
    ("max_snapshots", "1.5"), ("mountpoint", "[1, 2]"),
])
def test_bad_file_value_names_key_and_file(home, key, value):
    path = write_config(home, f"checkpoints:\n  {key}: {value}\n")
    with pytest.raises(InvalidInput) as info:
        config.load(home, environ={})
    message = str(info.value)
    assert key in message and str(path) in message
    assert "\n" not in message


def test_bad_env_value_names_variable(home):
    with pytest.raises(InvalidInput) as info:
        config.load(home, environ={"REWIND_MAX_FILES": "many"})
    assert "max_files" in str(info.value) and "$REWIND_MAX_FILES" in str(info.value)


def test_bad_flag_value(home):
    with pytest.raises(InvalidInput) as info:
        config.load(home, flags={"max_files": "-3"}, environ={})
    assert "max_files" in str(info.value)


def test_invalid_yaml_and_wrong_shape(home):
    path = write_config(home, "checkpoints: [unclosed\n")
    with pytest.raises(InvalidInput) as info:
        config.load(home, environ={})
    assert str(path) in str(info.value)
    write_config(home, "checkpoints: 5\n")
    with pytest.raises(InvalidInput) as info:
        config.load(home, environ={})
    assert "checkpoints" in str(info.value)


def test_cli_honours_file_then_env(run_rewind, home, project):
    """End to end: config.yaml sets max_files, REWIND_MAX_FILES overrides it."""
    write_config(home, "checkpoints:\n  max_files: 2\n")
    refused = run_rewind("checkpoint", project)
    assert refused.returncode == 1 and "more than 2 files" in refused.stderr
    allowed = run_rewind("checkpoint", project, "--json", env={"REWIND_MAX_FILES": "100"})
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["taken"] is True


def test_cli_bad_config_is_one_line_error(run_rewind, home, project):
    path = write_config(home, "checkpoints:\n  max_file_size_mb: huge\n")
    proc = run_rewind("checkpoint", project)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert "max_file_size_mb" in lines[0] and str(path) in lines[0]


def test_cli_extra_excludes_from_config(run_rewind, home, project, files_of):
    write_config(home, "checkpoints:\n  extra_excludes: ['docs/']\n")
    proc = run_rewind("checkpoint", project, "--json", check=True)
    files = files_of(json.loads(proc.stdout)["hash"])
    assert b"docs/guide.txt" not in files and b"README.md" in files
