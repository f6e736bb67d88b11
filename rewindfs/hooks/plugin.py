"""The plugin file `rewind hooks install opencode|kilo` writes into the agent's plugin folder.

OpenCode and Kilo load every JS file there at start-up. On `tool.execute.before` the plugin
hands the tool call to rewindfs's hook (stdin JSON, like the other agents' hooks) and waits
for it; `chat.message` gives it the user message that names the current turn. It never
throws and never changes the tool's arguments.
"""

from __future__ import annotations

import json

from rewindfs.hooks.agents import HOOK_TIMEOUT_S, MARK, hook_command

HEADER = "// rewindfs agent hook"


def source(agent: str, python: str) -> str:
    argv = [python, "-m", MARK, agent]
    return f"""{HEADER} ({agent}): checkpoints before destructive tool calls.
// Written by `rewind hooks install {agent}`; `rewind hooks uninstall {agent}` removes it.
// Command: {hook_command(agent, python)}
import {{ spawnSync }} from "node:child_process";

const ARGV = {json.dumps(argv)};

export const Rewindfs = async ({{ directory }}) => {{
  const turns = {{}};
  return {{
    "chat.message": async (input, output) => {{
      try {{
        const id = output && output.message && output.message.id;
        if (input && input.sessionID) turns[input.sessionID] = id || String(Date.now());
      }} catch (e) {{}}
    }},
    "tool.execute.before": async (input, output) => {{
      try {{
        const args = (output && output.args) || {{}};
        const payload = JSON.stringify({{
          tool: input.tool, sessionID: input.sessionID, callID: input.callID, args,
          directory: args.workdir || directory, turn: turns[input.sessionID] || "",
        }});
        spawnSync(ARGV[0], ARGV.slice(1), {{
          input: payload, stdio: ["pipe", "ignore", "ignore"], timeout: {HOOK_TIMEOUT_S * 1000},
        }});
      }} catch (e) {{}}
    }},
  }};
}};
"""
