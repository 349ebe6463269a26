"""Claude transcript recovery on bad input: lines that are not JSON or not UTF-8, a FIFO in place of a
transcript, a 100 MB line and a transcript deleted while tailed never block or break the scanner."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest
from donebell.shared.statedir import WATCH_CLAUDE, StateDir
from support.claude_fixtures import cut_after, place, transcript_lines
from support.claude_tail_kit import age, pending, watching


@pytest.fixture()
def claude_dir(tmp_path: Path) -> Path:
    path = tmp_path / "claude"
    (path / "projects").mkdir(parents=True)
    return path


def test_lines_not_json_or_not_utf8_are_skipped_and_counted(state: StateDir, claude_dir: Path) -> None:
    lines = transcript_lines("simple")
    bad = [b"this is not json\n", b'{"type": "user", "message": "\xff\xfe"}\n', b"[1, 2]\n"]
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple", lines[:3] + bad + lines[3:])
    age(path, 5)
    report = tail.scan(full=False)
    assert report.counters["claude_invalid_lines"] == 3 and report.counters["claude_created"] == 1
    [cursor_key] = state.keys(WATCH_CLAUDE)
    assert state.read(WATCH_CLAUDE, cursor_key)["invalid_lines"] == 3  # type: ignore[index]


def test_fifo_in_place_of_a_transcript_never_blocks(state: StateDir, claude_dir: Path) -> None:
    tail = watching(state, claude_dir)
    folder = claude_dir / "projects" / "-p"
    folder.mkdir()
    os.mkfifo(folder / "fifo-session.jsonl")
    started = time.monotonic()
    report = tail.scan(full=True)
    report = tail.scan(full=False)
    assert time.monotonic() - started < 5
    assert pending(state) == [] and report.counters["file_errors"] == 1
    assert "not a regular file" in report.errors[0]


def test_a_100_mb_line_is_skipped_in_bounded_memory(state: StateDir, claude_dir: Path) -> None:
    lines = transcript_lines("simple")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple", lines[:3])
    with path.open("ab") as f:
        f.write(b'{"type": "attachment", "blob": "')
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write(b'"}\n')
        f.write(b"".join(lines[3:]))
    age(path, 5)
    tracemalloc.start()
    report = tail.scan(full=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert report.counters["claude_oversized_lines"] == 1 and report.counters["claude_created"] == 1


def test_transcript_deleted_while_tailed_is_dropped(state: StateDir, claude_dir: Path) -> None:
    lines = transcript_lines("simple")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple", cut_after(lines, lambda r: r.get("type") == "user"))
    tail.scan(full=False)
    assert str(path) in tail.files
    path.unlink()
    report = tail.scan(full=False)
    assert str(path) not in tail.files and report.counters.get("file_errors") is None
    assert pending(state) == []
