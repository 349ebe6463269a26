"""Everything donebell creates is owner-only whatever the umask (issue 15, item 4).

The real commands run under ``umask 000`` in a fresh home (no ``XDG_*``, no ``DONEBELL_*`` paths):
``config init``, a hook, ``donebell test`` against a stand-in, every role's ``--once`` run,
``donebell run`` (the supervisor and its roles) and ``install``. Before, role lock files came out
0666 and the ``~/.config``, ``~/.local`` and ``~/.local/state`` that donebell created 0777.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.ntfy_standin import NtfyStandin

STOP = json.dumps({"hook_event_name": "Stop", "session_id": "019a22be-06d2-7621-bea7-5b13dfa14a99", "turn_id": "t-1"})


def _environ(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DONEBELL_", "XDG_", "CODEX_", "CLAUDE_"))}
    env["HOME"] = str(home)
    return env


def _under_umask_000(home: Path, *args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "donebell.supervisor.cli", *args))
    return subprocess.run(
        ["sh", "-c", f"umask 000 && exec {command}"],
        input=stdin,
        capture_output=True,
        text=True,
        env=_environ(home),
        timeout=timeout,
    )


def _loose(home: Path) -> list[str]:
    """Every path under ``home`` (home itself excluded) with a group or other permission bit."""
    out = []
    for path in sorted(home.rglob("*")):
        mode = path.lstat().st_mode & 0o777
        if mode & 0o077:
            out.append(f"{mode:04o} {path.relative_to(home)}")
    return out


def test_every_file_and_folder_is_owner_only_under_umask_000(srv: NtfyStandin, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    steps = [
        ("config", "init", "--server", srv.url),
        ("hook", "codex-stop"),
        ("test",),
        ("worker", "delivery", "--once"),
        ("worker", "local-scanner", "--once"),
        ("worker", "maintenance", "--once"),
        ("install", "--codex", "--claude", "--service", "none"),
    ]
    for args in steps:
        run = _under_umask_000(home, *args, stdin=STOP if args[0] == "hook" else "")
        assert run.returncode == 0, (args, run.stdout, run.stderr)
    assert len(srv.messages()) >= 1  # `donebell test` went through
    # the supervisor and the roles it spawns, each taking its own lock
    command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "donebell.supervisor.cli", "run"))
    proc = subprocess.Popen(
        ["sh", "-c", f"umask 000 && exec {command}"],
        env=_environ(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    locks = home / ".local" / "state" / "donebell" / "locks"
    try:
        deadline = time.monotonic() + 30
        while "supervisor.owner.json" not in {p.name for p in locks.iterdir()}:
            assert time.monotonic() < deadline, sorted(p.name for p in locks.iterdir())
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    created = {str(p.relative_to(home)) for p in home.rglob("*")}
    assert {
        ".config",
        ".local",
        ".local/state",
        ".local/state/donebell/locks/delivery.lock",
        ".local/state/donebell/locks/supervisor.lock",
        ".codex/config.toml",
    } <= created
    assert _loose(home) == []
