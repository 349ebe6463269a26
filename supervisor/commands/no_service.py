"""What ``status`` and ``doctor`` say when no service is running: the one gap hooks cannot close.

Without ``donebell run`` only the hooks and the delivery worker a hook starts run. A completion
whose hook never ran (hooks not installed for that agent, an agent killed or crashed between the
turn and its hook, a hook timeout, an agent version that skips it) reaches donebell only through
the rollout scanner, and the scanner runs only in the service: such a task is never notified.
"""

from __future__ import annotations

SENTENCE = (
    "no background service is running: only hooks deliver, so a finished task whose hook never ran "
    "(agent killed, hook skipped or timed out) is never recovered"
)
FIX = "start the service: `donebell install` (systemd/launchd/Task Scheduler), or keep `donebell run` running"
#: The fix after ``install --service none``: repeating that command would change nothing.
CHOSE_NONE_FIX = (
    "you installed without a service (`--service none`): start `donebell run` and keep it running under "
    "your own supervisor (a container's init, supervisord, runit, tmux); or, for this platform's service, "
    "`sudo loginctl enable-linger $USER` on Linux without a user manager, log in again, then `donebell install`"
)


def reason() -> str:
    """The status reason line."""
    return f"{SENTENCE}; fix: {FIX}"
