"""Retention of the state directory: expired receipts, ``tmp/`` debris, stale lock shards, and
the wholesale removal ``uninstall --purge`` asks for.

The bodies of :meth:`StateDir.expire`, :meth:`StateDir.sweep_tmp`,
:meth:`StateDir.sweep_mutation_locks` and :meth:`StateDir.destroy`; loaded on first use, so
the hook path never imports it. Every deletion is a counted operation (``FileStore._unlink``).
"""

from __future__ import annotations

import os
import stat

from donebell.shared.keys import is_event_key
from donebell.shared.statedir import (
    BIRTH_NAME,
    DEAD,
    FOLDERS,
    LOG_NAME,
    MUTATION_LOCK_SHARDS,
    OUTBOX,
    PENDING,
    RECEIPT_FOLDERS,
    SCHEMA_VERSION,
    StateDir,
    StateError,
    now,
)
from donebell.shared.statedir._base import MUTATION_LOCKS, TMP, WAKE, _step
from donebell.shared.statedir._files import _rename


def dead_letter_invalid(state: StateDir, folder: str, name: str, reason: str) -> str:
    """Move an unparsable file out of ``folder`` into ``dead/`` with a sanitized minimal record.

    The original bytes are kept beside it as ``dead/<key>.raw`` (never deleted by retention
    before the dead letter itself) so nothing is silently lost. Returns the dead key used.
    """
    src = state.path(folder, name)
    # A fresh key, not the file's own: the real key stays free, so a later signal for the
    # same turn can still create a good record instead of deduplicating against the wreck.
    key = _hash_name(f"{folder}/{name}/{now()}/{os.urandom(8).hex()}")
    raw_path = state.path(DEAD, f"{key}.raw")
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
    if not state.create(DEAD, letter):
        state.replace(DEAD, letter)
    state.log("warning", "invalid record moved to dead/", folder=folder, key=key, reason=reason[:200])
    return key


def _hash_name(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def expire(state: StateDir, folder: str, older_than: float) -> int:
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
    base = state.path(folder)
    deleted = 0
    for name, st in _scan(base):
        if not name.endswith(".json") or not is_event_key(name[:-5]) or st.st_mtime >= older_than:
            continue
        key = name[:-5]
        if state.exists(PENDING, key) or state.exists(OUTBOX, key):
            continue
        if state._unlink(os.path.join(base, name)):
            deleted += 1
        if folder == DEAD and state._unlink(os.path.join(base, f"{key}.raw")):
            deleted += 1
    if folder == DEAD:
        for name, st in _scan(base):
            # A rename keeps the original mtime: ctime says when it became a .raw.
            if (
                name.endswith(".raw")
                and is_event_key(name[:-4])
                and max(st.st_mtime, st.st_ctime) < older_than
                and not os.path.lexists(os.path.join(base, f"{name[:-4]}.json"))
                and state._unlink(os.path.join(base, name))
            ):
                deleted += 1
    return deleted


def sweep_tmp(state: StateDir, older_than: float) -> int:
    """Delete ``tmp/`` entries (debris of interrupted writes) last modified before ``older_than``."""
    base = state.path(TMP)
    return sum(
        1
        for name, st in _scan(base)
        if not stat.S_ISDIR(st.st_mode) and st.st_mtime < older_than and state._unlink(os.path.join(base, name))
    )


def sweep_mutation_locks(state: StateDir) -> int:
    """Delete files in ``mutation-locks/`` that are not one of the current shard files."""
    base = state.path(MUTATION_LOCKS)
    current = {f"shard-{n:02d}.lock" for n in range(MUTATION_LOCK_SHARDS)}
    return sum(
        1
        for name, st in _scan(base)
        if name not in current and not stat.S_ISDIR(st.st_mode) and state._unlink(os.path.join(base, name))
    )


def destroy(state: StateDir) -> bool:
    """Delete the whole state directory; False if it did not exist.

    Refuses (:class:`UnsafeStateDir`) a root that is a symlink or holds anything donebell does not
    create, so a mistyped ``DONEBELL_STATE_DIR=$HOME`` cannot erase a home folder.
    """
    import shutil

    from donebell.shared.statedir import UnsafeStateDir

    root = state.root_dir
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateDir(f"{root} is not a plain directory (symlink or file); delete it by hand if you mean it")
    allowed = set(FOLDERS) | {LOG_NAME, f"{LOG_NAME}.1", BIRTH_NAME, WAKE}  # wake/: created by the wake role
    strangers = sorted(name for name in os.listdir(root) if name not in allowed)
    if strangers:
        shown = ", ".join(strangers[:5]) + (" …" if len(strangers) > 5 else "")
        raise UnsafeStateDir(f"{root} does not look like donebell's state directory (contains {shown}); not deleted")
    shutil.rmtree(root)
    return True


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
