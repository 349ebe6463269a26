"""GitHub Copilot CLI: its hooks, its session log (``events.jsonl``), its gate, scanner and wake
adapter; :data:`AGENT`, Copilot CLI as the roles see it.

``AGENT`` names the part of this folder that does each capability's work, imported when it is
called: the hook path (``donebell hook copilot <event>``) loads the hook's modules only.
Importing this package loads nothing else."""

from __future__ import annotations

from donebell.workers.agents import LazyAgent

AGENT = LazyAgent(
    __name__,
    name="copilot",
    display_name="Copilot CLI",
    # One command for every Copilot hook event (agentStop, sessionEnd, notification,
    # permissionRequest: ``donebell hook copilot <event>``); it prints nothing, except a permission
    # request's answer from the phone.
    hooks={"": ("hook:copilot", "")},
    parts={
        "approval_answer": "needs_you:copilot_answer",  # {"behavior": "allow"|"deny", ...}, not Claude's wrapper
        "evaluate": "gate:evaluate",  # the signal's task in the session log, its background work, its end
        "local_scan": "local_scan:local_scan",  # the session-log watcher: the second signal path
        # no expire: Copilot keeps nothing of its own in the state directory
        "locate_thread": "wake:locate_thread",  # the session's events.jsonl
        "read_thread": "wake:read_thread",
        "resume_argv": "wake:resume_argv",  # copilot --resume=<session> [wake_copilot_args] -p <prompt>
        # no daemon that could start a turn in a running session was found; a session still open in
        # a terminal is the inbox, and nothing reaches it from outside: the reply is held, then
        # expires, never a second session beside it (docs/wake.md, "Copilot CLI")
        "live_inbox": "wake:live_session",
        "post_to_inbox": "wake:post_to_session",
        "task_seconds": "policy_evidence:task_seconds",  # the task's prompt to its end, as the log timed them
        "user_returned": "policy_evidence:user_returned",  # a newer task in the session's log
        # the request's own call's permission.completed, a new prompt or an interrupt, after the request
        "answered_in_file": "policy_evidence:answered_in_file",
        "answered_at_terminal": "policy_evidence:answered_at_terminal",  # the same, by the log's timestamps
    },
    ids=("session_id", "interaction_id"),  # a signal not yet mapped to its task has no interaction id
    title_field="copilot_title",  # the task's prompt as the gate read it (only with include_thread_title)
    conversation_noun="Copilot CLI session",
    turn_label="Copilot task",
    resume_command="copilot --resume={id}",
    program="copilot",
    # releases the e2e suite passed on, oldest first (a unit test keeps them in step with the pins)
    tested_releases=("1.0.102",),
)
