"""Incremental tailing of Codex rollout files: complete lines only, from a persisted cursor.

A rollout is append-only JSONL that Codex may be writing while we read. The rules
(docs/agent-facts.md, "Rollout tailing"):

* only complete, newline-terminated records are consumed; a partial trailing line stays in the
  file for the next scan (the cursor offset never passes it);
* a cursor is rewritten only when it advanced, never because the file was merely looked at;
* a different device/inode, or a file shorter than the cursor offset, is a replaced or
  truncated file: the caller restarts it from scratch; so is a file whose line just before the
  cursor no longer matches the cursor's fingerprint of it (:func:`line_fingerprint`: truncated
  and rewritten in place, possibly to the very same size). Only a file whose stat changed is
  checked, so an idle pass reads nothing;
* a record longer than :data:`MAX_RECORD_BYTES` is skipped (its first bytes are kept for a
  sniff) so memory stays bounded whatever a line holds.

Files are opened with ``O_NONBLOCK`` and checked to be regular, so a FIFO or device that someone
names like a rollout can never block a scanner.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from donebell.shared.bounded_read import file_sig, open_regular
from donebell.shared.records import base
from donebell.shared.statedir import InvalidRecord, StateDir, now

if TYPE_CHECKING:
    from donebell.shared.record_types import CursorRecord

MAX_RECORD_BYTES = 8 << 20  # a rollout line longer than this is skipped, not buffered
READ_CHUNK = 1 << 20
SNIFF_BYTES = 4096  # prefix of an oversized line kept to see what it was
FINGERPRINT_BYTES = 8192  # the cursor's last line is fingerprinted up to this many trailing bytes


@dataclass(frozen=True)
class FileStat:
    """What identifies a file version: device/inode, size and modification time."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str) -> FileStat | None:
        """The stat of a regular file at ``path``; None if absent or not a regular file."""
        sig = file_sig(path)
        return None if sig is None else cls(*sig)


def open_rollout(path: str) -> IO[bytes]:
    """Open for reading without ever blocking (``bounded_read.open_regular``: FIFOs refused); raises OSError.

    The reads that follow are bounded by :class:`LineReader`'s record cap, not by this file object.
    """
    fd = open_regular(path)
    try:
        if getattr(os, "O_NONBLOCK", 0):
            # Back to blocking mode: a raw read in non-blocking mode may return None instead of bytes.
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


@dataclass
class Line:
    """One complete record: bytes ``[start, end)`` of the file; ``data`` None if oversized."""

    start: int
    end: int
    data: bytes | None
    sniff: bytes = b""


class LineReader:
    """Yield complete lines from ``offset`` to the end of ``f``; keep a trailing partial line.

    After iteration, :attr:`offset` is the first byte not consumed and :attr:`skipping` says
    the reader is inside an oversized line whose rest must be discarded up to its newline.
    """

    def __init__(
        self, f: IO[bytes], offset: int, *, skipping: bool = False, max_record: int = MAX_RECORD_BYTES
    ) -> None:
        self.f, self.offset, self.skipping, self.max_record = f, offset, skipping, max_record

    def __iter__(self) -> Iterator[Line]:
        self.f.seek(self.offset)
        buf = bytearray()
        pos = self.offset  # file offset of buf[0]
        while True:
            chunk = self.f.read(READ_CHUNK)
            if not chunk:
                return
            if self.skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    pos += len(chunk)
                    self.offset = pos
                    continue
                pos += nl + 1
                chunk = chunk[nl + 1 :]
                self.skipping = False
                self.offset = pos
            buf += chunk
            start = 0
            while (nl := buf.find(b"\n", start)) >= 0:
                if nl - start > self.max_record:
                    yield Line(pos + start, pos + nl + 1, None, bytes(buf[start : start + SNIFF_BYTES]))
                else:
                    yield Line(pos + start, pos + nl + 1, bytes(buf[start:nl]))
                start = nl + 1
                self.offset = pos + start
            del buf[:start]
            pos += start
            if len(buf) > self.max_record:
                # An unterminated line already past the cap: report it once, drop the rest later.
                yield Line(pos, pos + len(buf), None, bytes(buf[:SNIFF_BYTES]))
                pos += len(buf)
                buf.clear()
                self.skipping = True
                self.offset = pos


def end_of_last_line(f: IO[bytes], size: int, max_record: int = MAX_RECORD_BYTES) -> tuple[int, bool]:
    """``(offset, skipping)`` just after the last newline before ``size`` (where to start at the end).

    Reads backwards in blocks, at most ``max_record`` bytes: a longer trailing partial line is
    skipped (``skipping`` True) rather than searched for.
    """
    pos = size
    block = 64 << 10
    while pos > 0 and size - pos < max_record:
        step = min(block, pos)
        f.seek(pos - step)
        data = f.read(step)
        nl = data.rfind(b"\n")
        if nl >= 0:
            return pos - step + nl + 1, False
        pos -= step
    return (0, False) if pos == 0 else (size, True)


