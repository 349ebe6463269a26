"""Small records for the state-directory protocol tests."""

from __future__ import annotations

import json
import os

from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir


def numbered_candidate(n: int, fill: int = 10) -> dict[str, object]:
    """A Codex candidate of thread ``thread-<n>`` carrying ``fill`` bytes of padding."""
    key = event_key("codex", f"thread-{n}", "turn-1")
    return {**new_candidate(key=key, provider="codex", source="test", thread_id=f"thread-{n}", fill="x" * fill, n=fill)}


def assert_all_records_whole(state: StateDir) -> int:
    """Every record in ``pending/`` and ``outbox/`` parses whole under its own name; how many were checked."""
    checked = 0
    for folder in ("pending", "outbox"):
        for name in os.listdir(state.root / folder):
            data = (state.root / folder / name).read_bytes()
            rec = json.loads(data)  # a partial record would fail to parse here
            assert len(rec["fill"]) == rec["n"], "mixed record visible"
            assert name == f"{rec['key']}.json"
            checked += 1
    return checked
