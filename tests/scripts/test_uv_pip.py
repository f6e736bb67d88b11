"""scripts/uv_pip.py gives uv what pip's configuration says, so that setup's fast path
(uv, from its cache) installs what pip would have, caps included.

pip's settings come from the environment here (PIP_CONFIG_FILE=/dev/null keeps the
machine's own files out); the packages are two tiny wheels in a local find-links folder,
so nothing leaves the machine.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("uv_pip", ROOT / "scripts" / "uv_pip.py")
assert spec and spec.loader
uv_pip = importlib.util.module_from_spec(spec)
spec.loader.exec_module(uv_pip)


def _wheel(folder: Path, name: str, version: str) -> None:
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{name}.py", f"VERSION = {version!r}\n")
        whl.writestr(f"{info}/METADATA",
                     f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                     "Root-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")


@pytest.fixture
def pip_env(tmp_path: Path, monkeypatch) -> Path:
    """pip configured with no index, a local folder of wheels and a constraints file."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0"):
        _wheel(wheels, "rwtoy", version)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("rwtoy<2\n")
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_CONSTRAINT", str(constraints))
    return constraints


def test_pips_constraint_reaches_uv(pip_env: Path) -> None:
    args, env = uv_pip.index_options(uv_pip.pip_settings())
    assert ["--constraint", str(pip_env)] == args[args.index("--constraint"):][:2], args
    assert "--no-index" in args and env == {}


def test_uv_resolves_under_pips_constraint(pip_env: Path, tmp_path: Path) -> None:
    uv = subprocess.run([str(ROOT / "scripts" / "get_uv"), "--cached"], capture_output=True,
                        text=True).stdout.strip()
    if not uv:
        pytest.skip("uv is not in the cache (scripts/setup fetches it; without it setup "
                    "installs with pip and this mapping is unused)")
    args, env = uv_pip.index_options(uv_pip.pip_settings())
    wanted = tmp_path / "wanted.txt"
    wanted.write_text("rwtoy\n")

    def compile_(options: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([uv, "pip", "compile", "--no-config", "--offline", "-q",
                               *options, str(wanted)], capture_output=True, text=True,
                              env={**os.environ, **env}, cwd=tmp_path)

    done = compile_(args)
    assert done.returncode == 0, done.stderr
    assert "rwtoy==1.0" in done.stdout, done.stdout
    # Without the cap uv would have taken 2.0: the constraint is what chose 1.0.
    done = compile_([a for a in args if a not in ("--constraint", str(pip_env))])
    assert "rwtoy==2.0" in done.stdout, done.stdout + done.stderr
