"""``donebell hook claude``: every Claude Code lifecycle hook, dispatched on ``hook_event_name``.

* ``UserPromptSubmit``: a new prompt epoch (see :mod:`claude_session`); older pending candidates
  of the session are superseded before the next Stop can arrive. Writes no candidate.
* ``Stop``: a candidate only with ``session_id``, ``prompt_id`` and *present, empty*
  ``background_tasks`` and ``session_crons`` (a running background task or cron means more work
  will come, as a new prompt); otherwise no candidate is written (logged, and the session record
  notes the prompt as held, so transcript recovery defers to it), so the same prompt can still
  become final. A repeated Stop of the same prompt refreshes the pending record.
* ``StopFailure``: terminal by definition (an API error ended the turn): candidate with
  ``outcome: "failed"`` and ``error``; a missing id gives a weak identity.
* ``Notification`` ``idle_prompt``/``agent_completed``: an accelerator only — marks the
  prompt's pending candidate (``idle_notified_at``) and starts a delivery worker if none runs.
* ``SessionEnd``: the fallback when the session's last prompt got no Stop/StopFailure candidate
  (Claude 2.1.332 kills the print-mode StopFailure hook): the transcript tail decides
  (:mod:`claude_outcome`) and one candidate is submitted under the key Stop would have used.
* ``PermissionRequest`` and ``Notification`` ``permission_prompt``/``elicitation_dialog``/
  ``agent_needs_input``, from the root or a sub-agent: the task waits for the user, one "needs
  you" record per request (:mod:`needs_you`, docs/approvals.md).
* anything else (``SubagentStop``, tool events...): ignored, logged at debug.

Events fired inside a sub-agent (``agent_id`` present) never describe the main session.
Nothing is ever printed: UserPromptSubmit stdout would become context for the model.
"""

from __future__ import annotations

from donebell.shared.ingest import merge_evidence, submit_candidate
from donebell.shared.keys import event_key, identity
from donebell.shared.process.liveness import own_start_time
from donebell.shared.records import new_candidate
from donebell.shared.statedir import PENDING, now
from donebell.workers.agents.claude import outcome as claude_outcome
from donebell.workers.agents.claude import session as claude_session
from donebell.workers.kit.hook_context import (
    ERROR_LIMIT,
    MESSAGE_LIMIT,
    HookContext,
    message_field,
    stdin_object,
    text_field,
)

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from donebell.shared.record_types import ClaudeSession

PATH_LIMIT = 4096
ACCELERATOR_TYPES = ("idle_prompt", "agent_completed")


def claude(ctx: HookContext, argv: list[str]) -> None:
    """Read one Claude hook payload from stdin and handle it."""
    payload = stdin_object()
    event = payload.get("hook_event_name")
    if not ctx.claude_enabled:
        ctx.log("debug", "claude hook ignored: enable_claude_code is false", event=str(event)[:40])
        return
    # Claude Code's own payloads carry no ``timestamp``; the other agent's Claude-shaped ones do,
    # so a Claude Code started from inside that agent's shell (its variable inherited) still counts.
    host = ctx.hook_host if "timestamp" in payload else None
    if host is not None:
        # Another agent runs this project's Claude hooks for its own task: its own hooks and
        # session log report that task, so this call is never a second notification.
        ctx.log("info", f"claude hook run by {host}: ignored", hook_event=str(event)[:40])
        return
    if event == "PermissionRequest" or (event == "Notification" and _needs_type(payload)):
        # A subagent's prompt blocks the root too: it counts, named as the subagent's.
        from donebell.workers.agents.claude.needs_you import claude_needs

        claude_needs(ctx, payload, event if event == "PermissionRequest" else str(payload["notification_type"]))
        return
    handler = HANDLERS.get(event) if isinstance(event, str) else None
    if handler is None:
        ctx.log("debug", "claude hook event ignored", event=str(event)[:40])
        return
    if text_field(payload, "agent_id"):
        ctx.log("debug", "claude hook from a sub-agent ignored", hook_event=event)
        return
    handler(ctx, payload)


def _needs_type(payload: dict[str, Any]) -> bool:
    """A Notification that means the task waits for the user (``needs_you.NEEDS_TYPES``)."""
    return payload.get("notification_type") in ("permission_prompt", "elicitation_dialog", "agent_needs_input")


