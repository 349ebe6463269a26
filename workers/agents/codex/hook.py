"""``donebell hook codex-stop`` (modern Stop hook), ``donebell hook codex-notify`` (legacy notify)
and ``donebell hook codex-permission`` (``PermissionRequest``: :mod:`needs_you`).

Both turn a Codex signal into evidence under ``event_key("codex", thread_id, turn_id)`` — the
same key the rollout scanner computes from ``session_meta.id`` and the record's ``turn_id`` — so
the three sources of one turn converge on one record.

* Stop runs *before* Codex writes ``task_complete`` (docs/agent-facts.md): the candidate has
  ``outcome: null`` and the gate waits for the completion. Its ``session_id`` is the thread id of
  a root (it equals the rollout's ``session_meta.id``). A payload with ``agent_id`` comes from a
  sub-agent: the thread is ``agent_id`` and the key can only be suppressed. ``SubagentStop`` is
  ignored. The hook prints ``{}`` whatever happens, never ``decision: block`` (which loops).
* notify runs after ``task_complete``, for every completed turn including children's (a child's
  payload has no ``client`` key) and the TUI's thread-title turn (ignored: :func:`is_title_turn`).
  The user's previous notifier (``chain_notify``) runs first.

A thread classified ``subagent`` gets a ``suppressed/`` receipt (reason ``subagent``); a root or
an unknown one a ``pending/`` candidate (the gate retries unknown classification).
"""

from __future__ import annotations

from donebell.shared.ingest import submit_candidate, submit_suppressed
from donebell.shared.keys import identity
from donebell.shared.records import new_candidate
from donebell.workers.agents.codex.hook_evidence import classify_thread, codex_homes
from donebell.workers.agents.codex.identity import ThreadIdentity
from donebell.workers.kit.hook_context import (
    MESSAGE_LIMIT,
    HookContext,
    PayloadError,
    argv_object,
    message_field,
    stdin_object,
    text_field,
)

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.record_types import Candidate

PATH_LIMIT = 4096
#: How Codex 0.171's title prompt begins (the input of the TUI's thread-title turn).
TITLE_PROMPT = "Generate a concise, single-line task title"


def codex_permission(ctx: HookContext, argv: list[str]) -> None:
    """``PermissionRequest``: the turn waits for an approval; a "needs you" record (docs/approvals.md).
    The caller prints nothing, which Codex reads as no decision (its own approval path goes on)."""
    payload = stdin_object()
    event = payload.get("hook_event_name")
    if event is not None and event != "PermissionRequest":
        ctx.log("debug", "codex permission hook: other event ignored", event=str(event)[:40])
        return
    from donebell.workers.agents.codex.needs_you import codex_needs

    codex_needs(ctx, payload)


def codex_stop(ctx: HookContext, argv: list[str]) -> None:
    """Ingest one Codex Stop payload from stdin (the caller prints ``{}``)."""
    payload = stdin_object()
    event = payload.get("hook_event_name")
    if event is not None and event != "Stop":
        ctx.log("debug", "codex hook event ignored", event=str(event)[:40])
        return
    thread_id = text_field(payload, "session_id")
    turn_id = text_field(payload, "turn_id")
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    home, sqlite_home = codex_homes(transcript)
    agent_id = text_field(payload, "agent_id")
    if agent_id and agent_id == thread_id:
        # A sub-agent's id is never its root's: the payload contradicts itself, so the rollout decides.
        ctx.log("warning", "codex stop: agent_id equals session_id; classified from the rollout", thread_id=thread_id)
        agent_id = None
    if agent_id:
        # Codex's own word that this Stop fired inside a sub-agent: the key (agent, turn) can
        # never be the root's, so suppressing it can never lose the root's notification.
        ident = ThreadIdentity("subagent", agent_id, None, thread_id, evidence="Stop payload carries agent_id")
        thread_id, rollout = agent_id, None
    else:
        ident, rollout = classify_thread(thread_id, transcript, home, sqlite_home)
        if thread_id is None and ident.classification == "root":
            thread_id = ident.thread_id  # the payload lost its id; the root rollout names the thread
    last = message_field(payload, "last_assistant_message", MESSAGE_LIMIT)
    candidate = _candidate(
        ctx,
        "codex-stop",
        thread_id,
        turn_id,
        ident,
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=rollout,  # None when the payload's transcript is another thread's
        codex_home=home,
        sqlite_home=sqlite_home,
        last_message=last,
        outcome=None,  # Stop precedes task_complete: the gate reads the outcome from the rollout
        has_user_message=None,
        has_final_message=last is not None,
        stop_hook_active=payload.get("stop_hook_active") is True,
    )
    _submit(ctx, candidate, ident)


