"""The state directory: the only channel between donebell's processes.

Every filesystem operation on the state directory goes through this module (write, promote,
receipt, lock, health, log), in the spirit of Postfix's queue directories and maildir:

* a state transition is a rename you can inspect with ``ls``;
* a record is written to ``tmp/`` first (``O_EXCL``), fsynced, then renamed or linked into its
  folder and the folder fsynced, so no reader ever sees a partial record;
* a record is complete only if it parses and carries ``schema``; anything else is moved to
  ``dead/`` as a sanitized minimal dead letter with a reason, and the caller goes on;
* changes to one event key serialize on one of a bounded set of sharded mutation locks.

For crash testing, ``DONEBELL_CRASH_AT=N`` makes the process ``os._exit(86)`` at the N-th
filesystem operation (see :func:`_step`).

Standard library only: the hook path imports this module. It works on ``os.path`` strings and
imports neither ``pathlib`` nor ``typing`` nor ``contextlib`` (~6 ms of a hook's start-up); the
:class:`~pathlib.Path` views (:attr:`StateDir.root`, :meth:`StateDir.record_path`, ...) are
created on first use for the callers that want them.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time

from donebell.shared.keys import is_event_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType
    from typing import Any

    #: A path argument: an ``os.path`` string or a :class:`~pathlib.Path`.
    StrPath = str | os.PathLike[str]

SCHEMA_VERSION = 1

#: Folders in pipeline order: a key is looked up in this order (see :meth:`StateDir.locate`).
PIPELINE = ("pending", "outbox", "sent", "suppressed", "dead")
RECEIPT_FOLDERS = ("sent", "suppressed", "dead")
FOLDERS = (*PIPELINE, "watch", "claude", "mutation-locks", "tmp", "health", "locks")
MUTATION_LOCK_SHARDS = 64
LOG_NAME = "notify.log"
LOG_MAX_BYTES = 1 << 20

_IS_WINDOWS = sys.platform == "win32"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
# Windows sharing violations while a scanner or antivirus holds the target.
_WINDOWS_SHARING_ERRORS = {5, 32, 33}


class StateError(Exception):
    """Base class of the errors this module raises on purpose."""


class UnsafeStateDir(StateError):
    """The state directory (or one of its folders) is a symlink or not a directory.

    Raised instead of following the link: state is never written through a planted symlink.
    """


class InvalidRecord(StateError):
    """A file in a record folder does not parse, is not UTF-8, or lacks ``schema``/``key``.

    The caller moves it aside with :meth:`StateDir.dead_letter_invalid` and goes on.
    """


# --- deterministic crash points (test seam) -------------------------------------------

_crash_at = int(os.environ.get("DONEBELL_CRASH_AT", "0") or 0)
_op_count = 0


def _step() -> None:
    """Count one filesystem operation; die here if it is the one ``DONEBELL_CRASH_AT`` names."""
    global _op_count
    if _crash_at:
        _op_count += 1
        if _op_count == _crash_at:
            os._exit(86)


def operations_done() -> int:
    """How many counted filesystem operations this process made (for crash-point tests)."""
    return _op_count


# --- encoding -----------------------------------------------------------------------------


def encode(obj: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, the on-disk form of every record."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=False).encode("utf-8")


def decode(data: bytes, *, expect_key: str | None = None) -> dict[str, Any]:
    """Parse a record; raise :class:`InvalidRecord` unless it is a complete one."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidRecord(f"not valid UTF-8 JSON: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise InvalidRecord("not a JSON object")
    if not isinstance(obj.get("schema"), int):
        raise InvalidRecord("missing schema version")
    if obj["schema"] > SCHEMA_VERSION:
        raise InvalidRecord(f"unknown schema version {obj['schema']}")
    if expect_key is not None and obj.get("key") != expect_key:
        raise InvalidRecord("key does not match the file name")
    return obj


def now() -> float:
    """Wall-clock seconds; the one clock records are stamped with (tests may shift it)."""
    return time.time() + _clock_offset()


def _clock_offset() -> float:
    raw = os.environ.get("DONEBELL_CLOCK_OFFSET")
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0


