"""Claude Code: hook payloads, transcripts and their cursors, session epochs, gate evidence,
titles, session-record retention; :data:`AGENT`, Claude Code as the roles see it.

``AGENT`` names the part of this folder that does each capability's work, imported when it is
called: the hook path (``donebell hook claude``) loads the hook's modules only. Importing this
package loads nothing else."""

from __future__ import annotations

import os

from donebell.shared.paths import user_home
from donebell.workers.agents import LazyAgent

TYPE_CHECKING = False  # the hook path imports this package: annotations only
if TYPE_CHECKING:
    from pathlib import Path


def claude_config_dir_str() -> str:
    """Claude Code's config dir: ``$CLAUDE_CONFIG_DIR``, default ``~/.claude``."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(user_home(), ".claude")


def claude_config_dir() -> Path:
    """:func:`claude_config_dir_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(claude_config_dir_str())


AGENT = LazyAgent(
    __name__,
    name="claude",
    display_name="Claude Code",
    # One command for every Claude hook event (Stop, SubagentStop, SessionStart/End,
    # PermissionRequest, Notification…: the event is in the payload); it prints nothing.
    hooks={"": ("hook:claude", "")},
    parts={
        "evaluate": "gate:evaluate",  # prompt epochs, goal markers, the transcript's turn status, the quiet window
        "task_title": "title:claude_title",  # as the hook recorded it: no file to read, remote or not
        "local_scan": "local_scan:local_scan",  # the transcript tailer
        "expire": "retention:expire_claude_sessions",  # session records (claude/) nothing pending needs
        "locate_thread": "wake:locate_thread",  # the session's transcript
        "read_thread": "wake:read_thread",
        "resume_argv": "wake:resume_argv",  # claude -p --resume <session> [wake_claude_args] <prompt>
        "live_inbox": "inbox:live_inbox",  # the open interactive session's messaging socket
        "post_to_inbox": "inbox:post_to_inbox",
        "task_seconds": "policy_evidence:task_seconds",
        "user_returned": "policy_evidence:user_returned",
        # the request's own call's tool_result (the call ran, or was refused), or the turn's end
        "answered_in_file": "needs_you:answered",
        "answered_at_terminal": "policy_evidence:answered_at_terminal",  # a new prompt in the session
    },
    ids=("session_id", "prompt_id"),  # the session's prompts coalesce
    conversation_noun="Claude Code session",
    turn_label="Claude prompt",
    resume_command="claude --resume {id}",
    program="claude",
    # releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins)
    tested_releases=("2.1.197", "2.1.332"),
)
