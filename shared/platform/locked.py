"""Is this file locked by another process? Asked without ever blocking and, where the platform
allows, without touching the lock at all.

* ``proc-locks`` (Linux): the kernel's table of held locks, ``/proc/locks``, matched by device
  and inode. donebell never takes the lock, not even for a moment (an agent taking it then
  would fail).
* ``lock-probe`` (macOS, Windows, and portable mode anywhere): open the file non-blocking (a
  FIFO or a hung special file planted there can never stall the caller), refuse anything but a
  regular file, then try a shared lock without waiting (``flock`` where the platform has it,
  else ``msvcrt``) and release it at once. For that moment donebell holds a shared lock: an
  agent trying to take the lock exclusively right then sees it held, as it would see any reader.

Either answer is evidence for a caller that has others (a wrong "open" costs a fallback path,
not a lost notification).
"""

from __future__ import annotations

import os
import stat

from donebell.shared import platform


def held_by_another(path: str) -> bool:
    """Whether some process holds a lock on ``path`` (False: none, or not a regular file)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if platform.mechanism("file_locked") == "proc-locks":
        try:
            with open("/proc/locks", encoding="ascii", errors="replace") as f:
                return _listed(f.read(), st)
        except OSError:  # no procfs mounted: probe instead
            pass
    return _probe(path)


def _listed(table: str, st: os.stat_result) -> bool:
    """Whether ``/proc/locks`` text lists a held (not waiting) lock on the file ``st`` describes."""
    where = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":  # a waiter, not a holder
            continue
        parts = fields[5].split(":")
        try:
            if len(parts) == 3 and (int(parts[0], 16), int(parts[1], 16), int(parts[2])) == where:
                return True
        except ValueError:
            continue
    return False


def _probe(path: str) -> bool:
    """A shared, non-blocking lock try on a non-blocking descriptor, released at once."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO or device since the stat
            return False
        return not _try_shared(fd)
    finally:
        os.close(fd)  # closing releases a lock the try took


def _try_shared(fd: int) -> bool:
    """True if a shared lock could be taken (so no one holds it exclusively)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: byte-range locks instead
        return _try_msvcrt(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # the file system cannot lock (some network shares): no evidence of a holder
    return True


def _try_msvcrt(fd: int) -> bool:  # pragma: no cover - exercised only on Windows
    msvcrt = __import__("msvcrt")  # typeshed declares its names on Windows only
    try:
        msvcrt.locking(fd, msvcrt.LK_NBRLCK, 1)
    except OSError:
        return False
    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    return True