# --- the directory ----------------------------------------------------------------------


class StateDir:
    """One state directory root; cheap to construct, safe to share between threads."""

    def __init__(self, root: StrPath) -> None:
        #: The root as an ``os.path`` string (what every method here works on).
        self.root_dir: str = os.fspath(root)
        self._root: Path | None = None

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

    # layout ------------------------------------------------------------------------------

    def ensure(self) -> StateDir:
        """Create the root and its folders (0700), refusing symlinks; tighten loose modes."""
        for path in (self.root_dir, *(self.path(f) for f in FOLDERS)):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                _step()
                try:
                    os.makedirs(path, mode=0o700, exist_ok=True)
                except FileExistsError:
                    pass
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise UnsafeStateDir(f"{path} is not a plain directory (symlink or file); refusing to use it")
            if not _IS_WINDOWS and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, 0o700)
        return self

    def ensure_folder(self, name: str) -> Path:
        """Create a nested record folder such as ``watch/local`` (0700, no symlinks); its path.

        For namespaces below the fixed folders (rollout cursors); the record methods then take
        ``name`` as their ``folder`` argument.
        """
        from pathlib import Path  # not on the hook path (rollout cursors)

        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or any(p in ("", ".", "..") for p in parts):
            raise StateError(f"not a relative folder name: {name!r}")
        path = self.root
        for part in parts:
            path = path / part
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                _step()
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    pass
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise UnsafeStateDir(f"{path} is not a plain directory (symlink or file); refusing to use it")
        return path

    def folder(self, name: str) -> Path:
        return self.root / name

    def record_path(self, folder: str, key: str) -> Path:
        return self.root / folder / f"{key}.json"

    def _record_file(self, folder: str, key: str) -> str:
        """:meth:`record_path` as an ``os.path`` string."""
        return os.path.join(self.root_dir, folder, f"{key}.json")

    # low-level durable write -------------------------------------------------------------

    def _write_temp(self, data: bytes, hint: str) -> str:
        tmp_dir = self.path("tmp")
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
                _step()
                os.fsync(fd)
            except BaseException:
                os.close(fd)
                _unlink_quietly(path)
                raise
            os.close(fd)
            return path
        raise StateError("could not create a unique temporary file")

    def _fsync_dir(self, path: StrPath) -> None:
        if _IS_WINDOWS:
            return
        _step()
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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

    def _write_volatile(self, data: bytes, hint: str) -> str:
        path = self.path("tmp", f"{hint[:40]}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY, 0o600)
        try:
            os.write(fd, data)
        except BaseException:
            os.close(fd)
            _unlink_quietly(path)  # e.g. ENOSPC: leave no empty temp file behind
            raise
        os.close(fd)
        return path

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

    # records -----------------------------------------------------------------------------

    def create(self, folder: str, record: dict[str, Any]) -> bool:
        """Durably create ``folder/<key>.json`` if absent; False if it already existed."""
        return self.create_file(self._record_file(folder, record["key"]), encode(record))

    def replace(self, folder: str, record: dict[str, Any]) -> None:
        """Durably create or replace ``folder/<key>.json``."""
        self.write_file(self._record_file(folder, record["key"]), encode(record))

    def read(self, folder: str, key: str) -> dict[str, Any] | None:
        """The record, or None if absent. Raises :class:`InvalidRecord` for a broken one."""
        data = self.read_bytes(self._record_file(folder, key))
        return None if data is None else decode(data, expect_key=key)

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

    def keys(self, folder: str) -> list[str]:
        """Keys of the records in ``folder``, oldest file first (by mtime, then name)."""
        entries = []
        try:
            with os.scandir(self.path(folder)) as it:
                for entry in it:
                    name = entry.name
                    if name.endswith(".json") and is_event_key(name[:-5]):
                        try:
                            entries.append((entry.stat(follow_symlinks=False).st_mtime, name[:-5]))
                        except FileNotFoundError:
                            continue
        except FileNotFoundError:
            return []
        entries.sort()
        return [key for _, key in entries]

    def stray_files(self, folder: str) -> list[str]:
        """Names in a record folder that are not ``<key>.json`` (debris to dead-letter)."""
        try:
            names = os.listdir(self.path(folder))
        except FileNotFoundError:
            return []
        return [n for n in names if not (n.endswith(".json") and is_event_key(n[:-5]))]

    def changed_since(self, folder: str, wall_time: float) -> bool:
        """True if a record in ``folder`` was written at or after ``wall_time`` (file mtime)."""
        try:
            with os.scandir(self.path(folder)) as it:
                for entry in it:
                    if entry.name.endswith(".json"):
                        try:
                            if entry.stat(follow_symlinks=False).st_mtime >= wall_time - 0.05:
                                return True
                        except FileNotFoundError:
                            continue
        except FileNotFoundError:
            return False
        return False

    def count(self, folder: str) -> int:
        try:
            return sum(1 for n in os.listdir(self.path(folder)) if n.endswith(".json"))
        except FileNotFoundError:
            return 0

    def exists(self, folder: str, key: str) -> bool:
        return os.path.lexists(self._record_file(folder, key))

    def locate(self, key: str) -> str | None:
        """The folder holding ``key``, checked in pipeline order.

        Transitions create the next state before removing the previous one (or rename), so a
        forward-order check can never miss a key that is moving on while it looks.
        """
        for folder in PIPELINE:
            if self.exists(folder, key):
                return folder
        return None

    def move(self, src: str, dst: str, key: str) -> bool:
        """Claim/promote by rename; False if the source vanished (another process won)."""
        if self.exists(dst, key):
            if not self.exists(src, key):
                return False  # someone else already moved it
            raise StateError(f"{dst}/{key}.json already exists; refusing to overwrite it by rename")
        _step()
        try:
            _rename(self._record_file(src, key), self._record_file(dst, key))
        except FileNotFoundError:
            return False
        self._fsync_dir(self.path(dst))
        self._fsync_dir(self.path(src))
        return True

    def remove(self, folder: str, key: str) -> bool:
        """Remove a record; False if it was already gone."""
        _step()
        try:
            os.unlink(self._record_file(folder, key))
        except FileNotFoundError:
            return False
        self._fsync_dir(self.path(folder))
        return True

    def finish(self, src: str, receipt_folder: str, receipt: dict[str, Any]) -> bool:
        """Write a receipt, then remove the ``src`` record of the same key.

        The receipt exists before the source disappears, so a crash in between leaves both (a
        recoverable state: a record whose receipt exists is never acted on again).
        Returns False if a receipt already existed (the source is removed all the same).
        """
        created = self.create(receipt_folder, receipt)
        self.remove(src, receipt["key"])
        return created

    def dead_letter_invalid(self, folder: str, name: str, reason: str) -> str:
        """Move an unparsable file out of ``folder`` into ``dead/`` with a sanitized minimal record.

        The original bytes are kept beside it as ``dead/<key>.raw`` (never deleted by retention
        before the dead letter itself) so nothing is silently lost. Returns the dead key used.
        """
        src = self.path(folder, name)
        # A fresh key, not the file's own: the real key stays free, so a later signal for the
        # same turn can still create a good record instead of deduplicating against the wreck.
        key = _hash_name(f"{folder}/{name}/{now()}/{os.urandom(8).hex()}")
        raw_path = self.path("dead", f"{key}.raw")
        _step()
        try:
            _rename(src, raw_path)
        except FileNotFoundError:
            return key
        letter = {
            "schema": SCHEMA_VERSION,
            "kind": "dead-letter",
            "key": key,
            "provider": "unknown",
            "created_at": now(),
            "status": "dead",
            "reason": "invalid-record",
            "detail": reason[:200],
            "from_folder": folder,
            "original_name": name[:200],
        }
        if not self.create("dead", letter):
            self.replace("dead", letter)
        self.log("warning", "invalid record moved to dead/", folder=folder, key=key, reason=reason[:200])
        return key

    # locks -------------------------------------------------------------------------------

    def mutation_lock(self, key: str) -> MutationLock:
        """Serialize changes to one event key across processes (one of 64 shard files).

        Use as ``with state.mutation_lock(key): ...``; the file is opened and locked on entry.
        """
        shard = int(key[:8], 16) % MUTATION_LOCK_SHARDS if is_event_key(key) else 0
        return MutationLock(self.path("mutation-locks", f"shard-{shard:02d}.lock"))

    def role_lock(self, role: str) -> RoleLock | None:
        """Take ``locks/<role>.lock`` without waiting; None if another live process holds it.

        The OS drops the lock when its holder dies, so a crashed owner never blocks a restart;
        ``locks/<role>.owner.json`` (pid + process start time) says who holds it, for ``status``
        and for the hook's "is a delivery worker running?" check (see ``liveness``).
        """
        import filelock  # workers only; the hook path never takes a role lock

        path = self.path("locks", f"{role}.lock")
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                os.unlink(path)  # a planted symlink: removed (the link itself), never followed
        except FileNotFoundError:
            pass
        lock = filelock.FileLock(path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            return None
        from donebell.shared.liveness import current_process_identity

        owner = {**current_process_identity(), "role": role, "locked_at": now()}
        self.write_file(self.path("locks", f"{role}.owner.json"), encode(owner), durable=False)
        return RoleLock(self, role, lock)

    def lock_owner(self, role: str) -> dict[str, Any] | None:
        """The last recorded owner of a role lock (may be dead: check with ``liveness``)."""
        try:
            data = self.read_bytes(self.path("locks", f"{role}.owner.json"), limit=1 << 16)
            return None if data is None else json.loads(data.decode("utf-8"))
        except (InvalidRecord, ValueError, OSError):
            return None

    # health ------------------------------------------------------------------------------

    def write_health(self, role: str, health: dict[str, Any]) -> None:
        """Atomically replace ``health/<role>.json``; volatile, so no fsync (daemontools-style)."""
        self.write_file(self.path("health", f"{role}.json"), encode(health), durable=False)

    def read_health(self, role: str) -> dict[str, Any] | None:
        try:
            data = self.read_bytes(self.path("health", f"{role}.json"), limit=1 << 20)
            return None if data is None else json.loads(data.decode("utf-8"))
        except (InvalidRecord, ValueError, OSError):
            return None

    # log ---------------------------------------------------------------------------------

    def log(self, level: str, message: str, **fields: Any) -> None:
        """Append one JSON line to the bounded ``notify.log``; never raises.

        Callers pass no secrets: records and health hold none, and config secrets never reach
        this function.
        """
        line = {"ts": round(now(), 3), "pid": os.getpid(), "level": level, "msg": message, **fields}
        try:
            data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode("utf-8")
            path = self.path(LOG_NAME)
            # O_NONBLOCK: a FIFO planted as the log must not hang a hook (no reader: ENXIO).
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return
                os.write(fd, data)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            # Hard bound even if maintenance never runs: 2x the budget rotates in place.
            if size > 2 * LOG_MAX_BYTES:
                self.rotate_log()
        except Exception:  # noqa: BLE001 - logging must never hurt the caller
            pass

    def rotate_log(self) -> None:
        """Keep one rotated generation: ``notify.log`` becomes ``notify.log.1``."""
        try:
            _replace(self.path(LOG_NAME), self.path(f"{LOG_NAME}.1"))
        except OSError:
            pass

    def log_size(self) -> int:
        """Current size of ``notify.log`` in bytes (0 if absent)."""
        try:
            return os.lstat(self.path(LOG_NAME)).st_size
        except OSError:
            return 0

    # retention (maintenance) -------------------------------------------------------------

    def expire(self, folder: str, older_than: float) -> int:
        """Delete receipts in ``folder`` whose file is older than ``older_than`` (epoch seconds).

        Only ``<key>.json`` files are considered (stray names are left for dead-lettering), and a
        receipt whose key still has a ``pending/`` or ``outbox/`` record is kept: it is what stops
        that record from being delivered again. In ``dead/`` a letter's ``<key>.raw`` (the
        original bytes) goes after its letter, never before; a ``.raw`` whose letter is gone (a
        crash between the two unlinks) expires by its own age. Receipts are write-once, so the
        file's mtime is when the receipt was made. Returns how many files were deleted.
        """
        if folder not in RECEIPT_FOLDERS:
            raise StateError(f"expire() works on receipt folders only, not {folder!r}")
        base = self.path(folder)
        deleted = 0
        for name, st in _scan(base):
            if not name.endswith(".json") or not is_event_key(name[:-5]) or st.st_mtime >= older_than:
                continue
            key = name[:-5]
            if self.exists("pending", key) or self.exists("outbox", key):
                continue
            if self._unlink(os.path.join(base, name)):
                deleted += 1
            if folder == "dead" and self._unlink(os.path.join(base, f"{key}.raw")):
                deleted += 1
        if folder == "dead":
            for name, st in _scan(base):
                # A rename keeps the original mtime: ctime says when it became a .raw.
                if (
                    name.endswith(".raw")
                    and is_event_key(name[:-4])
                    and max(st.st_mtime, st.st_ctime) < older_than
                    and not os.path.lexists(os.path.join(base, f"{name[:-4]}.json"))
                    and self._unlink(os.path.join(base, name))
                ):
                    deleted += 1
        return deleted

    def sweep_tmp(self, older_than: float) -> int:
        """Delete ``tmp/`` entries (debris of interrupted writes) last modified before ``older_than``."""
        base = self.path("tmp")
        return sum(
            1
            for name, st in _scan(base)
            if not stat.S_ISDIR(st.st_mode) and st.st_mtime < older_than and self._unlink(os.path.join(base, name))
        )

    def sweep_mutation_locks(self) -> int:
        """Delete files in ``mutation-locks/`` that are not one of the current shard files."""
        base = self.path("mutation-locks")
        current = {f"shard-{n:02d}.lock" for n in range(MUTATION_LOCK_SHARDS)}
        return sum(
            1
            for name, st in _scan(base)
            if name not in current and not stat.S_ISDIR(st.st_mode) and self._unlink(os.path.join(base, name))
        )

    def _unlink(self, path: str) -> bool:
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


class RoleLock:
    """A held role lock; :meth:`release` drops it and clears the owner record."""

    def __init__(self, state: StateDir, role: str, lock: Any) -> None:
        self._state, self.role, self._lock = state, role, lock

    def release(self) -> None:
        _unlink_quietly(self._state.path("locks", f"{self.role}.owner.json"))
        self._lock.release()


# --- platform helpers ---------------------------------------------------------------------


def _scan(folder: str) -> list[tuple[str, os.stat_result]]:
    """``(name, lstat)`` of each entry in ``folder``; empty if the folder is missing."""
    out = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                try:
                    out.append((entry.name, entry.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue
    except FileNotFoundError:
        return []
    return out


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


def _hash_name(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _retry_windows(op: Any, src: str, dst: str) -> None:
    for attempt in range(20):
        try:
            op(src, dst)
            return
        except PermissionError as exc:
            if not _IS_WINDOWS or getattr(exc, "winerror", None) not in _WINDOWS_SHARING_ERRORS or attempt == 19:
                raise
            time.sleep(0.01 * (attempt + 1))


def _replace(src: str, dst: str) -> None:
    _retry_windows(os.replace, src, dst)


def _rename(src: str, dst: str) -> None:
    _retry_windows(os.rename, src, dst)


if sys.platform == "win32":  # pragma: no cover - exercised only on Windows (mypy checks the platform it runs on)
    import msvcrt

    def _lock_fd(fd: int, *, blocking: bool) -> bool:
        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK
        while True:
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, mode, 1)
                return True
            except OSError:
                if not blocking:
                    return False

    def _unlock_fd(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_fd(fd: int, *, blocking: bool) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            return True
        except BlockingIOError:
            return False

    def _unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def open_state_dir() -> StateDir:
    """The state directory named by the environment, created if needed."""
    from donebell.shared.paths import state_dir_str

    return StateDir(state_dir_str()).ensure()
