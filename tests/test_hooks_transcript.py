"""The bounded reverse read of a Claude transcript tail that finds a prompt's goal baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.shared.bounded_read import complete_lines_region, utf8_boundary
from donebell.workers.agents.claude.goal_status import marker_of, marker_state, newest_goal_marker
from donebell.workers.agents.claude.prompt_view import Marker, baseline_state


def _marker_line(uuid: str, **attachment: object) -> bytes:
    record = {"type": "attachment", "isSidechain": False, "uuid": uuid, "timestamp": "2026-11-30T10:00:00Z"}
    return json.dumps({**record, "attachment": {"type": "goal_status", **attachment}}).encode() + b"\n"


def _text_line(text: str) -> bytes:
    return json.dumps({"type": "user", "message": {"content": text}}, ensure_ascii=False).encode() + b"\n"


def test_window_starting_inside_a_multibyte_character_is_realigned(tmp_path: Path) -> None:
    """A tail window that begins mid-character skips the continuation bytes and the partial line, then parses."""
    path = tmp_path / "t.jsonl"
    first = _text_line("é" * 40)  # two-byte characters: a cut can land between their bytes
    marker = _marker_line("m1", met=False, condition="ship it")
    path.write_bytes(first + marker)
    cap = len(marker) + 11  # the window starts inside the é run
    window_start = len(first) + len(marker) - cap
    assert path.read_bytes()[window_start] & 0xC0 == 0x80  # a continuation byte: the cut is mid-character
    found, scan = newest_goal_marker(str(path), cap=cap)
    assert found is not None and found["uuid"] == "m1" and found["met"] is False
    assert found["offset"] == len(first) and scan["status"] == "found"


def test_utf8_boundary_and_complete_lines() -> None:
    """utf8_boundary skips continuation bytes only; complete_lines_region drops the partial first and last lines."""
    data = "é".encode()[1:] + b"x\n" + b'{"a":1}\n' + b'{"b"'
    assert utf8_boundary(data) == 1 and utf8_boundary(b"abc") == 0
    start, end = complete_lines_region(data, offset=10)
    assert data[start:end] == b'{"a":1}\n'
    start, end = complete_lines_region(b'{"a":1}\n{"b"', offset=0)
    assert (start, end) == (0, 8)


def test_newest_main_thread_marker_wins(tmp_path: Path) -> None:
    """The newest marker wins; sidechain markers, broken lines and the unterminated last line are skipped."""
    path = tmp_path / "t.jsonl"
    sidechain = json.loads(_marker_line("side", met=True))
    sidechain["isSidechain"] = True
    path.write_bytes(
        _marker_line("old", met=False, sentinel=True)
        + _marker_line("new", met=False, failed=True)
        + json.dumps(sidechain).encode()
        + b"\n"
        + b'{"goal_status": broken json\n'
        + b"\xff\xfe goal_status not utf-8\n"
        + b'{"type":"attachment","attachment":{"type":"goal_status","met":true'
    )
    found, scan = newest_goal_marker(str(path))
    assert found is not None and (found["uuid"], found["failed"], found["met"]) == ("new", True, False)
    assert scan["status"] == "found"


def test_marker_older_than_the_window_is_reported_as_not_in_window(tmp_path: Path) -> None:
    """A marker before the 1 MiB window is not seen; the scan says so instead of claiming 'none'."""
    path = tmp_path / "t.jsonl"
    filler = _text_line("x" * 1000) * 30
    path.write_bytes(_marker_line("ancient", met=True) + filler)
    found, scan = newest_goal_marker(str(path), cap=len(filler) - 5)
    assert found is None and scan["status"] == "not-in-window"
    found, scan = newest_goal_marker(str(path))
    assert found is not None and found["uuid"] == "ancient"


def test_missing_and_absent_inputs(tmp_path: Path) -> None:
    """No path, a missing file, a directory and an empty file each give a clear status and no marker."""
    assert newest_goal_marker(None) == (None, {"status": "no-path"})
    assert newest_goal_marker(str(tmp_path / "nope.jsonl")) == (None, {"status": "missing"})
    assert newest_goal_marker(str(tmp_path))[1]["status"] == "missing"
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert newest_goal_marker(str(tmp_path / "empty.jsonl"))[1]["status"] == "none"


def test_marker_of_reads_main_chain_goal_status_only() -> None:
    """marker_of keeps identity and the three flags (true only when literally true); anything else is no marker."""
    record = json.loads(_marker_line("m1", met=1, failed=True, sentinel="yes"))
    assert marker_of(record) == {
        "uuid": "m1",
        "timestamp": "2026-11-30T10:00:00Z",
        "met": False,
        "failed": True,
        "sentinel": False,
    }
    assert marker_of({**record, "isSidechain": True}) is None
    assert marker_of({**record, "type": "user"}) is None
    assert marker_of({**record, "attachment": {"type": "todo", "met": True}}) is None
    assert marker_of({**record, "attachment": "goal_status"}) is None
    assert marker_of({"type": "attachment", "attachment": {"type": "goal_status"}}) == {
        "uuid": None,
        "timestamp": None,
        "met": False,
        "failed": False,
        "sentinel": False,
    }


def test_marker_state_is_one_rule_for_baselines_and_gate_markers() -> None:
    """cleared (met + sentinel) > met > failed > active, read the same from a baseline dict and a gate Marker."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"met": True, "sentinel": True, "failed": True}, "cleared"),
        ({"met": True}, "met"),
        ({"met": True, "failed": True}, "met"),
        ({"failed": True, "sentinel": True}, "failed"),
        ({"sentinel": True}, "active"),
        ({}, "active"),
        ({"met": "true", "failed": 1}, "active"),
    ]
    for flags, state in cases:
        assert marker_state(flags) == state, flags
        assert baseline_state(flags) == state
        marker = Marker(None, 0, flags.get("met") is True, flags.get("failed") is True, flags.get("sentinel") is True)
        assert marker.state == state
    assert baseline_state(None) is None and baseline_state("met") is None
