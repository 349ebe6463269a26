"""Claude Code blocks on the user: its PermissionRequest hook and its needs-type Notifications.

The request is named by the transcript's state (the last ``tool_use`` id in its tail and how many
``tool_result`` records follow it, else the file's size; a subagent's PermissionRequest adds its
``agent_id`` and the digest of the exact tool call, as its calls are in its own file), and the
PermissionRequest notes it in the Claude session record (``needs_you``): a needs-type Notification
of the same prompt while that request is open (:func:`open_request`) is the same request, however
the transcript moved meanwhile (Claude flushes its transcript lazily; its ``permission_prompt``
comes ~6 s after the PermissionRequest). The record itself is the hooks' (``workers/kit/needs_you.py``).
"""

from __future__ import annotations

import os

from donebell.shared.bounded_read import read_from, read_tail
from donebell.shared.statedir import now
from donebell.workers.kit.hook_context import HookContext
from donebell.workers.kit.needs_you import NAME_LIMIT, PATH_LIMIT, file_size, tool_digest, write_request
from donebell.workers.kit.hook_input import text_field

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

#: Claude ``Notification`` types that mean the task waits for the user (facts: claude-2.1.332).
NEEDS_TYPES = ("permission_prompt", "elicitation_dialog", "agent_needs_input")
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
    key = write_request(
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
                "answer_offset": file_size(answer_path),
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


def _claude_session(ctx: HookContext, session_id: str) -> dict[str, Any] | None:
    from donebell.workers.agents.claude.session import read_session

    return read_session(ctx.state, session_id)
