"""Claude Code blocks on the user: its PermissionRequest hook and its needs-type Notifications.

A PermissionRequest is keyed by its exact call (``request_key``: the digest of the tool name and
input) and the transcript's state (the last ``tool_use`` id in its tail and how many
``tool_result`` records follow it, else the file's size; a subagent's adds its ``agent_id``, as its
calls are in its own file), and names the call's ``tool_use`` id when the transcript already shows
it (:func:`identify`). The session's needs-you note remembers the open request: a
needs-type Notification of the same prompt while it is open (:func:`open_request`: its own call
not answered, the turn not over) is the same request, however the transcript moved meanwhile
(Claude flushes its transcript lazily; its ``permission_prompt`` comes ~6 s after the
PermissionRequest, and another call's result may land in between).

Which signal opened the request is decided under the lock of the session's needs-you note (a
record of its own in ``claude/``, :func:`note_key`), before any record is
written, so the order the two hooks happen to run in (a loaded machine can start the
PermissionRequest hook late) never makes two requests of one dialog: the first names it, the
second finds it; a PermissionRequest that finds a Notification's request adopts it (its record
gets the call, the buttons' digest and wait). The record itself is the hooks'
(``workers/kit/needs_you.py``).
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.bounded_read import read_from, read_tail
from donebell.shared.statedir import CLAUDE, now
from donebell.workers.kit.hook_context import HookContext, text_field
from donebell.workers.kit.needs_you import NAME_LIMIT, PATH_LIMIT, file_size, request_key, tool_digest, write_request

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.record_types import ClaudeSession

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
PERMISSION = "PermissionRequest"


def claude_needs(ctx: HookContext, payload: dict[str, Any], signal: str) -> None:
    """A Claude ``PermissionRequest`` (``signal`` = the event) or a Notification of a needs type."""
    session_id = text_field(payload, "session_id")
    if session_id is None:
        ctx.log("warning", "claude needs-you signal without session_id: nothing written", signal=signal)
        return
    transcript = text_field(payload, "transcript_path", PATH_LIMIT)
    agent_id = text_field(payload, "agent_id")
    prompt_id = text_field(payload, "prompt_id") or ""
    marker, window = request_state(transcript)
    if agent_id and signal == PERMISSION:  # its calls are in its own file, not this one
        marker = f"{marker}|{agent_id}"
    answer_path = _subagent_transcript(transcript, session_id, agent_id) or transcript
    if answer_path is not None and answer_path != transcript:
        window = _tail(answer_path)
    asked = {
        "key": request_key("claude", session_id, prompt_id, marker, payload),
        "prompt_id": prompt_id,
        "at": now(),
        "signal": signal,
        "answer_path": answer_path,
        "answer_offset": file_size(answer_path),
        "tool_digest": tool_digest(payload) if signal == PERMISSION else None,
        "tool_use_id": _call_of(window, payload, signal),
    }
    request, session = _claim(ctx, session_id, asked)
    if request is None:
        ctx.log("info", "needs-you: the same request again, nothing new", key=asked["key"], signal=signal)
        return
    write_request(
        ctx,
        payload,
        provider="claude",
        conversation=session_id,
        turn=prompt_id,
        marker=marker,
        signal=signal,
        answer_path=answer_path,
        key=request["key"],
        adopt=request["key"] != asked["key"],
        session_id=session_id,
        prompt_id=prompt_id or None,
        claude_epoch=int(session.get("epoch") or 0) if session else 0,
        tool_use_id=asked["tool_use_id"],
    )


def _call_of(window: bytes, payload: dict[str, Any], signal: str) -> str | None:
    """The ``tool_use`` id the signal is about, when the transcript shows it already: the call
    whose digest is the PermissionRequest's, or (a Notification names no call) the newest call
    still without its result."""
    if signal == PERMISSION:
        return identify(window, tool_digest(payload))
    return newest_open_call(window)


def _claim(
    ctx: HookContext, session_id: str, asked: dict[str, Any]
) -> tuple[dict[str, Any] | None, ClaudeSession | None]:
    """Under the session's needs-you note's lock: the request this signal is (``asked``, or the
    open one it joins, or None when it is an open request already), noted before any record is
    written; and the session record (its prompt epoch)."""
    from donebell.shared.statedir import SCHEMA_VERSION, InvalidRecord, encode
    from donebell.workers.agents.claude.session import read_session

    state, key = ctx.state, note_key(session_id)
    with state.mutation_lock(key):
        try:
            note = state.read(CLAUDE, key)
        except InvalidRecord:
            note = None
        request: dict[str, Any] | None = asked
        found = open_request(note if (note or {}).get("session_id") == session_id else None, asked["prompt_id"])
        if found is not None and asked["signal"] != PERMISSION:
            request = None  # the dialog's request is open: a Notification of it adds nothing
        elif found is not None and found.get("signal") != PERMISSION and _same_call(found, asked):
            request = {**asked, "key": found["key"]}  # the Notification came first: its request
        if request is not None:
            note = {"schema": SCHEMA_VERSION, "key": key, "kind": "claude-needs-you", "session_id": session_id}
            # Volatile like a health file (no fsync in the hook): a note lost to a crash costs at
            # most a second push of one dialog.
            body = encode({**note, "updated_at": now(), "needs_you": request})
            state.write_file(state.path(CLAUDE, f"{key}.json"), body, durable=False)
    return request, read_session(state, session_id)


def note_key(session_id: str) -> str:
    """The key of the session's needs-you note in ``claude/`` (beside its session record, and
    written without one: a hook installed mid-session, a UserPromptSubmit that never ran)."""
    from donebell.shared.keys import claude_session_key

    return claude_session_key(f"needs-you|{session_id}")


def _same_call(found: dict[str, Any], asked: dict[str, Any]) -> bool:
    """A Notification's request is this PermissionRequest's unless both name different calls."""
    theirs, ours = found.get("tool_use_id"), asked.get("tool_use_id")
    return not (isinstance(theirs, str) and isinstance(ours, str) and theirs != ours)


def open_request(session: dict[str, Any] | None, prompt_id: str) -> dict[str, Any] | None:
    """The session's last needs-you request if it is still open: same prompt, asked within
    :data:`REPEAT_WINDOW`, and the transcript shows neither its own call's result nor the turn's
    end after it (:func:`answered`: another call's result does not answer it)."""
    last = (session or {}).get("needs_you")
    if not isinstance(last, dict) or last.get("prompt_id") != prompt_id:
        return None
    at, path, offset = last.get("at"), last.get("answer_path"), last.get("answer_offset")
    if not isinstance(at, (int, float)) or now() - at > REPEAT_WINDOW:
        return None
    if isinstance(path, str) and isinstance(offset, int):
        try:
            before = read_from(path, max(0, offset - TAIL_BYTES), min(offset, TAIL_BYTES))
            if answered(last, before, read_from(path, offset, TAIL_BYTES)):
                return None  # answered: whatever asks now is a new request
        except OSError:
            pass
    return last


def request_state(transcript: str | None) -> tuple[str, bytes]:
    """``(<last tool_use id>+<tool results after it>, else size:<n>; the tail it was read from)``."""
    if not transcript:
        return "no-transcript", b""
    try:  # never blocks: a FIFO or device planted as the transcript is refused unread
        window = read_tail(transcript, TAIL_BYTES)
    except OSError:
        return "no-transcript", b""
    tail, size = window.data, window.size
    at = tail.rfind(_TOOL_USE)
    start = tail.find(_ID, at) if at >= 0 else -1
    if start < 0:
        return f"size:{size}", tail
    start += len(_ID)
    end = tail.find(b'"', start)
    tool_use_id = tail[start:end].decode("utf-8", "replace")[:NAME_LIMIT]
    return f"{tool_use_id}+{tail.count(_TOOL_RESULT, end)}", tail


def _tail(path: str) -> bytes:
    try:
        return read_tail(path, TAIL_BYTES).data
    except OSError:
        return b""


def _subagent_transcript(transcript: str | None, session_id: str, agent_id: str | None) -> str | None:
    """A subagent's own transcript (``<project>/<session>/subagents/agent-<id>.jsonl``), if present."""
    if not transcript or not agent_id or "/" in agent_id or "\\" in agent_id:
        return None
    path = os.path.join(os.path.dirname(transcript), session_id, "subagents", f"agent-{agent_id}.jsonl")
    return path if os.path.isfile(path) else None


# ---- which call a request is about, and whether the transcript shows it answered --------------
#
# A PermissionRequest names no ``tool_use_id``, but its ``tool_name`` and ``tool_input`` are the
# assistant's ``tool_use`` block as the transcript records it (measured: the hook's ``tool_input``
# equals the block's ``input``), so the digest of the exact call finds its block, and the block's
# ``id`` names the ``tool_result`` that answers it. One message can ask for several calls; only
# this call's result answers this request (a ``Read`` that ran without a prompt writes its result
# while the ``Bash`` dialog is still open). While the call's block is not in the transcript yet
# (Claude flushes it lazily), only what ends the whole wait counts: a new prompt, or the turn's end
# (a reply that ends the turn, an API error, ``turn_duration``).

#: Bytes only a record that ends the whole wait carries (checked again on the parsed record).
_WAIT_ENDS = (b'"promptId"', b'"stop_reason"', b'"turn_duration"', b'"isApiErrorMessage"')
_TURN_ENDS = ("end_turn", "stop_sequence", "max_tokens", "refusal")


def calls(window: bytes) -> list[tuple[str, str]]:
    """``(tool_use id, digest of the exact call)`` of every ``tool_use`` block in ``window``, in order."""
    found: list[tuple[str, str]] = []
    for line in window.splitlines():
        if _TOOL_USE not in line:
            continue
        content = _content(_record(line))
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                call = {"tool_name": block.get("name"), "tool_input": block.get("input")}
                found.append((block["id"], tool_digest(call)))
    return found


def result_of(window: bytes, tool_use_id: str) -> bool:
    """True when ``window`` holds the ``tool_result`` of ``tool_use_id``."""
    return f'"tool_use_id":"{tool_use_id}"'.encode() in window


def identify(window: bytes, digest: str | None, done: bytes | None = None) -> str | None:
    """The ``tool_use`` id of the call ``digest`` in ``window``: the first such block without a
    result in ``done`` (default: ``window``; the same call twice in one message: the one still
    asking), else None."""
    if not digest:
        return None
    same = [call_id for call_id, found in calls(window) if found == digest]
    waiting = [call_id for call_id in same if not result_of(window if done is None else done, call_id)]
    return waiting[0] if waiting else None


def newest_open_call(window: bytes) -> str | None:
    """The newest ``tool_use`` in ``window`` without its result (what a Notification is about)."""
    for call_id, _digest in reversed(calls(window)):
        if not result_of(window, call_id):
            return call_id
    return None


def answered(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """Why the transcript shows this request answered, or None. ``after``: what Claude wrote after
    the request (from ``answer_offset``); ``before``: the end of what it had written until then."""
    call_id = record.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        digest = record.get("tool_digest")
        call_id = identify(before + after, digest if isinstance(digest, str) else None, done=before)
    if call_id and result_of(after, call_id):
        return "the agent went on: this call's tool_result after the request"
    return wait_ended(after, record.get("prompt_id"))


def wait_ended(after: bytes, prompt_id: object) -> str | None:
    """Why ``after`` ends every wait of the prompt ``prompt_id`` (a new prompt, the turn's end), or None."""
    for line in after.splitlines():
        if not any(marker in line for marker in _WAIT_ENDS):
            continue
        record = _record(line)
        kind, message = record.get("type"), record.get("message")
        if kind == "user" and isinstance(record.get("promptId"), str) and record["promptId"] != prompt_id:
            if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in _content(record)):
                return "the agent went on: a new prompt after the request"
        if kind == "assistant" and record.get("isApiErrorMessage") is True:
            return "the turn ended after the request (an API error)"
        if kind == "assistant" and isinstance(message, dict) and message.get("stop_reason") in _TURN_ENDS:
            return "the turn ended after the request"
        if kind == "system" and record.get("subtype") == "turn_duration":
            return "the turn ended after the request"
    return None


def _record(line: bytes) -> dict[str, Any]:
    try:
        found = json.loads(line)
    except ValueError:  # a half-written line, invalid UTF-8: no evidence
        return {}
    return found if isinstance(found, dict) else {}


def _content(record: dict[str, Any]) -> list[Any]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []
