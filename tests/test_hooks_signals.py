"""``donebell hook …`` outlives the agent's SIGTERM/SIGHUP until its record is durable.

Claude Code 2.1.332 sends a print-mode StopFailure hook SIGTERM 22–29 ms after starting it and
SIGKILL ~1.5 s later. These tests start the real hook command the way ``donebell install
--claude`` writes it (exec form: no shell of Claude's, our ``/bin/sh`` signal shield in front of
the ``donebell`` console script) with the recorded StopFailure payload, signal it like Claude
does, and read the state directory. A SIGKILL before durability follows the crash-point rules of
``tests/reliability/test_crash_points.py``: no record file is ever partial, and the hook's next
run still writes exactly one candidate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import InvalidRecord, decode
from donebell.workers.agents.claude.install import claude_group
from donebell.workers.kit.install.managed import donebell_executable, handler_argv
from support.hooks_harness import HookEnv, claude_event

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CLAUDE_KILL_AFTER = 1.5  # Claude's SIGKILL follows its SIGTERM by ~1.5 s
CRASH_EXIT = 86  # os._exit code of the DONEBELL_CRASH_AT seam (shared/statedir)
#: Reports the signal dispositions of the process it runs in (stands in for the kicked worker).
DISPOSITIONS = """
import json, sys
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
json.dump({k: int(status[k].strip(), 16) for k in ("SigIgn", "SigCgt")}, open(sys.argv[1] + ".tmp", "w"))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
"""


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    env = HookEnv(tmp_path)
    env.claude(claude_event("print-apierror529", "UserPromptSubmit"))
    return env


def installed_argv() -> list[str]:
    """The StopFailure command exactly as install writes it for a Claude with exec-form support."""
    [handler] = claude_group("StopFailure", donebell_executable(), exec_form=True)["hooks"]
    assert handler["command"] == "/bin/sh" and (handler_argv(handler) or [])[1:] == ["hook", "claude"], handler
    return [handler["command"], *handler["args"]]


def stop_failure() -> bytes:
    return json.dumps(claude_event("print-apierror529", "StopFailure")).encode()


def start(hooks: HookEnv, argv: list[str], **env: str) -> subprocess.Popen[bytes]:
    """Start a hook the way Claude does: payload on a pipe, stdout/stderr read by the parent."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hooks.env(**env)
    )
    return proc  # Popen returns once exec succeeded: the clock of every delay below starts here


def signal_at(proc: subprocess.Popen[bytes], started: float, plan: list[tuple[float, int]]) -> list[int]:
    """Send each (seconds after exec, signal) while the process lives; returns the ones delivered."""
    sent = []
    for at, signum in plan:
        time.sleep(max(0.0, started + at - time.monotonic()))
        if proc.poll() is not None:
            break
        try:
            os.kill(proc.pid, signum)
        except ProcessLookupError:
            break
        sent.append(signum)
    return sent


