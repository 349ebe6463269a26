"""What the wake role needs to know about a thread, and how it starts one turn in it.

Every agent keeps its own record of every turn, and that record is the only evidence used; each
agent's ``Wake`` capability (``workers/agents/<name>/wake.py``: Codex's rollout, Claude Code's
transcript) finds it, reads it into a :class:`ThreadView` and names the command that resumes it.

A turn is started with the agent's own CLI, detached from the wake role (its own session, stdin
``/dev/null``, output to a 0600 log in the state directory), in the thread's working directory,
with the user's ``wake_codex_args`` / ``wake_claude_args`` and nothing else: donebell never adds a
sandbox or approval bypass. The prompt comes from the local config, never from a reply.
"""

from __future__ import annotations

import os
import subprocess

from donebell.workers.agents import registry
from donebell.workers.kit.thread_view import ThreadView

__all__ = [
    "ThreadView",
    "agent_environment",
    "busy_refusal",
    "command",
    "last_words",
    "locate",
    "read_thread",
    "spawn",
]

READ_CAP = 256 << 20  # a rollout larger than this is not scanned (refused as unreadable)


def locate(provider: str, conversation_id: str) -> str | None:
    """The rollout/transcript of a thread or session on this machine, or None."""
    agent = registry.agent(provider)
    return None if agent is None else agent.locate_thread(conversation_id)


def read_thread(provider: str, path: str) -> ThreadView:
    """Scan ``path``; raises OSError if it is gone or unreadable."""
    if os.stat(path).st_size > READ_CAP:
        raise OSError(f"{path} is larger than {READ_CAP} bytes")
    agent = registry.agent(provider)
    if agent is None:
        raise OSError(f"no agent {provider!r} is registered")
    return agent.read_thread(path)


def command(provider: str, conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """The argv that starts one turn, or None when the CLI is not on PATH."""
    agent = registry.agent(provider)
    return None if agent is None else agent.resume_argv(conversation_id, prompt, extra_args)


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


def spawn(argv: list[str], cwd: str | None, log_path: str) -> subprocess.Popen[bytes]:
    """Start ``argv`` detached (own session, no stdin); its output goes to ``log_path`` (0600)."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        env = agent_environment(os.environ)
        workdir = cwd if cwd and os.path.isdir(cwd) else None
        return subprocess.Popen(
            argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, start_new_session=True
        )
    finally:
        os.close(fd)


def last_words(log_path: str) -> str:
    """The agent's own last line of output (e.g. Codex's "Not inside a trusted directory and
    --skip-git-repo-check was not specified."), one line of at most 200 characters, or ""."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [" ".join(line.split()) for line in tail.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def busy_refusal(log_path: str) -> bool:
    """Did the agent refuse because another process writes the thread ("already has an active writer")?"""
    try:
        with open(log_path, "rb") as f:
            tail = f.read()[-8192:]
    except OSError:
        return False
    return b"active writer" in tail
