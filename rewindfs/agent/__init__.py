"""Integration with agent harnesses: checkpoint manager and command classification."""
