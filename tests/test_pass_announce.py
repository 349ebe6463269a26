"""Issue 38: an idle pass writes its health file once, at its end; a pass that beats still says
``scanning`` and keeps its heartbeat fresh (``workers/pass_control.py``, ``pass_starts``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from donebell.shared.statedir import StateDir
    from donebell.workers import pass_control
    from donebell.workers.kit.pass_result import PassResult
    from donebell.workers.role import Role, run_role

    writes = []
    original = StateDir.write_health

    def counting(self, role, health):
        writes.append(health["state"])
        original(self, role, health)

    StateDir.write_health = counting
    seen = []

    class Probe(Role):
        name = "announce-test"

        def bounded(self):
            return True

        def run_pass(self):
            n = len(seen)
            before = len(writes)
            if n == 2:
                time.sleep(1.2)  # a long pass that never beats: not announced
            if n == 3:
                pass_control.heartbeat()  # a pass that beats: announced at its first beat
            seen.append({"writes_in_pass": writes[before:], "file": self.state.read_health(self.name)["state"]})
            return PassResult(next_in=0.0, idle=n >= 4)

    code = run_role(Probe, [])
    print(json.dumps({"code": code, "seen": seen, "writes": writes}))
    """
)


def _run(script: str = SCRIPT) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = orjson.loads(res.stdout.strip().splitlines()[-1])
    return out


def test_idle_passes_write_health_once_and_long_passes_still_say_scanning(isolated_env: dict[str, Path]) -> None:
    out = _run()
    assert out["code"] == 0
    seen = out["seen"]
    assert len(seen) == 5
    # The first pass announces "starting" before it runs, as always.
    assert seen[0]["file"] == "starting"
    # A quick pass after the first: nothing written before or during it; the file still says
    # what the last pass ended with.
    assert seen[1] == {"writes_in_pass": [], "file": "ready"}
    # A pass that never beats is not announced either (its health is written at its end).
    assert seen[2] == {"writes_in_pass": [], "file": "ready"}
    # A pass that beats its heartbeat is announced by its first beat.
    assert seen[3]["writes_in_pass"] == ["scanning"]
    assert seen[3]["file"] == "scanning"
    # The announcement ends with its pass: the next quick pass writes nothing before its end.
    assert seen[4]["writes_in_pass"] == []
    # Otherwise one write per pass, at its end; then "stopped".
    assert out["writes"].count("ready") == 5
    assert out["writes"].count("scanning") == 1
    assert out["writes"][-1] == "stopped"