def on_prompt(ctx: HookContext, payload: dict[str, Any]) -> None:
    session_id = text_field(payload, "session_id")
    if session_id is None:
        ctx.log("warning", "claude UserPromptSubmit without session_id: no epoch recorded")
        return
    prompt_id = text_field(payload, "prompt_id")
    record = claude_session.advance(
        ctx.state,
        session_id,
        prompt_id,
        text_field(payload, "transcript_path", PATH_LIMIT),
        text_field(payload, "cwd", PATH_LIMIT),
    )
    if record.get("prompt_id") != prompt_id:
        current = record.get("prompt_id")
        ctx.log("info", "claude UserPromptSubmit of an older prompt ignored", prompt_id=prompt_id, current=current)
        return
    swept = claude_session.supersede_older(ctx.state, session_id, int(record["epoch"]))
    ctx.log(
        "info",
        "claude prompt epoch",
        session_id=session_id,
        prompt_id=prompt_id,
        epoch=record["epoch"],
        superseded=swept,
        goal_scan=(record.get("goal_scan") or {}).get("status"),
    )


def on_stop(ctx: HookContext, payload: dict[str, Any]) -> None:
    session_id = text_field(payload, "session_id")
    prompt_id = text_field(payload, "prompt_id")
    reasons = [] if session_id else ["no session_id"]
    if not prompt_id:
        reasons.append("no prompt_id")
    for name in ("background_tasks", "session_crons"):
        value = payload.get(name)
        if not isinstance(value, list):
            reasons.append(f"{name} missing")
        elif value:
            reasons.append(f"{len(value)} {name} still active")
    if reasons or session_id is None or prompt_id is None:
        held = bool(session_id and prompt_id) and claude_session.note_held(
            ctx.state, str(session_id), str(prompt_id), "; ".join(reasons)
        )
        ctx.log(
            "info",
            "claude Stop not final: nothing written",
            session_id=session_id,
            prompt_id=prompt_id,
            reason="; ".join(reasons),
            held=held,
        )
        return
    last = message_field(payload, "last_assistant_message", MESSAGE_LIMIT)
    _ingest(
        ctx,
        payload,
        session_id,
        prompt_id,
        source="claude-stop",
        outcome="done",
        error=None,
        last=last,
        stop_hook_active=payload.get("stop_hook_active") is True,
    )


def on_stop_failure(ctx: HookContext, payload: dict[str, Any]) -> None:
    error = message_field(payload, "error", ERROR_LIMIT) or "unknown"
    details = message_field(payload, "error_details", ERROR_LIMIT)
    if details is not None:  # the API's raw answer may echo a credential
        from donebell.shared.text.redaction import redact

        details = redact(details)
    last = message_field(payload, "last_assistant_message", MESSAGE_LIMIT)
    if error == "unknown":  # e.g. a 400: its last message names it (api_error.py)
        from donebell.workers.agents.claude.api_error import error_kind

        error = error_kind(error, last, details)
    _ingest(
        ctx,
        payload,
        text_field(payload, "session_id"),
        text_field(payload, "prompt_id"),
        source="claude-stopfailure",
        outcome="failed",
        error=error,
        last=last,
        error_details=details,
    )


def on_notification(ctx: HookContext, payload: dict[str, Any]) -> None:
    kind = payload.get("notification_type")
    if kind not in ACCELERATOR_TYPES:
        ctx.log("debug", "claude notification ignored", notification_type=str(kind)[:40])
        return
    session_id = text_field(payload, "session_id")
    prompt_id = text_field(payload, "prompt_id")
    marked = False
    if session_id and prompt_id:
        key = event_key("claude", session_id, prompt_id)
        state = ctx.state
        with state.mutation_lock(key):
            current = state.read(PENDING, key) if state.locate(key) == PENDING else None
            if current is not None:
                merged = merge_evidence(current, {"source": "claude-notification"})
                merged["idle_notified_at"] = now()
                merged["notification_type"] = kind
                state.replace(PENDING, merged)
                marked = True
    ctx.log("info", "claude idle notification", session_id=session_id, prompt_id=prompt_id, marked=marked)
    ctx.request_delivery()


