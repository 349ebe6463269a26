"""Fifty permission requests waiting for the phone at once (approvals on): memory and CPU of the
fifty waiting hook processes (issue 38).

Fifty real ``donebell hook claude`` processes, each with the recorded Claude PermissionRequest of
its own session (its own transcript, cut before the call's result), in one state directory with
approvals on and a wake role that runs (this process writes its health file every few seconds, as
the role does; the hooks wait only while it looks alive). Once all fifty have written their
needs-you record and settled ``DONEBELL_BENCH_WAITING_SETTLE`` seconds (2), it reads each
process's PSS and RSS, and the CPU (user + system) the fifty spend over the next
``DONEBELL_BENCH_WAITING_SECONDS`` (20) while nothing happens; then it checks that every hook still
waits and answers one of them through the answer file, which must end that one's wait.

Targets: <= 150 MiB PSS for fifty, and no CPU while waiting (the row's target, 0.05 CPU-s over
the window for all fifty, is the noise of fifty sleeping processes' occasional look at their files).

Run: ``python benchmarks/bench_waiting_approvals.py`` or ``python -m benchmarks waiting_approvals``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # for benchmarks.rows when run as a script
    sys.path.insert(0, str(ROOT))

from benchmarks.rows import share_of_target  # noqa: E402

AGENTS = int(os.environ.get("DONEBELL_BENCH_WAITING_AGENTS", "50"))
SETTLE = float(os.environ.get("DONEBELL_BENCH_WAITING_SETTLE", "2"))
WINDOW = float(os.environ.get("DONEBELL_BENCH_WAITING_SECONDS", "20"))
MIB = 1 << 20
PSS_TARGET_MIB = 150.0
CPU_TARGET = 0.05
FIXTURES = ROOT / "tests" / "fixtures"
RECORDED = FIXTURES / "approvals" / "claude" / "interactive-2.1.197-record" / "hooks.jsonl"
#: A real Claude transcript, cut before its one call's result: the call is still waiting.
TRANSCRIPT = FIXTURES / "gate" / "claude" / "print-tool.jsonl"
CONFIG = {
    "server": "http://127.0.0.1:9",
    "topic": "bench",
    "token": "tk_bench_waiting",
    "idle_detection_mode": "off",
    "wake_enabled": True,
    "wake_topic": "donebell-replies-bench",
    "approvals_enabled": True,
    "approval_wait_seconds": 300,
}


def permission_request() -> dict[str, Any]:
    for line in RECORDED.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("event") == "PermissionRequest" and "payload" in entry:
            payload: dict[str, Any] = entry["payload"]
            return payload
    raise AssertionError(f"no PermissionRequest in {RECORDED}")


class WakeStandIn:
    """This process stands in for a running, subscribed wake role: its health file, refreshed."""

    def __init__(self, state_dir: Path) -> None:
        from donebell.shared.process.liveness import current_process_identity
        from donebell.shared.statedir import StateDir

        self.state = StateDir(state_dir).ensure()
        self.beat = {"role": "wake", **current_process_identity(), "state": "ready", "heartbeat_seconds": 10.0}
        self.beat["subscription"] = "subscribed"
        self.stopped = threading.Event()
        self.write()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def write(self) -> None:
        self.state.write_health("wake", {**self.beat, "heartbeat_at": time.time()})

    def run(self) -> None:
        while not self.stopped.wait(5.0):
            self.write()


def start_hooks(base: Path, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """Fifty agents' PermissionRequest hooks, each its own session and transcript."""
    request = permission_request()
    asking = b"".join(TRANSCRIPT.read_bytes().splitlines(keepends=True)[:7])
    procs = []
    for n in range(AGENTS):
        transcript = base / "claude" / "projects" / "bench" / f"session-{n}.jsonl"
        transcript.parent.mkdir(parents=True, exist_ok=True)
        transcript.write_bytes(asking)
        payload = {**request, "session_id": f"00000000-0000-4000-8000-{n:012d}", "transcript_path": str(transcript)}
        argv = [sys.executable, "-m", "donebell.supervisor.cli", "hook", "claude"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=base)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        procs.append(proc)
    return procs


