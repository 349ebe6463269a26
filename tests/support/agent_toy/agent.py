"""The toy agent: every capability of :class:`~donebell.workers.agents.protocols.Agent`, by module.

``donebell hook toy-done`` (payload on stdin: ``session``, ``turn``, ``cwd``, ``log``, ``title``,
``message``) records a candidate; the gate promotes it once the session's log says the turn is
done, and waits while it does not.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import identity
from donebell.shared.records import new_candidate
from donebell.workers.kit.hook_input import decode_object, message_field, read_stream, text_field
from donebell.workers.kit.thread_view import DaemonError
from donebell.workers.kit.verdict import Verdict

if TYPE_CHECKING:
    from donebell.shared.config.view import SettingsLike
    from donebell.shared.statedir import StateDir
    from donebell.workers.agents.protocols import LocalScan
    from donebell.workers.kit.gate_context import GateContext
    from donebell.workers.kit.hook_context import HookContext
    from donebell.workers.kit.thread_view import ThreadView

NAME = "toy"
DISPLAY_NAME = "Toy Agent"
HOOK_OUTPUT = {"done": ""}
PATH_LIMIT = 4096


def hook(event: str, ctx: HookContext, args: list[str]) -> None:
    """``donebell hook toy-done``: the toy says a turn ended; the gate checks its log before any push."""
    payload = decode_object(read_stream(sys.stdin.buffer))
    key, weak = identity(NAME, text_field(payload, "session"), text_field(payload, "turn"))
    candidate = new_candidate(
        key=key,
        provider=NAME,
        source="toy-hook",
        weak_identity=weak,
        session_id=text_field(payload, "session"),
        turn_id=text_field(payload, "turn"),
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=text_field(payload, "log", PATH_LIMIT),
        toy_title=text_field(payload, "title"),
        last_message=ctx.excerpt(message_field(payload, "message", 4000)),
        outcome="done",
        origin=ctx.origin,
    )
    ctx.log("info", f"toy {event}: {submit_candidate(ctx.state, candidate)}", key=key)


def approval_answer(printed: str | None) -> str | None:
    """Claude Code's shape is the one this agent obeys: the kit's answer as it is."""
    return printed


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Promote once the toy's log has ``{"turn": <this turn>, "status": "done"}``; wait until then."""
    path = record.get("transcript_path")
    try:
        with open(str(path), encoding="utf-8") as log:
            lines = [json.loads(line) for line in log if line.strip()]
    except (OSError, ValueError) as exc:
        return Verdict.wait("toy-log-unreadable", f"{type(exc).__name__}", kind="unknown")
    done = any(line.get("turn") == record.get("turn_id") and line.get("status") == "done" for line in lines)
    if done:
        return Verdict.promote("toy-done", "the toy's log says the turn is done")
    return Verdict.wait("toy-busy", "the toy's log has no done line for the turn yet", retry_in=0.2)


def task_title(record: dict[str, Any]) -> str | None:
    title = record.get("toy_title")
    return title if isinstance(title, str) else None


def lookup_title(record: dict[str, Any]) -> str | None:
    return task_title(record)


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
    return None  # the toy has no files worth a safety net: its hook is its only source


def expire(state: StateDir, now: float) -> dict[str, int]:
    return {}


def locate_thread(conversation_id: str) -> str | None:
    """The toy cannot be continued from the phone: no thread is found (the wake role refuses)."""
    return None


def read_thread(path: str) -> ThreadView:
    raise OSError("the toy keeps no record a reply could continue")


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    return None


def daemon_socket() -> str | None:
    return None


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    raise DaemonError("the toy has no daemon", unreachable=True)


def live_inbox(conversation_id: str) -> str | None:
    return None


def post_to_inbox(inbox: str, prompt: str) -> None:
    raise DaemonError("the toy has no inbox", unreachable=True)


CONVERSATION_NOUN = "Toy session"
TURN_LABEL = "Toy turn"
RESUME_COMMAND = "toy --resume {id}"
PROGRAM = "toy"
TESTED_RELEASES = ("1.0.0",)


def conversation_of(record: dict[str, Any]) -> tuple[str | None, str | None]:
    session, turn = record.get("session_id"), record.get("turn_id")
    return (session if isinstance(session, str) else None, turn if isinstance(turn, str) else None)


def coalescing_root(record: dict[str, Any]) -> str:
    return f"toy:{record.get('session_id') or record['key']}"


def task_link(record: dict[str, Any]) -> str | None:
    return None


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    return None  # the toy records no times: min_task_seconds never holds its pushes


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    return None


def answered_in_file(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    return None  # the toy never asks for permission


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    return None
