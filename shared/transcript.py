"""The newest Claude ``goal_status`` marker in a transcript's bounded tail (a prompt's baseline).

Claude has its own transcript gate (docs/agent-facts.md, "Claude Code"): at UserPromptSubmit the newest session-level
``attachment.goal_status`` marker becomes the prompt's baseline, so historical markers cannot
label or cancel later ordinary turns. The synchronous hook reads at most :data:`TAIL_CAP` bytes
from the end of the file; the window is advanced to a UTF-8 code-point boundary and then past
the (partial) first line before anything is decoded, and an unterminated last line (still being
written) is ignored. Standard library only.
"""

from __future__ import annotations

import json
import os
import stat

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

TAIL_CAP = 1 << 20
_NEEDLE = b"goal_status"
#: What a baseline keeps of a marker: identity (uuid, timestamp, byte offset) and its state.
_MARKER_FIELDS = ("met", "failed", "sentinel")


def utf8_boundary(data: bytes, start: int = 0) -> int:
    """The first index at or after ``start`` that is not a UTF-8 continuation byte."""
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return start


def read_tail(path: str, cap: int = TAIL_CAP) -> tuple[bytes, int, int] | None:
    """``(window, window_offset, file_size)`` of the last ``cap`` bytes of a regular file, or None.

    Opened non-blocking and checked with fstat, so a FIFO or device named in a payload cannot
    stall the hook.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        offset = max(0, st.st_size - cap)
        os.lseek(fd, offset, os.SEEK_SET)
        chunks: list[bytes] = []
        remaining = st.st_size - offset
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), offset, st.st_size
    finally:
        os.close(fd)


def complete_lines_region(window: bytes, offset: int) -> tuple[int, int]:
    """``(start, end)`` of the whole, newline-terminated lines inside ``window``."""
    start = 0
    if offset > 0:
        start = utf8_boundary(window)
        newline = window.find(b"\n", start)
        start = len(window) if newline < 0 else newline + 1
    end = window.rfind(b"\n") + 1
    return start, max(start, end)


def newest_goal_marker(path: str | None, cap: int = TAIL_CAP) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(marker, scan)``: the newest main-thread goal_status marker in the tail, and how we looked.

    ``scan["status"]``: ``found``; ``none`` (the whole file was read, no marker); ``not-in-window``
    (only the last ``cap`` bytes were read; an older marker may exist); ``missing`` (no such
    regular file yet: Claude creates the transcript on its first flush); ``no-path``.
    """
    if not path:
        return None, {"status": "no-path"}
    tail = read_tail(path, cap)
    if tail is None:
        return None, {"status": "missing"}
    window, offset, size = tail
    start, end = complete_lines_region(window, offset)
    scan: dict[str, Any] = {"status": "none" if offset == 0 else "not-in-window", "size": size, "window": len(window)}
    pos = end
    while pos > start:
        hit = window.rfind(_NEEDLE, start, pos)
        if hit < 0:
            break
        newline = window.rfind(b"\n", start, hit)
        line_start = start if newline < 0 else newline + 1
        line_end = window.find(b"\n", hit, end)
        marker = _parse_marker(window[line_start:line_end])
        if marker is not None:
            marker["offset"] = offset + line_start
            scan["status"] = "found"
            return marker, scan
        pos = line_start
    return None, scan


def parse_record(line: bytes) -> dict[str, Any] | None:
    """One JSONL record; None if it is not valid UTF-8 JSON of an object (skipped, never fatal)."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _parse_marker(line: bytes) -> dict[str, Any] | None:
    record = parse_record(line)
    return None if record is None else marker_of(record)


def marker_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """The baseline form of a main-chain ``attachment.goal_status`` record, else None."""
    if record.get("type") != "attachment" or record.get("isSidechain") is True:
        return None
    attachment = record.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "goal_status":
        return None
    marker: dict[str, Any] = {
        "uuid": record.get("uuid") if isinstance(record.get("uuid"), str) else None,
        "timestamp": record.get("timestamp") if isinstance(record.get("timestamp"), str) else None,
    }
    for name in _MARKER_FIELDS:
        marker[name] = attachment.get(name) is True
    return marker
