"""The toy agent: :data:`AGENT` names its hook and its gate; every other capability is the
:class:`~donebell.workers.agents.LazyAgent` default of an agent without that evidence (no scanner,
no thread a reply could continue, no policy evidence, nothing to expire)."""

from __future__ import annotations

from donebell.workers.agents import LazyAgent

AGENT = LazyAgent(
    __name__,
    name="toy",
    display_name="Toy Agent",
    hooks={"done": ("hook:done", "")},
    parts={"evaluate": "gate:evaluate"},
    ids=("session_id", "turn_id"),
    title_field="toy_title",
    conversation_noun="Toy session",
    turn_label="Toy turn",
    resume_command="toy --resume {id}",
    program="toy",
    tested_releases=("1.0.0",),
)
