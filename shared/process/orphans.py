"""Helper processes that must not outlive the process that started them.

Used by the one-shot remote scan child and the gate's remote probe worker. The platform seam's
``parent_death`` mechanism says how: ``prctl`` (Linux: PR_SET_PDEATHSIG, so if the parent dies,
even by SIGKILL, the kernel kills them too and a hung share cannot collect orphans) or
``ppid-check`` (elsewhere, and portable mode: the helper exits at once if its parent is already
gone; later it relies on its own deadlines and on the parent killing it). Standard library only.
"""

from __future__ import annotations

import os
import signal

from donebell.shared import platform

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Ask to be SIGKILLed when the parent dies; exit at once if ``parent_pid`` is already gone."""
    if not parent_pid:
        return
    if platform.mechanism("parent_death") != "prctl":
        if os.getppid() != parent_pid:
            os._exit(3)  # the parent is already gone
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(3)  # the parent is already gone
