"""One way to start a process as its own group's leader and kill the group: real processes, real signals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from donebell.shared.process import groups
from support.process_tree import TREE, gone, tree_pids
from support.waiting import wait_for

if TYPE_CHECKING:
    from donebell.shared.process.groups import Kind

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and signals are POSIX here")


def test_start_makes_a_group_leader_and_kill_tree_ends_the_group(tmp_path: Path) -> None:
    """A started child leads a new group (not the test's), and kill_tree ends it and its grandchild."""
    pids_file = tmp_path / "pids"
    proc = groups.start([sys.executable, "-c", TREE, str(pids_file)], "windowless", stdin=subprocess.DEVNULL)
    try:
        leader, grandchild = tree_pids(pids_file)
        assert leader == proc.pid
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        assert os.getpgid(grandchild) == proc.pid
        groups.kill_tree(proc)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        wait_for(lambda: gone(grandchild), timeout=10, what="the grandchild killed with its group")
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_spawn_detached_starts_a_session_leader_that_kill_group_ends(tmp_path: Path) -> None:
    """The hooks' posix_spawn start: a new session with stdio on the null device; kill_group ends the tree."""
    pids_file = tmp_path / "pids"
    pid = groups.spawn_detached([sys.executable, "-c", TREE, str(pids_file)])
    try:
        leader, grandchild = tree_pids(pids_file)
        assert leader == pid
        assert os.getsid(pid) == pid != os.getsid(0)
        assert os.getpgid(grandchild) == pid
        if sys.platform.startswith("linux"):
            assert [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)] == [os.devnull] * 3
        groups.kill_group(pid)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        wait_for(lambda: gone(grandchild), timeout=10, what="the grandchild killed with its group")
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_spawn_detached_refuses_an_empty_argv_and_reports_a_missing_program() -> None:
    """Nothing is started for an empty argv; a program that does not exist is an OSError, not a silent pid."""
    with pytest.raises(ValueError):
        groups.spawn_detached([])
    with pytest.raises(OSError):
        groups.spawn_detached(["/nonexistent/donebell-no-such-program"])


def test_kill_group_and_kill_tree_of_an_ended_group_are_quiet() -> None:
    """A group whose processes all ended (the leader a zombie, as the supervisor keeps it): no error."""
    proc = groups.start([sys.executable, "-c", "pass"], "signalable")
    # Wait without reaping: the zombie leader keeps the group id from being reused meanwhile.
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    groups.kill_group(proc.pid)
    groups.kill_tree(proc)
    assert proc.wait(timeout=10) == 0


def test_windows_flags_per_kind() -> None:
    """The Windows table: a role shares the console (CTRL_BREAK reaches it), the others do not."""
    kinds: tuple[Kind, ...] = ("signalable", "windowless", "detached")
    assert set(groups.WINDOWS_CREATION_FLAGS) == set(kinds)
    flags = {kind: groups.popen_options(kind, windows=True)["creationflags"] for kind in kinds}
    assert all(value & groups.CREATE_NEW_PROCESS_GROUP for value in flags.values())
    assert flags["signalable"] == groups.CREATE_NEW_PROCESS_GROUP
    assert flags["windowless"] & groups.CREATE_NO_WINDOW and not flags["windowless"] & groups.DETACHED_PROCESS
    assert flags["detached"] & groups.DETACHED_PROCESS
    assert groups.popen_options("detached", windows=False) == {"start_new_session": True}


def test_every_donebell_child_is_started_through_own_python() -> None:
    """No spawn site builds ``python -m`` itself: ``own_python`` adds ``-P`` (issue 26 item 1), so a
    module in the caller's folder is never imported; tests/reliability/test_hostile_cwd.py runs them."""
    root = Path(groups.__file__).resolve().parents[1]
    offenders = []
    for folder in ("shared", "workers", "supervisor"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text("utf-8")
            if re.search(r"sys\.executable,\s*\"-m\"", text):
                offenders.append(str(path.relative_to(root)))
    assert offenders == []
    assert groups.own_python("x.y", "a") == [sys.executable, "-P", "-m", "x.y", "a"]


def test_spawn_detached_in_a_folder_leaves_the_callers_folder_alone(tmp_path: Path) -> None:
    """``cwd`` starts the child there (posix_spawn has no such action: the caller steps in and back)."""
    out, here = tmp_path / "cwd.txt", os.getcwd()
    code = "import os, sys; open(sys.argv[1], 'w').write(os.getcwd())"
    pid = groups.spawn_detached([sys.executable, "-c", code, str(out)], cwd=groups.NEUTRAL_CWD)
    os.waitpid(pid, 0)
    assert out.read_text() == groups.NEUTRAL_CWD
    assert os.getcwd() == here
    pid = groups.spawn_detached([sys.executable, "-c", code, str(out)])  # a chained notifier: the caller's
    os.waitpid(pid, 0)
    assert out.read_text() == here
