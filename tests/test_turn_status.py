"""The seed-001 turn-status contract: one truth table, run against every provider adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.bounded_read import TailWindow, read_tail, reverse_lines
from donebell.workers.agents.turn_status import TAIL_BYTES, UNKNOWN, TurnStatus, status_of_lines, turn_status

TABLE = Path(__file__).parent / "fixtures" / "turn_status_truth_table.json"
CASES: list[dict[str, Any]] = json.loads(TABLE.read_text(encoding="utf-8"))["cases"]
RUNS = [
    (case["name"], provider, case[provider]) for case in CASES for provider in ("codex", "claude") if provider in case
]


def _lines(window: TailWindow) -> tuple[list[bytes], bool]:
    return window.complete_lines(), window.partial


def _raw(lines: list[Any]) -> list[bytes]:
    return [(line if isinstance(line, str) else json.dumps(line)).encode("utf-8") for line in lines]


def test_truth_table_covers_the_seed_failure_fixtures() -> None:
    """The table holds the seed's four failure traces and runs both adapters."""
    names = {case["name"] for case in CASES}
    assert {
        "old-completion-then-new-user-event",
        "sidechain-completion-ignored",
        "api-error-envelope-not-done",
    } <= names
    assert any(name.startswith("old-codex-completion-name") for name in names) and "completion-is-done" in names
    assert {provider for _, provider, _ in RUNS} == {"codex", "claude"}


@pytest.mark.parametrize(("name", "provider", "trace"), RUNS, ids=[f"{p}:{n}" for n, p, _ in RUNS])
def test_adapter_matches_truth_table(name: str, provider: str, trace: dict[str, Any], tmp_path: Path) -> None:
    """Each adapter gives the table's (is_done, key, event), from lines and from a file's bounded tail alike."""
    raw = _raw(trace["lines"])
    expect = trace["expect"]
    got = status_of_lines(reversed(raw), provider)
    assert (got.is_done, got.key, got.event) == (expect["is_done"], expect["key"], expect["event"])
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in raw))
    from_file = turn_status(path, provider)
    assert from_file == got
    # activity_at is the record's own time; envelopes without a timestamp (notify, app-server) have none.
    assert (from_file.activity_at is not None) == (got.key is not None and expect.get("timed", True))


def test_window_inside_a_multibyte_character_never_corrupts_a_line(tmp_path: Path) -> None:
    """A tail window starting inside a UTF-8 sequence is aligned and its cut first line dropped."""
    done = {"type": "assistant", "uuid": "u-done", "message": {"stop_reason": "end_turn", "content": "ok"}}
    path = tmp_path / "t.jsonl"
    first = json.dumps({"type": "user", "uuid": "u1", "message": {"content": "é" * 50}}, ensure_ascii=False).encode()
    path.write_bytes(first + b"\n" + json.dumps(done).encode() + b"\n")
    size = path.stat().st_size
    for cut in range(1, 60):
        lines, partial = _lines(read_tail(path, size - cut))
        assert not partial and [json.loads(x)["uuid"] for x in lines] == ["u-done"]
    assert turn_status(path, "claude", max_bytes=size - 7).key == "u-done"


def test_partial_trailing_line_is_left_out(tmp_path: Path) -> None:
    """A record still being written (no newline yet) is neither parsed nor counted."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b'{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1"}}\n{"type":"event_msg","payload":{"type":"task_sta'
    )
    lines, partial = _lines(read_tail(path, TAIL_BYTES))
    assert partial and len(lines) == 1
    assert turn_status(path, "codex") == TurnStatus(True, "t1", None, "task_complete")
    assert [offset for _, offset in reverse_lines(path, TAIL_BYTES)] == [0]


def test_missing_file_is_unknown_not_done(tmp_path: Path) -> None:
    """An absent transcript is 'not done, no key'."""
    assert turn_status(tmp_path / "absent.jsonl", "claude") == UNKNOWN


def test_id_less_record_gets_a_bounded_fallback_key() -> None:
    """Without uuid/turn_id the key is a short hash of the record, the same on every read."""
    line = b'{"type":"event_msg","payload":{"type":"task_complete"}}'
    first = status_of_lines([line], "codex")
    assert first.is_done and first.key is not None and first.key.startswith("h:") and len(first.key) == 26
    assert status_of_lines([line], "codex").key == first.key
