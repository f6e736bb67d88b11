"""An HTTP answer as the scripted server sends it: JSON or a whole server-sent event stream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(data).encode(), "application/json")

    @classmethod
    def sse(cls, events: list[tuple[str | None, Any]]) -> Reply:
        """Server-sent events; the whole stream is known up front, so it is sent at once."""
        out = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
        return cls(200, "".join(out).encode(), "text/event-stream")
