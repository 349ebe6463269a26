"""Root or descendant? Local evidence about one Codex thread, gathered cheaply inside a hook.

In order, stopping at the first conclusive answer (docs/agent-facts.md):

1. the rollout named by the payload (``transcript_path``): its first line, ``session_meta``;
2. the thread's own rollout found by name: Codex thread ids are UUIDv7, whose first 48 bits are
   the creation time in ms, and rollouts live in ``sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``;
   three day folders (UTC day ± 1, for the local-time naming of other versions) are listed;
3. ``state_5.threads.source`` read-only (``sqlite3`` is imported only when 1 and 2 found nothing).

A rollout whose ``session_meta.id`` is another thread proves nothing about this one.
"""

from __future__ import annotations

import os
import stat
import time

from donebell.workers.agents.codex import identity
from donebell.workers.agents.codex.identity import ThreadIdentity

_HEX = frozenset("0123456789abcdef")
MISMATCH = "rollout belongs to thread"


def codex_homes(transcript_path: str | None) -> tuple[str, str]:
    """``(codex_home, sqlite_home)``: ``$CODEX_HOME``, else the rollout's own home, else ``~/.codex``."""
    from donebell.workers.agents.codex import codex_home_str

    home = os.environ.get("CODEX_HOME") or _home_of_rollout(transcript_path) or codex_home_str()
    return home, os.environ.get("CODEX_SQLITE_HOME") or home


def _home_of_rollout(path: str | None) -> str | None:
    """``<home>`` of ``<home>/sessions/YYYY/MM/DD/rollout-*.jsonl``, or None for another shape."""
    if not path:
        return None
    # os.path rather than pathlib (~2.5 ms of hook start-up); trailing separators dropped first,
    # as Path does, so <home>/sessions/Y/M/D is four folders up from the file.
    folder = path.rstrip("/" + (os.altsep or "") + os.sep) or path
    for _ in range(4):
        folder = os.path.dirname(folder)
    if os.path.basename(folder) != "sessions":
        return None
    return os.path.dirname(folder) or "."


def uuid7_seconds(thread_id: str) -> float | None:
    """The creation time encoded in a UUIDv7, or None if ``thread_id`` is not one."""
    text = thread_id.lower()
    if len(text) != 36 or text[14] != "7" or [len(p) for p in text.split("-")] != [8, 4, 4, 4, 12]:
        return None
    digits = text.replace("-", "")
    if not set(digits) <= _HEX:
        return None
    return int(digits[:12], 16) / 1000.0


def locate_rollout(codex_home: str, thread_id: str) -> str | None:
    """The rollout file of ``thread_id`` under ``codex_home/sessions``, found by its name."""
    created = uuid7_seconds(thread_id)
    if created is None:
        return None
    suffix = f"-{thread_id}.jsonl"
    for delta in (0.0, -86400.0, 86400.0):
        day = time.gmtime(created + delta)
        folder = os.path.join(codex_home, "sessions", f"{day.tm_year:04d}", f"{day.tm_mon:02d}", f"{day.tm_mday:02d}")
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(folder, name)
    return None


def _from_rollout(path: str, thread_id: str | None) -> ThreadIdentity:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # bounded_read refuses it too; this names why
            return ThreadIdentity("unknown", evidence="rollout: not a regular file")
    except OSError:
        return ThreadIdentity("unknown", evidence="rollout: not found")
    found = identity.classify_rollout(path)
    if thread_id and found.thread_id and found.thread_id != thread_id:
        return ThreadIdentity("unknown", evidence=f"{MISMATCH} {found.thread_id[:40]}")
    return found


def _from_threads_table(sqlite_home: str, thread_id: str) -> tuple[ThreadIdentity, str | None]:
    from donebell.workers.agents.codex import db  # sqlite3: only when the files said nothing

    try:
        conn = db.open_ro(db.db_path(db.STATE_DB, sqlite_home))
    except db.CodexDbUnavailable as exc:
        return ThreadIdentity("unknown", thread_id, evidence=f"threads: {exc}"), None
    try:
        rows = db.query(conn, "SELECT source, rollout_path FROM threads WHERE id = ? LIMIT 1", (thread_id,))
    except db.CodexDbUnavailable as exc:
        return ThreadIdentity("unknown", thread_id, evidence=f"threads: {exc}"), None
    finally:
        conn.close()
    if not rows:
        return ThreadIdentity("unknown", thread_id, evidence="threads: no row for this thread"), None
    source, rollout = rows[0]
    return identity.classify_threads_source(source, thread_id), rollout if isinstance(rollout, str) else None


def classify_thread(
    thread_id: str | None, transcript_path: str | None, codex_home: str, sqlite_home: str
) -> tuple[ThreadIdentity, str | None]:
    """``(identity, rollout_path)`` of ``thread_id`` from the cheapest conclusive evidence.

    ``rollout_path`` is never a file whose ``session_meta`` names another thread.
    """
    notes: list[str] = []
    if transcript_path:
        found = _from_rollout(transcript_path, thread_id)
        if found.classification != "unknown":
            return found, transcript_path
        notes.append(found.evidence)
        if found.evidence.startswith(MISMATCH):
            # Another thread's rollout is no evidence about this one: never hand it to the gate,
            # which would otherwise judge (and notify) that thread's turn under this key.
            transcript_path = None
    if not thread_id:
        return ThreadIdentity("unknown", evidence="; ".join([*notes, "no thread id"])), transcript_path
    located = locate_rollout(codex_home, thread_id)
    if located and located != transcript_path:
        found = _from_rollout(located, thread_id)
        if found.classification != "unknown":
            return found, located
        notes.append(found.evidence)
    elif not located:
        notes.append("rollout: none found by name")
    found, db_rollout = _from_threads_table(sqlite_home, thread_id)
    rollout = located or transcript_path or db_rollout
    if found.classification != "unknown":
        return found, rollout
    notes.append(found.evidence)
    return ThreadIdentity("unknown", thread_id, evidence="; ".join(notes)[:300]), rollout
