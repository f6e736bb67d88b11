"""A scripted model server and runners for the real agent CLIs, offline.

``ModelServer`` plays every provider the agents speak (Anthropic Messages, OpenAI Responses,
Gemini, OpenAI chat completions) on 127.0.0.1; ``clis`` starts each pinned CLI from the npm
cache (scripts/install_agents) against it with an isolated home.
"""

from agentsim.script import Say, Shell, Tool, Write
from agentsim.server import ModelServer

__all__ = ["ModelServer", "Say", "Shell", "Tool", "Write"]
