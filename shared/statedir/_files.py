"""File primitives: the bottom layer of :class:`~donebell.shared.statedir.StateDir`.

:class:`FileStore` is a root folder and the few operations every state change is built from, in
the spirit of maildir:

* a durable write goes to ``tmp/`` first (``O_EXCL``, never through a symlink) and is fsynced,
  then renamed over its target (:meth:`~FileStore.write_file`) or hard-linked to it so that an
  existing file wins (:meth:`~FileStore.create_file`), and the folder is fsynced;
* a read never follows a symlink, never blocks on a FIFO and accepts only a regular file;
* each counted filesystem operation first calls the package's crash-point seam
  (``statedir._base._step``: one counter for every operation of the process).

:class:`MutationLock` holds one ``mutation-locks/`` shard file with the platform's whole-file
lock (``shared/platform/files.py``: ``flock``, ``msvcrt`` on Windows) for the length of a
``with`` block; the OS drops it when its holder dies.

Standard library only, on ``os.path`` strings: the hook path imports this module.
"""

from __future__ import annotations

import errno
import os
import stat

from donebell.shared import platform
from donebell.shared.platform import files
from donebell.shared.statedir._base import TMP, InvalidRecord, StateDirReplaced, StateError, _step

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType

    #: A path argument: an ``os.path`` string or a :class:`~pathlib.Path`.
    StrPath = str | os.PathLike[str]

#: Windows conventions: no POSIX modes to check or tighten.
_IS_WINDOWS = platform.on_windows()
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


class FileStore:
    """A root folder and the durable file operations on it (its ``tmp/`` folder must exist)."""

    def __init__(self, root: StrPath) -> None:
        #: The root as an ``os.path`` string (what every method here works on).
        self.root_dir: str = os.fspath(root)
        self._root: Path | None = None
        self._fence: Callable[[], bool] | None = None

    def fence_with(self, still_ours: Callable[[], bool]) -> None:
        """Refuse every later change once ``still_ours()`` is False (a role passes its lock's
        ``still_held``): a new file before its ``tmp/`` file is made (a directory deleted after
        that takes the file with it), a move or removal before it touches the folder. A role
        mid-pass when its directory is deleted and re-created changes nothing in the new one."""
        self._fence = still_ours

    def _check_fence(self) -> None:
        if self._fence is not None and not self._fence():
            raise StateDirReplaced(errno.ESTALE, "state directory deleted or replaced under this role", self.root_dir)

    @property
    def root(self) -> Path:
        """The root as a :class:`~pathlib.Path` (``pathlib`` is imported on first use)."""
        if self._root is None:
            from pathlib import Path

            self._root = Path(self.root_dir)
        return self._root

    def path(self, *parts: str) -> str:
        """``os.path`` string of ``parts`` inside the root, e.g. ``path("locks", "x.json")``."""
        return os.path.join(self.root_dir, *parts)

    def write_file(self, path: StrPath, data: bytes, *, durable: bool = True) -> None:
        """Atomically create or replace ``path`` (inside the root) with ``data``."""
        path = os.fspath(path)
        hint = _stem(path)
        tmp = self._write_temp(data, hint) if durable else self._write_volatile(data, hint)
        try:
            _step()
            _replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        if durable:
            self._fsync_dir(_parent(path))

    def create_file(self, path: StrPath, data: bytes) -> bool:
        """Create ``path`` only if absent (link, not rename). Returns False if it existed."""
        path = os.fspath(path)
        tmp = self._write_temp(data, _stem(path))
        try:
            _step()
            os.link(tmp, path)
            created = True
        except FileExistsError:
            created = False
        finally:
            _step()
            _unlink_quietly(tmp)
        if created:
            self._fsync_dir(_parent(path))
        return created

    def read_bytes(self, path: StrPath, limit: int = 64 << 20) -> bytes | None:
        """Read a file without following a symlink; None if absent."""
        _step()
        try:
            # O_NONBLOCK: a FIFO planted in a record folder must not hang the reader (the fstat
            # below then refuses it); on a regular file the flag changes nothing.
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidRecord("is a symlink") from None
            if exc.errno == errno.ENXIO:  # a socket (or a device without a driver)
                raise InvalidRecord("not a regular file") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InvalidRecord("not a regular file")
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    raise InvalidRecord(f"larger than {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _write_temp(self, data: bytes, hint: str) -> str:
        path, fd = self._stage_temp(data, hint)
        try:
            _step()
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quietly(path)
            raise
        os.close(fd)
        return path

    def _stage_temp(self, data: bytes, hint: str) -> tuple[str, int]:
        """``data`` written to a new ``tmp/`` file, not flushed; its path and still open fd.

        The caller flushes it (:meth:`_write_temp`, or a group commit flushing many at once).
        """
        self._check_fence()
        tmp_dir = self.path(TMP)
        for _ in range(100):
            name = f"{hint[:40]}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
            path = os.path.join(tmp_dir, name)
            _step()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY, 0o600)
            except FileExistsError:
                continue
            try:
                view = memoryview(data)
                while view:
                    _step()
                    written = os.write(fd, view)
                    view = view[written:]
            except BaseException:
                os.close(fd)
                _unlink_quietly(path)
                raise
            return path, fd
        raise StateError("could not create a unique temporary file")

    def _write_volatile(self, data: bytes, hint: str) -> str:
        self._check_fence()
        path = self.path(TMP, f"{hint[:40]}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY, 0o600)
        try:
            os.write(fd, data)
        except BaseException:
            os.close(fd)
            _unlink_quietly(path)  # e.g. ENOSPC: leave no empty temp file behind
            raise
        os.close(fd)
        return path

    def _fsync_dir(self, path: StrPath) -> None:
        if not files.folders_fsync():
            return
        _step()
        files.fsync_folder(os.fspath(path))

    def _unlink(self, path: str) -> bool:
        """Remove ``path`` (a counted, fenced operation); False if it was already gone."""
        self._check_fence()
        _step()
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True


class MutationLock:
    """One held mutation-lock shard (``flock``), from :meth:`StateDir.mutation_lock`.

    A small class rather than ``contextlib.contextmanager``: importing ``contextlib`` costs the
    hook ~0.5 ms of start-up.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> None:
        fd = _open_lock_file(self.path)
        try:
            _lock_fd(fd, blocking=True)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock_fd(fd)
        finally:
            os.close(fd)


# --- helpers ------------------------------------------------------------------------------


def _open_lock_file(path: str) -> int:
    """Open (or create) a lock file of ours; a symlink planted in its place is removed, never followed."""
    flags = os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_BINARY
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    try:
        os.unlink(path)  # removes the link itself, not its target
    except FileNotFoundError:
        pass
    return os.open(path, flags, 0o600)


def same_file_check(path: str) -> Callable[[], bool] | None:
    """A check that ``path`` is still the file it is now (device, inode); None if there is none."""
    identity = file_identity(path)
    return None if identity is None else lambda: file_identity(path) == identity


def file_identity(path: str) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``path`` (followed), or None if it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _unlink_quietly(path: str) -> None:
    """Remove ``path`` if possible; cleanup after a failure must not mask that failure."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _stem(path: str) -> str:
    """The file name without its last suffix, like ``Path.stem`` (a temp-file name hint)."""
    name = os.path.basename(path)
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _parent(path: str) -> str:
    """The folder holding ``path``, like ``Path.parent`` (``.`` for a bare file name)."""
    return os.path.dirname(path) or "."


_replace = files.replace
_rename = files.rename
_lock_fd = files.lock_fd
_unlock_fd = files.unlock_fd
