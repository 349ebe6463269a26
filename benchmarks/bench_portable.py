"""The portable implementations against the native ones, side by side: what ``DONEBELL_FORCE_PORTABLE=1``
costs on Linux, which is roughly what macOS and Windows pay (stat polling instead of inotify,
psutil instead of /proc, roles started by exec instead of fork, detached starts through subprocess).

Each figure is measured alternately, native then portable, on the same machine in the same run:

* **wake**: a line appended to a watched rollout until the role's waker returns (inotify, or the
  stat poll every 0.5 s): ``DONEBELL_BENCH_WAKES`` appends (20), median and worst;
* **hook**: the wall time of ``donebell hook codex-stop`` on a real payload, candidate written and
  a delivery worker kicked (portable: ``subprocess`` and psutil on that path),
  ``DONEBELL_BENCH_RUNS`` runs (20), median;
* **completion**: a real ``donebell run`` over a 1 MB rollout, its ``task_complete`` line appended
  with no hook (the local scanner must notice it): seconds until the ntfy stand-in has the POST,
  and the whole tree's CPU for it (``bench_completion``), ``DONEBELL_BENCH_ROUNDS`` rounds (2);
* **idle**: the same service sitting idle: CPU seconds per 60 s of the whole tree and its RSS
  (``bench_footprint``, ``DONEBELL_BENCH_SECONDS`` (30) after ``DONEBELL_BENCH_SETTLE`` (10)).

Run: ``python -m benchmarks portable`` or ``python benchmarks/bench_portable.py``.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):  # ROOT for benchmarks.rows when run as a script
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

os.environ.setdefault("DONEBELL_BENCH_SECONDS", "30")  # bench_footprint reads it on import
os.environ.setdefault("DONEBELL_BENCH_SETTLE", "10")
from donebell.shared.platform import FORCE_PORTABLE_ENV  # noqa: E402
from support.hooks_harness import HookEnv  # noqa: E402

from benchmarks import bench_completion, bench_footprint  # noqa: E402

SIDES = {"native": "0", "portable": "1"}
WAKES = int(os.environ.get("DONEBELL_BENCH_WAKES", "20"))
RUNS = int(os.environ.get("DONEBELL_BENCH_RUNS", "20"))
ROUNDS = max(1, int(os.environ.get("DONEBELL_BENCH_ROUNDS", "2")))


def wake_latencies(forced: str) -> list[float]:
    """Seconds from each append to the waker's return, in a child with the side's environment."""
    code = (
        "import json, random, sys, threading, time\n"
        "from donebell.shared.waker import Waker\n"
        "path, n = sys.argv[1], int(sys.argv[2])\n"
        "waker, out = Waker(), []\n"
        "waker.watch([path])\n"
        "for i in range(n):\n"
        "    at = []\n"
        "    def append():\n"
        "        at.append(time.monotonic())\n"
        "        with open(path, 'a') as f:\n"
        "            f.write('{}\\n')\n"
        "    threading.Timer(random.uniform(0.05, 0.6), append).start()  # any phase of the poll\n"
        "    assert waker.wait(10.0)\n"
        "    out.append(time.monotonic() - at[0])\n"
        "    time.sleep(0.1)\n"
        "    while waker.wait(0.02):  # the same write's later events (close after modify)\n"
        "        pass\n"
        "print(json.dumps([waker.mechanism, out]))\n"
    )
    with tempfile.TemporaryDirectory(prefix="bench-portable-") as tmp:
        path = Path(tmp) / "rollout.jsonl"
        path.write_text("")
        env = {**os.environ, FORCE_PORTABLE_ENV: forced}
        done = subprocess.run(
            [sys.executable, "-c", code, str(path), str(WAKES)], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, done.stderr
        mechanism, latencies = json.loads(done.stdout)
    print(f"   wake ({mechanism}): {[round(x * 1000) for x in latencies]} ms", file=sys.stderr)
    return [float(x) for x in latencies]


def hook_walls(root: Path) -> dict[str, list[float]]:
    """Wall seconds of ``hook codex-stop`` per side, alternating, each kicking a delivery worker."""
    walls: dict[str, list[float]] = {side: [] for side in SIDES}
    hooks = {side: HookEnv(root / side) for side in SIDES}
    kick = json.dumps([sys.executable, "-c", "pass"])
    for side, env in hooks.items():
        env.install_rollout("simple-exec", upto="task_complete")
        env.extra_env.update({"DONEBELL_KICK_COMMAND": kick, FORCE_PORTABLE_ENV: SIDES[side]})
    for run in range(RUNS + 2):  # the first two warm the byte-code and page caches
        for side, env in hooks.items():
            started = time.perf_counter()
            env.stop(env.stop_payload("simple", turn_id=f"turn-{run}"))
            if run >= 2:
                walls[side].append(time.perf_counter() - started)
    return walls


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    wakes = {side: wake_latencies(forced) for side, forced in SIDES.items()}
    for side, values in wakes.items():
        rows.append(_row(f"{side}: append to wake, median (ms)", statistics.median(values) * 1000))
        rows.append(_row(f"{side}: append to wake, worst (ms)", max(values) * 1000))
    with tempfile.TemporaryDirectory(prefix="bench-portable-hook-") as tmp:
        walls = hook_walls(Path(tmp))
    for side, values in walls.items():
        rows.append(_row(f"{side}: hook codex-stop with a kick, median wall (ms)", statistics.median(values) * 1000))
    completions: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for _ in range(ROUNDS):
        for side, forced in SIDES.items():
            completions[side].append(bench_completion.measure(1, extra_env={FORCE_PORTABLE_ENV: forced}))
    for side, runs in completions.items():
        latency = statistics.median(r["latency_s"] for r in runs)
        rows.append(_row(f"{side}: rollout append to the POST, no hook (s, grace 0.5)", latency))
        rows.append(
            _row(f"{side}: whole-tree CPU for that completion (s)", statistics.median(r["cpu_s"] for r in runs))
        )
    for side, forced in SIDES.items():
        idle = bench_footprint.measure(100, extra_env={FORCE_PORTABLE_ENV: forced})
        rows.append(_row(f"{side}: idle tree CPU s per 60 s", idle["cpu_per_60s"]))
        rows.append(_row(f"{side}: idle tree RSS (MiB, all processes)", sum(idle["rss"].values())))
        rows.append(_row(f"{side}: idle tree PSS (MiB, what it occupies)", sum(idle["pss"].values())))
    _ratios(rows)
    return rows


def _row(metric: str, value: float) -> dict[str, Any]:
    return {"benchmark": "portable", "metric": metric, "value": round(value, 4), "target": None}


def _ratios(rows: list[dict[str, Any]]) -> None:
    """On each portable row: portable / native of the same figure (above 1: portable costs more)."""
    native = {r["metric"].removeprefix("native: "): r["value"] for r in rows if r["metric"].startswith("native: ")}
    for row in rows:
        figure = row["metric"].removeprefix("portable: ")
        if row["metric"].startswith("portable: ") and native.get(figure):
            row["ratio"] = round(row["value"] / native[figure], 2)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for r in main():
        print(r)
