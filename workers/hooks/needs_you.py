"""A task blocks on the user: one "needs you" outbox record per blocking request.

Signals (docs/approvals.md): Claude Code's ``PermissionRequest`` hook and its ``Notification``
types in :data:`NEEDS_TYPES`; Codex's ``PermissionRequest`` hook (``donebell hook
codex-permission``). No gate decides anything here: the agent itself says it is waiting, so the
record goes straight to ``outbox/`` (as ``donebell test`` does) with ``notice: "needs-you"`` and the
delivery role's policies decide when, or whether, it is pushed (desk grace: the agent moving on is
the answer at the terminal; ``workers/delivery/policies/needs_answered.py``).

**One per blocking request.** Claude sends ``PermissionRequest`` and, ~6 s later, a
``Notification`` ``permission_prompt`` for the same dialog; the Notification carries no tool, and
Claude flushes its transcript lazily (measured: the ``tool_use`` line may land between the two).
So a request is named by the transcript's state (the last ``tool_use`` id in its tail and how
many ``tool_result`` records follow it, else the file's size; a subagent's PermissionRequest adds
its ``agent_id`` and the digest of the exact tool call, as its calls are in its own file), and the
PermissionRequest notes it in the Claude session record (``needs_you``): a needs-type
Notification of the same prompt while that request is open (:func:`open_request`) is the same
request, however the transcript moved meanwhile. A repeated payload gives the same key, found
anywhere in the pipeline: nothing new.

The hook prints nothing (no opinion: the agent's own dialog or policy decides) and never touches
the network: it writes one file and may start a delivery worker, like every other hook.
"""

from __future__ import annotations

import json
import os

from donebell.shared.bounded_read import read_from, read_tail
from donebell.shared.keys import content_digest, event_key, sequence_id
from donebell.shared.records import NEEDS_YOU, base
from donebell.shared.statedir import now
from donebell.workers.hooks.context import HookContext
from donebell.workers.hooks.kick import kick_and_log
from donebell.workers.hooks.stdin import message_field, text_field

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

#: Claude ``Notification`` types that mean the task waits for the user (facts: claude-2.1.332).
NEEDS_TYPES = ("permission_prompt", "elicitation_dialog", "agent_needs_input")
#: What each signal says the task waits for (the notification's first words).
WANTS = {
    "PermissionRequest": "permission",
    "permission_prompt": "permission",
    "elicitation_dialog": "question",
    "agent_needs_input": "input",
}
PATH_LIMIT = 4096
NAME_LIMIT = 80
SUMMARY_CHARS = 200
#: How much of the transcript's end names the open request (the call that asked is near the end).
TAIL_BYTES = 256 << 10
#: A needs-type Notification this soon after an open request of the same prompt is that request
#: (Claude's permission_prompt comes ~6 s after the PermissionRequest).
REPEAT_WINDOW = 120.0
_TOOL_USE = b'"type":"tool_use"'
_TOOL_RESULT = b'"type":"tool_result"'
_ID = b'"id":"'


def claude_needs(ctx: HookContext, payload: dict[str, Any], signal: str) -> None:
    """A Claude ``PermissionRequest`` (``signal`` = the event) or a Notification of a needs type."""
    session_id = text_field(payload, "session_id")
    if session_id is None:
        ctx.log("warning", "claude needs-you signal without session_id: nothing written", signal=signal)
        return
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    agent_id = text_field(payload, "agent_id")
    prompt_id = text_field(payload, "prompt_id") or ""
    session = _claude_session(ctx, session_id)
    if signal != "PermissionRequest":
        asked = open_request(session, prompt_id)
        if asked is not None:
            ctx.log("info", "needs-you: the same request again, nothing new", key=asked.get("key"), signal=signal)
            return
    marker = request_marker(transcript)
    if agent_id and signal == "PermissionRequest":  # its calls are in its own file, not this one
        marker = f"{marker}|{agent_id}|{tool_digest(payload)}"
    answer_path = _subagent_transcript(transcript, session_id, agent_id) or transcript
    key = _write(
        ctx,
        payload,
        provider="claude",
        conversation=session_id,
        turn=prompt_id,
        marker=marker,
        signal=signal,
        answer_path=answer_path,
        session_id=session_id,
        prompt_id=prompt_id or None,
        claude_epoch=int(session.get("epoch") or 0) if session else 0,
    )
    if key is not None:
        _remember(
            ctx,
            session_id,
            {
                "key": key,
                "prompt_id": prompt_id,
                "at": now(),
                "answer_path": answer_path,
                "answer_offset": _size(answer_path),
            },
        )


