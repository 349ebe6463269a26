"""Local scanner scale: the cost of an idle scan cycle follows the hot set, not the archive.

Builds two Codex homes, each with 5 hot rollouts in today's folder and a real ``state_5.sqlite``
index: one with 100 archived rollouts, one with 10,000 (small synthetic files spread over old
``sessions/YYYY/MM/DD`` folders and ``archived_sessions/``). Measures, for each:

* the CPU time of one idle cycle: a *light* pass (wake-up/heartbeat: stat the hot set) and a
  *full* pass (the periodic rescan, forced to re-query the thread index: the worst idle case);
* start-up: a fresh engine's first full pass in-process, and a whole
  ``donebell worker local-scanner --once`` process (interpreter, imports, config, lock, health).

Targets: idle cycle <= 2 ms CPU, 10,000/100 ratio <= 1.2, start-up <= 1 s.
Run: ``python -m benchmarks scanner`` or ``python benchmarks/bench_scanner.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.scan_engine import ScanEngine, ScanOptions

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.codex_sqlite import create_schema  # noqa: E402

HOT = 5
BATCHES, PER_BATCH = 5, 200


def _rollout(thread_id: str, turn: str) -> bytes:
    lines = [
        {
            "type": "session_meta",
            "payload": {
                "id": thread_id,
                "session_id": thread_id,
                "source": "exec",
                "thread_source": "user",
                "cwd": "/work/p",
            },
        },
        {"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn}},
        {
            "type": "event_msg",
            "payload": {
                "type": "item_completed",
                "turn_id": turn,
                "item": {"type": "UserMessage", "content": [{"text": "go"}]},
            },
        },
        {
            "type": "event_msg",
            "payload": {
                "type": "task_complete",
                "turn_id": turn,
                "last_agent_message": "ok",
                "completed_at": 1736935200,
                "duration_ms": 1000,
            },
        },
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def build_home(root: Path, archived: int) -> Path:
    """A Codex home with ``archived`` old rollouts + ``HOT`` rollouts in today's folder, all indexed."""
    rows: list[tuple[Any, ...]] = []
    old_day = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(archived):
        tid = str(uuid.UUID(int=n + 1))
        day = (old_day + timedelta(days=n % 200)).strftime("%Y/%m/%d")
        top = "archived_sessions" if n % 2 else "sessions"
        folder = root / top / day
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-{day.replace('/', '-')}T10-00-00-{tid}.jsonl"
        path.write_bytes(_rollout(tid, f"turn-{n}"))
        os.utime(path, (1736935200, 1736935200))
        rows.append((tid, str(path), 1736935200, n % 2))
    today = root / "sessions" / datetime.now(UTC).strftime("%Y/%m/%d")
    today.mkdir(parents=True, exist_ok=True)
    now = int(time.time())
    for n in range(HOT):
        tid = str(uuid.UUID(int=10**9 + n))
        path = today / f"rollout-hot-{tid}.jsonl"
        path.write_bytes(_rollout(tid, f"hot-{n}"))
        rows.append((tid, str(path), now, 0))
    db = sqlite3.connect(root / "state_5.sqlite")
    try:
        create_schema(db)
        db.executemany(
            "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,"
            " sandbox_policy, approval_mode, archived) VALUES (?, ?, ?, ?, 'exec', 'fake', '/w', 't', '{}', 'never', ?)",
            [(tid, path, ts, ts, arch) for tid, path, ts, arch in rows],
        )
        db.commit()
        db.execute("PRAGMA journal_mode=WAL")  # as Codex keeps it
    finally:
        db.close()
    return root


def _engine(state_root: Path, home: Path) -> ScanEngine:
    return ScanEngine(
        StateDir(state_root).ensure(),
        ScanOptions(
            source="scanner",
            cursor_folder="watch/local",
            codex_home=home,
            sqlite_home=home,
            origin=None,
            replay_seconds=300.0,
            include_message=False,
        ),
    )


def _cycle_cpu(engine: ScanEngine, *, full: bool) -> float:
    """CPU seconds of one pass, averaged over PER_BATCH passes."""
    cpu = time.process_time()
    for _ in range(PER_BATCH):
        if full:
            engine._index_sig = None  # the database changed: the periodic pass queries it (worst case)
        engine.scan(full=full)
    return (time.process_time() - cpu) / PER_BATCH


