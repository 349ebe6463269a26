"""From a real hook (or scanner) process to the ntfy stand-in: what a notification finally carries.

:class:`Pipeline` wires a :class:`support.hooks_harness.HookEnv` (private state dir, config, agent homes)
to a stand-in server; signals go in through the real ``donebell hook ...`` and
``donebell worker local-scanner --once`` processes, and :meth:`Pipeline.deliver` runs the real
``donebell worker delivery --once`` and returns what the server accepted (and the raw requests).
The gate runs with ``idle_detection_mode: off`` so these tests are about the payload alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from support.hooks_harness import HookEnv
from support.ntfy_standin import NtfyStandin

TOPIC = "payload-truth"
ORIGIN = "lab"


class Pipeline:
    def __init__(self, hooks: HookEnv, srv: NtfyStandin) -> None:
        self.hooks, self.srv = hooks, srv
        self.configure()

    def configure(self, **config: Any) -> None:
        """(Re)write the config: the stand-in, the topic, a fixed origin, no gate, plus ``config``."""
        self.hooks.write_config(server=self.srv.url, topic=TOPIC, origin=ORIGIN, idle_detection_mode="off", **config)

    def worker(self, role: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "donebell.supervisor.cli", "worker", role, "--once"]
        done = subprocess.run(argv, env=self.hooks.env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    def deliver(self) -> list[dict[str, Any]]:
        """One real delivery pass; every message the stand-in accepted so far."""
        self.worker("delivery")
        return self.srv.messages(TOPIC)

    def only_message(self) -> dict[str, Any]:
        [message] = self.deliver()
        return message

    def request_bodies(self) -> str:
        """Every publish body the server received, as text (for what must never be sent)."""
        return "\n".join(r.body.decode("utf-8", "replace") for r in self.srv.requests)

    def state_text(self) -> str:
        """Every file of the state directory (pending, outbox, receipts, log), decoded leniently."""
        paths = sorted(p for p in self.hooks.state_dir.rglob("*") if p.is_file())
        return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in paths)

    def published(self) -> list[dict[str, Any]]:
        """The JSON bodies donebell POSTed, as sent (before ntfy's own rendering)."""
        return [json.loads(r.body) for r in self.srv.requests if r.method == "POST" and r.body]
