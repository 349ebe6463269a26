"""Reply to continue: tap → agent spawned, and the idle wake role's footprint.

Target (issue 18): from the tap (the ntfy app's POST to the reply topic) to ``codex exec resume``
spawned, median and p99 <= 300 ms on loopback, model time excluded; the idle role's CPU and RSS
within the footprint budget (<= 35 MiB RSS per process; its CPU is part of the tree's 0.1 CPU-s
per 60 s).

A real ``donebell worker wake`` subscribes to the ntfy stand-in. The ``codex`` on PATH is a
two-line shell script that stamps the time it started and appends one finished turn to the
rollout (so each wake is confirmed and the next tap answers the newest turn). Each tap is a new
notified turn with a fresh ticket; the latency is the script's start stamp minus the moment just
before the POST. Then, with nothing arriving, the role's CPU time over ``DONEBELL_BENCH_SECONDS``
(60) and its RSS are read.

Run: ``python benchmarks/bench_wake.py`` or ``python -m benchmarks wake``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from donebell.shared.config.model import Settings
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate, new_receipt, to_outbox
from donebell.shared.statedir import StateDir
from donebell.workers.wake.actions import wake_actions

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.ntfy_standin import NtfyStandin  # noqa: E402

TAPS = int(os.environ.get("DONEBELL_BENCH_WAKE_TAPS", "40"))
SECONDS = float(os.environ.get("DONEBELL_BENCH_SECONDS", "60"))
THREAD = "019a22be-0000-7000-8000-0000000bench"
FAKE_CODEX = """#!/bin/sh
date +%s.%N >> "$BENCH_SPAWNS"
printf '{"type":"event_msg","payload":{"type":"task_started","turn_id":"w%s"}}\\n{"type":"event_msg","payload":{"type":"task_complete","turn_id":"w%s"}}\\n' $$ $$ >> "$BENCH_ROLLOUT"
"""


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj) + "\n"


def _turn(rollout: Path, turn: str) -> None:
    with rollout.open("a") as f:
        for kind in ("task_started", "task_complete"):
            f.write(_line({"type": "event_msg", "payload": {"type": kind, "turn_id": turn}}))


def main() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="donebell-bench-wake-") as tmp_name, NtfyStandin() as srv:
        bench = _setup(Path(tmp_name), srv.url)
        role = subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "worker", "wake"],
            env=bench.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait(lambda: (bench.state.read_health("wake") or {}).get("subscription") == "subscribed", 30)
            latencies = _tap_latencies(bench)
            cpu, rss = _idle_footprint(psutil.Process(role.pid))
        finally:
            role.terminate()
            role.wait(10)
    return _rows(latencies, cpu, rss)


@dataclass
class _Bench:
    state: StateDir
    settings: Settings
    rollout: Path  # the notified thread's rollout; the fake codex appends each woken turn to it
    spawns: Path  # one start stamp per fake codex run
    env: dict[str, str]  # the wake role's environment


def _setup(tmp: Path, server_url: str) -> _Bench:
    """State directory, config, the thread's rollout and the fake ``codex`` first on PATH."""
    state = StateDir(tmp / "state").ensure()
    data: dict[str, Any] = {
        "server": server_url,
        "topic": "bench-notes",
        "wake_enabled": True,
        "wake_topic": "bench-replies",
        "wake_allow_unauthenticated": True,
    }
    config = tmp / "config.json"
    config.write_text(json.dumps(data))
    config.chmod(0o600)
    rollout = tmp / "codex" / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(_line({"type": "session_meta", "payload": {"id": THREAD, "cwd": str(tmp)}}))
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text(FAKE_CODEX)
    (bin_dir / "codex").chmod(0o755)
    spawns = tmp / "spawns.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        DONEBELL_STATE_DIR=str(state.root),
        DONEBELL_CONFIG=str(config),
        CODEX_HOME=str(tmp / "codex"),
        BENCH_SPAWNS=str(spawns),
        BENCH_ROLLOUT=str(rollout),
    )
    return _Bench(state, Settings(**data), rollout, spawns, env)


def _tap_latencies(bench: _Bench) -> list[float]:
    """Milliseconds from each tap's POST to the fake codex's start stamp, one new turn per tap."""
    state, spawns = bench.state, bench.spawns
    latencies = []
    with httpx.Client(timeout=10) as client:
        for i in range(TAPS):
            turn = f"bench-turn-{i}"
            _turn(bench.rollout, turn)
            candidate = new_candidate(
                key=event_key("codex", THREAD, turn),
                provider="codex",
                source="bench",
                thread_id=THREAD,
                turn_id=turn,
            )
            state.create("sent", new_receipt(to_outbox(candidate, verdict="idle"), status="sent", reason="sent"))
            (button,) = wake_actions({**candidate}, bench.settings, state=state)
            before = len(spawns.read_text().splitlines()) if spawns.exists() else 0
            tapped = time.time()
            client.post(button["url"], content=button["body"].encode())
            _wait(lambda n=before: spawns.exists() and len(spawns.read_text().splitlines()) > n, 10)
            latencies.append((float(spawns.read_text().splitlines()[-1]) - tapped) * 1000)
            _wait(lambda n=i + 1: _confirmed(state) == n, 10)
    return latencies


def _idle_footprint(proc: psutil.Process) -> tuple[float, float]:
    """The role's CPU seconds over SECONDS with nothing arriving (after 3 s to settle), and its RSS MiB."""
    time.sleep(3.0)
    cpu0 = sum(proc.cpu_times()[:2])
    time.sleep(SECONDS)
    cpu = sum(proc.cpu_times()[:2]) - cpu0
    return cpu, proc.memory_info().rss / (1 << 20)


def _rows(latencies: list[float], cpu: float, rss: float) -> list[dict[str, Any]]:
    latencies = sorted(latencies)
    median = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(round(0.99 * (len(latencies) - 1))))]
    per_60 = cpu * 60.0 / SECONDS
    return [
        {
            "benchmark": "wake",
            "metric": f"tap -> exec resume spawned, median ms ({TAPS} taps)",
            "value": median,
            "target": 300,
            "ratio": 300 / median,
        },
        {
            "benchmark": "wake",
            "metric": "tap -> exec resume spawned, p99 ms",
            "value": p99,
            "target": 300,
            "ratio": 300 / p99,
        },
        {"benchmark": "wake", "metric": "idle wake role CPU-s per 60 s (subscribed)", "value": per_60, "target": None},
        {"benchmark": "wake", "metric": "idle wake role RSS (MiB)", "value": rss, "target": 35, "ratio": 35 / rss},
    ]


def _confirmed(state: Any) -> int:
    return sum(1 for r in state.wake_queue().records() if r.get("status") == "confirmed")


def _wait(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.002)
    raise RuntimeError("benchmark timed out")


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for row in main():
        print(row)
