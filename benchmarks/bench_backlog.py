"""A backlog of pending candidates drains through the real delivery role (issue 15 item 7).

N finished Codex root turns, each with its rollout on disk and the candidate its real Stop hook
wrote (the hook's own function, called in-process to build the backlog quickly), wait in
``pending/``; then one continuous ``donebell worker delivery`` process (the role the supervisor
runs) gates and delivers all of them to the ntfy stand-in on 127.0.0.1. Figures per size: seconds
until the last receipt, seconds per candidate, the role's peak RSS (VmHWM), its oldest heartbeat
gap while it worked, and how long it took to exit on SIGTERM. Target: 10,000 delivered within 60 s,
RSS <= 64 MiB, cost per candidate flat from 100 to 10,000 (ratio <= 1.5).

Run: ``python benchmarks/bench_backlog.py`` (``DONEBELL_BENCH_BACKLOG=100,10000`` sets the sizes,
``DONEBELL_BENCH_DIR=/dev/shm`` puts the state on tmpfs, where an fsync costs nothing).

Side by side: ``DONEBELL_BENCH_BASELINE=/other/checkout/.venv/bin/python`` also drains every size
with the donebell that interpreter imports (another checkout's editable install), alternating with
this tree ``DONEBELL_BENCH_ROUNDS`` times (default 1), and prints both medians and their ratio.

The machine is shared and its speed varies from run to run, so each drain also reports a
calibration (the best of five runs of a fixed pure-Python workload, in ms: higher is a slower
machine) and the share of CPU time the hypervisor took (steal) while it drained. The Codex home
has a thread index (``state_5.sqlite``, a row per thread) as real homes do; the cost of one scan
of it by ``source`` (the children query, which no index serves) is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.ntfy_standin import NtfyStandin  # noqa: E402
from support.rig import Rig  # noqa: E402

SIZES = [int(n) for n in os.environ.get("DONEBELL_BENCH_BACKLOG", "100,10000").split(",") if n.strip()]
BASELINE = os.environ.get("DONEBELL_BENCH_BASELINE") or None  # a python whose donebell is the baseline
ROUNDS = max(1, int(os.environ.get("DONEBELL_BENCH_ROUNDS", "1")))
TARGET_SECONDS, TARGET_RSS_MIB, TARGET_RATIO = 60.0, 64.0, 1.5


def _calibration_ms() -> float:
    """The best of five runs of a fixed pure-Python workload (parse, build, serialize), in ms."""
    sample = json.dumps({"type": "event_msg", "payload": {"type": "token_count", "n": list(range(50))}})
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for i in range(20_000):
            obj = json.loads(sample)
            obj["i"] = i
            json.dumps(obj)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _cpu_ticks() -> tuple[int, int]:
    """(all, steal) jiffies of the machine since boot, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[7] if len(fields) > 7 else 0


