"""Bounded reverse reading of a Codex rollout: the lifecycle facts the gate needs, never the file.

A rollout can be hundreds of megabytes; the turn being judged is almost always at its end. The
reader walks backward from the last complete line in 64 KiB chunks and keeps only a compact
summary: lifecycle events (``task_started`` / ``task_complete`` / ``turn_aborted``, current and
older names) and, between them, one :class:`Segment` aggregating the other lines (a person's
message seen? an assistant message? the newest cumulative token count? malformed lines?). It
stops as soon as the caller's turn is covered, or at :data:`SCAN_CAP` bytes.

Memory stays bounded whatever the file size: one chunk, one partially read line (capped at
:data:`MAX_LINE`; longer lines are skipped and counted), and O(turns scanned) small objects.
:class:`TailCache` keeps the summary per file and, when the file grows, scans only the new bytes
("resume from a cached offset"); a shrunk or replaced file is rescanned.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from donebell.shared.bounded_read import NotARegularFile, open_regular
from donebell.workers.turn_status import (
    CODEX_DONE,
    CODEX_START,
    is_real_codex_user_message,
    parse_time,
)

CHUNK = 64 << 10
MAX_LINE = 4 << 20
SCAN_CAP = 16 << 20

#: Where the probes look: Codex writes the record type, payload type, item type and message role
#: first (serde tags), so a line's first KiB says what it is, however long its body.
PREFIX = 1024
#: Cheap byte probes: a line whose prefix holds none of these cannot change a lifecycle decision,
#: so it is never JSON-parsed (the reason probing a 200 MB file costs milliseconds, not seconds).
_INTERESTING = (
    b"task_started",
    b"task_complete",
    b"turn_aborted",
    b"turn_complete",
    b"turn_started",
    b"user_message",
    b"agent_message",
    b"UserMessage",
    b"AgentMessage",
    b"token_count",
    b'"role":"user"',
    b'"role":"assistant"',
)
_LIFECYCLE_WORDS = (b"task_started", b"task_complete", b"turn_aborted", b"turn_complete", b"turn_started")


@dataclass
class Lifecycle:
    """One turn-lifecycle record, reduced to what the gate uses."""

    kind: str  # "started" | "complete" | "aborted"
    turn_id: str | None
    offset: int
    at: float | None = None
    trigger: str | None = None  # started: turn_attribution.turn_trigger ("exec", "goal", ...)
    error: str | None = None  # complete: error.message of a failed turn
    duration_ms: int | None = None
    has_message: bool = False  # complete: a non-empty last_agent_message


@dataclass
class Segment:
    """The non-lifecycle lines between two lifecycle events (newest token count wins)."""

    user: bool = False
    agent: bool = False
    tokens: int | None = None
    malformed: int = 0
    oversized: int = 0
    lines: int = 0

    def absorb_older(self, older: Segment) -> None:
        """Fold an adjacent older segment into this one (used when the file grew)."""
        self.user |= older.user
        self.agent |= older.agent
        if self.tokens is None:
            self.tokens = older.tokens
        self.malformed += older.malformed
        self.oversized += older.oversized
        self.lines += older.lines


Item = Lifecycle | Segment


@dataclass
class Tail:
    """The summary of one rollout's end, valid for one (inode, size, mtime)."""

    path: str
    ino: int
    size: int
    mtime_ns: int
    complete_end: int  # offset after the last newline
    partial: bool  # bytes after the last newline: a record still being written
    scanned_from: int  # the reverse scan covered [scanned_from, complete_end)
    items: list[Item] = field(default_factory=list)  # newest first, starting with a Segment
    error: str | None = None

    @property
    def mtime(self) -> float:
        return self.mtime_ns / 1e9

    @property
    def at_file_start(self) -> bool:
        return self.scanned_from == 0


