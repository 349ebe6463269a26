"""Where Copilot CLI keeps its files: ``$COPILOT_HOME`` (default ``~/.copilot``).

Lean (the hook path imports it): ``os.path`` strings only.
"""

from __future__ import annotations

import os

from donebell.shared.paths import user_home

#: The file every Copilot session appends its events to, under the home.
SESSION_STATE = "session-state"
EVENTS_FILE = "events.jsonl"
#: The folder of user-level hook files Copilot reads (``*.json``), under the home.
HOOKS_FOLDER = "hooks"


def copilot_home_str() -> str:
    """Copilot CLI's home: ``$COPILOT_HOME``, default ``~/.copilot``."""
    return os.environ.get("COPILOT_HOME") or os.path.join(user_home(), ".copilot")


def events_path(session_id: str, home: str | None = None) -> str | None:
    """``<home>/session-state/<session id>/events.jsonl``; None for an id that is not one folder name."""
    if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", ".."):
        return None
    return os.path.join(home or copilot_home_str(), SESSION_STATE, session_id, EVENTS_FILE)


def session_of_events(path: str) -> str | None:
    """The session id a ``…/session-state/<id>/events.jsonl`` path names, or None."""
    folder, name = os.path.split(path)
    if name != EVENTS_FILE:
        return None
    parent, session = os.path.split(folder)
    return session if os.path.basename(parent) == SESSION_STATE and session else None