def wait_for_requests(outbox: Path, procs: list[subprocess.Popen[bytes]], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(outbox.glob("*.json"))) >= AGENTS:
            return
        if any(p.poll() is not None for p in procs):
            raise AssertionError("a hook ended before it waited (is the wait configured?)")
        time.sleep(0.1)
    raise AssertionError(f"only {len(list(outbox.glob('*.json')))} of {AGENTS} needs-you records")


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def wakeups(procs: list[psutil.Process]) -> int:
    """How often the processes went to sleep of their own accord (each round of a poll is one)."""
    return sum(proc.num_ctx_switches().voluntary for proc in procs)


def measure(procs: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    watched = [psutil.Process(p.pid) for p in procs]
    time.sleep(SETTLE)
    before, woke = cpu_seconds(watched), wakeups(watched)
    memory = [p.memory_full_info() for p in watched]
    time.sleep(WINDOW)
    after, woke = cpu_seconds(watched), wakeups(watched) - woke
    if any(p.poll() is not None for p in procs):
        raise AssertionError("a hook stopped waiting while nothing happened")
    return {
        "pss": sum(m.pss for m in memory) / MIB,
        "rss": sum(m.rss for m in memory) / MIB,
        "cpu_window": after - before,
        "wakeups": woke,
        "cpu_total": after,
    }


def answer_one(state_dir: Path, procs: list[subprocess.Popen[bytes]]) -> float:
    """Close one request through its answer file as the wake role would answer it: seconds until
    a hook ends (its wait must notice the answer)."""
    from donebell.shared.statedir import StateDir

    state = StateDir(state_dir)
    key = next(k for k in state.keys("outbox") if (state.read("outbox", k) or {}).get("notice") == "needs-you")
    started = time.monotonic()
    state.answer_box().answer(key, "closed", reason="benchmark")
    while time.monotonic() < started + 30:
        if any(p.poll() is not None for p in procs):
            return time.monotonic() - started
        time.sleep(0.005)
    raise AssertionError("an answer ended no hook's wait")


def main() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="donebell-bench-waiting-") as tmp:
        base = Path(tmp)
        (base / "config.json").write_text(json.dumps(CONFIG))
        os.chmod(base / "config.json", 0o600)
        wake = WakeStandIn(base / "state")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        env.update(
            DONEBELL_STATE_DIR=str(base / "state"),
            DONEBELL_CONFIG=str(base / "config.json"),
            DONEBELL_KICK_COMMAND="off",
            CLAUDE_CONFIG_DIR=str(base / "claude"),
        )
        procs = start_hooks(base, env)
        try:
            wait_for_requests(base / "state" / "outbox", procs)
            figures = measure(procs)
            figures["answered"] = answer_one(base / "state", procs)
        finally:
            wake.stopped.set()
            for proc in procs:
                proc.kill()
                proc.wait()
    print(
        f"   fifty waiting: PSS {figures['pss']:.1f} MiB, RSS {figures['rss']:.1f} MiB, "
        f"CPU {figures['cpu_window']:.3f} s and {figures['wakeups']:.0f} wake-ups over {WINDOW:g} s, "
        f"{figures['cpu_total']:.2f} s in all; "
        f"an answer ended its hook in {figures['answered'] * 1000:.0f} ms",
        file=sys.stderr,
    )
    name = "waiting_approvals"
    return [
        share_of_target(name, f"PSS MiB, {AGENTS} waiting hooks", figures["pss"], PSS_TARGET_MIB),
        share_of_target(name, f"RSS MiB, {AGENTS} waiting hooks", figures["rss"], None),
        share_of_target(name, f"CPU-s of {AGENTS} waiting hooks over {WINDOW:g} s", figures["cpu_window"], CPU_TARGET),
        share_of_target(name, f"wake-ups of {AGENTS} waiting hooks over {WINDOW:g} s", figures["wakeups"], None),
        share_of_target(name, f"CPU-s of {AGENTS} hooks from start to the window's end", figures["cpu_total"], None),
        share_of_target(name, "s from an answer to its hook's end", figures["answered"], None),
    ]


if __name__ == "__main__":
    # --help (or any argument) must never start fifty hooks.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for row in main():
        print(row)