def _classify(line: bytes, offset: int) -> Lifecycle | tuple[str, Any] | None:
    """A lifecycle event, a marker ``(kind, value)``, or None for an irrelevant line."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return ("malformed", "invalid UTF-8")
    head = line[:PREFIX]
    if not any(word in head for word in _INTERESTING):
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return ("malformed", "invalid JSON")
    if not isinstance(obj, dict):
        return ("malformed", "not an object")
    payload = obj.get("payload")
    kind = obj.get("type")
    if kind == "event_msg" and not (isinstance(payload, dict) and isinstance(payload.get("type"), str)):
        # It names a lifecycle event but is not shaped like one: it may be a turn's start or end
        # that we cannot read, so it is malformed evidence, never an irrelevant line.
        return ("malformed", "event_msg payload not an object with a string type") if _names_lifecycle(head) else None
    payload = payload if isinstance(payload, dict) else {}
    at = parse_time(obj.get("timestamp"))
    if kind == "event_msg":
        ptype = payload.get("type")
        if ptype in CODEX_START or ptype in CODEX_DONE:
            turn = payload.get("turn_id")
            turn_id = turn if isinstance(turn, str) and turn else None
            if ptype in CODEX_START:
                attribution = payload.get("turn_attribution")
                trigger = attribution.get("turn_trigger") if isinstance(attribution, dict) else None
                return Lifecycle("started", turn_id, offset, at, trigger=trigger if isinstance(trigger, str) else None)
            err = payload.get("error")
            message = err.get("message") if isinstance(err, dict) else err
            last = payload.get("last_agent_message")
            duration = payload.get("duration_ms")
            return Lifecycle(
                "aborted" if ptype == "turn_aborted" else "complete",
                turn_id,
                offset,
                parse_time(payload.get("completed_at")) or at,
                error=str(message)[:300] if message else None,
                duration_ms=duration if isinstance(duration, int) else None,
                has_message=isinstance(last, str) and bool(last.strip()),
            )
        if ptype == "user_message":
            return ("user", True)
        if ptype == "agent_message":
            return ("agent", True)
        if ptype == "item_completed":
            item = payload.get("item")
            item_type = item.get("type") if isinstance(item, dict) else None
            if item_type == "UserMessage":
                return ("user", True)
            if item_type == "AgentMessage":
                return ("agent", True)
        if ptype == "token_count":
            info = payload.get("info")
            usage = info.get("total_token_usage") if isinstance(info, dict) else None
            total = usage.get("total_tokens") if isinstance(usage, dict) else None
            return ("tokens", total) if isinstance(total, int) else None
        return None
    if kind == "response_item" and payload.get("type") == "message":
        role = payload.get("role")
        if role == "assistant":
            return ("agent", True)
        if role == "user" and is_real_codex_user_message(payload):
            return ("user", True)
    return None


def _names_lifecycle(data: bytes) -> bool:
    return any(word in data for word in _LIFECYCLE_WORDS)


def _add(items: list[Item], found: Lifecycle | tuple[str, Any] | None) -> None:
    """Append (going older) one classified line to ``items``."""
    if isinstance(found, Lifecycle):
        items.append(found)
        items.append(Segment())
        return
    seg = items[-1]
    assert isinstance(seg, Segment)
    seg.lines += 1
    if found is None:
        return
    kind, value = found
    if kind == "user":
        seg.user = True
    elif kind == "agent":
        seg.agent = True
    elif kind == "tokens" and seg.tokens is None:
        seg.tokens = value  # reverse order: the first one seen is the newest
    elif kind == "malformed":
        seg.malformed += 1
    elif kind == "oversized":
        seg.oversized += 1


def _find_complete_end(fd: int, size: int) -> int:
    """Offset just after the last newline (0 if none within :data:`MAX_LINE` of the end)."""
    pos = size
    while pos > 0 and size - pos < MAX_LINE + CHUNK:
        start = max(0, pos - CHUNK)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def scan_back(fd: int, start: int, end: int, items: list[Item], *, stop: Any = None, cap: int = SCAN_CAP) -> int:
    """Reverse-scan ``[start, end)`` (both line starts) appending to ``items``, newest first.

    ``stop(items)`` is asked after each lifecycle event; scanning ends when it says True, at
    ``start``, or after ``cap`` bytes. Returns the offset the scan reached (a line start).
    """
    pos = end
    carry = b""  # the newest part of a line whose start is in an older chunk
    skipping = False  # inside a line longer than MAX_LINE: its bytes are dropped, not kept
    reached = end
    while pos > start and end - pos < cap:
        n = min(CHUNK, pos - start)
        pos -= n
        chunk = os.pread(fd, n, pos)
        buf = chunk + carry
        if pos > start:
            # Only a newline inside the new chunk starts a line; carry's own last byte is the old boundary.
            nl = chunk.find(b"\n")
            if nl < 0:
                carry = b"" if skipping else buf
                if len(carry) > MAX_LINE:
                    carry, skipping = b"", True
                continue
            head, body, base = buf[: nl + 1], buf[nl + 1 :], pos + nl + 1
        else:
            head, body, base = b"", buf, pos
        lines = body.split(b"\n")
        piece = lines.pop()  # b"" at a line boundary; the start of an oversized line when skipping
        if skipping:
            oversized = ("malformed", "oversized lifecycle record") if _names_lifecycle(piece) else ("oversized", 1)
            _add(items, oversized)
            skipping = False
        offsets = _offsets(base, lines)
        for line, offset in zip(reversed(lines), reversed(offsets), strict=True):
            reached = offset
            if not line.strip():
                continue
            found = _classify(line, offset)
            _add(items, found)
            if isinstance(found, Lifecycle) and stop is not None and stop(items):
                return reached
        reached = base
        carry = head
    return reached


def _offsets(base: int, lines: list[bytes]) -> list[int]:
    out, at = [], base
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


class TailCache:
    """Per-file tail summaries that survive between probes (resume from the cached offset).

    Bounded to :data:`MAX_FILES` summaries, least recently used dropped first.
    """

    MAX_FILES = 512

    def __init__(self) -> None:
        self._tails: dict[str, Tail] = {}

    def get(self, path: str, *, need: Any = None) -> Tail | None:
        """The current summary of ``path``, scanned back until ``need(items)`` holds (or the cap).

        None if the file does not exist; a :class:`Tail` with ``error`` if it cannot be read.
        """
        try:
            # bounded_read: a FIFO planted where a rollout should be must not block the gate.
            fd = open_regular(path)
        except FileNotFoundError:
            self._tails.pop(path, None)
            return None
        except NotARegularFile:
            return Tail(path, 0, 0, 0, 0, False, 0, [Segment()], error="not a regular file")
        except OSError as exc:
            return Tail(path, 0, 0, 0, 0, False, 0, [Segment()], error=f"{type(exc).__name__}: {exc}")
        try:
            return self._get(fd, path, need)
        except OSError as exc:
            self._tails.pop(path, None)
            return Tail(path, 0, 0, 0, 0, False, 0, [Segment()], error=f"{type(exc).__name__}: {exc.strerror}")
        finally:
            os.close(fd)

    def _get(self, fd: int, path: str, need: Any) -> Tail:
        """The summary for an open ``fd``: reused, extended by new bytes, or rebuilt."""
        st = os.fstat(fd)  # open_regular checked it is a regular file
        old = self._tails.get(path)
        if old and (old.ino, old.size, old.mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns):
            tail = old
        elif old and old.ino == st.st_ino and st.st_size >= old.size and st.st_size - old.complete_end < SCAN_CAP:
            tail = self._extend_forward(fd, old, st)
        else:
            tail = self._fresh(fd, path, st)
        if need is not None and not need(tail.items) and tail.scanned_from > 0:
            budget = SCAN_CAP - (tail.complete_end - tail.scanned_from)
            if budget > 0:
                older: list[Item] = [Segment()]
                reached = scan_back(
                    fd, 0, tail.scanned_from, older, stop=lambda it: need(tail.items + it[1:]), cap=budget
                )
                _join(tail.items, older)
                tail.scanned_from = reached
        self._tails.pop(path, None)
        self._tails[path] = tail  # most recently used last
        while len(self._tails) > self.MAX_FILES:
            self._tails.pop(next(iter(self._tails)))
        return tail

    def _fresh(self, fd: int, path: str, st: os.stat_result) -> Tail:
        end = _find_complete_end(fd, st.st_size)
        items: list[Item] = [Segment()]
        # First look: the newest complete lines, up to the first lifecycle event seen.
        reached = scan_back(fd, 0, end, items, stop=lambda it: True)
        return Tail(path, st.st_ino, st.st_size, st.st_mtime_ns, end, end < st.st_size, reached, items)

    def _extend_forward(self, fd: int, old: Tail, st: os.stat_result) -> Tail:
        end = _find_complete_end(fd, st.st_size)
        if end < old.complete_end:
            end = old.complete_end
        newer: list[Item] = [Segment()]
        scan_back(fd, old.complete_end, end, newer)
        items = newer
        _join(items, list(old.items))
        return Tail(old.path, st.st_ino, st.st_size, st.st_mtime_ns, end, end < st.st_size, old.scanned_from, items)


def _join(newer: list[Item], older: list[Item]) -> None:
    """Append ``older`` (which starts with a Segment) to ``newer`` (which ends with one)."""
    last = newer[-1]
    first = older[0]
    assert isinstance(last, Segment) and isinstance(first, Segment)
    last.absorb_older(first)
    newer.extend(older[1:])