def _threads_scan_ms(db: Path) -> float:
    """One scan of the home's ``threads`` table by ``source`` (no index), as the children query
    makes it: what each candidate's evaluations paid before the pass shared one."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        started = time.perf_counter()
        for _ in range(20):
            conn.execute("SELECT id, source FROM threads WHERE source LIKE ?", ('%"parent_thread_id":"x"%',)).fetchall()
        return (time.perf_counter() - started) / 20 * 1000
    finally:
        conn.close()


def _hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _drain(n: int, python: str = sys.executable) -> dict[str, float]:
    base = os.environ.get("DONEBELL_BENCH_DIR") or None  # e.g. /dev/shm: the same run without fsync cost
    with tempfile.TemporaryDirectory(prefix="donebell-backlog-", dir=base) as tmp, NtfyStandin() as srv:
        rig = Rig(Path(tmp), None, srv.url, "backlog", idle_grace_seconds=0.2)  # type: ignore[arg-type]
        rig.backlog(n)
        # A real backlog built up over hours is on disk: without this the drain's first flushes
        # also write back the ~100 MB the build just left dirty (a few seconds, varying run to run).
        os.sync()
        sent_dir = rig.state_dir / "sent"
        load_before = os.getloadavg()[0]  # the machine is shared: wall time means little without it
        calibration = _calibration_ms()
        scan_ms = _threads_scan_ms(rig.codex_home / "state_5.sqlite")
        ticks_before = _cpu_ticks()
        started = time.monotonic()
        proc = subprocess.Popen(
            [python, "-m", "donebell.supervisor.cli", "worker", "delivery"],
            env=rig.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        worst_gap, last_beat, elapsed = 0.0, None, float("inf")
        try:
            while time.monotonic() - started < 900:
                health = rig.state.read_health("delivery") or {}
                beat = health.get("heartbeat_at")
                if isinstance(beat, (int, float)):
                    worst_gap = max(worst_gap, time.time() - beat)
                    last_beat = beat
                done = sum(1 for _ in os.scandir(sent_dir)) if sent_dir.is_dir() else 0
                if done >= n:
                    elapsed = time.monotonic() - started
                    break
                if proc.poll() is not None:
                    raise RuntimeError(f"delivery exited {proc.returncode}")
                time.sleep(0.25)
            hwm, cpu = _hwm_kib(proc.pid) / 1024, _cpu_seconds(proc.pid)
            ticks_after = _cpu_ticks()
        finally:
            asked = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            stop_seconds = time.monotonic() - asked
        del last_beat
        return {
            "seconds": elapsed,
            "per_candidate_ms": elapsed / n * 1000,
            "rss_mib": hwm,
            "cpu_per_candidate_ms": cpu / n * 1000,
            "cpu_s": cpu,
            "load_before": load_before,
            "load": os.getloadavg()[0],
            "heartbeat_gap_s": worst_gap,
            "sigterm_s": stop_seconds,
            "messages": len(srv.messages("backlog")),
            "calibration_ms": calibration,
            "threads_scan_ms": scan_ms,
            "steal_pct": 100 * (ticks_after[1] - ticks_before[1]) / max(1, ticks_after[0] - ticks_before[0]),
        }


def main() -> list[dict[str, Any]]:
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for round_no in range(ROUNDS):
        sides = [("this tree", sys.executable)] + ([("baseline", BASELINE)] if BASELINE else [])
        for side, python in sides if round_no % 2 == 0 else sides[::-1]:  # alternate: drift hits both
            for n in SIZES:
                runs.setdefault((side, n), []).append(_drain(n, python))
    results = {n: _median(runs[("this tree", n)]) for n in SIZES}
    rows: list[dict[str, Any]] = []
    for n, r in results.items():
        rows += _size_rows(n, r)
        if ROUNDS > 1:
            each = ", ".join(f"{run['seconds']:.1f}" for run in runs[("this tree", n)])
            rows.append(
                _row(
                    f"{n} pending: seconds of each run ({each}), the longest",
                    max(run["seconds"] for run in runs[("this tree", n)]),
                    TARGET_SECONDS if n >= 10000 else None,
                )
            )
        if BASELINE:
            base = _median(runs[("baseline", n)])
            rows.append(_row(f"{n} pending: baseline seconds until all delivered (median)", base["seconds"], None))
            rows.append(
                _row(f"{n} pending: baseline CPU ms per candidate (median)", base["cpu_per_candidate_ms"], None)
            )
            rows.append(_ratio(f"{n} pending: baseline / this tree, seconds", base["seconds"], r["seconds"]))
            rows.append(
                _ratio(
                    f"{n} pending: baseline / this tree, CPU", base["cpu_per_candidate_ms"], r["cpu_per_candidate_ms"]
                )
            )
    if len(SIZES) > 1:
        small, large = results[min(SIZES)], results[max(SIZES)]
        ratio = large["per_candidate_ms"] / small["per_candidate_ms"] if small["per_candidate_ms"] else 0.0
        rows.append(_row(f"cost per candidate ratio {max(SIZES)} / {min(SIZES)} (wall)", ratio, TARGET_RATIO))
        cpu = large["cpu_per_candidate_ms"] / small["cpu_per_candidate_ms"] if small["cpu_per_candidate_ms"] else 0.0
        rows.append(_row(f"cost per candidate ratio {max(SIZES)} / {min(SIZES)} (CPU)", cpu, TARGET_RATIO))
    for row in rows:
        extra = f", ratio {row['ratio']}" if "ratio" in row and row["target"] is None else ""
        print(f"{row['benchmark']}: {row['metric']} = {row['value']} (target {row['target']}{extra})")
    return rows


#: The rows printed per size: (what, the drain's figure); targets are added in :func:`_size_rows`.
FIGURES = (
    ("seconds until all delivered", "seconds"),
    ("ms per candidate", "per_candidate_ms"),
    ("delivery role CPU ms per candidate", "cpu_per_candidate_ms"),
    ("delivery role CPU seconds", "cpu_s"),
    ("machine load average (1 min) at the start", "load_before"),
    ("machine load average (1 min) at the end", "load"),
    ("machine calibration, ms (higher: slower machine)", "calibration_ms"),
    ("CPU time stolen by the hypervisor while it drained (%)", "steal_pct"),
    ("one scan of the threads' index by source (ms)", "threads_scan_ms"),
    ("delivery role peak RSS (MiB)", "rss_mib"),
    ("oldest heartbeat while working (s)", "heartbeat_gap_s"),
    ("exit after SIGTERM (s)", "sigterm_s"),
    ("notifications", "messages"),
)


def _size_rows(n: int, r: dict[str, float]) -> list[dict[str, Any]]:
    targets = {"seconds": TARGET_SECONDS if n >= 10000 else None, "rss_mib": TARGET_RSS_MIB, "messages": float(n)}
    median = " (median)" if ROUNDS > 1 else ""
    return [
        _row(f"{n} pending: {what}{median if key == 'seconds' else ''}", r[key], targets.get(key))
        for what, key in FIGURES
    ]


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs (the worst for RSS, heartbeat age and SIGTERM)."""
    worst = ("rss_mib", "heartbeat_gap_s", "sigterm_s")
    return {k: (max if k in worst else statistics.median)(run[k] for run in runs) for k in runs[0]}


def _ratio(metric: str, baseline: float, this: float) -> dict[str, Any]:
    """A side-by-side ratio: above 1, this tree is faster than the baseline."""
    row = _row(metric, baseline / this if this else 0.0, None)
    row["ratio"] = row["value"]
    return row


def _row(metric: str, value: float, target: float | None) -> dict[str, Any]:
    row: dict[str, Any] = {"benchmark": "backlog", "metric": metric, "value": round(float(value), 3), "target": target}
    if target and value:
        row["ratio"] = round(target / value, 3)
    return row


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
