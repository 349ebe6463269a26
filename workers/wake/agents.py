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

from donebell.shared.bounded_read import NotARegularFile, file_sig, read_tail
from donebell.workers.agents import registry
from donebell.workers.kit.agent_command import agent_environment
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
#: Views kept of files that have not changed since (a busy thread is looked at every 2 s).
VIEW_CACHE_MAX = 64
_views: dict[tuple[str, str], tuple[list[int], ThreadView]] = {}


def locate(provider: str, conversation_id: str) -> str | None:
    """The rollout/transcript of a thread or session on this machine, or None."""
    agent = registry.agent(provider)
    return None if agent is None else agent.locate_thread(conversation_id)


def read_thread(provider: str, path: str) -> ThreadView:
    """Scan ``path``; raises OSError if it is gone, unreadable or not a regular file. A file that
    has not changed since it was last scanned (same inode, size and mtime) is not read again."""
    sig = file_sig(path)
    if sig is None:
        raise NotARegularFile(f"{path} is missing or not a regular file")
    if sig[2] > READ_CAP:
        raise OSError(f"{path} is larger than {READ_CAP} bytes")
    cached = _views.get((provider, path))
    if cached is not None and cached[0] == sig:
        return cached[1]
    agent = registry.agent(provider)
    if agent is None:
        raise OSError(f"no agent {provider!r} is registered")
    view = agent.read_thread(path)
    if len(_views) >= VIEW_CACHE_MAX:
        _views.clear()
    _views[(provider, path)] = (sig, view)
    return view


def command(provider: str, conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """The argv that starts one turn, or None when the CLI is not on PATH."""
    agent = registry.agent(provider)
    return None if agent is None else agent.resume_argv(conversation_id, prompt, extra_args)


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
        tail = read_tail(log_path, 8192).data
    except OSError:
        return False
    return b"active writer" in tail
