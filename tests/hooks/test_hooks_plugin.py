"""The OpenCode/Kilo plugin runs the hook without freezing the agent's event loop (issue 33,
case 10): node loads the plugin file `rewind hooks install` writes, a timer keeps
ticking while `tool.execute.before` waits for the hook, and the hook (a stand-in here,
which ends only when a file appears) is released by that very timer: something only an
event loop that kept running can do. The tool call still waits for the hook's end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rewindfs.hooks import plugin

HARNESS = """
import { pathToFileURL } from "node:url";
import fs from "node:fs";
const [file, out] = process.argv.slice(2);
const mod = await import(pathToFileURL(file).href);
const hooks = await mod.Rewindfs({ directory: "/proj" });
let ticks = 0;
const timer = setInterval(() => {
  ticks += 1;
  if (ticks === 3) fs.writeFileSync(out + "/release", "");
}, 20);
await hooks["tool.execute.before"](
  { tool: "bash", sessionID: "ses_1", callID: "call_1" },
  { args: { command: "rm -rf build" } });
clearInterval(timer);
console.log(JSON.stringify({ ticks, hookDone: fs.existsSync(out + "/done") }));
"""

# Stands in for the hook: keeps its payload, then waits (30 s at most) for the release.
FAKE_HOOK = """#!/bin/sh
cat > "$OUT/payload.json"
n=0
while [ ! -e "$OUT/release" ]; do
  n=$((n + 1)); [ $n -gt 600 ] && exit 1
  sleep 0.05
done
: > "$OUT/done"
"""


def test_the_hook_runs_while_the_event_loop_runs_on(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (scripts/setup installs it with the agent CLIs)")
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_HOOK)
    fake.chmod(0o755)
    source = tmp_path / "rewindfs.mjs"
    source.write_text(plugin.source("opencode", str(fake)))
    (tmp_path / "harness.mjs").write_text(HARNESS)
    done = subprocess.run([node, str(tmp_path / "harness.mjs"), str(source), str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # The timer ran while the hook waited, and released it: the loop was never frozen.
    assert seen == {"ticks": seen["ticks"], "hookDone": True} and seen["ticks"] >= 3, seen
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload == {"tool": "bash", "sessionID": "ses_1", "callID": "call_1",
                       "args": {"command": "rm -rf build"}, "directory": "/proj", "turn": ""}
