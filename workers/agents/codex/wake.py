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
from dataclasses import replace

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


#: The only records a thread view needs; every other line of the rollout is skipped unparsed.
MARKERS = (b"session_meta", b"task_started", b"task_complete", b"turn_aborted")


def read_thread(path: str) -> ThreadView:
    started: list[str] = []
    ended: set[str] = set()
    cwd, meta = None, None
    for obj in json_lines(path, MARKERS):
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if obj.get("type") == "session_meta" and meta is None:
            meta = payload
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
    view = ThreadView(
        path, len(started), latest, done[-1] if done else None, latest is not None and latest not in ended, cwd
    )
    return replace(view, resume_args=_as_the_user_ran(meta or {}, cwd))


def _as_the_user_ran(meta: dict[str, object], cwd: str | None) -> tuple[str, ...]:
    """``--skip-git-repo-check`` when ``codex exec`` started the thread outside a git repository:
    exec refuses such a folder ("Not inside a trusted directory and --skip-git-repo-check was not
    specified"), so the user's own run had the flag, and ``codex exec resume`` from that folder
    needs it too (measured on 0.171). Nothing for a thread of the TUI or inside a repository."""
    if meta.get("originator") != "codex_exec" or not cwd or not os.path.isdir(cwd) or _in_git_repo(cwd):
        return ()
    return ("--skip-git-repo-check",)


def _in_git_repo(folder: str) -> bool:
    """Is ``folder`` inside a git work tree (a ``.git`` folder or file in it or above)?"""
    current = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    binary = shutil.which("codex")
    return None if binary is None else [binary, "exec", "resume", *extra_args, conversation_id, prompt]


def daemon_socket() -> str | None:
    from donebell.workers.agents.codex import appserver

    return appserver.control_socket()


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    from donebell.workers.agents.codex import appserver

    return appserver.start_turn(socket_path, conversation_id, prompt)