def finish(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """stdout and stderr of a hook whose stdin was already written and closed, once it exited."""
    out = proc.stdout.read()  # type: ignore[union-attr]
    err = proc.stderr.read()  # type: ignore[union-attr]
    proc.wait(timeout=30)
    return out, err


def feed(proc: subprocess.Popen[bytes], payload: bytes) -> None:
    """Write the payload and close stdin. A hook the signal already killed has no reader left: the
    write then fails with EPIPE, and what the test checks next (exit status, records) says the rest."""
    try:
        proc.stdin.write(payload)  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass


def partial_records(hooks: HookEnv) -> list[str]:
    """Record files that do not parse as complete records (the crash-point rule: always empty)."""
    bad = []
    for folder in ("pending", "outbox", "sent", "suppressed", "dead", "claude"):
        for path in (hooks.state_dir / folder).glob("*.json"):
            try:
                decode(path.read_bytes(), expect_key=path.stem)
            except (InvalidRecord, OSError) as exc:
                bad.append(f"{folder}/{path.name}: {exc}")
    return bad


def failed_candidate(hooks: HookEnv) -> dict[str, Any]:
    candidate = hooks.only("pending")
    assert (candidate["outcome"], candidate["source"]) == ("failed", "claude-stopfailure"), candidate
    return candidate


@pytest.mark.parametrize("plan", [[0.005, 0.020], [0.005], [0.020]], ids=["5ms+20ms", "5ms", "20ms"])
def test_sigterm_soon_after_exec_still_gives_one_durable_candidate(hooks: HookEnv, plan: list[float]) -> None:
    """SIGTERM 5 ms and/or 20 ms after exec (Claude 2.1.332 sends it after 22–29 ms), SIGKILL 1.5 s
    later: the hook finishes its write, exits 0 on its own, and leaves exactly one failed candidate."""
    payload = stop_failure()
    proc = start(hooks, installed_argv())
    started = time.monotonic()
    sent = signal_at(proc, started, [(at, signal.SIGTERM) for at in plan])
    assert sent == [signal.SIGTERM] * len(plan), "the hook was gone before the first signal"
    feed(proc, payload)
    killed = signal_at(proc, started, [(plan[-1] + CLAUDE_KILL_AFTER, signal.SIGKILL)])
    out, err = finish(proc)
    assert killed == [] and proc.returncode == 0, (proc.returncode, err)
    assert out == b""
    failed_candidate(hooks)
    assert partial_records(hooks) == []


def test_without_the_shell_shield_a_sigterm_in_python_start_up_kills_the_hook(hooks: HookEnv) -> None:
    """Why the installed command starts with the signals ignored: 5 ms after exec the interpreter
    has not reached donebell's first line yet, and the default SIGTERM action ends it there."""
    proc = start(hooks, [donebell_executable(), "hook", "claude"])
    assert signal_at(proc, time.monotonic(), [(0.005, signal.SIGTERM)]) == [signal.SIGTERM]
    feed(proc, stop_failure())
    finish(proc)
    assert proc.returncode == -signal.SIGTERM
    assert hooks.records("pending") == []


def caught_signals(pid: int) -> int:
    """The SigCgt mask of ``pid`` (bit n-1 set: a handler is installed for signal n)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def wait_until_holding(proc: subprocess.Popen[bytes]) -> None:
    wanted = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
    deadline = time.monotonic() + 20
    while caught_signals(proc.pid) & wanted != wanted:
        assert proc.poll() is None and time.monotonic() < deadline, "the hook never held SIGTERM/SIGHUP"
        time.sleep(0.001)


@pytest.mark.parametrize("command", ["claude", "codex-stop"])
def test_every_hook_entry_point_holds_sigterm_and_sighup(hooks: HookEnv, command: str) -> None:
    """Without the installed shell shield (Codex runs `donebell hook …` itself): once the Python
    entry point runs, SIGTERM and SIGHUP no longer kill the hook before its candidate is written."""
    if command == "claude":
        payload = stop_failure()
    else:
        hooks.install_rollout("simple-exec", upto="task_complete")
        payload = json.dumps(hooks.stop_payload("simple")).encode()
    proc = start(hooks, [donebell_executable(), "hook", command])
    wait_until_holding(proc)  # blocked reading the payload, before the hook modules ran
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGHUP)
    out, err = proc.communicate(payload, timeout=30)
    assert proc.returncode == 0, (proc.returncode, err)
    assert out == (b"{}\n" if command == "codex-stop" else b"")
    assert len(hooks.records("pending")) == 1
    assert "agent signalled the hook" in hooks.log_messages()


def test_the_kicked_worker_gets_default_signal_actions(hooks: HookEnv) -> None:
    """The shield's ignored SIGTERM/SIGHUP must not leak into the delivery worker the hook starts."""
    script = hooks.root / "dispositions.py"
    script.write_text(DISPOSITIONS)
    report = hooks.root / "worker-signals.json"
    kick = json.dumps([sys.executable, str(script), str(report)])
    proc = start(hooks, installed_argv(), DONEBELL_KICK_COMMAND=kick)
    proc.communicate(stop_failure(), timeout=30)
    assert proc.returncode == 0
    deadline = time.monotonic() + 20
    while not report.exists():
        assert time.monotonic() < deadline, hooks.log_messages()
        time.sleep(0.01)
    masks = json.loads(report.read_text())
    held = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
    assert masks["SigIgn"] & held == 0 and masks["SigCgt"] & held == 0, masks


def test_crash_at_every_step_before_durability_leaves_nothing_half_written(hooks: HookEnv) -> None:
    """The crash-point walk of the StopFailure hook (os._exit at its N-th counted state-dir
    operation, N = 1, 2, ...): after every crash no record is partial and at most one candidate
    exists; the next StopFailure-like run (the agent's retry, a fallback) leaves exactly one."""
    payload = stop_failure()
    for n in range(1, 200):
        proc = start(hooks, installed_argv(), DONEBELL_CRASH_AT=str(n))
        proc.communicate(payload, timeout=30)
        assert proc.returncode in (0, CRASH_EXIT), (n, proc.returncode)
        assert partial_records(hooks) == [], n
        assert len(hooks.records("pending")) <= 1, n
        again = start(hooks, installed_argv())
        again.communicate(payload, timeout=30)
        assert again.returncode == 0
        failed_candidate(hooks)
        assert partial_records(hooks) == [], n
        for path in (hooks.state_dir / "pending").glob("*.json"):
            path.unlink()  # the next crash point starts from no candidate again
        if proc.returncode == 0:
            break
    else:
        raise AssertionError("the hook never finished without reaching its crash point")
    assert n > 3, "the walk must pass through the candidate's write"


def test_sigkill_at_any_moment_leaves_nothing_half_written(hooks: HookEnv) -> None:
    """Real SIGKILLs swept over the hook's life (Claude's SIGKILL when the hook is too slow):
    either no candidate or one complete one, never a partial file, and a later run still writes one."""
    payload = stop_failure()
    outcomes = set()
    for delay_ms in range(0, 200, 8):
        for path in (hooks.state_dir / "pending").glob("*.json"):
            path.unlink()
        proc = start(hooks, installed_argv())
        feed(proc, payload)
        signal_at(proc, time.monotonic(), [(delay_ms / 1000, signal.SIGKILL)])
        finish(proc)
        assert proc.returncode in (0, -signal.SIGKILL), proc.returncode
        assert partial_records(hooks) == [], delay_ms
        written = len(hooks.records("pending"))
        assert written <= 1, delay_ms
        outcomes.add((proc.returncode, written))
        again = start(hooks, installed_argv())
        again.communicate(payload, timeout=30)
        failed_candidate(hooks)
    assert (-signal.SIGKILL, 0) in outcomes, f"no kill landed before durability: {outcomes}"
