"""Claude Code for the wake role: its transcript as turns, and how one turn is started.

The transcript ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session-id>.jsonl`` is the only evidence: a
turn is a prompt (``promptId`` of the main chain's user records); it has ended when the newest
recognized event is a completion (:func:`~donebell.workers.agents.turn_status.turn_status`) or,
as the gate's fold says (``outcome.py``), the newest main-chain record is an API error: in ``-p``
Claude writes no ``turn_duration`` after a failed turn, and that failed turn is the one its push
(and its Continue button) is about.
``claude -p --resume <session-id>`` starts the next turn; there is no daemon to ask.
"""

from __future__ import annotations

import glob
import os
import shutil

from donebell.workers.agents.claude import claude_config_dir_str
from donebell.workers.agents.claude.outcome import feed, new_fold
from donebell.workers.agents.turn_status import turn_status
from donebell.workers.kit.thread_view import SAFE_ID, ThreadView, json_lines


def locate_thread(conversation_id: str) -> str | None:
    """The session's transcript on this machine, or None."""
    if not SAFE_ID.match(conversation_id):
        return None
    found = sorted(glob.glob(os.path.join(claude_config_dir_str(), "projects", "*", f"{conversation_id}.jsonl")))
    return found[-1] if found else None


def read_thread(path: str) -> ThreadView:
    prompts: list[str] = []
    cwd = None
    fold = new_fold()
    for obj in json_lines(path):
        feed(fold, obj, 0)
        if obj.get("type") != "user" or obj.get("isSidechain") is True:
            continue
        if isinstance(obj.get("cwd"), str):
            cwd = str(obj["cwd"])
        pid = obj.get("promptId")
        if isinstance(pid, str) and pid and pid not in prompts:
            prompts.append(pid)
    status = turn_status(path, "claude")
    active = bool(prompts) and not status.is_done and fold["phase"] != "failed"
    latest = prompts[-1] if prompts else None
    done = prompts[-2] if active and len(prompts) > 1 else (None if active else latest)
    return ThreadView(path, len(prompts), latest, done, active, cwd)


def resume_argv(conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    binary = shutil.which("claude")
    return None if binary is None else [binary, "-p", "--resume", conversation_id, *extra_args, prompt]
