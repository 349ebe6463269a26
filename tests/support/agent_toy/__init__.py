"""A test-only third agent, "toy": the proof that a new agent is one folder plus one registration line.

``tests/test_agent_toy.py`` places this folder at ``donebell/workers/agents/toy/`` in a copy of the
package whose only other difference is the toy's line in ``workers/agents/registry.py``, and drives
a hook -> gate -> delivery round trip through the real roles. The toy's "agent" writes a JSONL log
per session; a line ``{"turn": ..., "status": "done"}`` is its evidence that a turn is over.

:data:`AGENT` names the toy's hook (``hook.py``) and its gate (``gate.py``); every other capability
is the :class:`~donebell.workers.agents.LazyAgent` default of an agent without that evidence (no
scanner, no thread a reply could continue, no policy evidence, nothing to expire).
"""

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
