"""Bounded reads of files another program writes: never block, never read more than asked.

Every reader of a rollout, a transcript or an index goes through here (docs/hooks.md, "Reading
agent files"). The rules, stated once:

* open read-only and **non-blocking**, then ``fstat`` the open descriptor: anything but a regular
  file (a FIFO, device, socket or directory planted where a rollout should be) is refused with
  :class:`NotARegularFile` before a single byte is read, so neither a hook nor a worker can hang
  on it. A symlink is followed like any path (Codex and Claude never write one, and the check is
  on what it names);
* read at most the caller's bound, from the head (:func:`read_first_line`, :func:`read_from`) or
  the tail (:func:`read_tail`, :func:`reverse_lines`);
* a tail window that starts inside the file starts mid-line (and maybe mid-UTF-8 sequence): its
  first, cut line is dropped (:func:`complete_lines_region`); bytes after the last newline are a
  record still being written and are never read as a line.

Standard library only, and only ``os``/``stat``/``errno``: the hook path imports this module.
"""

from __future__ import annotations

import errno
import os
from stat import S_ISREG as _S_ISREG

from donebell.shared import lean_json as json

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    PathLike = str | os.PathLike[str]

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_HEAD_CHUNK = 1 << 16


class NotARegularFile(OSError):
    """The path names a FIFO, device, socket or directory: never read as an agent's file."""


def file_sig(path: str) -> list[int] | None:
    """``[dev, ino, size, mtime_ns]`` of a regular file; None if absent or not a regular file.

    The identity every cursor and the remote quick check compare (a replaced file has another
    inode, a truncated one another size). Any other OSError propagates (the caller decides whether
    that is an unreadable root).
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not _S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def open_regular(path: PathLike) -> int:
    """A read-only descriptor of the regular file at ``path``; raises OSError (or NotARegularFile).

    Opened with O_NONBLOCK, so opening a FIFO cannot wait for a writer; the caller reads a regular
    file only, where O_NONBLOCK changes nothing.
    """
    fd = os.open(path, _READ_FLAGS)
    try:
        if not _S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file", os.fsdecode(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_first_line(path: PathLike, cap: int) -> bytes | None:
    """The first newline-terminated line (without its newline), or None: absent, unreadable, not a
    regular file, unterminated, or longer than ``cap``.

    Read in chunks: the line wanted is small next to the file behind it.
    """
    try:
        fd = open_regular(path)
    except OSError:
        return None
    data = bytearray()
    try:
        while len(data) < cap:
            chunk = os.read(fd, min(_HEAD_CHUNK, cap - len(data)))
            if not chunk:
                return None
            end = chunk.find(b"\n")
            if end >= 0:
                return bytes(data + chunk[:end])
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def read_from(path: PathLike, offset: int, cap: int) -> bytes:
    """At most ``cap`` bytes of the regular file at ``path`` from byte ``offset``; raises OSError."""
    fd = open_regular(path)
    try:
        return _read_exactly(fd, offset, cap)
    finally:
        os.close(fd)


class TailWindow:
    """The last bytes of a file: ``data`` is file bytes ``[offset, offset + len(data))`` of ``size``.

    A plain class with ``__slots__``: a dataclass would pull ``inspect``/``ast`` into every hook.
    """

    __slots__ = ("data", "offset", "size")

    def __init__(self, data: bytes, offset: int, size: int) -> None:
        self.data, self.offset, self.size = data, offset, size

    def complete_region(self) -> tuple[int, int]:
        """``(start, end)`` of the whole, newline-terminated lines in :attr:`data`."""
        return complete_lines_region(self.data, self.offset)

    def complete_lines(self) -> list[bytes]:
        """The non-blank whole lines of the window, oldest first, without their newlines."""
        start, end = self.complete_region()
        return [line for line in self.data[start:end].split(b"\n") if line.strip()]

    @property
    def partial(self) -> bool:
        """Bytes follow the last whole line: a record still being written, left out of every line."""
        return self.complete_region()[1] < len(self.data)


def read_tail(path: PathLike, cap: int) -> TailWindow:
    """The last ``cap`` bytes of the regular file at ``path``; raises OSError."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        offset = max(0, size - cap)
        return TailWindow(_read_exactly(fd, offset, size - offset), offset, size)
    finally:
        os.close(fd)


def utf8_boundary(data: bytes, start: int = 0) -> int:
    """The first index at or after ``start`` that is not a UTF-8 continuation byte."""
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return start


def complete_lines_region(window: bytes, offset: int) -> tuple[int, int]:
    """``(start, end)`` of the whole, newline-terminated lines inside ``window`` (file byte ``offset``).

    A window that starts inside the file (``offset > 0``) starts inside a line, perhaps inside a
    multibyte character: it is advanced to a code-point boundary and past that cut line. ``end``
    is just after the last newline; anything after it is still being written.
    """
    start = 0
    if offset > 0:
        start = utf8_boundary(window)
        newline = window.find(b"\n", start)
        start = len(window) if newline < 0 else newline + 1
    end = window.rfind(b"\n") + 1
    return start, max(start, end)


def reverse_lines(
    path: PathLike, cap: int, *, max_line: int = 4 << 20, chunk: int = 64 << 10
) -> Iterator[tuple[bytes, int]]:
    """Non-blank complete lines of ``path`` newest first as ``(line, offset)``, reading at most ``cap`` bytes.

    Memory stays bounded: one chunk plus one partial line (a line longer than ``max_line`` is
    skipped). An unterminated last line is not yielded. Raises OSError if unreadable.
    """
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        pos, carry, first, floor = size, b"", True, max(0, size - cap)
        while pos > floor:
            n = min(chunk, pos - floor)
            pos -= n
            buf = _read_exactly(fd, pos, n) + carry
            if first:
                cut = buf.rfind(b"\n")
                if cut < 0:
                    carry = buf if len(buf) <= max_line else b""
                    continue
                buf, first = buf[: cut + 1], False
            parts = buf.split(b"\n")
            parts.pop()  # empty: buf ends at a line boundary
            head = parts.pop(0) if pos > 0 else None
            at = pos + (len(head) + 1 if head is not None else 0)
            offsets = []
            for part in parts:
                offsets.append(at)
                at += len(part) + 1
            for part, offset in zip(reversed(parts), reversed(offsets), strict=True):
                if part.strip():
                    yield part, offset
            carry = b"" if head is None else head + b"\n"
            if len(carry) > max_line:
                carry = b""  # an oversized line: skipped whole (its start is beyond the bound)
        if carry and pos == 0 and not first:
            line = carry[:-1]
            if line.strip():
                yield line, 0
    finally:
        os.close(fd)


def _read_exactly(fd: int, offset: int, count: int) -> bytes:
    """``count`` bytes from ``offset`` (fewer only at end of file): a read may return less than asked.

    lseek + read rather than ``os.pread``, which Windows lacks.
    """
    os.lseek(fd, offset, os.SEEK_SET)
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.read(fd, count)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def parse_record(line: bytes) -> dict[str, Any] | None:
    """One JSONL record; None if it is not valid UTF-8 JSON of an object (skipped, never fatal)."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None
