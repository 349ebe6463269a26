"""Reply to continue into a Codex thread that is still open: ``codex queue``.

Measured on Codex 0.171 (docs/wake.md, "Into the live session"):

* The process that has a thread open holds its writer lock (``writer_lock.py``): a held lock is
  the thread's live session.
* ``codex queue --thread <id> --message <text>`` stores the message in
  ``$CODEX_HOME/queue_1.sqlite`` and prints ``Queued message <id> for thread <id>.``; the open
  TUI takes it and runs it as one turn, shown as the user's message. With the daemon up,
  ``--resume`` asks the daemon to run it. A resume that fails is only a warning (exit 0): the
  message stays queued and joins the thread's next turn (``codex exec resume`` takes it into its
  turn, measured), so it is never sent a second time. A thread the CLI does not know exits 1
  with nothing queued.

``codex queue`` is run bounded (:mod:`donebell.workers.kit.agent_command`): in a process group of
its own, with the agent's environment, killed as a group when it gives no answer within
:data:`QUEUE_SECONDS` (it may have queued: never repeated). The wake role runs it on a worker
thread, so a slow one never holds back a tap on Allow / Deny nor the role's heartbeat.
"""

from __future__ import annotations

import shutil

from donebell.workers.agents.codex import appserver, codex_home_str
from donebell.workers.agents.codex.writer_lock import thread_is_open
from donebell.workers.kit.agent_command import NoAnswer, run_agent_command
from donebell.workers.kit.thread_view import SAFE_ID, DaemonError

QUEUE_SECONDS = 60.0


def live_thread(thread_id: str) -> str | None:
    """The thread itself (its queue is Codex's inbox) while a process holds it open, else None."""
    if not SAFE_ID.match(thread_id):
        return None
    return thread_id if thread_is_open(codex_home_str(), thread_id) else None


def queue_message(thread_id: str, prompt: str) -> None:
    """Queue ``prompt`` for the open thread. :class:`DaemonError`: ``unreachable`` when nothing
    was queued (the resume way may go); otherwise the message is queued and may still run."""
    binary = shutil.which("codex")
    if binary is None:
        raise DaemonError("codex is not on PATH", unreachable=True)
    argv = [binary, "queue", "--thread", thread_id, "--message", prompt]
    if appserver.control_socket() is not None:
        argv.append("--resume")  # the daemon holds the thread: it runs what is queued when asked
    try:
        run = run_agent_command(argv, QUEUE_SECONDS)
    except NoAnswer as exc:
        raise DaemonError(f"codex queue: {exc}") from None
    except OSError as exc:
        raise DaemonError(f"codex queue: {exc.strerror or exc}", unreachable=True) from None
    said = f"{run.stdout}\n{run.stderr}"
    if "Queued message" not in run.stdout:
        raise DaemonError(f"codex queue exit {run.returncode}: {_reason(said)}", unreachable=True)
    if "could not resume" in said.lower():
        raise DaemonError(f"queued, but the daemon did not resume the thread: {_reason(said)}")


def _reason(text: str) -> str:
    """The line that says why (Codex's ``Error: …`` or its warning), not its stack trace."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Error") or "could not resume" in line.lower():
            return line[:200]
    return lines[0][:200] if lines else "no output"
