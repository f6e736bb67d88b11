"""The step log's appends go through the one record writer (private.append_record): an
event written after a line a crash tore is never glued onto it."""

from __future__ import annotations

import json

from rewindfs.store.history.metadata.steplog import StepLog, _read


def test_an_event_after_a_torn_line_is_its_own_line(tmp_path):
    path = tmp_path / "steps.jsonl"
    path.write_text(json.dumps({"event": "begin", "step": "s1"}) + "\n" + '{"event": "en')
    StepLog(path).append({"event": "end", "step": "s1"})
    assert [e["event"] for e in _read(path)] == ["begin", "end"]
    assert path.read_text().endswith('{"event": "end", "step": "s1"}\n')
