"""The state directory: the only channel between donebell's processes.

Every filesystem operation on the state directory goes through this package (write, promote,
receipt, lock, health, log), in the spirit of Postfix's queue directories and maildir:

* a state transition is a rename you can inspect with ``ls``;
* a record is written to ``tmp/`` first (``O_EXCL``), fsynced, then renamed or linked into its
  folder and the folder fsynced, so no reader ever sees a partial record;
* a record is complete only if it parses and carries ``schema``; anything else is moved to
  ``dead/`` as a sanitized minimal dead letter with a reason, and the caller goes on;
* changes to one event key serialize on one of a bounded set of sharded mutation locks.

:class:`StateDir` is built in layers, one module each: ``_files.FileStore`` (durable writes,
safe reads, lock files), ``_records.RecordStore`` (records in folders, pipeline transitions) and,
here, dead letters, locks, health and the log. Role locks (``_roles``), group commit
(``_batch``: many records durable with a few flushes) and retention (``_upkeep``) are loaded on
first use: workers and maintenance only. Every public name is
imported from this package, never from its parts.

The layers import downward only: ``_base`` (constants, errors, encoding, clock and the
``DONEBELL_CRASH_AT`` crash-point seam: tests set ``statedir._base._crash_at`` /
``statedir._base._op_count``) at the bottom, then ``_files``, ``_records`` and this package.

Standard library only: the hook path imports this package (but not ``_roles`` and ``_upkeep``).
It works on ``os.path`` strings and imports neither ``pathlib`` nor ``typing`` nor ``contextlib``
(~6 ms of a hook's start-up); the :class:`~pathlib.Path` views (:attr:`StateDir.root`,
:meth:`StateDir.record_path`, ...) are created on first use for the callers that want them.
"""

from __future__ import annotations

import os
import stat

from donebell.shared import lean_json as json
from donebell.shared.keys import is_event_key
from donebell.shared.statedir._base import (
    BIRTH_NAME,
    CLAUDE,
    DEAD,
    FOLDERS,
    HEALTH,
    LOCKS,
    LOG_MAX_BYTES,
    LOG_NAME,
    MUTATION_LOCK_SHARDS,
    MUTATION_LOCKS,
    OUTBOX,
    PENDING,
    PIPELINE,
    RECEIPT_FOLDERS,
    SCHEMA_VERSION,
    SENT,
    SUPPRESSED,
    TMP,
    WAKE,
    WAKE_ANSWERS,
    WATCH,
    WATCH_CLAUDE,
    WATCH_LOCAL,
    WATCH_REMOTE,
    InvalidRecord,
    StateDirReplaced,
    StateError,
    UnsafeStateDir,
    decode,
    encode,
    encode_volatile,
    now,
    operations_done,
)
from donebell.shared.statedir._files import (
    _O_BINARY,
    _O_NOFOLLOW,
    _O_NONBLOCK,
    MutationLock,
    _replace,
    same_file_check,
)
from donebell.shared.statedir._records import RecordStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.statedir._answers import AnswerBox
    from donebell.shared.statedir._batch import GroupCommit
    from donebell.shared.statedir._roles import RoleLock
    from donebell.shared.statedir._wake import WakeQueue

__all__ = [
    "BIRTH_NAME",
    "CLAUDE",
    "DEAD",
    "HEALTH",
    "LOCKS",
    "MUTATION_LOCKS",
    "OUTBOX",
    "PENDING",
    "SENT",
    "SUPPRESSED",
    "TMP",
    "WAKE",
    "WAKE_ANSWERS",
    "WATCH",
    "WATCH_CLAUDE",
    "WATCH_LOCAL",
    "WATCH_REMOTE",
    "FOLDERS",
    "GroupCommit",
    "LOG_MAX_BYTES",
    "LOG_NAME",
    "MUTATION_LOCK_SHARDS",
    "PIPELINE",
    "RECEIPT_FOLDERS",
    "SCHEMA_VERSION",
    "InvalidRecord",
    "MutationLock",
    "RoleLock",
    "StateDir",
    "StateDirReplaced",
    "StateError",
    "UnsafeStateDir",
    "decode",
    "encode",
    "now",
    "open_state_dir",
    "operations_done",
]

