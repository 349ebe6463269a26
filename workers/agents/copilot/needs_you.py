"""Copilot CLI blocks on the user: its TUI permission dialog (docs/approvals.md, "Copilot CLI").

Measured on 1.0.102: ``permissionRequest`` fires before *every* tool call, even those a rule or
``--allow-all-tools`` allows, and a dialog opens only after that hook returned without a decision;
then ``notification`` ``permission_prompt`` fires (~20 ms later). In ``-p`` the prompt notification
fires too, although the call was already denied (nobody can answer): no push there. So:

* ``notification`` ``permission_prompt`` in the TUI (``COPILOT_LOADER_PID`` is set only there):
  one "needs you" record per request;
* ``permissionRequest`` with approvals on, in the TUI, when the CLI was not started with a flag that
  allows every tool: the record, then the hook waits for the phone and answers in the shape Copilot
  obeys (``{"behavior":"allow"}`` / ``{"behavior":"deny","message":…}``); nothing on a timeout, so
  Copilot's own dialog opens. Its ``permission_prompt`` right after is then the same request.

One request, one key, one exact call: the kit's ``request_key`` (the digest of the exact tool and
input, :func:`~donebell.workers.kit.needs_you.tool_digest`, of the call as both hooks name it:
``bash`` and the command for a shell call) with the marker ``<n>``, which moves on once the
previous ask of the same call is older than :data:`REPEAT_WINDOW` or was answered from the phone
(the same command asked again is a new request; a tap answers only the call it was shown for).
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.statedir import now
from donebell.workers.kit.hook_context import HookContext, text_field
from donebell.workers.kit.needs_you import PATH_LIMIT, request_key, write_request

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

NAME = "copilot"
#: A prompt notification this soon after an ask of the same text is that ask (the hook's phone
#: wait comes first, then Copilot's dialog): at most the longest wait plus a margin.
REPEAT_WINDOW = 660.0
MAX_REPEATS = 64
RUN_PREFIX = "Run command: "
#: Command-line flags of the CLI that allow every tool: no dialog can follow a permissionRequest.
ALLOW_ALL_FLAGS = ("--allow-all-tools", "--allow-all", "--yolo")


def copilot_needs(ctx: HookContext, payload: dict[str, Any], event: str) -> None:
    """A ``notification`` or ``permissionRequest`` hook call."""
    session_id = text_field(payload, "sessionId")
    if session_id is None:
        ctx.log("warning", f"copilot {event} without sessionId: nothing written")
        return
    if event == "notification" and payload.get("notification_type") != "permission_prompt":
        ctx.log("debug", "copilot notification ignored", notification_type=str(payload.get("notification_type"))[:40])
        return
    if not os.environ.get("COPILOT_LOADER_PID"):
        ctx.log("debug", f"copilot {event} outside the TUI: nobody is asked (-p denies or allows by itself)")
        return
    if event == "permissionRequest" and not _phone_may_answer(ctx):
        return
    text = request_text(payload)
    shaped = {
        "tool_name": text_field(payload, "toolName") or ("bash" if text.startswith(RUN_PREFIX) else None),
        "tool_input": {"command": text.removeprefix(RUN_PREFIX)},
        "message": text_field(payload, "title", 200),  # never the command itself (request_text is)
        "cwd": text_field(payload, "cwd", PATH_LIMIT),
    }
    ask = _open_key(ctx, session_id, shaped)
    if ask is None:
        ctx.log("info", "needs-you: the same request again, nothing new", session_id=session_id, signal=event)
        return
    from donebell.workers.agents.copilot.paths import events_path

    answer_path = events_path(session_id)
    write_request(
        ctx,
        shaped,
        provider=NAME,
        conversation=session_id,
        turn="",
        marker=ask[1],
        key=ask[0],
        signal="PermissionRequest" if event == "permissionRequest" else "permission_prompt",
        answer_path=answer_path,
        dialog_waits=True,  # the TUI draws its dialog only once the hook returned: the short wait
        session_id=session_id,
    )


def request_text(payload: dict[str, Any]) -> str:
    """What is asked, the same text from both hooks: ``Run command: <command>`` for a shell call."""
    message = payload.get("message")
    if isinstance(message, str) and message:
        return message
    tool_input = payload.get("toolInput")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, str):
        return RUN_PREFIX + command
    return json.dumps([payload.get("toolName"), tool_input], sort_keys=True, default=str)


def _open_key(ctx: HookContext, session_id: str, shaped: dict[str, Any]) -> tuple[str, str] | None:
    """The request's (key, marker), or None when a recent, unanswered ask of the same exact call is this one
    (the permission hook's record, then the dialog's notification ~20 ms later)."""
    state = ctx.state
    for n in range(MAX_REPEATS + 1):
        marker = str(n)
        key = request_key(NAME, session_id, "", marker, shaped)
        folder = state.locate(key)
        if folder is None or n == MAX_REPEATS:
            return key, marker
        try:
            earlier = state.read(folder, key) or {}
        except Exception:  # noqa: BLE001 - an unreadable earlier ask: treat it as old
            earlier = {}
        asked = earlier.get("promoted_at") or earlier.get("created_at")
        recent = isinstance(asked, (int, float)) and now() - asked < REPEAT_WINDOW
        if recent and state.answer_box().read(key) is None:
            return None  # still open: a tap ends it, and no dialog follows a tap
    return None  # unreachable: the loop returns at the last marker


def _phone_may_answer(ctx: HookContext) -> bool:
    """Approvals on, the wake role running, and a dialog can follow this call (no allow-all flag)."""
    if ctx.config["approvals_enabled"] is not True:
        return False
    from donebell.workers.kit.approval_wait import approval_wait  # only with approvals on

    if approval_wait(ctx, dialog_waits=True) <= 0:
        return False  # no tap can arrive: the dialog's own permission_prompt is the push
    flags = _cli_flags()
    if any(flag in flags for flag in ALLOW_ALL_FLAGS):
        ctx.log("debug", "copilot permissionRequest: the CLI allows every tool; no dialog follows")
        return False
    return True


def _cli_flags() -> list[str]:
    """The interactive CLI's command line (its loader's); empty when unknown."""
    pid = os.environ.get("COPILOT_LOADER_PID", "")
    if not pid.isdigit():
        return []
    from donebell.shared.process.liveness import command_line

    return command_line(int(pid)) or []


def copilot_answer(claude_shaped: str | None) -> str | None:
    """The phone's decision in the one shape Copilot obeys: ``{"behavior": "allow"|"deny", ...}``."""
    if not claude_shaped:
        return None
    try:
        decision = json.loads(claude_shaped)["hookSpecificOutput"]["decision"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(decision, dict) or decision.get("behavior") not in ("allow", "deny"):
        return None
    return json.dumps(decision, separators=(",", ":")) + "\n"
