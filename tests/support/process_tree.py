"""A real process tree to kill: a leader that starts a grandchild, both ignoring SIGTERM, so only a
SIGKILL to the whole group (or to each process of the tree) ends them."""

from __future__ import annotations

from pathlib import Path

import psutil

from support.waiting import wait_for

# The leader writes "<leader> <grandchild>" to argv[1] (atomically) and waits.
TREE = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
grandchild = subprocess.Popen([sys.executable, "-c", code])
open(sys.argv[1] + ".tmp", "w").write(f"{os.getpid()} {grandchild.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""


def gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (a killed grandchild's parent may be init)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def tree_pids(pids_file: Path) -> tuple[int, int]:
    """(leader, grandchild) once the leader wrote them."""
    wait_for(pids_file.exists, timeout=30, what="the tree's pids")
    leader, grandchild = (int(p) for p in pids_file.read_text().split())
    return leader, grandchild
