"""OpenAI Codex as the roles see it: :class:`~donebell.workers.agents.protocols.Agent`, by module.

Each capability imports its part of this folder on first use, so the hook path (``donebell hook
codex-stop``) loads the hook's modules only and the maintenance role none at all.
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

NAME = "codex"
DISPLAY_NAME = "Codex"
#: ``stop``: Codex reads the Stop hook's stdout as its decision, and ``{}`` is "no decision";
#: ``notify`` (the notify program) and ``permission`` (PermissionRequest: no decision) print nothing.
HOOK_OUTPUT = {"stop": "{}\n", "notify": "", "permission": ""}


def hook(event: str, ctx: HookContext, args: list[str]) -> None:
    """``donebell hook codex-stop | codex-notify | codex-permission``."""
    from donebell.workers.agents.codex import hook as codex_hook

    run = {"stop": codex_hook.codex_stop, "notify": codex_hook.codex_notify, "permission": codex_hook.codex_permission}
    run[event](ctx, args)


def approval_answer(printed: str | None) -> str | None:
    """Claude Code's shape is the one this agent obeys: the kit's answer as it is."""
    return printed


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """The Codex gate (root or child, completion, goals, descendants, the quiet window)."""
    from donebell.workers.agents.codex.gate import evaluate as codex_evaluate

    return codex_evaluate(record, ctx)


def task_title(record: dict[str, Any]) -> str | None:
    """The thread's title (SQLite, then ``session_index.jsonl``); a remote root's from the record."""
    from donebell.workers.agents.codex.title import thread_title

    return thread_title(record)


def lookup_title(record: dict[str, Any]) -> str | None:
    """The thread's title read from the files where they live (the remote probe worker)."""
    from donebell.workers.agents.codex.title import lookup_title as codex_lookup_title

    return codex_lookup_title(record)


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
    """Codex's scan engine over ``$CODEX_HOME`` for the local scanner (None when switched off)."""
    from donebell.workers.agents.codex.local_scan import local_scan as codex_local_scan

    return codex_local_scan(state, settings, scope)


def expire(state: StateDir, now: float) -> dict[str, int]:
    """Nothing: Codex's cursors are the scanners' (``workers/maintenance/cursor_retention.py``)."""
    return {}


def locate_thread(conversation_id: str) -> str | None:
    """The thread's rollout (live or archived)."""
    from donebell.workers.agents.codex import wake

    return wake.locate_thread(conversation_id)


def read_thread(path: str) -> ThreadView:
    from donebell.workers.agents.codex import wake

    return wake.read_thread(path)


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """``codex exec resume [wake_codex_args] <thread> <prompt>``."""
    from donebell.workers.agents.codex import wake

    return wake.resume_argv(conversation_id, prompt, extra_args)


def daemon_socket() -> str | None:
    from donebell.workers.agents.codex import wake

    return wake.daemon_socket()


def start_turn_in_daemon(socket_path: str, conversation_id: str, prompt: str) -> str:
    from donebell.workers.agents.codex import wake

    return wake.start_turn_in_daemon(socket_path, conversation_id, prompt)


def live_inbox(conversation_id: str) -> str | None:
    """The thread, while a process has it open (its writer lock is held): its queue is the inbox."""
    from donebell.workers.agents.codex import queue

    return queue.live_thread(conversation_id)


def post_to_inbox(inbox: str, prompt: str) -> None:
    from donebell.workers.agents.codex import queue

    queue.queue_message(inbox, prompt)


# --- Records, Policies, Versions --------------------------------------------------------------

CONVERSATION_NOUN = "Codex thread"
TURN_LABEL = "Codex turn"
RESUME_COMMAND = "codex resume {id}"
PROGRAM = "codex"
#: Releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins).
TESTED_RELEASES = ("0.163.0", "0.168.0", "0.171.0")


def conversation_of(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(thread id, turn id)."""
    thread, turn = record.get("thread_id"), record.get("turn_id")
    return (thread if isinstance(thread, str) else None, turn if isinstance(turn, str) else None)


def coalescing_root(record: dict[str, Any]) -> str:
    """The root thread: a subagent's candidates coalesce with their root's."""
    return f"codex:{record.get('root_thread_id') or record.get('thread_id') or record['key']}"


def task_link(record: dict[str, Any]) -> str | None:
    from donebell.workers.agents.codex.task_link import task_url

    return task_url(record)


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    from donebell.workers.agents.codex import policy_evidence

    return policy_evidence.task_seconds(record, state)


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    from donebell.workers.agents.codex import policy_evidence

    return policy_evidence.user_returned(state, record)


def answered_in_file(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """The request's own call's output, or the turn's end or abort, a new user message."""
    from donebell.workers.agents.codex import call_evidence

    return call_evidence.answered(record, before, after)


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    """Nothing beyond the rollout's own records (``answered_in_file``)."""
    return None
