"""``donebell hook copilot <event>``: Copilot CLI's user-level hooks (``$COPILOT_HOME/hooks/donebell.json``).

Copilot's camelCase hook payloads do not name their event, so the installed command does:
``donebell hook copilot agentStop``. What each one does (docs/hooks.md, "Copilot CLI"):

* ``agentStop`` of the root (no ``agentId``: a subagent's stop has one, and its ``sessionId`` is
  the agent's own id) and ``sessionEnd``: a *signal* candidate, keyed by the session and the
  signal's own ``timestamp``. It names no task: the hook cannot know which one it ends, because
  ``events.jsonl`` is written in batches and lags the hooks. The gate reads the log later, finds the
  task the signal belongs to and folds the signal into the task's own key (``merged``), so every
  signal of one task (a stop while a background shell runs, the stop after its completion turn,
  a Stop hook's block and the stop after it, ``sessionEnd`` after each idle in ``-p``) meets in one
  record: one notification. ``sessionEnd`` with ``reason: "error"`` carries ``outcome: "failed"``.
* ``notification`` ``permission_prompt`` in the TUI, and ``permissionRequest`` with approvals on:
  the task needs the user (:mod:`.needs_you`).
* anything else: ignored (debug log).

Nothing is printed unless the phone answered a permission request (``{"behavior": ...}``).
"""

from __future__ import annotations

import os

from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import identity
from donebell.shared.process.liveness import own_start_time
from donebell.shared.records import new_candidate
from donebell.workers.agents.copilot import paths
from donebell.workers.kit.hook_context import HookContext, stdin_object, text_field

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

NAME = "copilot"
PATH_LIMIT = 4096
#: The events the installed hook file registers (install writes one entry per event).
SIGNALS = ("agentStop", "sessionEnd")
NEEDS_EVENTS = ("notification", "permissionRequest")


def copilot(ctx: HookContext, argv: list[str]) -> None:
    """Read one Copilot hook payload from stdin; ``argv[0]`` names its event."""
    payload = stdin_object()
    event = argv[0] if argv else str(payload.get("hookName") or "")
    if event in NEEDS_EVENTS:
        from donebell.workers.agents.copilot.needs_you import copilot_needs

        copilot_needs(ctx, payload, event)
        return
    if event not in SIGNALS:
        ctx.log("debug", "copilot hook event ignored", event=event[:40])
        return
    if text_field(payload, "agentId"):
        ctx.log("debug", "copilot hook from a subagent ignored", hook_event=event)
        return
    on_signal(ctx, payload, event)


def on_signal(ctx: HookContext, payload: dict[str, Any], event: str) -> None:
    """A root ``agentStop`` or a ``sessionEnd``: a signal candidate the gate maps to its task."""
    session_id = text_field(payload, "sessionId")
    stamp = payload.get("timestamp")
    if session_id is None or not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        ctx.log("warning", f"copilot {event} without sessionId or timestamp: nothing written")
        return
    transcript = text_field(payload, "transcriptPath", PATH_LIMIT) or paths.events_path(session_id)
    reason = text_field(payload, "reason")
    failed = event == "sessionEnd" and reason == "error"
    key, weak = identity(NAME, session_id, f"{event}@{int(stamp)}")
    candidate = new_candidate(
        key=key,
        provider=NAME,
        source=f"copilot-{event.lower()}",
        weak_identity=weak,
        session_id=session_id,
        signal=event,
        signal_ms=float(stamp),
        session_end_reason=reason if event == "sessionEnd" else None,
        stop_hook_active=payload.get("stop_hook_active") is True,
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=transcript,
        outcome="failed" if failed else None,
        error="API error (sessionEnd reason error)" if failed else None,
        origin=ctx.origin,
        interactive=bool(os.environ.get("COPILOT_LOADER_PID")),
        signal_at=own_start_time(),
    )
    result = submit_candidate(ctx.state, candidate)
    ctx.log("info", f"copilot {event}: {result}", key=key, session_id=session_id, reason=reason)
    if result in ("created", "merged"):
        ctx.request_delivery()
