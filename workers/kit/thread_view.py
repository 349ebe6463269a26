"""What the wake role reads of a thread: its turns as the agent's own record shows them.

Each agent reads its own record (``workers/agents/<name>/wake.py``) into a :class:`ThreadView`;
the wake role decides with it whether a ticket's turn is still the newest ended one and whether
the thread is busy. :class:`DaemonError` is how an agent's running daemon (Codex's app-server)
refuses or cannot be asked to start a turn.

The agent's files are read as every other reader reads them (:mod:`donebell.shared.bounded_read`):
opened non-blocking and refused unless a regular file (a FIFO planted under a rollout's name would
otherwise hang the role on ``open``), streamed in chunks with memory bounded to one chunk plus one
line (a line over :data:`LINE_MAX` is skipped unread: the records wanted are small), and only lines
that contain one of the caller's markers are parsed at all.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from donebell.shared.bounded_read import open_regular

#: Thread and session ids are UUIDs; anything else never reaches a glob or an argv.
SAFE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,79}$")
#: The longest line parsed; a turn's records are a few hundred bytes, a pasted image is megabytes.
LINE_MAX = 1 << 20
CHUNK = 1 << 16
#: What :func:`json_lines` keeps of one file to read only its new lines next time, and of how many.
KEPT_MAX = 4 << 20
KEPT_FILES = 64
HEAD_BYTES = 256


@dataclass(frozen=True)
class ThreadView:
    """The turns of one thread as its own record shows them."""

    path: str
    turns: int  # how many turns have started
    latest_turn: str | None  # the newest turn's id
    latest_done: str | None  # the newest turn that has ended
    active: bool  # the newest turn has not ended
    cwd: str | None
    #: Arguments the user's own run had that resuming it needs too (Codex: ``--skip-git-repo-check``
    #: for a thread ``codex exec`` started outside a git repository), before ``wake_<agent>_args``.
    resume_args: tuple[str, ...] = ()


class DaemonError(Exception):
    """The agent's daemon could not be asked, or refused (``accepted``: a turn may be running)."""

    def __init__(self, message: str, *, accepted: bool = False, unreachable: bool = False) -> None:
        super().__init__(message)
        self.accepted = accepted
        self.unreachable = unreachable  # a stale socket: nothing was asked, the CLI's resume may go


@dataclass(frozen=True)
class _Read:
    """What :func:`json_lines` kept of a file: its identity, how far it read, what it found."""

    dev: int
    ino: int
    head: bytes  # the file's first bytes: a file replaced under a reused inode differs here
    offset: int  # just after the last whole line read
    objects: tuple[dict[str, object], ...]
    kept: int  # bytes of the lines behind ``objects``


_reads: dict[tuple[str, tuple[bytes, ...]], _Read] = {}


def json_lines(path: str, markers: tuple[bytes, ...] = ()) -> list[dict[str, object]]:
    """The JSON objects of a JSONL file (only lines containing one of ``markers``, when given);
    a half-written last line or junk is not evidence. OSError (``NotARegularFile`` for a FIFO,
    device or directory) when it cannot be read.

    Agents only append to these files, so what was found is kept (up to :data:`KEPT_MAX` bytes of
    lines) and the next call reads only what was appended since; a file replaced (another inode,
    other first bytes) or shortened is read again from the start."""
    key = (path, markers)
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        os.lseek(fd, 0, os.SEEK_SET)
        head = os.read(fd, HEAD_BYTES)  # a regular file: one read returns what there is
        seen = _reads.get(key)
        if seen is None or (seen.dev, seen.ino, seen.head) != (st.st_dev, st.st_ino, head) or st.st_size < seen.offset:
            seen = _Read(st.st_dev, st.st_ino, head, 0, (), 0)
        objects, kept, offset = list(seen.objects), seen.kept, seen.offset
        for raw, end in _complete_lines(fd, seen.offset, st.st_size):
            offset = end
            obj = _parsed(raw, markers)
            if obj is not None:
                objects.append(obj)
                kept += len(raw or b"")
    finally:
        os.close(fd)
    if kept <= KEPT_MAX:
        if len(_reads) >= KEPT_FILES:
            _reads.clear()
        _reads[key] = _Read(st.st_dev, st.st_ino, head, offset, tuple(objects), kept)
    else:
        _reads.pop(key, None)
    return objects


def _parsed(raw: bytes | None, markers: tuple[bytes, ...]) -> dict[str, object] | None:
    if raw is None or (markers and not any(m in raw for m in markers)):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _complete_lines(fd: int, start: int, size: int) -> Iterator[tuple[bytes | None, int]]:
    """``(line, offset just after its newline)`` for each newline-terminated line of ``fd`` from
    ``start`` to ``size``; ``None`` for a line over :data:`LINE_MAX` (skipped unread: at most one
    chunk and :data:`LINE_MAX` bytes are held). The bytes after the last newline are still being
    written and are not a line."""
    os.lseek(fd, start, os.SEEK_SET)
    pos, left = start, size - start
    carry, dropped, skipping = b"", 0, False
    while left > 0:
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            break
        left -= len(chunk)
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        for line in lines:
            pos += dropped + len(line) + 1
            whole = not skipping and len(line) <= LINE_MAX
            dropped, skipping = 0, False
            yield (line if whole else None), pos
        if len(carry) > LINE_MAX:
            dropped, carry, skipping = dropped + len(carry), b"", True
