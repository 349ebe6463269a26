"""Atomic replace, folder fsync and whole-file locks: the file semantics that differ by platform.

* ``atomic_replace``: ``rename`` (POSIX: ``os.replace`` is atomic and never refused because a
  reader has the target open) or ``rename-retry`` (Windows, and portable mode anywhere): a
  rename refused with a sharing violation (an antivirus or indexer holding the target for a
  moment) is tried again for up to ~2 s; a folder fsync is best effort (Windows cannot open a
  folder). On Linux in portable mode the retry never triggers (no sharing violations) but the
  same code runs.
* ``file_lock``: ``flock`` (POSIX) or ``msvcrt`` byte-range locking (Windows); a lock the OS
  drops when its holder dies, whichever it is. A convention of the host: portable mode keeps it.

Standard library only: the hook path imports this module.
"""

from __future__ import annotations

import os
import time

from donebell.shared import platform

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: Windows sharing violations while a scanner or antivirus holds the target.
SHARING_ERRORS = frozenset({5, 32, 33})
_RETRIES = 20


def replace(src: str, dst: str) -> None:
    """``os.replace(src, dst)``, retried on a sharing violation where the mechanism says so."""
    _retrying(os.replace, src, dst)


def rename(src: str, dst: str) -> None:
    """``os.rename(src, dst)`` (fails if ``dst`` exists on Windows), retried likewise."""
    _retrying(os.rename, src, dst)


def _retrying(op: Callable[[str, str], None], src: str, dst: str) -> None:
    if platform.mechanism("atomic_replace") == "rename":
        op(src, dst)
        return
    for attempt in range(_RETRIES):
        try:
            op(src, dst)
            return
        except PermissionError as exc:
            if getattr(exc, "winerror", None) not in SHARING_ERRORS or attempt == _RETRIES - 1:
                raise
            time.sleep(0.01 * (attempt + 1))


def folders_fsync() -> bool:
    """Whether a folder can be opened and fsynced to make a rename in it durable (not Windows)."""
    return not platform.on_windows()


def fsync_folder(path: str) -> None:
    """fsync the folder ``path`` (call only where :func:`folders_fsync`); with ``rename-retry``
    a folder that cannot be opened is skipped rather than failing the write it follows."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if platform.mechanism("atomic_replace") == "rename":
            raise
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_fd(fd: int, *, blocking: bool) -> bool:
    """Take an exclusive lock on the open file ``fd``; False if another holds it (non-blocking)."""
    if platform.mechanism("file_lock") == "msvcrt":  # pragma: no cover - exercised only on Windows
        return _msvcrt_lock(fd, blocking=blocking)
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return True
    except BlockingIOError:
        return False


def unlock_fd(fd: int) -> None:
    """Release :func:`lock_fd`'s lock (closing ``fd`` releases it too)."""
    if platform.mechanism("file_lock") == "msvcrt":  # pragma: no cover - exercised only on Windows
        msvcrt = __import__("msvcrt")
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def _msvcrt_lock(fd: int, *, blocking: bool) -> bool:  # pragma: no cover - exercised only on Windows
    msvcrt = __import__("msvcrt")  # typeshed declares its names on Windows only
    mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK
    while True:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, mode, 1)
            return True
        except OSError:
            if not blocking:
                return False
