"""What the wake role needs to know about a thread, and how it starts one turn in it.

Both agents keep their own record of every turn, and that record is the only evidence used:

* Codex: the rollout ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread-id>.jsonl``. A turn is a
  ``task_started`` event; it has ended at its ``task_complete`` or ``turn_aborted``. ``codex exec
  resume <thread-id>`` appends the new turn to the same file.
* Claude Code: the transcript ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session-id>.jsonl``. A turn is
  a prompt (``promptId`` of the main chain's user records); it has ended when the newest
  recognized event is a completion (:func:`~donebell.workers.agents.turn_status.turn_status`).

A turn is started with the agent's own CLI, detached from the wake role (its own session, stdin
``/dev/null``, output to a 0600 log in the state directory), in the thread's working directory,
with the user's ``wake_codex_args`` / ``wake_claude_args`` and nothing else: donebell never adds a
sandbox or approval bypass. The prompt comes from the local config, never from a reply.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from donebell.shared.paths import claude_config_dir_str, codex_home_str
from donebell.workers.agents.turn_status import turn_status

#: Thread and session ids are UUIDs; anything else never reaches a glob or an argv.
_SAFE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,79}$")
READ_CAP = 256 << 20  # a rollout larger than this is not scanned (refused as unreadable)


@dataclass(frozen=True)
class ThreadView:
    """The turns of one thread as its own record shows them."""

    path: str
    turns: int  # how many turns have started
    latest_turn: str | None  # the newest turn's id
    latest_done: str | None  # the newest turn that has ended
    active: bool  # the newest turn has not ended
    cwd: str | None


def locate(provider: str, conversation_id: str) -> str | None:
    """The rollout/transcript of a thread or session on this machine, or None."""
    if not _SAFE_ID.match(conversation_id):
        return None
    if provider == "codex":
        home = codex_home_str()
        patterns = [os.path.join(home, d, "*", "*", "*", f"rollout-*-{conversation_id}.jsonl") for d in ("sessions",)]
        patterns.append(os.path.join(home, "archived_sessions", f"rollout-*-{conversation_id}.jsonl"))
    else:
        patterns = [os.path.join(claude_config_dir_str(), "projects", "*", f"{conversation_id}.jsonl")]
    found = sorted(p for pattern in patterns for p in glob.glob(pattern))
    return found[-1] if found else None


def read_thread(provider: str, path: str) -> ThreadView:
    """Scan ``path``; raises OSError if it is gone or unreadable."""
    if os.stat(path).st_size > READ_CAP:
        raise OSError(f"{path} is larger than {READ_CAP} bytes")
    return _codex(path) if provider == "codex" else _claude(path)


def _lines(path: str) -> list[dict[str, object]]:
    out = []
    with open(path, "rb") as f:
        for raw in f:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # a half-written last line, or junk: not evidence
            if isinstance(obj, dict):
                out.append(obj)
    return out


def _codex(path: str) -> ThreadView:
    started: list[str] = []
    ended: set[str] = set()
    cwd = None
    for obj in _lines(path):
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        if obj.get("type") == "session_meta" and cwd is None:
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        kind, turn = payload.get("type"), payload.get("turn_id")
        if obj.get("type") != "event_msg" or not isinstance(turn, str):
            continue
        if kind == "task_started":
            started.append(turn)
        elif kind in ("task_complete", "turn_aborted"):
            ended.add(turn)
    done = [t for t in started if t in ended]
    latest = started[-1] if started else None
    return ThreadView(
        path, len(started), latest, done[-1] if done else None, latest is not None and latest not in ended, cwd
    )


def _claude(path: str) -> ThreadView:
    prompts: list[str] = []
    cwd = None
    for obj in _lines(path):
        if obj.get("type") != "user" or obj.get("isSidechain") is True:
            continue
        if isinstance(obj.get("cwd"), str):
            cwd = str(obj["cwd"])
        pid = obj.get("promptId")
        if isinstance(pid, str) and pid and pid not in prompts:
            prompts.append(pid)
    status = turn_status(path, "claude")
    active = bool(prompts) and not status.is_done
    latest = prompts[-1] if prompts else None
    done = prompts[-2] if active and len(prompts) > 1 else (None if active else latest)
    return ThreadView(path, len(prompts), latest, done, active, cwd)


def command(provider: str, conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
    """The argv that starts one turn, or None when the CLI is not on PATH."""
    binary = shutil.which(provider)
    if binary is None:
        return None
    if provider == "codex":
        return [binary, "exec", "resume", *extra_args, conversation_id, prompt]
    return [binary, "-p", "--resume", conversation_id, *extra_args, prompt]


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


def busy_refusal(log_path: str) -> bool:
    """Did the agent refuse because another process writes the thread ("already has an active writer")?"""
    try:
        with open(log_path, "rb") as f:
            tail = f.read()[-8192:]
    except OSError:
        return False
    return b"active writer" in tail
