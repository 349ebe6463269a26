"""The bounded reverse rollout reader: reads little, resumes from its cached offset, never trips on bad bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from donebell.workers.agents.codex import rollout
from donebell.workers.agents.codex.rollout import TailCache
from donebell.workers.agents.codex.rollout_lines import Lifecycle
from donebell.workers.agents.codex.turn_view import needs_more, view
from fixtures.gate.kit import dump, ev, lines_of, turn_records


def _need(turn: str):  # type: ignore[no-untyped-def]
    return lambda items: not needs_more(items, turn)


def _big(path: Path, turns: int, pad: int) -> None:
    out = [lines_of("simple-exec.jsonl")[0]]
    filler = {"type": "response_item", "payload": {"type": "function_call_output", "output": "x" * pad}}
    for i in range(turns):
        recs = turn_records(f"t{i}", tokens=100 * (i + 1))
        out += recs[:-1] + [filler] + recs[-1:]
    path.write_bytes(dump(out))


def test_completion_at_the_end_of_a_large_file_reads_only_the_end(tmp_path: Path) -> None:
    """An 8 MB rollout: deciding the last turn scans a few KiB, not the file."""
    path = tmp_path / "r.jsonl"
    _big(path, turns=400, pad=20_000)
    assert path.stat().st_size > 8 << 20
    tail = TailCache().get(str(path), need=_need("t399"))
    assert tail is not None and tail.complete_end - tail.scanned_from < 64 << 10
    v = view(tail.items, "t399")
    assert v.terminal is not None and v.started is not None and not v.newer
    assert v.stats == {"duration_ms": 1000, "total_tokens": 100, "turns": 1}


def test_growth_is_scanned_from_the_cached_offset(tmp_path: Path) -> None:
    """After the file grows, only the new bytes are read; the older turn now sees its successor."""
    path = tmp_path / "r.jsonl"
    _big(path, turns=50, pad=1000)
    cache = TailCache()
    first = cache.get(str(path), need=_need("t49"))
    assert first is not None
    scanned_from = first.scanned_from
    with open(path, "ab") as f:
        f.write(dump(turn_records("t50")))
    grown = cache.get(str(path), need=_need("t50"))
    assert grown is not None and grown.scanned_from == scanned_from
    assert view(grown.items, "t50").terminal is not None
    later = view(grown.items, "t49").later_started
    assert later is not None and later.turn_id == "t50"


def test_replaced_file_is_rescanned(tmp_path: Path) -> None:
    """A rollout replaced by another file (new inode, smaller) is read afresh, not merged."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(dump([lines_of("simple-exec.jsonl")[0], *turn_records("a"), *turn_records("b")]))
    cache = TailCache()
    cache.get(str(path), need=_need("b"))
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(dump([lines_of("simple-exec.jsonl")[0], *turn_records("c")]))
    os.replace(replacement, path)
    tail = cache.get(str(path), need=_need("c"))
    assert tail is not None
    assert view(tail.items, "c").terminal is not None and not view(tail.items, "b").found


@pytest.mark.parametrize("chunk", [7, 64, 333, 4096])
def test_chunk_boundaries_do_not_change_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Whatever the chunk size, the reverse scan finds the same lifecycle events at the same offsets."""
    path = tmp_path / "r.jsonl"
    recs = [lines_of("simple-exec.jsonl")[0], *turn_records("a"), *turn_records("b", user=False), *turn_records("c")]
    path.write_bytes(dump(recs))
    monkeypatch.setattr(rollout, "CHUNK", chunk)
    tail = TailCache().get(str(path), need=lambda items: False)
    assert tail is not None and tail.scanned_from == 0
    events = [(i.kind, i.turn_id, i.offset) for i in tail.items if isinstance(i, Lifecycle)]
    expected, offset = [], 0
    for rec in recs:
        line = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
        ptype = (rec.get("payload") or {}).get("type")
        if ptype in ("task_started", "task_complete"):
            expected.append(("started" if ptype == "task_started" else "complete", rec["payload"]["turn_id"], offset))
        offset += len(line)
    assert events == list(reversed(expected))
    assert not view(tail.items, "b").user and view(tail.items, "a").user


def test_oversized_line_is_skipped_with_bounded_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than MAX_LINE is counted and skipped; one that looks like a lifecycle record is malformed."""
    monkeypatch.setattr(rollout, "MAX_LINE", 1000)
    monkeypatch.setattr(rollout, "CHUNK", 256)
    path = tmp_path / "r.jsonl"
    big_output = {"type": "response_item", "payload": {"type": "function_call_output", "output": "o" * 5000}}
    recs = [lines_of("simple-exec.jsonl")[0], *turn_records("a")]
    recs.insert(4, big_output)
    path.write_bytes(dump(recs))
    tail = TailCache().get(str(path), need=_need("a"))
    assert tail is not None
    v = view(tail.items, "a")
    assert v.terminal is not None and v.started is not None
    inside = tail.items[2]  # the lines between task_started and task_complete of "a"
    assert isinstance(inside, rollout.Segment) and inside.oversized == 1 and inside.user and inside.agent
    huge_complete = ev("task_complete", "b", last_agent_message="m" * 5000)
    with open(path, "ab") as f:
        f.write(dump([huge_complete]))
    tail = TailCache().get(str(path), need=_need("b"))
    assert tail is not None and view(tail.items, "a").malformed_after == 1


def test_invalid_utf8_and_partial_tail_are_reported(tmp_path: Path) -> None:
    """Invalid UTF-8 after a completion is malformed evidence; a trailing half line is 'partial'."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        dump([lines_of("simple-exec.jsonl")[0], *turn_records("a")]) + b'{"payload":"\xff\xfe"}\n{"type":"ev'
    )
    tail = TailCache().get(str(path), need=_need("a"))
    assert tail is not None and tail.partial and tail.complete_end < tail.size
    assert view(tail.items, "a").malformed_after == 1


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    """A missing rollout is None; a directory in its place is an error, not an exception."""
    cache = TailCache()
    assert cache.get(str(tmp_path / "absent.jsonl")) is None
    (tmp_path / "dir.jsonl").mkdir()
    tail = cache.get(str(tmp_path / "dir.jsonl"))
    assert tail is None or tail.error is not None or tail.items
