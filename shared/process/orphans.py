"""Helper processes that must not outlive the process that started them (Linux: PR_SET_PDEATHSIG).

Used by the one-shot remote scan child and the gate's remote probe worker: if their parent dies
(even by SIGKILL), the kernel kills them too, so a hung share cannot collect orphans.
Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Ask to be SIGKILLed when the parent dies; exit at once if ``parent_pid`` is already gone."""
    if not (sys.platform.startswith("linux") and parent_pid):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(3)  # the parent is already gone
