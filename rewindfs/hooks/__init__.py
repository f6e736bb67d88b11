"""Agent hooks: Claude Code, Codex, Gemini CLI, Cursor, OpenCode and Kilo call rewindfs before
their tools run (`rewind hook AGENT`, JSON payload on stdin), and `rewind hooks install`
writes the agents' configuration.

The hook runs once per tool call, so its start-up is the product's latency: ``entry`` imports
only the payload parsers and the classifier, and the store only when a checkpoint is due.
Nothing here is imported by this package's ``__init__``.
"""
