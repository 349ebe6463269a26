"""Desk grace: did the user start a new turn in the same thread after the gate's verdict?

Each agent reads its own evidence (``Policies.user_returned``; Claude Code: its session record,
advanced by every prompt; Codex: a newer candidate of the same root thread, or a new turn in the
rollout after the judged bytes), from the state directory or the agent's own files.

None means "no sign of the user": the notification goes.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.statedir import StateDir
from donebell.workers.agents.registry import agent


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    """Why we believe the user came back to this thread, or None."""
    found = agent(record.get("provider"))
    return found.user_returned(state, record) if found is not None else None
