"""A PermissionRequest hook waiting for the phone sleeps as a bare interpreter (issue 38): no polling
loop in fifty processes, and every documented end of the wait still ends it. The real hook
subprocess, the real state directory, the real wake pipeline (``test_approvals.Phone``); the
figures (memory, CPU of fifty) are ``python -m benchmarks waiting_approvals``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from donebell.shared import platform
from donebell.shared.statedir import now
from donebell.workers import hooks
from donebell.workers.kit import approval_lean, approval_sleep
from test_approvals import ALLOW, Phone, _printed

pytestmark = [
    pytest.mark.usefixtures("no_outside_config"),
    pytest.mark.skipif(platform.mechanism("approval_wait") != "dnotify-sleep", reason="the lean sleep is Linux's"),
]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [part.decode() for part in f.read().split(b"\0") if part]
    except OSError:
        return []


def _asleep(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> list[str]:
    """The waiting hook's command line once it is the lean sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        argv = _cmdline(proc.pid)
        if any("approval_sleep" in part for part in argv):
            return argv
        assert proc.poll() is None, "the hook ended instead of waiting"
        time.sleep(0.02)
    raise AssertionError(f"the waiting hook never became the lean sleep: {_cmdline(proc.pid)}")


def _wakeups(pid: int) -> int:
    """How often the process went to sleep of its own accord (each poll of a loop is one)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_a_waiting_hook_sleeps_as_a_bare_interpreter_and_still_takes_the_tap(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=60)
    proc = phone.ask()
    request = phone.request()
    argv = _asleep(proc)
    assert argv[1:3] == ["-I", "-S"]  # no site, no donebell: a bare interpreter holds the call
    before = _wakeups(proc.pid)
    time.sleep(3.0)
    # A loop polling every 50 ms wakes ~60 times in 3 s; the sleep wakes on a change only (and
    # for its bounded look every 10 s).
    assert _wakeups(proc.pid) - before <= 3
    phone.tap(phone.ticket(request, "allow"))
    assert json.loads(_printed(proc, timeout=15)) == ALLOW


def test_the_wait_ends_when_the_wake_role_says_it_is_not_subscribed(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=60)
    proc = phone.ask()
    request = phone.request()
    _asleep(proc)
    health = phone.state.read_health("wake")
    assert health is not None
    phone.state.write_health("wake", {**health, "heartbeat_at": now(), "subscription": "unreachable"})
    assert _printed(proc, timeout=approval_sleep.FALLBACK_SECONDS + 15) == b""
    answer = phone.state.answer_box().read(request["key"])
    assert answer is not None and answer["decision"] == "closed"
    assert answer["reason"] == "the wake role is not subscribed (unreachable)"


def test_the_wait_ends_when_the_wake_role_stopped(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=60)
    proc = phone.ask()
    request = phone.request()
    _asleep(proc)
    # The role died: its health file ages. Aged here by its mtime, as a dead role's would be.
    old = time.time() - 3600
    os.utime(phone.state.health_file("wake"), (old, old))
    assert _printed(proc, timeout=approval_sleep.FALLBACK_SECONDS + 15) == b""
    answer = phone.state.answer_box().read(request["key"])
    assert answer is not None and answer["reason"] == "the wake role stopped"


def test_with_the_lean_wait_off_the_hook_waits_in_process_and_takes_the_tap(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=60)
    phone.hooks.extra_env[approval_sleep.LEAN_ENV] = "off"
    proc = phone.ask()
    request = phone.request()
    time.sleep(0.5)
    assert not any("approval_sleep" in part for part in _cmdline(proc.pid))
    phone.tap(phone.ticket(request, "deny"))
    assert json.loads(_printed(proc, timeout=15))["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_a_sleep_that_fails_resumes_the_hook_with_the_lean_wait_off(tmp_path: Path) -> None:
    """Bad arguments (or anything else going wrong in the sleep): it exec's the resume command at
    once, telling it to wait the old way, so a hook never hangs past its deadline or loops."""
    report = "import os, sys; sys.stdout.write(os.environ.get('DONEBELL_APPROVAL_LEAN', 'unset'))"
    argv = [sys.executable, "-I", "-S", approval_lean.SLEEP_SCRIPT, "soon", "x", "y", "z", "--", "--"]
    done = subprocess.run([*argv, sys.executable, "-c", report], capture_output=True, timeout=30, check=True)
    assert done.stdout == b"off"


def test_the_resume_and_lean_variables_are_one_name_each() -> None:
    """The hook's entry point names the resume without importing the lean wait (its start-up
    budget); the bare sleep names the switch without importing donebell."""
    assert hooks.RESUME_ENV == approval_lean.RESUME_ENV
    assert approval_sleep.LEAN_ENV == approval_lean.LEAN_ENV
