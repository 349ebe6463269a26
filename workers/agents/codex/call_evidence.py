"""Which call a Codex permission request is about, and whether the rollout shows it answered.

Codex writes the waiting call before it runs its ``PermissionRequest`` hook (a ``response_item``
``function_call`` ``exec_command``, docs/approvals.md); the hook's ``tool_input`` is that call's
``cmd`` (``command``) and ``justification`` (``description``), so the digest of the exact call
(``needs_you.tool_digest``) finds it, and its ``call_id`` names the output that answers it. Only
that call's output (``function_call_output``, ``exec_command_end``) answers this request: another
call of the same turn finishing says nothing about this one. What ends the whole wait always
counts: the turn's end or abort, a new user message.
"""

from __future__ import annotations

import json
from typing import Any

from donebell.workers.kit.needs_you import tool_digest

#: Records that end every wait of the turn.
WAIT_ENDS = (b'"task_complete"', b'"turn_aborted"', b'"user_message"')
#: Records that answer one call, named by its ``call_id``.
CALL_ENDS = (b'"function_call_output"', b'"exec_command_end"')
_CALL = b'"function_call"'


def identify(window: bytes, digest: str | None, done: bytes) -> str | None:
    """The ``call_id`` of the call ``digest`` in ``window``: the first such call without its
    output in ``done`` (what was written before the request), else None."""
    if not digest:
        return None
    for line in window.splitlines():
        if _CALL not in line or b"exec_command" not in line:
            continue
        call_id = _call_of(line, digest)
        if call_id is not None and not output_of(done, call_id):
            return call_id
    return None


def output_of(window: bytes, call_id: str) -> bool:
    """True when ``window`` holds the output (or end) of the call ``call_id``."""
    needle = f'"call_id":"{call_id}"'.encode()
    return any(needle in line and any(m in line for m in CALL_ENDS) for line in window.splitlines())


def answered(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """Why the rollout shows this request answered, or None (``after``: what Codex wrote after
    the request; ``before``: the end of what it had written until then)."""
    call_id = record.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        digest = record.get("tool_digest")
        call_id = identify(before + after, digest if isinstance(digest, str) else None, before)
    if call_id and output_of(after, call_id):
        return "the agent went on: this call's output after the request"
    for marker in WAIT_ENDS:
        if marker in after:
            return f"the agent went on: a {marker.decode().strip(chr(34))} after the request"
    return None


def _call_of(line: bytes, digest: str) -> str | None:
    try:
        record = json.loads(line)
        payload = record["payload"]
        args = json.loads(payload["arguments"])
    except (ValueError, KeyError, TypeError):  # not a call of this shape: no evidence
        return None
    if not isinstance(args, dict) or payload.get("type") != "function_call":
        return None
    why = args.get("justification")
    tool_input: dict[str, Any] = {"command": args.get("cmd"), **({"description": why} if why else {})}
    if tool_digest({"tool_name": "Bash", "tool_input": tool_input}) != digest:
        return None
    call_id = payload.get("call_id")
    return call_id if isinstance(call_id, str) and call_id else None
