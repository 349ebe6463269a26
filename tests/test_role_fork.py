"""A role forked from the supervisor starts clean: nothing of the supervisor's but its modules.

The "supervisor" here is a real Python process that opens and flock()s a lock file, installs a
SIGTERM handler and an ``atexit`` handler, then forks a role with ``role_fork.fork_role``. The role
entry point (``cli.main``) is replaced in that process by a probe that records what the child
inherited, so the test sees the child from the inside; everything else (fork, setsid, signals,
descriptors, exit status) is real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="roles fork on Linux only")

SUPERVISOR = r"""
import atexit, fcntl, json, os, signal, sys
from donebell.supervisor import cli, role_fork

out, lock_path = sys.argv[1], sys.argv[2]
lock = open(lock_path, "w")
fcntl.flock(lock, fcntl.LOCK_EX)
signal.signal(signal.SIGTERM, lambda *_: None)
atexit.register(lambda: open(out + ".supervisor-atexit", "w").close())

def probe(argv):
    atexit.register(lambda: open(out + ".role-atexit", "w").close())
    json.dump({
        "argv": argv,
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        "own_session": os.getsid(0) == os.getpid(),
        "stdin": os.readlink("/proc/self/fd/0"),
    }, open(out, "w"))
    return 5

cli.main = probe
child = role_fork.fork_role("maintenance")
print(json.dumps({"pid": child.pid, "rc": child.wait()}))
os._exit(0)  # this test's "supervisor" ends here: its own atexit must not run
"""


def test_a_forked_role_keeps_no_descriptor_handler_or_exit_hook_of_the_supervisor(tmp_path: Path) -> None:
    out, lock = tmp_path / "probe.json", tmp_path / "supervisor.lock"
    done = subprocess.run(
        [sys.executable, "-c", SUPERVISOR, str(out), str(lock)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.PIPE,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["rc"] == 5  # the role's exit status reaches the supervisor
    seen = json.loads(out.read_text())
    assert seen["argv"] == ["worker", "maintenance"]
    assert seen["fds"][:3] == [0, 1, 2] and len(seen["fds"]) <= 4, (
        seen
    )  # the lock's fd is gone (+ the listing's own fd)
    assert seen["stdin"] == os.devnull
    assert seen["sigterm_default"] and seen["own_session"], seen
    assert (tmp_path / "probe.json.role-atexit").exists()  # the role's exit handlers ran
    assert not (tmp_path / "probe.json.supervisor-atexit").exists()  # the supervisor's did not


def test_exec_is_chosen_by_the_knob() -> None:
    """``DONEBELL_ROLE_START=exec`` turns the fork off (the exec path is how roles start off Linux)."""
    code = "from donebell.supervisor import role_fork; print(role_fork.fork_enabled())"
    env = {**os.environ, "DONEBELL_ROLE_START": "exec"}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "False\n"
    env["DONEBELL_ROLE_START"] = ""
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "True\n"
