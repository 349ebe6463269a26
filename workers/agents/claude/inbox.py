"""A live Claude Code session's inbox: reply to continue into the session that is still open.

Measured on Claude Code 2.1.332 (docs/wake.md, "Into the live session"): an interactive session
writes ``$CLAUDE_CONFIG_DIR/sessions/<pid>.json`` with its ``sessionId``, ``pid``, ``procStart``
(the process's start in clock ticks, as ``/proc/<pid>/stat`` field 22), ``kind`` and
``messagingSocketPath``, a Unix socket (cross-session messaging, on by default since 2.1.224). One
line ``{"type":"user","message":{"role":"user","content":<text>}}`` written to it starts one turn
in that session, shown as a message from another session; the socket answers nothing, so the
wake role confirms the turn from the transcript as for any other start. Only an ``interactive``
session is used (desktop and non-interactive sessions let held messages expire), and only while
its process is the one that wrote the record (pid and start both match): a stale record of a
closed session is never written to, and the reply goes the resume way.
"""

from __future__ import annotations

import json
import os
import socket
import stat

from donebell.shared.bounded_read import read_from
from donebell.shared.process import liveness
from donebell.workers.agents.claude import claude_config_dir_str
from donebell.workers.kit.thread_view import SAFE_ID, DaemonError

#: A session record is a few hundred bytes; anything larger is not one.
RECORD_LIMIT = 64 << 10
CONNECT_SECONDS = 2.0


def live_inbox(conversation_id: str) -> str | None:
    """The messaging socket of the open interactive session ``conversation_id``, or None."""
    if not SAFE_ID.match(conversation_id) or not hasattr(socket, "AF_UNIX"):
        return None
    folder = os.path.join(claude_config_dir_str(), "sessions")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return None
    for name in names:
        record = _session_record(os.path.join(folder, name))
        if record is None or record.get("sessionId") != conversation_id or record.get("kind") != "interactive":
            continue
        path = record.get("messagingSocketPath")
        if isinstance(path, str) and _is_socket(path) and _same_process(record.get("pid"), record.get("procStart")):
            return path
    return None


def post_to_inbox(inbox: str, prompt: str) -> None:
    """Write the one user line; :class:`DaemonError` (``unreachable``) if nothing listens."""
    line = json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n"
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(CONNECT_SECONDS)
    try:
        client.connect(inbox)
    except OSError as exc:
        client.close()
        raise DaemonError(f"the session's inbox is not listening: {exc}", unreachable=True) from None
    try:
        client.sendall(line.encode("utf-8"))
    except OSError as exc:  # connected, then cut: the line may or may not have been read
        raise DaemonError(f"the session's inbox closed mid-write: {exc}", accepted=True) from None
    finally:
        client.close()


def _session_record(path: str) -> dict[str, object] | None:
    """The session record at ``path``, or None; read non-blocking and bounded (a FIFO or device
    named like a record is refused before any read: it would hang ``open``)."""
    try:
        data = read_from(path, 0, RECORD_LIMIT + 1)
        record = json.loads(data) if len(data) <= RECORD_LIMIT else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _same_process(pid: object, started: object) -> bool:
    """The session's process still runs and is the one that wrote the record (where the platform
    reads start ticks, as Claude Code records them; elsewhere the pid alone)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    ticks = liveness.start_ticks(pid)
    if ticks is not None:
        return str(started) == ticks
    return liveness.pid_runs(pid)
