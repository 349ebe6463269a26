"""Codex for the wake role: its rollout as turns, and how one turn is started in a thread.

The rollout ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread-id>.jsonl`` is the only evidence: a
turn is a ``task_started`` event; it has ended at its ``task_complete`` or ``turn_aborted``.
``codex exec resume <thread-id>`` appends the new turn to the same file; a running app-server
daemon (its control socket in ``$CODEX_HOME``) is asked first (``appserver.py``).
"""

from __future__ import annotations

import glob
import os
import shutil

from donebell.workers.agents.codex import codex_home_str
from donebell.workers.kit.thread_view import SAFE_ID, ThreadView, json_lines


def locate_thread(conversation_id: str) -> str | None:
    """The thread's rollout on this machine (live or archived), or None."""
    if not SAFE_ID.match(conversation_id):
        return None
    home = codex_home_str()
    patterns = [
        os.path.join(home, "sessions", "*", "*", "*", f"rollout-*-{conversation_id}.jsonl"),
        os.path.join(home, "archived_sessions", f"rollout-*-{conversation_id}.jsonl"),
    ]
    found = sorted(p for pattern in patterns for p in glob.glob(pattern))
    return found[-1] if found else None


def read_thread(path: str) -> ThreadView:
    started: list[str] = []
    ended: set[str] = set()
    cwd = None
    for obj in json_lines(path):
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if obj.get("type") == "session_meta" and cwd is None:
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        kind, turn = payload.get("type"), payload.get("turn_id")
        if obj.get("type") != "event_msg" or not isinstance(turn, str):
            continue
        if kind == "task_started":
            started.append(turn)
        elif kind in ("task_complete", "turn_aborted"):
            ended.add(turn)
    done = [t for t in started if t in ended]
    latest = started[-1] if started else None
    return ThreadView(
        path, len(started), latest, done[-1] if done else None, latest is not None and latest not in ended, cwd
    )


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    binary = shutil.which("codex")
    return None if binary is None else [binary, "exec", "resume", *extra_args, conversation_id, prompt]


def daemon_socket() -> str | None:
    from donebell.workers.agents.codex import appserver

    return appserver.control_socket()


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    from donebell.workers.agents.codex import appserver

    return appserver.start_turn(socket_path, conversation_id, prompt)
