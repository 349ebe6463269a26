"""How long a root task took, from the agent's own timestamps (``min_task_seconds``).

Each agent reads its own (``Policies.task_seconds``; what Codex and Claude Code read is in their
``policy_evidence`` modules). None when the evidence does not say, or the record's agent is not
registered: the task then notifies (a policy never guesses silence).
"""

from __future__ import annotations

from typing import Any

from donebell.shared.statedir import StateDir
from donebell.workers.agents.registry import agent


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    found = agent(record.get("provider"))
    return found.task_seconds(record, state) if found is not None else None
