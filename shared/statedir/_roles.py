"""Role locks (workers only): ``locks/<role>.lock`` and the owner record beside it.

:func:`take_role_lock` is the body of :meth:`StateDir.role_lock`; it takes the lock without
waiting and records who holds it, which :meth:`RoleLock.release` clears again. Loaded on first
use, so the hook path never imports it.

The lock is the platform seam's file lock (``flock``; ``msvcrt`` on Windows), the one the
mutation-lock shards take, on a file opened as theirs are (0600, a planted symlink removed, never
followed). The ``filelock`` package did the same with ``flock``, but its import (35 modules, with
``asyncio``) cost every process of the service ~1.8 MiB (docs/benchmarks.md, "Memory").
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from donebell.shared.statedir._base import LOCKS, encode, now
from donebell.shared.statedir._files import _lock_fd, _open_lock_file, _unlink_quietly, _unlock_fd, same_file_check

if TYPE_CHECKING:
    from donebell.shared.statedir import StateDir


class RoleLock:
    """A held role lock; :meth:`release` drops it and clears the owner record."""

    def __init__(self, state: StateDir, role: str, fd: int) -> None:
        self._state, self.role = state, role
        self._fd: int | None = fd
        self._same_file = same_file_check(state.path(LOCKS, f"{role}.lock"))

    def still_held(self) -> bool:
        """False once ``locks/<role>.lock`` is gone or is another file (the state directory was
        deleted or replaced): the OS lock this process holds then guards nothing, and a second
        supervisor or worker can take the new file. Checked before every pass (issue 15)."""
        return self._same_file is not None and self._same_file()

    def release(self) -> None:
        if self._fd is None:
            return
        if self.still_held():  # else the owner record beside the lock is a newer holder's
            _unlink_quietly(self._state.path(LOCKS, f"{self.role}.owner.json"))
        fd, self._fd = self._fd, None
        try:
            _unlock_fd(fd)
        finally:
            os.close(fd)


def take_role_lock(state: StateDir, role: str) -> RoleLock | None:
    """:meth:`StateDir.role_lock`: the lock and its owner record, or None if it is held."""
    path = state.path(LOCKS, f"{role}.lock")
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            os.unlink(path)  # a planted symlink: removed (the link itself), never followed
    except FileNotFoundError:
        pass
    fd = _open_lock_file(path)
    try:
        held = _lock_fd(fd, blocking=False)
    except BaseException:
        os.close(fd)
        raise
    if not held:
        os.close(fd)
        return None
    lock = RoleLock(state, role, fd)
    from donebell.shared.process.liveness import current_process_identity

    owner = {**current_process_identity(), "role": role, "locked_at": now()}
    try:
        state.write_file(state.path(LOCKS, f"{role}.owner.json"), encode(owner), durable=False)
    except BaseException:
        lock.release()
        raise
    return lock