def codex_notify(ctx: HookContext, argv: list[str]) -> None:
    """Ingest one legacy notify payload (the last argv element); run ``chain_notify`` first."""
    from donebell.workers.agents.codex.chain_notify import run_chain

    payload_arg = argv[-1] if argv else None
    run_chain(ctx, payload_arg)
    if payload_arg is None:
        raise PayloadError("no payload argument")
    payload = argv_object(payload_arg)
    kind = payload.get("type")
    if kind != "agent-turn-complete":
        ctx.log("debug", "codex notify ignored", type=str(kind)[:40])
        return
    thread_id = text_field(payload, "thread-id")
    turn_id = text_field(payload, "turn-id")
    client = text_field(payload, "client", 80)
    home, sqlite_home = codex_homes(None)
    ident, rollout = classify_thread(thread_id, None, home, sqlite_home)
    if ident.classification == "unknown" and client is None:
        # Codex omits "client" for child threads; without local evidence that is only a hint
        # (older versions may omit it for roots too), so the gate gets it and decides.
        ident = ThreadIdentity("unknown", ident.thread_id, evidence=f"notify without client key; {ident.evidence}")
    messages = payload.get("input-messages")
    if rollout is None and ident.classification == "unknown" and is_title_turn(messages):
        ctx.log("info", "codex notify: the TUI's thread-title turn, not a task; no candidate", thread_id=thread_id)
        return
    last = message_field(payload, "last-assistant-message", MESSAGE_LIMIT)
    candidate = _candidate(
        ctx,
        "codex-notify",
        thread_id,
        turn_id,
        ident,
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=rollout,
        codex_home=home,
        sqlite_home=sqlite_home,
        last_message=last,
        outcome="done",  # notify fires only after a successful task_complete (docs/agent-facts.md)
        has_user_message=isinstance(messages, list) and any(isinstance(m, str) and m for m in messages),
        has_final_message=last is not None,
        client=client,
    )
    _submit(ctx, candidate, ident)


def is_title_turn(messages: object) -> bool:
    """The Codex TUI names a new thread by one turn of a helper thread of its own: no rollout, no
    thread row, its only input Codex's title prompt, and a notify like any turn (docs/agent-facts.md)."""
    return (
        isinstance(messages, list)
        and len(messages) == 1
        and isinstance(messages[0], str)
        and messages[0].startswith(TITLE_PROMPT)
    )


def _candidate(
    ctx: HookContext,
    source: str,
    thread_id: str | None,
    turn_id: str | None,
    ident: ThreadIdentity,
    *,
    last_message: str | None,
    **fields: Any,
) -> Candidate:
    key, weak = identity("codex", thread_id, turn_id)
    if ident.classification == "root":
        root = thread_id
    else:
        root = ident.root_session_id if ident.root_session_id != thread_id else None
    return new_candidate(
        key=key,
        provider="codex",
        source=source,
        weak_identity=weak,
        thread_id=thread_id,
        turn_id=turn_id,
        classification=ident.classification,
        classification_evidence=ident.evidence,
        parent_thread_id=ident.parent_thread_id,
        root_thread_id=root,
        error=None,
        last_message=ctx.excerpt(last_message),
        origin=ctx.origin,
        completed_at=None,
        duration_ms=None,
        **fields,
    )


def _submit(ctx: HookContext, candidate: Candidate, ident: ThreadIdentity) -> None:
    state = ctx.state
    if ident.classification == "subagent":
        result = submit_suppressed(state, candidate, "subagent")
    else:
        result = submit_candidate(state, candidate)
    ctx.log(
        "info",
        f"codex {candidate['source']}: {result}",
        key=candidate["key"],
        thread_id=candidate["thread_id"],
        turn_id=candidate["turn_id"],
        classification=ident.classification,
        evidence=ident.evidence[:200],
        weak_identity=candidate["weak_identity"],
    )
    if result in ("created", "merged"):
        ctx.request_delivery()
