"""The plugin file `rewind hooks install opencode|kilo` writes into the agent's plugin folder.

OpenCode and Kilo load every JS file there at start-up. On `tool.execute.before` the plugin
hands the tool call to rewindfs's hook (stdin JSON, like the other agents' hooks, the same
isolated command: hooks.agents.hook_argv) and waits for it without blocking the agent's
event loop (an asynchronous spawn awaited, killed past the agents' hook timeout); on
`tool.execute.after` it hands over the same call again, with phase "after" (the arguments,
directory and turn as the before saw them, kept by call id until then); `chat.message`
gives it the user message that names the current turn. It never throws and never changes
the tool's arguments.

What the hook leaves unprotected (its answer's `systemMessage`, hooks.notice) is shown to
the user twice over: as a warning toast in the TUI (not awaited: headless, `opencode run`
never answers it), and at the head of that tool call's output (`tool.execute.after`),
which the agent prints and its model reads, so the agent's own answer can say it.
"""

from __future__ import annotations

import json

from rewindfs.hooks.agents import HOOK_TIMEOUT_S, hook_argv, hook_command

HEADER = "// rewindfs agent hook"


def source(agent: str, python: str) -> str:
    argv = hook_argv(agent, python)
    return f"""{HEADER} ({agent}): checkpoints before destructive tool calls.
// Written by `rewind hooks install {agent}`; `rewind hooks uninstall {agent}` removes it.
// Command: {hook_command(agent, python)}
import {{ spawn }} from "node:child_process";

const ARGV = {json.dumps(argv)};
const TIMEOUT_MS = {HOOK_TIMEOUT_S * 1000};

// The hook, awaited (the tool runs after its checkpoint) while the event loop runs on;
// resolves to what it says the user must hear ("" for nothing).
function runHook(payload) {{
  return new Promise((resolve) => {{
    let child;
    try {{
      child = spawn(ARGV[0], ARGV.slice(1), {{ stdio: ["pipe", "pipe", "ignore"] }});
    }} catch (e) {{
      resolve("");
      return;
    }}
    let out = "";
    const timer = setTimeout(() => {{
      try {{ child.kill("SIGKILL"); }} catch (e) {{}}
      resolve("");
    }}, TIMEOUT_MS);
    const done = () => {{
      clearTimeout(timer);
      let said = "";
      try {{ said = String(JSON.parse(out).systemMessage || ""); }} catch (e) {{}}
      resolve(said);
    }};
    child.on("error", done);
    child.on("close", done);
    child.stdout.on("data", (chunk) => {{ if (out.length < 65536) out += chunk; }});
    child.stdin.on("error", () => {{}});
    child.stdin.end(payload);
  }});
}}

export const Rewindfs = async ({{ directory, client }}) => {{
  const turns = {{}};
  const notices = {{}};
  const calls = new Map();   // callID -> the payload its before sent (for its after)
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
        const call = {{
          tool: input.tool, sessionID: input.sessionID, callID: input.callID, args,
          directory: args.workdir || directory, turn: turns[input.sessionID] || "",
        }};
        if (input.callID) {{
          if (calls.size >= 1024) calls.delete(calls.keys().next().value);
          calls.set(input.callID, call);
        }}
        const said = await runHook(JSON.stringify(call));
        if (said) {{
          notices[input.callID] = said;
          try {{
            Promise.resolve(client && client.tui && client.tui.showToast({{
              body: {{ title: "rewind", message: said, variant: "warning" }},
            }})).catch(() => {{}});
          }} catch (e) {{}}
        }}
      }} catch (e) {{}}
    }},
    "tool.execute.after": async (input, output) => {{
      try {{
        const said = notices[input.callID];
        if (said && output) {{
          delete notices[input.callID];
          output.output = said + "\\n" + (typeof output.output === "string" ? output.output : "");
        }}
        const call = (input && input.callID && calls.get(input.callID)) || {{
          tool: input.tool, sessionID: input.sessionID, callID: input.callID,
          args: (input && input.args) || {{}}, directory,
          turn: turns[input.sessionID] || "",
        }};
        if (input && input.callID) calls.delete(input.callID);
        await runHook(JSON.stringify({{ ...call, phase: "after" }}));
      }} catch (e) {{}}
    }},
  }};
}};
"""