def on_session_end(ctx: HookContext, payload: dict[str, Any]) -> None:
    session_id = text_field(payload, "session_id")
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    if session_id is None:
        ctx.log("info", "claude SessionEnd without session_id: nothing to recover")
        return
    fold, scan = claude_outcome.tail_fold(transcript)
    # /clear and resume end the session record but not the CLI: its background work lives on.
    exited = payload.get("reason") not in ("clear", "resume")
    found = claude_outcome.derive(fold, exited=exited) if fold is not None else None
    if found is None:
        ctx.log(
            "info",
            "claude SessionEnd: the last prompt did not finish in the transcript; nothing written",
            session_id=session_id,
            transcript=scan.get("status"),
            phase=(fold or {}).get("phase"),
        )
        return
    prompt_id = str(found["prompt_id"])  # the transcript's last prompt: a TUI /exit names its own
    session = claude_session.read_session(ctx.state, session_id)
    if session is not None and session.get("held_prompt_id") == prompt_id and found["note"] is None:
        if not exited:
            ctx.log("info", "claude SessionEnd: the Stop hook held this prompt; nothing written", session_id=session_id)
            return
        found["note"] = claude_outcome.KILLED_NOTE  # what the Stop hook saw running ended with the CLI
    key = event_key("claude", session_id, prompt_id)
    where = ctx.state.locate(key)
    if where is not None:
        ctx.log("debug", "claude SessionEnd: the prompt already has a record", key=key, where=where)
        return
    last = claude_outcome.reply_text(transcript or "", found["reply_offset"], MESSAGE_LIMIT)
    _ingest(
        ctx,
        {**payload, "prompt_id": prompt_id},
        session_id,
        prompt_id,
        source="claude-sessionend",
        outcome=found["outcome"],
        error=found["error"],
        last=last,
        refresh=False,  # a racing StopFailure's own payload wins over what the transcript said
        note=found["note"],
    )


def _ingest(
    ctx: HookContext,
    payload: dict[str, Any],
    session_id: str | None,
    prompt_id: str | None,
    *,
    source: str,
    outcome: str,
    error: str | None,
    last: str | None,
    refresh: bool = True,
    **extra: Any,
) -> None:
    state = ctx.state
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    cwd = text_field(payload, "cwd", PATH_LIMIT)
    found = _session_of(ctx, session_id, prompt_id, transcript, cwd, source)
    if found is None:
        return
    session, relation = found
    epoch = int(session["epoch"]) if session else 0
    key, weak = identity("claude", session_id, prompt_id)
    candidate = new_candidate(
        key=key,
        provider="claude",
        source=source,
        weak_identity=weak,
        session_id=session_id,
        prompt_id=prompt_id,
        cwd=cwd,
        transcript_path=transcript,
        claude_epoch=epoch,
        claude_session_state=relation,
        goal_baseline=session.get("goal_baseline") if session else None,
        outcome=outcome,
        error=error,
        last_message=ctx.excerpt(last),
        has_final_message=last is not None,
        origin=ctx.origin,
        signal_at=own_start_time(),  # when Claude ran the hook: the gate's settle counts from there
        **extra,
    )
    result: str = submit_candidate(state, candidate, refresh=refresh)
    written = result in ("created", "merged")
    if written and session_id and claude_session.superseded_since(state, key, session_id, epoch):
        result = "superseded"
    ctx.log(
        "info",
        f"claude {source}: {result}",
        key=key,
        session_id=session_id,
        prompt_id=prompt_id,
        epoch=epoch,
        session_state=relation,
        weak_identity=weak,
    )
    if result in ("created", "merged"):
        ctx.request_delivery()


def _session_of(
    ctx: HookContext,
    session_id: str | None,
    prompt_id: str | None,
    transcript: str | None,
    cwd: str | None,
    source: str,
) -> tuple[ClaudeSession | None, str] | None:
    """``(session record, relation of the prompt to it)``; None (logged) for an older prompt's signal."""
    if session_id and prompt_id:
        session, relation = claude_session.for_prompt(ctx.state, session_id, prompt_id, transcript, cwd)
        if relation == "stale":
            ctx.log(
                "info",
                f"claude {source} of an older prompt ignored",
                session_id=session_id,
                prompt_id=prompt_id,
                current_prompt_id=session.get("prompt_id") if session else None,
            )
            return None
        return session, relation
    if session_id:
        session = claude_session.read_session(ctx.state, session_id)
        return session, "current" if session else "no-session"
    return None, "no-session"


HANDLERS: dict[str, Callable[[HookContext, dict[str, Any]], None]] = {
    "UserPromptSubmit": on_prompt,
    "Stop": on_stop,
    "StopFailure": on_stop_failure,
    "Notification": on_notification,
    "SessionEnd": on_session_end,
}
