"""Incremental tailing: complete lines only, cursors that resume exactly, safe restarts."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.kit.jsonl_tail import LineReader, end_of_last_line
from support.scanner_kit import IDS, append, cursor_of, engine, fixture_lines, records, rollout_path


def _lines(data: bytes, offset: int = 0, max_record: int = 1 << 20) -> tuple[list[bytes | None], LineReader]:
    reader = LineReader(io.BytesIO(data), offset, max_record=max_record)
    return [line.data for line in reader], reader


def test_partial_trailing_line_is_left_for_the_next_scan() -> None:
    """Only newline-terminated records are yielded; the offset stops at the partial line's start."""
    got, reader = _lines(b'{"a":1}\n{"b":2}\n{"c"')
    assert got == [b'{"a":1}', b'{"b":2}']
    assert reader.offset == len(b'{"a":1}\n{"b":2}\n')
    got, reader = _lines(b'{"a":1}\n{"b":2}\n{"c":3}\n', offset=reader.offset)
    assert got == [b'{"c":3}'] and not reader.skipping


def test_oversized_line_is_skipped_without_buffering_it() -> None:
    """A record longer than the cap is reported (data None, sniff kept) and the next record still read."""
    big = b'{"type":"response_item","x":"' + b"y" * 5000 + b'"}\n'
    got, reader = _lines(b'{"a":1}\n' + big + b'{"b":2}\n', max_record=1000)
    assert got == [b'{"a":1}', None, b'{"b":2}']
    # Unterminated and already over the cap: consumed up to here, the rest skipped to its newline later.
    got, reader = _lines(b'{"a":1}\n' + big[:3000], max_record=1000)
    assert got == [b'{"a":1}', None] and reader.skipping and reader.offset == len(b'{"a":1}\n') + 3000
    tail = LineReader(io.BytesIO(b'{"a":1}\n' + big + b'{"b":2}\n'), reader.offset, skipping=True, max_record=1000)
    assert [line.data for line in tail] == [b'{"b":2}']


def test_start_at_end_lands_after_the_last_complete_line() -> None:
    """A rollout first seen long after its last write starts after its last newline, not mid-record."""
    data = b'{"a":1}\n{"b":2}\n{"partial'
    assert end_of_last_line(io.BytesIO(data), len(data)) == (len(b'{"a":1}\n{"b":2}\n'), False)
    assert end_of_last_line(io.BytesIO(b"no newline"), 10) == (0, False)


def test_byte_by_byte_across_the_terminal_record_makes_one_candidate(state: StateDir, tmp_path: Path) -> None:
    """Feeding the end of a real rollout one byte at a time yields exactly one candidate, at the newline."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    path.write_bytes(b"".join(lines[:-2]))
    scanner = engine(state, home)
    scanner.scan(full=True)
    boundary = lines[-2] + lines[-1]
    for i, byte in enumerate(boundary):
        append(path, bytes([byte]))
        scanner.scan(full=False)
        made = records(state, "pending")
        assert len(made) == (1 if i == len(boundary) - 1 else 0), i
    cursor = cursor_of(state, path)
    assert cursor.offset == path.stat().st_size
    assert made[0]["key"] == event_key("codex", *IDS["simple-exec"])


def test_cursor_is_not_rewritten_when_nothing_changed(state: StateDir, tmp_path: Path) -> None:
    """Scans (also after a restart) and a growing partial line leave the cursor file untouched."""
    home = tmp_path / "codex"
    path = rollout_path(home, "tool-exec-command")
    path.write_bytes(b"".join(fixture_lines("tool-exec-command")[:5]))
    engine(state, home).scan(full=True)
    cursor_file = state.record_path("watch/local", cursor_of(state, path).to_record("codex")["key"])
    before = os.stat(cursor_file)
    time.sleep(0.01)
    scanner = engine(state, home)  # a restarted worker
    for _ in range(3):
        scanner.scan(full=True)
        scanner.scan(full=False)
    append(path, b'{"type":"event_msg","pay')  # a partial line: nothing consumable
    scanner.scan(full=False)
    after = os.stat(cursor_file)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_restart_resumes_from_the_cursor_without_duplicate_or_gap(state: StateDir, tmp_path: Path) -> None:
    """A new worker continues where the old one stopped: earlier turns are not resubmitted, new ones are."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    first = fixture_lines("simple-exec")
    path.write_bytes(b"".join(first))
    engine(state, home).scan(full=True)
    [rec] = records(state, "pending")
    # `codex exec resume` appends a second turn to the same file while no worker runs.
    second = [line.replace(b"9063-7c32-bfff-4b6d573f20c6", b"9999-7c32-bfff-4b6d573f20c6") for line in first[1:]]
    append(path, b"".join(second))
    report = engine(state, home).scan(full=True)
    assert report.counters["terminal_created"] == 1 and not report.counters["terminal_merged"]
    keys = {r["key"] for r in records(state, "pending")}
    assert keys == {rec["key"], event_key("codex", IDS["simple-exec"][0], "01a22be2-9999-7c32-bfff-4b6d573f20c6")}
    assert all(r["revision"] == 1 for r in records(state, "pending"))


