"""What the scripted model says, turn by turn, independent of any provider's wire format.

A test lists the moves of one conversation: tool calls (``Shell``, ``Write``, ``Tool``) and a final
``Say``. The model answers the n-th request of the conversation with the n-th move, where n is
the number of tool results the agent has sent back so far, so a retried request gets the same
answer and the agent's own extra calls (titles, summaries) never shift the script.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Shell:
    """Run one shell command with the agent's shell tool."""

    command: str


@dataclass(frozen=True)
class Write:
    """Write a whole file with the agent's file-writing tool (path relative to the project)."""

    path: str
    content: str


@dataclass(frozen=True)
class Tool:
    """Call any tool the agent offers by name, with these arguments (an MCP server's:
    `mcp__rewind__restore`). Anthropic Messages (Claude Code) only."""

    name: str
    input: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Say:
    """The final answer: plain text, no tool call; the agent's turn ends here."""

    text: str = "Done."


Move = Shell | Write | Tool | Say


@dataclass
class Script:
    moves: list[Move]
    project: str = ""   # absolute project directory, for tools that want absolute paths
    calls: int = field(default=0)
    # Called with the request's count of tool results before it is answered, on the
    # server's thread: a test that blocks there holds the agent until it lets go (two
    # sessions' tool calls interleaved in an order the test chooses).
    gate: Callable[[int], None] | None = None

    def move(self, tool_results: int, finished_turns: int = 0) -> Move:
        """The move that answers a request which carries `tool_results` tool results, in a
        conversation whose first `finished_turns` turns are over. A ``Say`` in the middle
        of the moves ends a turn: the next prompt (``-c``, continuing the session) goes on
        with the moves after it."""
        if self.gate is not None:
            self.gate(tool_results + finished_turns)
        if any(isinstance(m, Say) for m in self.moves[:-1]):  # turns of one session
            at = tool_results + finished_turns
            return self.moves[at] if at < len(self.moves) else Say()
        tools = [m for m in self.moves if not isinstance(m, Say)]
        if tool_results < len(tools):
            return tools[tool_results]
        final = [m for m in self.moves if isinstance(m, Say)]
        return final[0] if final else Say()

    def abspath(self, path: str) -> str:
        return f"{self.project.rstrip('/')}/{path}" if self.project else path