def line_fingerprint(f: IO[bytes], offset: int) -> str | None:
    """A digest of the line ending at ``offset`` (its last :data:`FINGERPRINT_BYTES` at most).

    None at offset 0 (nothing read yet). One ``pread``-sized read, taken only when a cursor
    advances or a changed file is checked against its cursor.
    """
    if offset <= 0:
        return None
    start = max(0, offset - FINGERPRINT_BYTES)
    f.seek(start)
    data = f.read(offset - start)
    nl = data.rfind(b"\n", 0, len(data) - 1)
    return hashlib.blake2b(data[nl + 1 :], digest_size=16).hexdigest()


def cursor_key(path: str) -> str:
    """A cursor's record key: SHA-256 of the rollout path."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class Cursor:
    """Where a rollout has been read to, and what the unread part needs to be understood.

    ``meta`` holds the thread identity from ``session_meta`` (never message text); ``turns``
    maps recent turn ids to presence facts (user message seen, assistant message seen, invalid
    lines), so a restart in the middle of a turn still knows how the turn began.
    """

    path: str
    dev: int
    ino: int
    offset: int
    size: int
    mtime_ns: int
    skipping: bool = False
    thread_id: str | None = None
    meta: dict[str, Any] | None = None
    turns: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_turn: str | None = None
    invalid: dict[str, Any] = field(default_factory=lambda: {"count": 0})
    terminals: int = 0
    replay_floor: float | None = None  # replayed from byte 0: older terminal records are history
    line_fp: str | None = None  # line_fingerprint() at ``offset`` (None: not taken yet)
    created_at: float = field(default_factory=now)

    def same_file(self, st: FileStat) -> bool:
        return (self.dev, self.ino) == (st.dev, st.ino)

    def unchanged(self, st: FileStat) -> bool:
        return self.same_file(st) and (self.size, self.mtime_ns) == (st.size, st.mtime_ns)

    def copy(self) -> Cursor:
        clone = Cursor(**{**self.__dict__})
        clone.turns = {k: dict(v) for k, v in self.turns.items()}
        clone.invalid = dict(self.invalid)
        clone.meta = dict(self.meta) if self.meta is not None else None
        return clone

    def to_record(self, provider: str) -> CursorRecord:
        """The cursor as a record of ``provider`` (the agent whose file it reads)."""
        rec = base("cursor", cursor_key(self.path), provider)
        rec["created_at"] = self.created_at
        rec["updated_at"] = now()
        rec.update({k: v for k, v in self.__dict__.items() if k != "created_at"})
        return cast("CursorRecord", rec)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Cursor:
        """Rebuild from a record; raises InvalidRecord when a field has the wrong type."""
        try:
            cur = cls(
                path=str(rec["path"]),
                dev=int(rec["dev"]),
                ino=int(rec["ino"]),
                offset=int(rec["offset"]),
                size=int(rec["size"]),
                mtime_ns=int(rec["mtime_ns"]),
                skipping=bool(rec.get("skipping")),
                thread_id=rec.get("thread_id"),
                meta=rec.get("meta"),
                turns=dict(rec.get("turns") or {}),
                current_turn=rec.get("current_turn"),
                invalid=dict(rec.get("invalid") or {"count": 0}),
                terminals=int(rec.get("terminals") or 0),
                replay_floor=float(rec["replay_floor"]) if rec.get("replay_floor") is not None else None,
                line_fp=str(rec["line_fp"]) if rec.get("line_fp") is not None else None,
                created_at=float(rec.get("created_at") or now()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidRecord(f"cursor field: {type(exc).__name__}: {exc}") from None
        if cur.offset < 0 or (cur.meta is not None and not isinstance(cur.meta, dict)):
            raise InvalidRecord("cursor offset or meta out of range")
        return cur


class CursorStore:
    """The cursors of one namespace (``watch/local`` or ``watch/remote/<root>``), via StateDir."""

    def __init__(self, state: StateDir, folder: str, provider: str) -> None:
        self.state, self.folder, self.provider = state, folder, provider
        state.ensure_folder(folder)

    def load(self, path: str) -> Cursor | None:
        """The stored cursor of ``path``; None if absent. A broken one goes to ``dead/``."""
        key = cursor_key(path)
        try:
            rec = self.state.read(self.folder, key)
            cur = None if rec is None else Cursor.from_record(rec)
        except InvalidRecord as exc:
            self.state.dead_letter_invalid(self.folder, f"{key}.json", f"cursor: {exc}")
            return None
        if cur is not None and cur.path != path:
            return None  # a hash collision is not a cursor for this file
        return cur

    def save(self, cursor: Cursor) -> None:
        self.state.replace(self.folder, cursor.to_record(self.provider))

    def path_of(self, path: str) -> Path:
        return self.state.record_path(self.folder, cursor_key(path))


def close_quietly(f: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        f.close()


def cursor_updated_at(rec: dict[str, Any]) -> float | None:
    """When a cursor record was last written (else created), for retention."""
    for key in ("updated_at", "created_at"):
        value = rec.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None
