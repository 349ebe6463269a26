"""The first `donebell run` (no config yet) writes one with a fresh topic and prints the three next
steps once; a later start prints none of it. Real supervisor processes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from support.supervisor_proc import FAST, Harness
from support.waiting import wait_for


def test_first_start_names_the_next_steps_once(isolated_env: dict[str, Path], tmp_path: Path) -> None:
    h = Harness({**os.environ, **FAST, "DONEBELL_SERVER": "http://127.0.0.1:9"}, isolated_env["state"], tmp_path)
    try:
        first = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
        wait_for(h.ready, what="supervisor ready")
        topic = json.loads(isolated_env["config"].read_text())["topic"]
        out = h.output(0)
        assert "next steps:" in out
        assert f"1. subscribe on your phone: in the ntfy app, subscribe to http://127.0.0.1:9/{topic}" in out
        assert "2. wire your agents and the background service: donebell install" in out
        assert "3. check it: donebell test" in out
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
        second = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
        wait_for(lambda: "supervising" in h.output(1), what="second start")
        assert "next steps" not in h.output(1) and "wrote a default configuration" not in h.output(1)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        h.cleanup()