def open_request(session: dict[str, Any] | None, prompt_id: str) -> dict[str, Any] | None:
    """The session's last needs-you request if it is still open: same prompt, asked within
    :data:`REPEAT_WINDOW`, and no tool result written after it. Claude flushes its transcript
    lazily, so the transcript alone cannot tell the Notification ~6 s after a PermissionRequest
    that both name one dialog; the session record remembers the request instead."""
    last = (session or {}).get("needs_you")
    if not isinstance(last, dict) or last.get("prompt_id") != prompt_id:
        return None
    at, path, offset = last.get("at"), last.get("answer_path"), last.get("answer_offset")
    if not isinstance(at, (int, float)) or now() - at > REPEAT_WINDOW:
        return None
    if isinstance(path, str) and isinstance(offset, int):
        try:
            if _TOOL_RESULT in read_from(path, offset, TAIL_BYTES):
                return None  # answered: whatever asks now is a new request
        except OSError:
            pass
    return last


def _remember(ctx: HookContext, session_id: str, request: dict[str, Any]) -> None:
    """Note the request in the Claude session record (no record yet: nothing to note it in)."""
    from donebell.shared.keys import claude_session_key
    from donebell.shared.statedir import InvalidRecord

    state = ctx.state
    with state.mutation_lock(claude_session_key(session_id)):
        try:
            current = state.read("claude", claude_session_key(session_id))
        except InvalidRecord:
            return
        if current is None or current.get("session_id") != session_id:
            return
        state.replace("claude", {**current, "needs_you": request})  # updated_at stays: no prompt changed


def codex_needs(ctx: HookContext, payload: dict[str, Any]) -> None:
    """A Codex ``PermissionRequest`` (0.171: thread = ``session_id``, plus ``turn_id``)."""
    thread_id = text_field(payload, "session_id")
    turn_id = text_field(payload, "turn_id")
    if thread_id is None or turn_id is None:
        ctx.log("warning", "codex PermissionRequest without session_id/turn_id: nothing written")
        return
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    _write(
        ctx,
        payload,
        provider="codex",
        conversation=thread_id,
        turn=turn_id,
        marker=f"{tool_digest(payload)}|{_size(transcript)}",
        signal="PermissionRequest",
        answer_path=transcript,
        thread_id=thread_id,
        turn_id=turn_id,
        root_thread_id=thread_id,
    )


def _write(
    ctx: HookContext,
    payload: dict[str, Any],
    *,
    provider: str,
    conversation: str,
    turn: str,
    marker: str,
    signal: str,
    answer_path: str | None,
    **ids: Any,
) -> str | None:
    """Create the outbox record unless its key exists anywhere; returns the key if it was created."""
    state = ctx.state
    key = event_key(provider, conversation, f"{NEEDS_YOU}|{turn}|{marker}")  # type: ignore[arg-type]
    source = f"{provider}-{signal.lower()}"
    with state.mutation_lock(key):
        where = state.locate(key)
        if where is None:
            state.create("outbox", _record(ctx, payload, key, provider, source, signal, answer_path, ids))
    if where is not None:
        ctx.log("info", "needs-you: the same request again, nothing new", key=key, where=where, signal=signal)
        return None
    ctx.log("info", "needs-you recorded", key=key, provider=provider, signal=signal, marker=marker[:120])
    kick_and_log(ctx)
    return key


