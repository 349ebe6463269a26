"""The recorded Codex rollouts the scanner tests feed: their ids and the shift to "just now"."""

from __future__ import annotations

import time

from support.scanner_kit import IDS, fixture_lines


def test_fixture_ids_match_the_recorded_rollouts() -> None:
    """The ids the scanner tests expect are the ones in the recorded session_meta and terminal records."""
    import json

    for name, (thread_id, turn_id) in IDS.items():
        lines = [json.loads(line) for line in fixture_lines(name)]
        assert lines[0]["payload"]["id"] == thread_id
        assert lines[-1]["payload"]["turn_id"] == turn_id
        assert 0 <= time.time() - lines[-1]["payload"]["completed_at"] < 120  # shifted to just now
        assert len(lines) == len(fixture_lines(name, shift_to_now=False))
