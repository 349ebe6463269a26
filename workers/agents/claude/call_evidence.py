"""Which call a Claude permission request is about, and whether the transcript shows it answered.

A ``PermissionRequest`` names no ``tool_use_id``, but its ``tool_name`` and ``tool_input`` are the
assistant's ``tool_use`` block as the transcript records it (measured: the hook's ``tool_input``
equals the block's ``input``), so the digest of the exact call (``needs_you.tool_digest``) finds
its block, and the block's ``id`` names the ``tool_result`` that answers it. One message can ask
for several calls; only this call's result answers this request (a ``Read`` that ran without a
prompt writes its result while the ``Bash`` dialog is still open). While the call's block is not in
the transcript yet (Claude flushes it lazily), only what ends the whole wait counts: a new prompt,
or the turn's end (a reply that ends the turn, an API error, ``turn_duration``).

Standard library only: the hook path imports it.
"""

from __future__ import annotations

import json

from donebell.workers.hooks.needs_you import tool_digest

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_TOOL_USE = b'"type":"tool_use"'
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
