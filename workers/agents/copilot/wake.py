"""Copilot CLI for the wake role: its session log as tasks, and how one more task is started.

``copilot --resume=<session> -p <prompt>`` continues a finished session: the same id, the same
``events.jsonl`` (appended). A session still open in a terminal cannot be reached from outside
(on 1.0.102 a second ``--resume`` of it is refused): while its log shows no ``session.shutdown``
after its last start, the view says the session is active, so the wake role holds the reply (and
lets it expire) instead of starting a second session beside it.
"""

from __future__ import annotations

import os
import shutil

from donebell.workers.agents.copilot.events import read_log
from donebell.workers.agents.copilot.paths import events_path
from donebell.workers.kit.thread_view import SAFE_ID, DaemonError, ThreadView


def locate_thread(conversation_id: str) -> str | None:
    """The session's log on this machine, or None."""
    if not SAFE_ID.match(conversation_id):
        return None
    path = events_path(conversation_id)
    return path if path is not None and os.path.isfile(path) else None


def read_thread(path: str) -> ThreadView:
    """Tasks are turns; the session is busy while its root turn or its background work runs."""
    if not os.path.isfile(path):
        raise OSError(f"{path}: no such session log")
    log = read_log(path)
    if log.error:
        raise OSError(log.error)
    ids = [task.interaction_id for task in log.tasks]
    active = bool(ids) and (log.busy or bool(log.background))
    latest = ids[-1] if ids else None
    done = ids[-2] if active and len(ids) > 1 else (None if active else latest)
    return ThreadView(path, len(ids), latest, done, active, None)


def live_session(conversation_id: str) -> str | None:
    """A marker of the session while a CLI still has it open (no ``session.shutdown`` after its
    last start), or None. Nothing can be posted into it (:func:`post_to_session`)."""
    path = locate_thread(conversation_id)
    if path is None:
        return None
    log = read_log(path)
    return None if log.shutdown or not log.exists else f"copilot-open-session:{conversation_id}"


def post_to_session(inbox: str, prompt: str) -> None:
    """Refuse, so the wake role reports the reply ``held`` then ``expired``: no second session."""
    raise DaemonError("a Copilot CLI session open in a terminal cannot be reached from outside")


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    binary = shutil.which("copilot")
    return None if binary is None else [binary, f"--resume={conversation_id}", *extra_args, "-p", prompt]
