"""An agent command the wake role waits for (``codex queue``): bounded in time, killed as a group.

The wake role starts most turns detached (``codex exec resume``, :func:`.agents.spawn`) and never
waits for them; a few agent commands it must wait for, because their answer decides the next step.
Such a command runs as the leader of a process group of its own, with the agent's environment
(never donebell's secrets: :func:`agent_environment`), stdin ``/dev/null`` and its output
kept up to :data:`OUTPUT_CAP` (read whole meanwhile: the commands answer a line, and the timeout
bounds how long a flood could last). When it has not answered within its timeout the whole group is
killed (a hung CLI, and whatever it started that keeps the output pipes open), so the thread that
waits is free again; :func:`kill_running` kills every one still running when the role stops.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass

from donebell.shared.process.groups import kill_tree, start

OUTPUT_CAP = 64 << 10  # bytes of each stream kept: enough for any answer
#: How long the output may take to close after the group was killed (a member that left the group).
DRAIN_SECONDS = 2.0

#: donebell's variables the woken agent keeps: where this installation is, so that the new turn's
#: own hook reports to it. Locations, not secrets; every other ``DONEBELL_*`` stays here.
AGENT_KEEPS = frozenset({"DONEBELL_CONFIG", "DONEBELL_STATE_DIR"})
#: The service manager's channel to donebell's own service (systemd's notify socket and watchdog).
SERVICE_CHANNEL = frozenset({"NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC"})


def agent_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The user's environment minus donebell's: no ``DONEBELL_*`` secret or setting (``DONEBELL_TOKEN``,
    ``DONEBELL_WAKE_TOKEN``, any ``DONEBELL_<KEY>``, test seams) and no service channel."""
    return {
        k: v
        for k, v in environ.items()
        if (k in AGENT_KEEPS or not k.startswith("DONEBELL_")) and k not in SERVICE_CHANNEL
    }


_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


@dataclass(frozen=True)
class Answer:
    returncode: int
    stdout: str
    stderr: str


class NoAnswer(Exception):
    """The command gave no answer in time; its process group was killed."""


def run_agent_command(argv: list[str], timeout: float) -> Answer:
    """Run ``argv`` and return its answer; :class:`NoAnswer` after ``timeout`` s (group killed);
    OSError when it cannot start."""
    proc = start(
        argv,
        "windowless",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=agent_environment(os.environ),
        cwd=None,
    )
    with _running_lock:
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        _drain(proc)
        raise NoAnswer(f"no answer within {timeout:g} s; its process group was killed") from None
    finally:
        with _running_lock:
            _running.discard(proc)
    return Answer(proc.returncode, _text(out), _text(err))


def _drain(proc: subprocess.Popen[bytes]) -> None:
    """Reap the killed leader; a pipe still held open by an escaped member is closed unread."""
    try:
        proc.communicate(timeout=DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait(timeout=DRAIN_SECONDS)


def _text(data: bytes | None) -> str:
    return (data or b"")[:OUTPUT_CAP].decode("utf-8", "replace")


def kill_running() -> None:
    """Kill every agent command still running (the role is stopping: nobody waits for them)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        kill_tree(proc)
