"""Claude Code as the roles see it: :class:`~donebell.workers.agents.protocols.Agent`, by module.

Each capability imports its part of this folder on first use, so the hook path (``donebell hook
claude``) loads the hook's modules only.
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

NAME = "claude"
DISPLAY_NAME = "Claude Code"
#: One command for every Claude hook event (the event is in the payload); it prints nothing.
HOOK_OUTPUT = {"": ""}


def hook(event: str, ctx: HookContext, args: list[str]) -> None:
    """``donebell hook claude``: Stop, SubagentStop, SessionStart/End, PermissionRequest, Notification…"""
    from donebell.workers.agents.claude.hook import claude

    claude(ctx, args)


def approval_answer(printed: str | None) -> str | None:
    """Claude Code's shape is the one this agent obeys: the kit's answer as it is."""
    return printed


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """The Claude gate (prompt epochs, goal markers, the transcript's turn status, the quiet window)."""
    from donebell.workers.agents.claude.gate import evaluate as claude_evaluate

    return claude_evaluate(record, ctx)


def task_title(record: dict[str, Any]) -> str | None:
    """The session's title as the hook recorded it."""
    from donebell.workers.agents.claude.title import claude_title

    return claude_title(record)


def lookup_title(record: dict[str, Any]) -> str | None:
    """Claude's title is in the record already: no file to read."""
    return task_title(record)


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
    """Claude's transcript tailer for the local scanner (None when switched off)."""
    from donebell.workers.agents.claude.local_scan import local_scan as claude_local_scan

    return claude_local_scan(state, settings, scope)


def expire(state: StateDir, now: float) -> dict[str, int]:
    """Claude session records (``claude/``) nothing pending needs any more."""
    from donebell.workers.agents.claude.retention import expire_claude_sessions

    return expire_claude_sessions(state, now)


def locate_thread(conversation_id: str) -> str | None:
    """The session's transcript."""
    from donebell.workers.agents.claude import wake

    return wake.locate_thread(conversation_id)


def read_thread(path: str) -> ThreadView:
    from donebell.workers.agents.claude import wake

    return wake.read_thread(path)


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """``claude -p --resume <session> [wake_claude_args] <prompt>``."""
    from donebell.workers.agents.claude import wake

    return wake.resume_argv(conversation_id, prompt, extra_args)


def daemon_socket() -> str | None:
    from donebell.workers.agents.claude import wake

    return wake.daemon_socket()


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    from donebell.workers.agents.claude import wake

    return wake.start_turn_in_daemon(socket_path, conversation_id, prompt)


def live_inbox(conversation_id: str) -> str | None:
    """The open interactive session's messaging socket (cross-session messaging)."""
    from donebell.workers.agents.claude import inbox

    return inbox.live_inbox(conversation_id)


def post_to_inbox(inbox: str, prompt: str) -> None:
    from donebell.workers.agents.claude.inbox import post_to_inbox as post

    post(inbox, prompt)


# --- Records, Policies, Versions --------------------------------------------------------------

CONVERSATION_NOUN = "Claude Code session"
TURN_LABEL = "Claude prompt"
RESUME_COMMAND = "claude --resume {id}"
PROGRAM = "claude"
#: Releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins).
TESTED_RELEASES = ("2.1.197", "2.1.332")


def conversation_of(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(session id, prompt id)."""
    session, prompt = record.get("session_id"), record.get("prompt_id")
    return (session if isinstance(session, str) else None, prompt if isinstance(prompt, str) else None)


def coalescing_root(record: dict[str, Any]) -> str:
    """The session: its prompts coalesce."""
    return f"claude:{record.get('session_id') or record['key']}"


def task_link(record: dict[str, Any]) -> str | None:
    """Claude Code has no web page for a local session."""
    return None


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    from donebell.workers.agents.claude import policy_evidence

    return policy_evidence.task_seconds(record, state)


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    from donebell.workers.agents.claude import policy_evidence

    return policy_evidence.user_returned(state, record)


def answered_in_file(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """The request's own call's ``tool_result`` (the call ran, or was refused), or the turn's end."""
    from donebell.workers.agents.claude.needs_you import answered

    return answered(record, before, after)


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    """A new prompt in the session."""
    from donebell.workers.agents.claude import policy_evidence

    return policy_evidence.answered_at_terminal(state, record)
