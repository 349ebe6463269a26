"""Codex blocks on the user: its PermissionRequest hook (``donebell hook codex-permission``).

Codex 0.171 names the thread ``session_id`` and gives the ``turn_id``; the request is the digest
of the exact tool call (``request_key``, as for every agent) and the rollout's size at that
moment. Inside a subagent (measured, tests/fixtures/approvals/codex/exec-approve-for-me-subagent/)
``session_id`` is the **root** thread while ``agent_id``, ``turn_id`` and ``transcript_path`` are the
child's: the request is the child thread's (its root kept as ``root_thread_id``), the key the
local scanner gives the same call read from the child's rollout, so the two make one push. The
record itself is the hooks' (``workers/kit/needs_you.py``).
"""

from __future__ import annotations

from donebell.workers.kit.hook_context import HookContext
from donebell.workers.kit.hook_input import text_field
from donebell.workers.kit.needs_you import PATH_LIMIT, file_size, write_request

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any


def codex_needs(ctx: HookContext, payload: dict[str, Any]) -> None:
    """A Codex ``PermissionRequest`` (0.171: thread = ``session_id``, plus ``turn_id``)."""
    thread_id = text_field(payload, "session_id")
    turn_id = text_field(payload, "turn_id")
    if thread_id is None or turn_id is None:
        ctx.log("warning", "codex PermissionRequest without session_id/turn_id: nothing written")
        return
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    root_id, child_id = thread_id, text_field(payload, "agent_id")
    if child_id and child_id != root_id:  # a subagent's call: its turn and rollout are the child's
        thread_id = child_id
    write_request(
        ctx,
        payload,
        provider="codex",
        conversation=thread_id,
        turn=turn_id,
        marker=str(file_size(transcript)),
        signal="PermissionRequest",
        answer_path=transcript,
        thread_id=thread_id,
        turn_id=turn_id,
        root_thread_id=root_id,
    )
