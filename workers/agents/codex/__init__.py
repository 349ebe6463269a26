"""OpenAI Codex: hook payloads, rollouts and their cursors, the thread database, gate evidence,
thread titles, the app-server wake adapter; :data:`AGENT`, Codex as the roles see it.

``AGENT`` names the part of this folder that does each capability's work, imported when it is
called: the hook path (``donebell hook codex-stop``) loads the hook's modules only, the
maintenance role none. Importing this package loads nothing else."""

from __future__ import annotations

import os

from donebell.shared.paths import user_home
from donebell.workers.agents import LazyAgent

TYPE_CHECKING = False  # the hook path imports this package: annotations only
if TYPE_CHECKING:
    from pathlib import Path


def codex_home_str() -> str:
    """Codex's home: ``$CODEX_HOME``, default ``~/.codex``."""
    return os.environ.get("CODEX_HOME") or os.path.join(user_home(), ".codex")


def codex_sqlite_home_str() -> str:
    """Where Codex keeps its ``*.sqlite`` files: ``$CODEX_SQLITE_HOME``, else Codex's home."""
    return os.environ.get("CODEX_SQLITE_HOME") or codex_home_str()


def codex_home() -> Path:
    """:func:`codex_home_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(codex_home_str())


def codex_sqlite_home() -> Path:
    """:func:`codex_sqlite_home_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(codex_sqlite_home_str())


AGENT = LazyAgent(
    __name__,
    name="codex",
    display_name="Codex",
    # ``stop``: Codex reads the Stop hook's stdout as its decision, and ``{}`` is "no decision";
    # ``notify`` (the notify program) and ``permission`` (PermissionRequest: no decision) print nothing.
    hooks={
        "stop": ("hook:codex_stop", "{}\n"),
        "notify": ("hook:codex_notify", ""),
        "permission": ("hook:codex_permission", ""),
    },
    parts={
        "evaluate": "gate:evaluate",  # root or child, completion, goals, descendants, the quiet window
        "task_title": "title:thread_title",  # SQLite, then session_index.jsonl; a remote root's from the record
        "lookup_title": "title:lookup_title",  # read where the files live (the remote probe worker)
        "local_scan": "local_scan:local_scan",  # the scan engine over $CODEX_HOME
        # no expire: Codex's cursors are the scanners' (workers/maintenance/cursor_retention.py)
        "locate_thread": "wake:locate_thread",  # the thread's rollout, live or archived
        "read_thread": "wake:read_thread",
        "resume_argv": "wake:resume_argv",  # codex exec resume [wake_codex_args] <thread> <prompt>
        "daemon_socket": "wake:daemon_socket",  # the app-server
        "start_turn_in_daemon": "wake:start_turn_in_daemon",
        "live_inbox": "queue:live_thread",  # while a process holds the thread's writer lock: its queue
        "post_to_inbox": "queue:queue_message",
        "task_link": "task_link:task_url",
        "task_seconds": "policy_evidence:task_seconds",
        "user_returned": "policy_evidence:user_returned",
        # the request's own call's output, or the turn's end or abort, a new user message; nothing
        # beyond the rollout's own records answers at the terminal
        "answered_in_file": "call_evidence:answered",
    },
    ids=("thread_id", "turn_id"),
    root=("root_thread_id", "thread_id"),  # a subagent's candidates coalesce with their root's
    conversation_noun="Codex thread",
    turn_label="Codex turn",
    resume_command="codex resume {id}",
    program="codex",
    # releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins)
    tested_releases=("0.163.0", "0.168.0", "0.171.0"),
)
