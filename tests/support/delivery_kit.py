"""Shared set-up for the delivery tests and benchmark: a private config + state dir, outbox records,
and a delivery role wired to them (real files, real stand-in server, no mocks)."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from donebell.shared.config.model import Settings, load
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate, to_outbox
from donebell.shared.statedir import StateDir
from donebell.workers.delivery.role import DeliveryRole

TOPIC = "donebell-tests"
THREAD = "019a22be-06d2-7621-bea7-5b13dfa14a99"


class Env:
    """A config file and a state directory under ``root``, exported through the environment."""

    def __init__(self, root: Path, **config: Any) -> None:
        self.root = root
        self.config_path = root / "config.json"
        self.state = StateDir(root / "state").ensure()
        self.config: dict[str, Any] = {}
        self.write_config(**config)

    def write_config(self, **config: Any) -> None:
        """(Re)write the whole config file (0600) with ``topic`` defaulted."""
        self.config = {"topic": TOPIC, **config}
        fd = os.open(self.config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.config, f)

    def update_config(self, **changes: Any) -> None:
        self.write_config(**{**self.config, **changes})

    def environ(self) -> dict[str, str]:
        """The process environment for a ``donebell`` subprocess: no DONEBELL_* leaks from outside."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        env.update(DONEBELL_CONFIG=str(self.config_path), DONEBELL_STATE_DIR=str(self.state.root))
        return env

    def settings(self) -> Settings:
        return load(self.config_path).settings

    def role(self, *, once: bool = True, until_idle: bool = False) -> DeliveryRole:
        role = DeliveryRole(
            self.state, self.settings(), argparse.Namespace(once=once, until_idle=until_idle, debug=False)
        )
        role.config.path = self.config_path
        role.setup()
        return role

    def queue(self, **fields: Any) -> dict[str, Any]:
        """Put one outbox record in place (as the gate's promotion would) and return it."""
        rec = outbox_record(**fields)
        assert self.state.create("outbox", rec)
        return rec

    def run_cli(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *args],
            env=self.environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen_cli(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", *args],
            env=self.environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C as from a terminal: a suite started in the background (`pytest … &`) inherits
            # SIGINT ignored, and so would the command, so a test's SIGINT would do nothing.
            preexec_fn=_sigint_as_from_a_terminal,
        )

    def all_state_text(self) -> str:
        """Every file of the state directory, decoded leniently (for secret greps)."""
        chunks = []
        for path in sorted(self.state.root.rglob("*")):
            if path.is_file():
                chunks.append(path.read_bytes().decode("utf-8", "replace"))
        return "\n".join(chunks)


def outbox_record(
    provider: str = "codex", thread_id: str | None = None, turn_id: str | None = None, **fields: Any
) -> dict[str, Any]:
    """An outbox record like the gate promotes: candidate fields + delivery metadata."""
    turn = turn_id or secrets.token_hex(8)
    if provider == "codex":
        thread = thread_id or THREAD
        key = event_key("codex", thread, turn)
        ids = {"thread_id": thread, "turn_id": turn}
    else:
        thread = thread_id or "5d2c6f0e-claude-session"
        key = event_key("claude", thread, turn)
        ids = {"session_id": thread, "prompt_id": turn}
    base: dict[str, Any] = {"cwd": "/home/dev/projects/donebell", "outcome": "done", "source": "codex-stop", **ids}
    delivery: dict[str, Any] = {k: fields.pop(k) for k in ("attempts", "next_attempt_at", "last_error") if k in fields}
    base.update(fields)
    source = base.pop("source")
    cand = new_candidate(key=key, provider=provider, source=source, **base)
    return {**to_outbox(cand, verdict="idle"), **delivery}


def wire_bodies(srv: Any) -> list[dict[str, Any]]:
    """The JSON bodies the stand-in received, in order."""
    return [r.parsed for r in srv.requests if isinstance(r.parsed, dict)]


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