def _record(
    ctx: HookContext,
    payload: dict[str, Any],
    key: str,
    provider: str,
    source: str,
    signal: str,
    answer_path: str | None,
    ids: dict[str, Any],
) -> dict[str, Any]:
    at = now()
    record = base("outbox", key, provider)
    tool = text_field(payload, "tool_name", NAME_LIMIT)
    record.update(
        ids,
        notice=NEEDS_YOU,
        wants=WANTS.get(signal, WANTS.get(str(payload.get("notification_type")), "input")),
        source=source,
        sources=[source],
        weak_identity=False,
        outcome=None,
        tool=tool,
        summary=summary_of(payload),
        request_text=ctx.excerpt(request_text(payload)),
        agent_id=text_field(payload, "agent_id"),
        agent_type=text_field(payload, "agent_type", NAME_LIMIT),
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=text_field(payload, "transcript_path", PATH_LIMIT),
        answer_path=answer_path,
        answer_offset=_size(answer_path),
        origin=ctx.origin,
        revision=1,
        updated_at=at,
        promoted_at=at,  # the desk grace counts from the moment the agent asked
        verdict=NEEDS_YOU,
        sequence_id=sequence_id(provider, key),
        attempts=0,
        next_attempt_at=None,
        last_error=None,
    )
    return record


def summary_of(payload: dict[str, Any]) -> str | None:
    """What the agent wants, in one redacted line, never the command itself: the call's own
    ``description`` (its justification), a file's name, or Claude's notification text."""
    raw = payload.get("tool_input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
    text = tool_input.get("description")
    if not isinstance(text, str) or not text.strip():
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        text = f"file {os.path.basename(path)}" if isinstance(path, str) and path else None
    if text is None:
        text = message_field(payload, "message", 4 * SUMMARY_CHARS)
    if not isinstance(text, str) or not text.strip():
        return None
    from donebell.shared.text.redaction import redact  # only when there is text to keep

    return " ".join(redact(text).split())[:SUMMARY_CHARS] or None


def request_text(payload: dict[str, Any]) -> str | None:
    """The request itself (a shell command, a file path, a URL): stored only with ``include_message``."""
    raw = payload.get("tool_input")
    if not isinstance(raw, dict):
        return None
    for name in ("command", "file_path", "notebook_path", "url", "pattern"):
        value = raw.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def tool_digest(payload: dict[str, Any]) -> str:
    """SHA-256 (16 hex) of the exact tool name and input: two different calls never share a key."""
    material = json.dumps([payload.get("tool_name"), payload.get("tool_input")], sort_keys=True, default=str)
    return content_digest(material)[:16]


def request_marker(transcript: str | None) -> str:
    """``<last tool_use id>+<tool results after it>`` from the transcript's tail, else ``size:<n>``."""
    if not transcript:
        return "no-transcript"
    try:  # never blocks: a FIFO or device planted as the transcript is refused unread
        window = read_tail(transcript, TAIL_BYTES)
    except OSError:
        return "no-transcript"
    tail, size = window.data, window.size
    at = tail.rfind(_TOOL_USE)
    start = tail.find(_ID, at) if at >= 0 else -1
    if start < 0:
        return f"size:{size}"
    start += len(_ID)
    end = tail.find(b'"', start)
    tool_use_id = tail[start:end].decode("utf-8", "replace")[:NAME_LIMIT]
    return f"{tool_use_id}+{tail.count(_TOOL_RESULT, end)}"


def _subagent_transcript(transcript: str | None, session_id: str, agent_id: str | None) -> str | None:
    """A subagent's own transcript (``<project>/<session>/subagents/agent-<id>.jsonl``), if present."""
    if not transcript or not agent_id or "/" in agent_id or "\\" in agent_id:
        return None
    path = os.path.join(os.path.dirname(transcript), session_id, "subagents", f"agent-{agent_id}.jsonl")
    return path if os.path.isfile(path) else None


def _size(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _claude_session(ctx: HookContext, session_id: str) -> dict[str, Any] | None:
    from donebell.workers.agents.claude.session import read_session

    return read_session(ctx.state, session_id)