# --- the directory ----------------------------------------------------------------------


class StateDir(RecordStore):
    """One state directory root; cheap to construct, safe to share between threads."""

    def dead_letter_invalid(self, folder: str, name: str, reason: str) -> str:
        """Move an unparsable file out of ``folder`` into ``dead/`` with a sanitized minimal record.

        The original bytes are kept beside it as ``dead/<key>.raw`` (never deleted by retention
        before the dead letter itself) so nothing is silently lost. Returns the dead key used.
        """
        from donebell.shared.statedir._upkeep import dead_letter_invalid  # a rare path: off the hook's imports

        return dead_letter_invalid(self, folder, name, reason)

    # locks -------------------------------------------------------------------------------

    def mutation_lock(self, key: str) -> MutationLock:
        """Serialize changes to one event key across processes (one of 64 shard files).

        Use as ``with state.mutation_lock(key): ...``; the file is opened and locked on entry.
        """
        shard = int(key[:8], 16) % MUTATION_LOCK_SHARDS if is_event_key(key) else 0
        return MutationLock(self.path(MUTATION_LOCKS, f"shard-{shard:02d}.lock"))

    def role_lock(self, role: str) -> RoleLock | None:
        """Take ``locks/<role>.lock`` without waiting; None if another live process holds it.

        The OS drops the lock when its holder dies, so a crashed owner never blocks a restart;
        ``locks/<role>.owner.json`` (pid + process start time) says who holds it, for ``status``
        and for the hook's "is a delivery worker running?" check (see ``liveness``). The body is in
        ``_roles``, which the hook path never loads.
        """
        from donebell.shared.statedir._roles import take_role_lock  # workers only

        return take_role_lock(self, role)

    def fence_on_role_lock(self, role: str) -> None:
        """For a helper process of a role (which holds no lock itself): refuse writes once
        ``locks/<role>.lock`` is no longer the file it is now (see :meth:`fence_with`)."""
        still_ours = same_file_check(self.path(LOCKS, f"{role}.lock"))
        if still_ours is not None:  # no lock file: a helper run by hand, with no role to outlive
            self.fence_with(still_ours)

    def lock_owner(self, role: str) -> dict[str, Any] | None:
        """The last recorded owner of a role lock (may be dead: check with ``liveness``)."""
        try:
            data = self.read_bytes(self.path(LOCKS, f"{role}.owner.json"), limit=1 << 16)
            owner = None if data is None else json.loads(data.decode("utf-8"))
        except (InvalidRecord, ValueError, OSError, RecursionError):  # too deep for json: damaged too
            return None
        return owner if isinstance(owner, dict) else None  # an array or a string is no owner

    def group_commit(self, folder: str) -> GroupCommit:
        """Records bound for ``folder`` made durable together: one flush for many files and one
        for the folder (``_batch``, workers only: draining a backlog)."""
        from donebell.shared.statedir._batch import GroupCommit

        return GroupCommit(self, folder)

    def wake_queue(self) -> WakeQueue:
        """The ``wake/`` records of replies to the Continue buttons (``_wake``; workers only)."""
        from donebell.shared.statedir._wake import WakeQueue

        return WakeQueue(self)

    def answer_box(self) -> AnswerBox:
        """Answers to permission prompts, ``wake/answers/`` (``_answers``; wake role, waiting hook)."""
        from donebell.shared.statedir._answers import AnswerBox

        return AnswerBox(self)

    # health ------------------------------------------------------------------------------

    def write_health(self, role: str, health: dict[str, Any]) -> None:
        """Atomically replace ``health/<role>.json``; volatile, so no fsync (daemontools-style)."""
        self.write_file(self.health_file(role), encode_volatile(health), durable=False)

    def health_file(self, role: str) -> str:
        """The path of ``health/<role>.json`` (a waiting hook watches the wake role's, ``approval_lean``)."""
        return self.path(HEALTH, f"{role}.json")

    def health_written_at(self, role: str) -> float | None:
        """When ``health/<role>.json`` was last written, by the file system's clock (its mtime):
        compared with this machine's clock it ages the same however skewed the writer's clock is."""
        try:
            return os.stat(self.health_file(role)).st_mtime
        except OSError:
            return None

    def read_health(self, role: str) -> dict[str, Any] | None:
        """``health/<role>.json`` as a JSON object, or None (missing, unreadable or damaged)."""
        return self.read_health_checked(role)[0]

    def read_health_checked(self, role: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(record, problem)``: a damaged file gives None and the reason (``_health_file``)."""
        try:
            data = self.read_bytes(self.path(HEALTH, f"{role}.json"), limit=1 << 20)
        except (InvalidRecord, OSError) as exc:
            return None, f"bad health file ({exc})"
        if data is None:
            return None, None
        from donebell.shared.statedir._health_file import parse

        return parse(data)

    def drop_health(self, role: str) -> None:
        """Remove ``health/<role>.json`` (a damaged one: its role writes a fresh one on start)."""
        try:
            os.unlink(self.path(HEALTH, f"{role}.json"))
        except OSError:
            pass  # gone already, or the folder is unusable: the readers report that themselves

    # log ---------------------------------------------------------------------------------

    def log(self, level: str, message: str, **fields: Any) -> None:
        """Append one JSON line to the bounded ``notify.log``; never raises.

        Callers pass no secrets: records and health hold none, and config secrets never reach
        this function.
        """
        self.log_lines([(level, message, fields)])

    def log_lines(self, lines: list[tuple[str, str, dict[str, Any]]]) -> None:
        """:meth:`log` for several ``(level, message, fields)`` lines with one append (a group
        commit's lines: one open and write instead of one per record); never raises."""
        if not lines:
            return
        at, pid = round(now(), 3), os.getpid()
        try:
            data = "".join(
                json.dumps(
                    {"ts": at, "pid": pid, "level": level, "msg": message, **fields}, ensure_ascii=False, default=str
                )
                + "\n"
                for level, message, fields in lines
            ).encode("utf-8")
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

    # retention (maintenance; the bodies live in _upkeep, off the hook path) ---------------

    def expire(self, folder: str, older_than: float) -> int:
        """Delete receipts in ``folder`` older than ``older_than``, never one a live record needs.

        Details in :func:`donebell.shared.statedir._upkeep.expire`. Returns how many files went.
        """
        from donebell.shared.statedir._upkeep import expire

        return expire(self, folder, older_than)

    def sweep_tmp(self, older_than: float) -> int:
        """Delete ``tmp/`` entries (debris of interrupted writes) last modified before ``older_than``."""
        from donebell.shared.statedir._upkeep import sweep_tmp

        return sweep_tmp(self, older_than)

    def destroy(self) -> bool:
        """Delete the whole state directory (``uninstall --purge``); refuses one that holds
        anything donebell does not create. False if it did not exist."""
        from donebell.shared.statedir._upkeep import destroy

        return destroy(self)

    def sweep_mutation_locks(self) -> int:
        """Delete files in ``mutation-locks/`` that are not one of the current shard files."""
        from donebell.shared.statedir._upkeep import sweep_mutation_locks

        return sweep_mutation_locks(self)


def open_state_dir() -> StateDir:
    """The state directory named by the environment, created if needed."""
    from donebell.shared.paths import state_dir_str

    return StateDir(state_dir_str()).ensure()


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """``RoleLock`` and ``GroupCommit`` for runtime imports (their modules, workers only, are
        loaded on first access)."""
        if name == "RoleLock":
            from donebell.shared.statedir._roles import RoleLock

            return RoleLock
        if name == "GroupCommit":
            from donebell.shared.statedir._batch import GroupCommit

            return GroupCommit
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
