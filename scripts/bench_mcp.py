"""`rewind mcp`: how long an agent waits for the server to start (spawn to the initialize
answer), and for each tool call in a warm server, against the same work done by a
`rewind` process (list, cat, diff, restore of one file) in the same run.

    scripts/bench_mcp [--repeats N] [--files N]

Prints min and median of each, and the ratio of the medians (CLI process / MCP call).
Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REWIND = str(Path(sys.executable).parent / "rewind")


class Mcp:
    def __init__(self, cwd: Path, env: dict[str, str], *args: str):
        self.proc = subprocess.Popen([REWIND, "mcp", *args], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.ids = 0

    def request(self, method: str, params: dict) -> dict:
        self.ids += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.ids:
                return message

    def initialize(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.proc.stdin.flush()

    def call(self, name: str, **arguments) -> str:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        assert not result.get("isError"), result
        return result["content"][0]["text"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def report(name: str, cli: list[float], mcp: list[float]) -> None:
    ratio = statistics.median(cli) / statistics.median(mcp)
    print(f"| {name} | {min(cli) * 1000:.0f} / {statistics.median(cli) * 1000:.0f} ms "
          f"| {min(mcp) * 1000:.1f} / {statistics.median(mcp) * 1000:.1f} ms | {ratio:.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        env = {**os.environ, "HERMES_HOME": str(tmp / "home"), "HOME": str(tmp / "user")}
        (tmp / "user").mkdir()
        project = tmp / "proj"
        for i in range(args.files):
            path = project / f"d{i % 40}" / f"f{i}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"value = {i}\n" * 20)
        (project / "package.json").write_text("{}\n")

        def rewind(*argv: str) -> None:
            subprocess.run([REWIND, *argv], cwd=project, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        rewind("checkpoint", "-m", "base")
        victim = project / "d1" / "f1.py"
        victim.unlink()
        rewind("checkpoint", "-m", "after rm")
        print(f"load average {os.getloadavg()}; {args.files} files; {args.repeats} repeats; "
              "min / median\n")
        print("| what | `rewind` process | `rewind mcp` | ratio |\n|---|---|---|---|")

        def start() -> None:
            server = Mcp(project, env)
            server.initialize()
            server.close()

        starts = [timed(start) for _ in range(args.repeats)]
        lists = [timed(lambda: rewind("list")) for _ in range(args.repeats)]
        report("start (spawn to initialize answered) vs a `rewind list` process", lists, starts)
        server = Mcp(project, env, "--allow-restore")
        server.initialize()
        pairs = {
            "list": (lambda: rewind("list"), lambda: server.call("list_checkpoints")),
            "cat / read_file": (lambda: rewind("cat", "2", "d1/f1.py"),
                                lambda: server.call("read_file", ref="2", path="d1/f1.py")),
            "diff 2 (working tree)": (lambda: rewind("diff", "2", "--stat"),
                                      lambda: server.call("diff", ref="2")),
            "restore 2 d1/f1.py, then undo": (
                lambda: (rewind("restore", "2", "d1/f1.py", "--yes"), rewind("undo")),
                lambda: (server.call("restore", ref="2", paths=["d1/f1.py"]),
                         server.call("undo"))),
        }
        for name, (cli, mcp) in pairs.items():
            cli_times, mcp_times = [], []
            for i in range(args.repeats):  # alternating who goes first
                for fn, out in ((cli, cli_times), (mcp, mcp_times))[:: 1 if i % 2 else -1]:
                    out.append(timed(fn))
            report(name, cli_times, mcp_times)
        server.close()
        print(f"\nload average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
