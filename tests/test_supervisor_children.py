"""Role processes: exit noticed with the status kept, and a whole process tree killed, escapees included."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from donebell.shared.process.liveness import is_alive, process_create_time
from donebell.supervisor.children import Child, worker_command
from support.waiting import wait_for

# A "role" that starts two grandchildren ignoring SIGTERM: one in its process group, one that
# escapes into a new session (so only the descendant snapshot can find it), then waits.
TREE = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
a = subprocess.Popen([sys.executable, "-c", code])
b = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
open(sys.argv[1], "w").write(f"{a.pid} {b.pid}")
time.sleep(600)
"""


def _spawn(args: list[str]) -> Child:
    return Child("test", subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True))


def test_kill_tree_kills_the_role_its_group_and_escaped_descendants(tmp_path: Path) -> None:
    """SIGKILL reaches the role, a grandchild in its group and one that left the group for its own session."""
    pids_file = tmp_path / "pids"
    child = _spawn([sys.executable, "-c", TREE, str(pids_file)])
    wait_for(lambda: pids_file.exists() and pids_file.read_text().count(" ") == 1, what="grandchildren")
    grandchildren = [int(p) for p in pids_file.read_text().split()]
    idents = [(p, process_create_time(p)) for p in (child.pid, *grandchildren)]
    known = child.descendants()
    child.terminate()  # ignored by all three
    time.sleep(0.3)  # proves a negative: SIGTERM, had it been obeyed, would have ended them by now
    assert all(is_alive(p, t) for p, t in idents)
    child.kill_tree(known)
    wait_for(child.exited, what="role exit")
    assert child.returncode == -9
    wait_for(lambda: not any(is_alive(p, t) for p, t in idents), what="whole tree gone")


def test_exit_of_a_role_kills_the_leftovers_in_its_group(tmp_path: Path) -> None:
    """When a role dies on its own, the grandchildren it left in its process group die with it."""
    pids_file = tmp_path / "pids"
    script = TREE.replace("time.sleep(600)\n", "", 1).rstrip() + "\nsys.exit(3)\n"
    child = _spawn([sys.executable, "-c", script, str(pids_file)])
    wait_for(child.exited, what="role exit")
    assert child.returncode == 3
    in_group, escaped = (int(p) for p in pids_file.read_text().split())
    wait_for(lambda: not is_alive(in_group, None), what="group leftover killed")
    assert is_alive(escaped, None)  # outside the group: only a stop's snapshot reaches it
    subprocess.run(["kill", "-9", str(escaped)], check=False)


def test_worker_command_runs_the_same_interpreter_through_the_cli() -> None:
    """A role is `<this python> -m donebell.supervisor.cli worker <role>`, never a thread."""
    assert worker_command("delivery") == [sys.executable, "-P", "-m", "donebell.supervisor.cli", "worker", "delivery"]
