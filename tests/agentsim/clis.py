"""Run the pinned agent CLIs (scripts/install_agents) offline against a ModelServer.

Each runner gives the agent an isolated home (its config dirs inside), the model server as
its provider and as its HTTP(S) proxy (any other host is refused, so nothing leaves the
machine), the project as its working directory *and* ``$PWD`` (OpenCode and Kilo take the
project from ``$PWD``), and a timeout. It returns the finished process; the test reads the
server's records and the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agentsim.server import ModelServer

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "scripts" / "agent_pins"
BINARIES = {"claude-code": "claude", "codex": "codex", "gemini": "gemini",
            "opencode": "opencode", "kilo": "kilo"}


def install_dir() -> Path:
    """Where scripts/install_agents put the CLIs for the current pins."""
    root = os.environ.get("REWIND_AGENTS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewindfs", "agents")
    return Path(root) / hashlib.sha256(PINS.read_bytes()).hexdigest()[:16]


def binary(agent: str) -> Path | None:
    """The agent's CLI, or None when it is not installed (say why with `missing`)."""
    path = install_dir() / "node_modules" / ".bin" / BINARIES[agent]
    return path if (install_dir() / ".complete").exists() and path.exists() else None


def missing(agent: str) -> str:
    return (f"{BINARIES[agent]} not installed in {install_dir()} (scripts/setup installs "
            "it unless REWIND_SKIP_AGENTS=1; or run scripts/install_agents)")


@dataclass
class Agent:
    """One agent CLI set up in an isolated home for one project."""

    name: str
    home: Path
    project: Path
    server: ModelServer
    extra_env: dict[str, str] | None = None
    bypass_hook_trust: bool = True   # Codex: run hooks nobody trusted in its /hooks
    extra_args: tuple[str, ...] = ()   # after the agent's own (Claude Code: --continue)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        SETUP[self.name](self)

    def env(self) -> dict[str, str]:
        exe = binary(self.name)
        node = shutil.which("node") or "/usr/bin/node"
        path = os.pathsep.join(dict.fromkeys([
            str(exe.parent) if exe else "", os.path.dirname(node),
            os.environ.get("PATH", "/usr/bin:/bin")]))
        env = {
            "PATH": path, "HOME": str(self.home), "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1",
            "PWD": str(self.project), "SHELL": "/bin/bash",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            # The server is every agent's proxy: a call to any other host is refused there.
            "HTTPS_PROXY": self.server.url, "HTTP_PROXY": self.server.url,
            "https_proxy": self.server.url, "http_proxy": self.server.url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        }
        for name in ("HERMES_HOME", "REWIND_HOOK_HELPER", "REWIND_HOOK_HELPER_IDLE"):
            if name in os.environ:
                env[name] = os.environ[name]
        env.update(ENV[self.name](self))
        env.update(self.extra_env or {})
        return env

    def run(self, prompt: str, timeout: float = 180, *, resume: bool = False
            ) -> subprocess.CompletedProcess[str]:
        """`resume`: a next turn of the last session (OpenCode's and Kilo's `-c`)."""
        exe = binary(self.name)
        assert exe, missing(self.name)
        args = ARGS[self.name](self, prompt)
        if resume:
            assert self.name in ("opencode", "kilo"), f"{self.name}: no resume here"
            args.append("-c")
        return subprocess.run(
            [str(exe), *args, *self.extra_args], cwd=self.project, env=self.env(),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


# -- Claude Code: Anthropic Messages at ANTHROPIC_BASE_URL ----------------------------------
def _claude_setup(agent: Agent) -> None:
    (agent.home / ".claude").mkdir(exist_ok=True)


def _claude_env(agent: Agent) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": agent.server.url, "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}


def _claude_args(agent: Agent, prompt: str) -> list[str]:
    # As root Claude Code refuses --dangerously-skip-permissions; allow the tools instead.
    return ["-p", prompt, "--allowedTools", "Bash,Write,Edit", "--model", "claude-sonnet-4-5"]


# -- Codex: a custom Responses-API provider in $CODEX_HOME/config.toml ----------------------
def _codex_setup(agent: Agent) -> None:
    codex = agent.home / ".codex"
    codex.mkdir(exist_ok=True)
    (codex / "config.toml").write_text(
        'model = "gpt-5.1-codex"\n'
        'model_provider = "sim"\n'
        "\n[model_providers.sim]\n"
        'name = "scripted"\n'
        f'base_url = "{agent.server.url}/v1"\n'
        'wire_api = "responses"\n'
        # Plugins would have every start sync a marketplace from GitHub (`git ls-remote`,
        # a reach off the machine that the proxy refuses; it does not delay hooks/list).
        "\n[features]\nplugins = false\n"
        # Analytics would send each session's metrics to ab.chatgpt.com (refused by the
        # proxy, but a reach off the machine all the same).
        "\n[analytics]\nenabled = false\n")