def _worker_start(home: Path, state_root: Path) -> float:
    env = {
        **os.environ,
        "CODEX_HOME": str(home),
        "DONEBELL_STATE_DIR": str(state_root),
        "DONEBELL_CONFIG": str(state_root.parent / "none.json"),
    }
    env.pop("CODEX_SQLITE_HOME", None)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "worker", "local-scanner", "--once"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return time.perf_counter() - started


def measure(sizes: tuple[int, ...]) -> dict[int, dict[str, float]]:
    """Build every home first, then measure them in interleaved batches (fair to both sizes)."""
    with tempfile.TemporaryDirectory(prefix="donebell-bench-scanner-") as tmp:
        homes = {n: build_home(Path(tmp) / f"codex-{n}", n) for n in sizes}
        if hasattr(os, "sync"):
            os.sync()  # do not measure the writeback of the files just created
        out: dict[int, dict[str, float]] = {}
        engines = {}
        for n, home in homes.items():
            cpu, wall = time.process_time(), time.perf_counter()
            engines[n] = _engine(Path(tmp) / f"state-{n}", home)
            report = engines[n].scan(full=True)
            out[n] = {"first_pass_cpu_s": time.process_time() - cpu, "first_pass_wall_s": time.perf_counter() - wall}
            assert report.files_watched == HOT, report.files_watched
        samples: dict[tuple[int, str], list[float]] = {}
        for _ in range(BATCHES):
            for n in sizes:
                samples.setdefault((n, "light"), []).append(_cycle_cpu(engines[n], full=False))
                samples.setdefault((n, "full"), []).append(_cycle_cpu(engines[n], full=True))
                samples.setdefault((n, "worker"), []).append(
                    _worker_start(homes[n], Path(tmp) / f"worker-{n}-{len(samples[(n, 'full')])}")
                )
        for n in sizes:
            out[n]["light_cycle_cpu_ms"] = statistics.median(samples[(n, "light")]) * 1e3
            out[n]["full_cycle_cpu_ms"] = statistics.median(samples[(n, "full")]) * 1e3
            out[n]["worker_start_s"] = statistics.median(samples[(n, "worker")])
    return out


def main() -> list[dict[str, Any]]:
    results = measure((100, 10_000))
    small, large = results[100], results[10_000]
    rows: list[dict[str, Any]] = []
    for metric, target in (("light_cycle_cpu_ms", 2.0), ("full_cycle_cpu_ms", 2.0)):
        rows.append(
            {"benchmark": "scanner", "metric": f"idle {metric} @100", "value": small[metric], "target": f"<= {target}"}
        )
        rows.append(
            {
                "benchmark": "scanner",
                "metric": f"idle {metric} @10000",
                "value": large[metric],
                "target": f"<= {target}",
                "ratio": large[metric] / small[metric],
            }
        )
    rows.append(
        {
            "benchmark": "scanner",
            "metric": "idle cycle ratio 10000/100 (full, worst)",
            "value": large["full_cycle_cpu_ms"] / small["full_cycle_cpu_ms"],
            "target": "<= 1.2",
        }
    )
    rows.append(
        {
            "benchmark": "scanner",
            "metric": "idle cycle ratio 10000/100 (light)",
            "value": large["light_cycle_cpu_ms"] / small["light_cycle_cpu_ms"],
            "target": "<= 1.2",
        }
    )
    rows.append(
        {
            "benchmark": "scanner",
            "metric": "start-up first pass wall s @10000",
            "value": large["first_pass_wall_s"],
            "target": "<= 1",
            "ratio": large["first_pass_wall_s"] / small["first_pass_wall_s"],
        }
    )
    rows.append(
        {
            "benchmark": "scanner",
            "metric": "start-up worker --once process wall s @10000",
            "value": large["worker_start_s"],
            "target": "<= 1",
            "ratio": large["worker_start_s"] / small["worker_start_s"],
        }
    )
    for row in rows:
        ratio = f"  (ratio {row['ratio']:.3f})" if "ratio" in row else ""
        print(f"{row['benchmark']:8} {row['metric']:48} {row['value']:10.4f}  target {row['target']}{ratio}")
    return rows


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
