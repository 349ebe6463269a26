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


@dataclass(frozen=True)
class ThreadView:
    """The turns of one thread as its own record shows them."""

    path: str
    turns: int  # how many turns have started
    latest_turn: str | None  # the newest turn's id
    latest_done: str | None  # the newest turn that has ended
    active: bool  # the newest turn has not ended
    cwd: str | None


class DaemonError(Exception):
    """The agent's daemon could not be asked, or refused (``accepted``: a turn may be running)."""

    def __init__(self, message: str, *, accepted: bool = False, unreachable: bool = False) -> None:
        super().__init__(message)
        self.accepted = accepted
        self.unreachable = unreachable  # a stale socket: nothing was asked, the CLI's resume may go


def json_lines(path: str, markers: tuple[bytes, ...] = ()) -> list[dict[str, object]]:
    """The JSON objects of a JSONL file (only lines containing one of ``markers``, when given);
    a half-written last line or junk is not evidence. OSError (``NotARegularFile`` for a FIFO,
    device or directory) when it cannot be read."""
    out = []
    fd = open_regular(path)
    try:
        for raw in _complete_lines(fd):
            if markers and not any(m in raw for m in markers):
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    finally:
        os.close(fd)
    return out


def _complete_lines(fd: int) -> Iterator[bytes]:
    """The newline-terminated lines of ``fd`` up to its size at the start, each at most
    :data:`LINE_MAX` (a longer one is skipped); the bytes after the last newline are still being
    written and are not a line."""
    left = os.fstat(fd).st_size
    carry, skipping = b"", False
    while left > 0:
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            break
        left -= len(chunk)
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        for line in lines:
            if skipping:
                skipping = False  # the end of an oversized line
            elif len(line) <= LINE_MAX:
                yield line
        if len(carry) > LINE_MAX:
            carry, skipping = b"", True