def _codex_env(agent: Agent) -> dict[str, str]:
    return {"CODEX_HOME": str(agent.home / ".codex")}


def _codex_args(agent: Agent, prompt: str) -> list[str]:
    return ["exec", prompt, "--dangerously-bypass-approvals-and-sandbox",
            *(["--dangerously-bypass-hook-trust"] if agent.bypass_hook_trust else []),
            "--skip-git-repo-check"]


# -- Gemini CLI: the Gemini API at GOOGLE_GEMINI_BASE_URL -----------------------------------
def _gemini_setup(agent: Agent) -> None:
    gemini = agent.home / ".gemini"
    gemini.mkdir(exist_ok=True)
    settings = gemini / "settings.json"
    if not settings.exists():
        settings.write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }, indent=2))


def _gemini_env(agent: Agent) -> dict[str, str]:
    return {"GOOGLE_GEMINI_BASE_URL": agent.server.url, "GEMINI_API_KEY": "scripted",
            "GEMINI_CLI_TRUST_WORKSPACE": "true"}


def _gemini_args(agent: Agent, prompt: str) -> list[str]:
    # An explicit model skips Gemini CLI's model-routing call.
    return ["-p", prompt, "--yolo", "-m", "gemini-2.5-flash"]


# -- OpenCode and Kilo: an @ai-sdk/openai-compatible provider in their config ---------------
def _opencode_config(agent: Agent) -> dict:
    return {
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "scripted",
            "options": {"baseURL": f"{agent.server.url}/v1", "apiKey": "scripted"},
            "models": {"m1": {"name": "m1"}}}},
        "model": "fake/m1", "small_model": "fake/m1",
        "permission": {"bash": "allow", "edit": "allow"},
        "autoupdate": False, "share": "disabled",
    }


def _opencode_setup(agent: Agent) -> None:
    # An empty models.dev catalogue (OPENCODE_/KILO_MODELS_PATH): the scripted provider is
    # all in the config. Without it each start reads the catalogue bundled in the binary (a
    # 4 MB object) and builds every provider's models: ~1.3 s of an OpenCode run's ~4.7 s
    # of CPU, ~0.7 s of Kilo's ~9.7 s, for providers no test uses. Outside the config dirs.
    (agent.home / MODELS_FILE).write_text("{}\n")
    folder = agent.home / ".config" / CONFIG_DIR[agent.name]
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / CONFIG_FILE[agent.name]
    if not config.exists():
        config.write_text(json.dumps(_opencode_config(agent), indent=2))
        return
    # A later session of the same home (a resumed one) talks to its own server; the rest
    # of the file stays as the agent left it.
    data = json.loads(config.read_text())
    data["provider"]["fake"]["options"]["baseURL"] = f"{agent.server.url}/v1"
    config.write_text(json.dumps(data, indent=2))


def _opencode_env(agent: Agent) -> dict[str, str]:
    flags = ("DISABLE_AUTOUPDATE", "DISABLE_MODELS_FETCH", "DISABLE_LSP_DOWNLOAD",
             "DISABLE_DEFAULT_PLUGINS", "DISABLE_SHARE")
    prefix = "KILO_" if agent.name == "kilo" else "OPENCODE_"
    env = {prefix + flag: "1" for flag in flags}
    env[prefix + "MODELS_PATH"] = str(agent.home / MODELS_FILE)
    # Each run fetches @opencode-ai/plugin from npm (for the config dir's plugins), and
    # Kilo its gateway's model list from api.kilo.ai: both ask the scripted server instead,
    # whose harmless answer they get past as they get past a refused proxy offline.
    env["npm_config_registry"] = agent.server.url
    if agent.name == "kilo":
        env.update(KILO_API_URL=agent.server.url, KILO_TELEMETRY_LEVEL="off")  # PostHog
    return env


def _opencode_args(agent: Agent, prompt: str) -> list[str]:
    return ["run", prompt, "-m", "fake/m1"]


MODELS_FILE = "models-catalogue.json"
CONFIG_DIR = {"opencode": "opencode", "kilo": "kilo"}
CONFIG_FILE = {"opencode": "opencode.json", "kilo": "kilo.json"}

SETUP = {"claude-code": _claude_setup, "codex": _codex_setup, "gemini": _gemini_setup,
         "opencode": _opencode_setup, "kilo": _opencode_setup}
ENV = {"claude-code": _claude_env, "codex": _codex_env, "gemini": _gemini_env,
       "opencode": _opencode_env, "kilo": _opencode_env}
ARGS = {"claude-code": _claude_args, "codex": _codex_args, "gemini": _gemini_args,
        "opencode": _opencode_args, "kilo": _opencode_args}
