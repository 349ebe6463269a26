"""Several donebell machines on one real ntfy server (docs/wake.md, "Several machines").

Each machine is a :class:`~support.wake_world.WakeWorld` of its own (state directory, config,
Codex home with one finished thread, stand-in ``codex``, its own ``HOME``), all on one real ntfy
2.11 server with accounts: ``donebell`` (read-write on ``donebell-*``), ``phone-replies``
(write-only on the reply topic: the buttons' token) and anonymous read on the notification topic
(the phone). A machine other than this one runs its processes in a UTS namespace of its own
(``unshare --uts``, root only) with its own host name, so ``socket.gethostname()`` differs as on
two real machines; a clone is a copy of another machine's files, as a cloned VM or a restored
home would have them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.ntfy_real import RealNtfy, serve_module
from support.wake_world import WakeWorld

TOPIC = "donebell-notes-Mc4hN7tq2Wx9rZb5vLk3"
WAKE_TOPIC = "donebell-replies-Pz8sQ1wE6yTu3oIa0nGd"
PASSWORD = "machines-password"
THIS_HOST = os.uname().nodename


def can_set_host_names() -> bool:
    return shutil.which("unshare") is not None and os.geteuid() == 0


def one_server(root: Path) -> Iterator[tuple[RealNtfy, dict[str, str]]]:
    """The body of a module fixture: the server and the tokens {"donebell": …, "phone-replies": …}."""
    if not can_set_host_names():
        pytest.skip("host names per machine need `unshare --uts` as root")
    for server in serve_module(root, default_access="deny-all"):
        server.user_add("donebell", PASSWORD)
        server.access("donebell", "donebell-*", "rw")
        server.user_add("phone-replies", PASSWORD)
        server.access("phone-replies", WAKE_TOPIC, "write-only")
        server.access("*", TOPIC, "read-only")
        yield server, {"donebell": server.token_add("donebell"), "phone-replies": server.token_add("phone-replies")}


class Machine(WakeWorld):
    """One machine: a WakeWorld whose processes run under ``host`` (this host's own name: no namespace)."""

    def __init__(self, tmp: Path, server: RealNtfy, tokens: dict[str, str], host: str = THIS_HOST) -> None:
        super().__init__(tmp, server)
        self.host = host
        self.settings_data.pop("wake_allow_unauthenticated")
        self.settings_data.update(
            topic=TOPIC, wake_topic=WAKE_TOPIC, token=tokens["donebell"], wake_token=tokens["phone-replies"]
        )
        self.write_config()
        home = tmp / "home"
        home.mkdir(exist_ok=True)
        self.env["HOME"] = str(home)

    def argv(self, *args: str) -> list[str]:
        """``donebell <args>`` as this machine runs it (under its host name)."""
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
        if self.host == THIS_HOST:
            return cmd
        return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', self.host, *cmd]

    def start(self, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv("worker", "wake"),
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def worker(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        cmd = self.argv("worker", "wake", *args)
        return subprocess.run(cmd, env={**self.env, **env}, capture_output=True, text=True, timeout=60, check=False)

    def health(self) -> dict[str, Any]:
        return self.state.read_health("wake") or {}

    def log_lines(self, level: str | None = None) -> list[str]:
        return [str(line.get("msg")) for line in self.log() if level is None or line.get("level") == level]

    def doctor(self) -> dict[str, Any]:
        out = self.cli("doctor", "--json")
        return dict(json.loads(out.stdout))

    def clone(self, tmp: Path, host: str) -> Machine:
        """Another machine made from a copy of this one's files (state directory and Codex home)."""
        other = Machine(tmp, self.srv, self.tokens(), host)  # type: ignore[arg-type]
        other.settings_data = dict(self.settings_data)
        other.write_config()
        shutil.rmtree(other.state.root)
        shutil.copytree(self.state.root, other.state.root, symlinks=True)
        shutil.copyfile(self.rollout, other.rollout)
        return other

    def tokens(self) -> dict[str, str]:
        data = self.settings_data
        return {"donebell": str(data["token"]), "phone-replies": str(data["wake_token"])}


def stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM the process (by its pid) and return its stderr."""
    if proc.poll() is None:
        proc.terminate()
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=5)
    return err or ""
