"""GitHub Copilot CLI as the roles see it: :class:`~donebell.workers.agents.protocols.Agent`, by module.

Each capability imports its part of this folder on first use, so the hook path (``donebell hook
copilot <event>``) loads the hook's modules only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the hook path imports this module: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.config.view import SettingsLike
    from donebell.shared.statedir import StateDir
    from donebell.workers.agents.protocols import LocalScan
    from donebell.workers.kit.gate_context import GateContext
    from donebell.workers.kit.hook_context import HookContext
    from donebell.workers.kit.thread_view import ThreadView
    from donebell.workers.kit.verdict import Verdict

NAME = "copilot"
DISPLAY_NAME = "Copilot CLI"
#: One command for every Copilot hook event (``donebell hook copilot <event>``); it prints nothing,
#: except a permission request's answer from the phone.
HOOK_OUTPUT = {"": ""}


def hook(event: str, ctx: HookContext, args: list[str]) -> None:
    """``donebell hook copilot <event>``: agentStop, sessionEnd, notification, permissionRequest."""
    from donebell.workers.agents.copilot.hook import copilot

    copilot(ctx, args)


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """The Copilot gate: the signal's task in the session log, its background work, its end."""
    from donebell.workers.agents.copilot.gate import evaluate as copilot_evaluate

    return copilot_evaluate(record, ctx)


def task_title(record: dict[str, Any]) -> str | None:
    """The task's prompt as the gate read it (only with ``include_thread_title``)."""
    title = record.get("copilot_title")
    return title if isinstance(title, str) and title else None


def lookup_title(record: dict[str, Any]) -> str | None:
    return task_title(record)


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
    """The session-log watcher: the second signal path when a hook never ran."""
    from donebell.workers.agents.copilot.local_scan import local_scan as copilot_local_scan

    return copilot_local_scan(state, settings, scope)


def expire(state: StateDir, now: float) -> dict[str, int]:
    """Copilot keeps nothing of its own in the state directory (its scanner cursors are in memory)."""
    return {}


def locate_thread(conversation_id: str) -> str | None:
    """The session's ``events.jsonl``."""
    from donebell.workers.agents.copilot import wake

    return wake.locate_thread(conversation_id)


def read_thread(path: str) -> ThreadView:
    from donebell.workers.agents.copilot import wake

    return wake.read_thread(path)


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """``copilot --resume=<session> [wake_copilot_args] -p <prompt>``."""
    from donebell.workers.agents.copilot import wake

    return wake.resume_argv(conversation_id, prompt, extra_args)


def daemon_socket() -> str | None:
    return None  # no daemon that could start a turn in a running session was found


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    from donebell.workers.kit.thread_view import DaemonError

    raise DaemonError("Copilot CLI has no daemon to start a turn in", unreachable=True)


def live_inbox(conversation_id: str) -> str | None:
    """The session while a CLI still has it open (a terminal), or None: a reply never starts a
    second session beside it (docs/wake.md, "Copilot CLI")."""
    from donebell.workers.agents.copilot import wake

    return wake.live_session(conversation_id)


def post_to_inbox(inbox: str, prompt: str) -> None:
    """Nothing reaches an open Copilot session from outside: refused, the reply is held, then expires."""
    from donebell.workers.agents.copilot import wake

    wake.post_to_session(inbox, prompt)


# --- Records, Policies, Versions --------------------------------------------------------------

CONVERSATION_NOUN = "Copilot CLI session"
TURN_LABEL = "Copilot task"
RESUME_COMMAND = "copilot --resume={id}"
PROGRAM = "copilot"
#: Releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins).
TESTED_RELEASES = ("1.0.102",)


def conversation_of(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(session id, interaction id of the task); a signal not yet mapped to its task has none."""
    session, task = record.get("session_id"), record.get("interaction_id")
    return (session if isinstance(session, str) else None, task if isinstance(task, str) else None)


def coalescing_root(record: dict[str, Any]) -> str:
    """The session: its tasks coalesce."""
    return f"copilot:{record.get('session_id') or record['key']}"


def task_link(record: dict[str, Any]) -> str | None:
    """A local Copilot CLI session has no web page."""
    return None


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    """From the task's prompt to its end, as the session log timed them (the gate stored both)."""
    started, ended = record.get("task_started_ms"), record.get("task_ended_ms")
    if isinstance(started, (int, float)) and isinstance(ended, (int, float)) and ended >= started:
        return (ended - started) / 1000.0
    return None


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    """A newer task in the session's log: the user typed the next prompt."""
    from donebell.workers.agents.copilot import policy_evidence

    return policy_evidence.user_returned(record)


def answered_in_file(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """The request's own call's ``permission.completed`` (approved or denied), a new prompt or an
    interrupt, logged after the request."""
    from donebell.workers.agents.copilot import policy_evidence

    return policy_evidence.answered_in_file(record, before, after)


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    """The same, read from the log's end by its timestamps (during the first turn the hook found no log)."""
    from donebell.workers.agents.copilot import policy_evidence

    return policy_evidence.answered_at_terminal(record)
