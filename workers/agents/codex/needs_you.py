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

from donebell.workers.kit.hook_context import HookContext, text_field
from donebell.workers.kit.needs_you import PATH_LIMIT, file_size, write_request

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

#: Codex's ``session_meta`` names the client that opened the thread early in the rollout's first
#: line (``"originator":"codex_exec"`` for ``codex exec``; ``codex-tui`` for the TUI, others for the
#: app-server's clients, all interactive): read within this many bytes, bounded and non-blocking.
ORIGINATOR_WINDOW = 4096
EXEC_ORIGINATOR = b'"originator":"codex_exec"'


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
        dialog_waits=interactive(transcript),
    )


def interactive(rollout: str | None) -> bool:
    """Is the asking session interactive (the TUI, an app-server client)? There Codex draws its own
    approval dialog only once the hook returns. Only a rollout that says ``codex exec`` opened it is
    not; an unreadable one is taken as interactive (the short wait: never the desk locked out)."""
    from donebell.shared.bounded_read import read_from

    if not rollout:
        return True
    try:
        head = read_from(rollout, 0, ORIGINATOR_WINDOW)
    except OSError:
        return True
    return EXEC_ORIGINATOR not in head