def test_truncated_rollout_restarts_safely(state: StateDir, tmp_path: Path) -> None:
    """A file cut below the cursor offset is restarted from its beginning, without error."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    scanner = engine(state, home)
    scanner.scan(full=True)
    path.write_bytes(b"".join(fixture_lines("abort-sigint-turn_aborted")[:3]))  # truncate + new content
    report = scanner.scan(full=False)
    assert report.counters["files_restarted"] == 1 and not report.counters["file_errors"]
    assert cursor_of(state, path).offset == path.stat().st_size
    append(path, b"".join(fixture_lines("abort-sigint-turn_aborted")[3:]))
    scanner.scan(full=False)
    outcomes = sorted(r["outcome"] for r in records(state, "pending"))
    assert outcomes == ["done", "stopped"]


def test_replaced_rollout_restarts_safely(state: StateDir, tmp_path: Path) -> None:
    """A different inode at the same path (rename over it) is read from its start as a new file."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")[:6]))
    scanner = engine(state, home)
    scanner.scan(full=True)
    fresh = path.with_suffix(".new")
    fresh.write_bytes(b"".join(fixture_lines("error-http500-task_complete-with-error")))
    os.replace(fresh, path)
    report = scanner.scan(full=False)
    assert report.counters["files_restarted"] == 1
    [rec] = records(state, "pending")
    assert rec["outcome"] == "failed" and rec["thread_id"] == IDS["error-http500-task_complete-with-error"][0]


def test_rewritten_in_place_is_detected_at_the_cursor_boundary(state: StateDir, tmp_path: Path) -> None:
    """Same inode, longer content, but no newline before the cursor: restarted rather than read mid-record."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b'{"type":"x"}\n' * 3)
    scanner = engine(state, home)
    scanner.scan(full=True)
    with open(path, "r+b") as f:  # overwrite in place (same inode) with other, longer records
        f.write(b"".join(fixture_lines("abort-sigint-turn_aborted")))
    report = scanner.scan(full=False)
    assert report.counters["files_restarted"] == 1 and not report.counters["invalid_lines"]
    assert [r["outcome"] for r in records(state, "pending")] == ["stopped"]


def test_corrupt_cursor_is_dead_lettered_and_the_file_restarted(state: StateDir, tmp_path: Path) -> None:
    """An unparsable cursor goes to dead/ (bytes kept) and its rollout is treated as newly found."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")[:5]))
    engine(state, home).scan(full=True)
    key = cursor_of(state, path).to_record("codex")["key"]
    state.record_path("watch/local", key).write_bytes(b"{not json")
    append(path, b"".join(fixture_lines("simple-exec")[5:]))
    report = engine(state, home).scan(full=True)
    assert not report.counters["file_errors"]
    assert len(records(state, "pending")) == 1
    assert any(r.get("from_folder") == "watch/local" for r in records(state, "dead"))
    assert cursor_of(state, path).offset == path.stat().st_size


def test_fifo_named_like_a_rollout_never_blocks_a_scan(state: StateDir, tmp_path: Path) -> None:
    """A FIFO in the hot folder is not a rollout: the scan passes it by instead of blocking on open."""
    home = tmp_path / "codex"
    fifo = rollout_path(home, "simple-exec")
    os.mkfifo(fifo)
    real = rollout_path(home, "tool-exec-command")
    real.write_bytes(b"".join(fixture_lines("tool-exec-command")))
    started = time.monotonic()
    report = engine(state, home).scan(full=True)
    assert time.monotonic() - started < 5
    assert not report.counters["file_errors"] and len(records(state, "pending")) == 1


def test_failed_submit_keeps_the_cursor_and_logs_once(state: StateDir, tmp_path: Path) -> None:
    """While the state dir refuses the candidate, the cursor stays put (logged once); once it recovers, the turn lands."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    pending = state.root / "pending"
    pending.rmdir()
    pending.write_bytes(b"")  # pending/ is not a folder: every create fails
    scanner = engine(state, home)
    for _ in range(3):
        scanner.scan(full=False)
        scanner.scan(full=True)
    log = (state.root / "notify.log").read_text().splitlines()
    assert sum("rollout scan failed" in line for line in log) == 1
    assert cursor_of(state, path) is None  # nothing was marked read
    pending.unlink()
    pending.mkdir()
    report = scanner.scan(full=False)
    assert report.counters["terminal_created"] == 1 and len(records(state, "pending")) == 1
    assert cursor_of(state, path).offset == path.stat().st_size
