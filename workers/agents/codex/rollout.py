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
("resume from a cached offset"); a shrunk or replaced file is rescanned. What each line means is
``gate/rollout_lines.py``'s; opening the file is ``shared/bounded_read.py``'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from donebell.shared.bounded_read import NotARegularFile, open_regular
from donebell.workers.agents.codex.rollout_lines import Fact, Lifecycle, classify_line, names_lifecycle

CHUNK = 64 << 10
MAX_LINE = 4 << 20
SCAN_CAP = 16 << 20


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


def _add(items: list[Item], found: Lifecycle | Fact | None) -> None:
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
            oversized = ("malformed", "oversized lifecycle record") if names_lifecycle(piece) else ("oversized", 1)
            _add(items, oversized)
            skipping = False
        offsets = _offsets(base, lines)
        for line, offset in zip(reversed(lines), reversed(offsets), strict=True):
            reached = offset
            if not line.strip():
                continue
            found = classify_line(line, offset)
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
