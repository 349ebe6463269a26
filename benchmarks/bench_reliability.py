"""Reliability figures: a kill storm and the crash-point count, measured in one run.

* **kill storm**: ``donebell run`` with its real roles while 100 root tasks arrive (20 % without a
  hook) and 40 SIGKILLs hit random roles, the supervisor (restarted) and hooks in flight
  (``tests/support/storm.py``, the same machinery as the test). Rows: tasks lost (target 0),
  duplicate deliveries (each repeats its task's ``sequence_id``; informational), processes left
  behind (target 0), and how long the queue took to drain after the last kill.
* **crash points**: how many counted state-dir operations one Codex turn costs in each process
  (hook, local-scanner, delivery): the number of ``DONEBELL_CRASH_AT`` points the crash walk covers.

Run: ``python benchmarks/bench_reliability.py`` (``DONEBELL_BENCH_STORM_TASKS`` /
``DONEBELL_BENCH_STORM_KILLS`` change the storm's size; ``DONEBELL_STORM_SEED`` replays one).
The full-size storm (500 tasks, 200 kills) is ``DONEBELL_FULL_STORMS=1 pytest tests/reliability``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.ntfy_standin import NtfyStandin  # noqa: E402
from support.rig import Rig  # noqa: E402
from support.runner import ExecSpawner  # noqa: E402
from support.storm import run_storm, storm_seed  # noqa: E402

TASKS = int(os.environ.get("DONEBELL_BENCH_STORM_TASKS", "100"))
KILLS = int(os.environ.get("DONEBELL_BENCH_STORM_KILLS", "40"))
COUNT_OPS = (
    "import sys; from donebell.shared import statedir; from donebell.supervisor import cli; rc = cli.main(sys.argv[1:]); "
    "sys.stderr.write(f'OPS {statedir.operations_done()}\\n'); sys.exit(rc)"
)


def _storm(tmp: Path) -> list[dict[str, Any]]:
    seed = storm_seed()
    with NtfyStandin() as srv:
        rig = Rig(
            tmp / "storm",
            ExecSpawner(tmp / "spawn"),
            srv.url,
            f"bench-{secrets.token_hex(4)}",
            idle_probe_grace_seconds=10.0,
        )
        out = run_storm(rig, tmp / "service.log", tasks=TASKS, kills=KILLS, every=0.35, seed=seed, settle_timeout=300)
        sent = collections.Counter(m.get("sequence_id") for m in srv.messages(rig.topic))
    lost = sum(1 for t in out.turns if t.sequence_id not in sent)
    name = f"kill storm ({TASKS} tasks, {sum(out.kills.values())} kills, seed {seed})"
    return [
        {"benchmark": name, "metric": "tasks lost", "value": lost, "target": 0},
        {
            "benchmark": name,
            "metric": "duplicate deliveries (same sequence_id)",
            "value": sum(n - 1 for n in sent.values()),
            "target": None,
        },
        {"benchmark": name, "metric": "processes left after SIGTERM", "value": len(out.leftovers), "target": 0},
        {
            "benchmark": name,
            "metric": "drain after the last kill (s)",
            "value": round(out.settle_seconds, 2),
            "target": None,
        },
        {"benchmark": name, "metric": "supervisor exit status on SIGTERM", "value": out.stop_rc, "target": 0},
    ]


def _crash_points(tmp: Path) -> list[dict[str, Any]]:
    """One real turn, each process run once with the operation counter on (DONEBELL_CRASH_AT huge)."""
    import subprocess

    with NtfyStandin() as srv:
        rig = Rig(tmp / "ops", ExecSpawner(tmp / "spawn-ops"), srv.url, "bench-ops")
        turn = rig.new_turn()
        env = rig.env(DONEBELL_CRASH_AT=str(10**9))
        counts = {}
        steps = [
            ("hook codex-stop", ["hook", "codex-stop"], json.dumps(rig.stop_payload(turn)).encode()),
            ("local-scanner --once", ["worker", "local-scanner", "--once"], None),
            ("delivery --once", ["worker", "delivery", "--once"], None),
        ]
        for label, argv, stdin in steps:
            run = subprocess.run(
                [sys.executable, "-c", COUNT_OPS, *argv], input=stdin or b"", env=env, capture_output=True, timeout=60
            )
            counts[label] = int(run.stderr.decode().rsplit("OPS ", 1)[1].split()[0])
            if label.startswith("hook"):
                rig.complete(turn)
        assert rig.where(turn.key) == ["sent"], rig.where(turn.key)
    return [
        {
            "benchmark": "crash points of one Codex turn",
            "metric": f"{label} state-dir operations",
            "value": n,
            "target": None,
        }
        for label, n in counts.items()
    ]


def main() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="donebell-bench-rel-") as tmp:
        rows = _crash_points(Path(tmp)) + _storm(Path(tmp))
    for row in rows:
        print(f"{row['benchmark']}: {row['metric']} = {row['value']} (target {row['target']})")
    return rows


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
