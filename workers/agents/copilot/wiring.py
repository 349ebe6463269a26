"""What ``donebell install`` writes for Copilot CLI, and how ``doctor`` reads it back.

Copilot reads every ``$COPILOT_HOME/hooks/*.json`` (user level; a project's own files are never
touched). donebell owns one whole file there, ``donebell.json``, so install adds a file and
uninstall deletes it: nothing else in the folder changes. Each event's entry runs
``donebell hook copilot <event>`` (camelCase payloads do not name their event).

``permissionRequest`` is wired only with ``approvals_enabled`` (it fires before every tool call).
Copilot's hook timeouts fail OPEN: a ``permissionRequest`` hook still waiting for the phone when
its ``timeoutSec`` ends lets the call through unasked. So that entry's timeout is longer than the
longest phone wait donebell allows, and ``doctor`` checks it against the configured wait.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from donebell.workers.agents.copilot.paths import HOOKS_FOLDER, copilot_home_str

FILE_NAME = "donebell.json"
#: event -> seconds Copilot waits for the hook (the permission hook may wait for the phone).
SHORT_TIMEOUT = 30
PERMISSION_EVENT = "permissionRequest"
#: Every event donebell may wire. ``permissionRequest`` fires before *every* tool call, so it is
#: wired only with approvals on (it is what answers from the phone): otherwise it would start a
#: process per tool call for nothing (``notification`` ``permission_prompt`` is the push).
EVENTS = ("agentStop", "sessionEnd", "notification", PERMISSION_EVENT)
ALWAYS = EVENTS[:3]


def hook_file(home: str | None = None) -> str:
    return os.path.join(home or copilot_home_str(), HOOKS_FOLDER, FILE_NAME)


def document(command_for: Callable[[str], str], permission_timeout: int, *, approvals: bool) -> dict[str, Any]:
    """The whole ``donebell.json``: one command entry per event (``permissionRequest`` with approvals)."""
    hooks = {
        event: [
            {
                "type": "command",
                "bash": command_for(event),
                "timeoutSec": permission_timeout if event == PERMISSION_EVENT else SHORT_TIMEOUT,
            }
        ]
        for event in (EVENTS if approvals else ALWAYS)
    }
    return {"version": 1, "hooks": hooks}


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


def entries(text: str) -> dict[str, list[dict[str, Any]]]:
    """event -> its command entries in a hook file's text; ValueError when it is not one."""
    doc = json.loads(text)
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(hooks, dict):
        raise ValueError('no "hooks" object')
    return {
        event: [e for e in found if isinstance(e, dict)] for event, found in hooks.items() if isinstance(found, list)
    }
